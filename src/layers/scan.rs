//! The reader behind the layer test: source text with comments, literals and test items
//! blanked, the `use` trees and inline paths it holds, and their resolution to the modules that
//! define what they name, checked against [`LAYERS`] and [`ALLOWED`].

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{ALLOWED, LAYERS};

pub(super) type Module = Vec<String>;

pub(super) fn join(m: &[String]) -> String {
    m.join("::")
}

/// `text` with comments, string and char literals blanked (newlines kept,
/// so line numbers and byte offsets stay).
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |k| i + k);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if (b[i] == b'r' || b[i..].starts_with(b"br"))
            && (i == 0 || !ident(b[i - 1]))
            && raw_string_start(&b[i..]).is_some()
        {
            let (open, hashes) = raw_string_start(&b[i..]).unwrap_or_default();
            let mut end = b.len();
            let mut j = i + open;
            while j < b.len() {
                if b[j] == b'"' && b[j + 1..].iter().take_while(|&&c| c == b'#').count() >= hashes {
                    end = j + 1 + hashes;
                    break;
                }
                j += 1;
            }
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}', a multi-byte char), not a lifetime.
            let len = if b.get(i + 1) == Some(&b'\\') {
                b.get(i + 3..)
                    .and_then(|r| r.iter().position(|&c| c == b'\''))
                    .map(|k| k + 4)
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + ch) == Some(&b'\'')).then_some(ch + 2)
            };
            match len {
                Some(len) => {
                    blank(&mut out, i, i + len);
                    i += len;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `r"`, `r#"`, `br##"`, …: the opening's length and its number of `#`s.
fn raw_string_start(b: &[u8]) -> Option<(usize, usize)> {
    let skip = usize::from(b.first() == Some(&b'b'));
    if b.get(skip) != Some(&b'r') {
        return None;
    }
    let hashes = b[skip + 1..].iter().take_while(|&&c| c == b'#').count();
    (b.get(skip + 1 + hashes) == Some(&b'"')).then_some((skip + 2 + hashes, hashes))
}

/// The end (exclusive) of the item starting at `from`: its matching `}` or
/// its `;`, whichever closes it.
fn item_end(t: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    for (k, &c) in t.iter().enumerate().skip(from) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return k + 1;
                }
            }
            b';' if depth == 0 => return k + 1,
            _ => {}
        }
    }
    t.len()
}

/// `t` with every item under `#[cfg(test)]` blanked: tests may use any layer.
fn drop_test_items(t: &str) -> String {
    let mut out = t.as_bytes().to_vec();
    let mut from = 0;
    while let Some(k) = t[from..].find("#[cfg(test)]") {
        let start = from + k;
        let end = item_end(t.as_bytes(), start + "#[cfg(test)]".len());
        for c in &mut out[start..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = end;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The module a file under `src/` defines (`backend/hf/mod.rs` is
/// `backend::hf`, `lib.rs` the root).
fn file_module(rel: &str) -> Module {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Where `word` starts in `t` and is not the tail of a longer name or path
/// (`reuse `, `a::crate::`).
fn word_starts(t: &str, word: &str) -> Vec<usize> {
    let b = t.as_bytes();
    t.match_indices(word)
        .map(|(at, _)| at)
        .filter(|&at| at == 0 || !(is_ident(b[at - 1]) || b[at - 1] == b':'))
        .collect()
}

/// Inline `mod name { … }` blocks: (start, end, name).
fn inline_mods(t: &str) -> Vec<(usize, usize, String)> {
    let b = t.as_bytes();
    let mut out = Vec::new();
    for at in word_starts(t, "mod ") {
        let rest = &t[at + 4..];
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|&c| c.is_alphanumeric() || c == '_')
            .collect();
        let after = rest.trim_start()[name.len()..].trim_start();
        if !name.is_empty() && after.starts_with('{') {
            out.push((at, item_end(b, at), name));
        }
    }
    out
}

/// The module at byte `at` of a file defining `file`: the file's module plus
/// the inline modules around `at`.
fn module_at(file: &Module, mods: &[(usize, usize, String)], at: usize) -> Module {
    let mut m = file.clone();
    m.extend(
        mods.iter()
            .filter(|(s, e, _)| *s <= at && at < *e)
            .map(|(_, _, n)| n.clone()),
    );
    m
}

/// The paths a use tree names (`a::{b, c::{d, e as f}, self}` → `a::b`,
/// `a::c::d`, `a::c::e`, `a`), with the name each binds (`None` for a glob).
fn use_tree(tree: &str) -> Vec<(Vec<String>, Option<String>)> {
    fn rec(s: &str, prefix: &[String], out: &mut Vec<(Vec<String>, Option<String>)>) {
        let mut depth = 0;
        let mut start = 0;
        let mut parts = Vec::new();
        for (i, c) in s.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&s[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&s[start..]);
        for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
            if let Some(open) = part.find('{') {
                let head = part[..open].trim().trim_end_matches("::");
                let close = part.rfind('}').unwrap_or(part.len());
                let mut p = prefix.to_vec();
                p.extend(
                    head.split("::")
                        .filter(|x| !x.is_empty())
                        .map(str::to_owned),
                );
                rec(&part[open + 1..close], &p, out);
            } else {
                let (path, alias) = match part.split_once(" as ") {
                    Some((p, a)) => (p.trim(), Some(a.trim().to_owned())),
                    None => (part, None),
                };
                let mut p = prefix.to_vec();
                p.extend(path.split("::").map(str::trim).map(str::to_owned));
                if p.last().is_some_and(|l| l == "self") {
                    p.pop();
                }
                let name = if p.last().is_some_and(|l| l == "*") {
                    None
                } else {
                    alias.or_else(|| p.last().cloned())
                };
                out.push((p, name));
            }
        }
    }
    let flat: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = flat.replace(" ::", "::").replace(":: ", "::");
    let mut out = Vec::new();
    rec(&flat, &[], &mut out);
    out
}

/// A `crate::`, `super::` or `self::` path made absolute from module `at`.
fn absolute(at: &Module, path: &[String]) -> Option<Module> {
    let mut segs = path.iter().peekable();
    let mut base = match segs.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segs.next();
            Vec::new()
        }
        Some("super" | "self") => at.clone(),
        _ => return None,
    };
    while let Some(s) = segs.peek() {
        match s.as_str() {
            "super" => {
                base.pop();
            }
            "self" => {}
            _ => break,
        }
        segs.next();
    }
    base.extend(segs.cloned());
    Some(base)
}

/// One import found in a file.
#[derive(Debug, Clone)]
pub(super) struct Import {
    file: String,
    line: usize,
    /// The module the import is written in.
    pub(super) from: Module,
    /// The absolute path it names.
    pub(super) path: Module,
    /// As written (whitespace collapsed).
    text: String,
}

/// Every module of the crate, every import, and the names each module's
/// `use` items bind (for resolving paths through re-exports).
#[derive(Default)]
pub(super) struct Crate {
    modules: BTreeSet<Module>,
    pub(super) imports: Vec<Import>,
    names: HashMap<(Module, String), Module>,
    /// Inline modules (`pub mod traits { … }` in `lib.rs`) and their file's.
    inline: HashMap<Module, Module>,
}

pub(super) fn read_crate(files: &[(String, String)]) -> Crate {
    let mut c = Crate::default();
    for (rel, text) in files {
        let file = file_module(rel);
        let t = drop_test_items(&strip(text));
        let mods = inline_mods(&t);
        c.modules.insert(file.clone());
        for (s, _, _) in &mods {
            let m = module_at(&file, &mods, *s + 1);
            c.modules.insert(m.clone());
            c.inline.insert(m, file.clone());
        }
        let line_of = |at: usize| t[..at].matches('\n').count() + 1;
        let mut in_use = Vec::new();
        for at in word_starts(&t, "use ") {
            let Some(end) = t[at..].find(';').map(|e| at + e) else {
                continue;
            };
            let tree = t[at + 4..end].trim();
            let root = tree.split("::").next().unwrap_or("").trim();
            let module = module_at(&file, &mods, at);
            in_use.push((at, end));
            for (path, name) in use_tree(tree) {
                if !matches!(root, "crate" | "super" | "self") {
                    // `use child::X` in 2018 paths: relative to the module.
                    // Only recorded as a name (the parent declares the child).
                    let mut rel = module.clone();
                    rel.extend(path.iter().cloned());
                    if let Some(n) = name {
                        c.names.insert((module.clone(), n), rel);
                    }
                    continue;
                }
                let Some(abs) = absolute(&module, &path) else {
                    continue;
                };
                if let Some(n) = name {
                    c.names.insert((module.clone(), n), abs.clone());
                }
                c.imports.push(Import {
                    file: rel.clone(),
                    line: line_of(at),
                    from: module.clone(),
                    path: abs,
                    text: format!(
                        "use {};",
                        tree.split_whitespace().collect::<Vec<_>>().join(" ")
                    ),
                });
            }
        }
        // Inline paths: `crate::a::b`, `super::a`, outside `use` items.
        for root in ["crate::", "super::"] {
            for at in word_starts(&t, root) {
                if in_use.iter().any(|&(s, e)| s <= at && at < e) {
                    continue;
                }
                let len = t[at..]
                    .bytes()
                    .take_while(|&ch| is_ident(ch) || ch == b':')
                    .count();
                let raw = t[at..at + len].trim_end_matches(':');
                let path: Vec<String> = raw.split("::").map(str::to_owned).collect();
                let module = module_at(&file, &mods, at);
                if let Some(abs) = absolute(&module, &path) {
                    c.imports.push(Import {
                        file: rel.clone(),
                        line: line_of(at),
                        from: module,
                        path: abs,
                        text: raw.to_owned(),
                    });
                }
            }
        }
    }
    c
}

impl Crate {
    /// [`entry`], where an inline module without one of its own is its file's.
    fn entry(&self, module: &[String]) -> Option<(usize, &'static str)> {
        entry(module).or_else(|| self.inline.get(module).and_then(|f| entry(f)))
    }

    /// The module `path` is written through: its longest prefix that is a
    /// module, not following `use` items.
    pub(super) fn written(&self, path: &[String]) -> Module {
        (0..=path.len())
            .rev()
            .find(|&k| self.modules.contains(&path[..k]))
            .map_or_else(Vec::new, |k| path[..k].to_vec())
    }

    /// The module that defines what `path` names, following `use` items.
    fn resolve(&self, path: &[String]) -> Module {
        let mut path = path.to_vec();
        for _ in 0..16 {
            let Some(k) = (0..=path.len())
                .rev()
                .find(|&k| self.modules.contains(&path[..k]))
            else {
                return Vec::new();
            };
            let module = path[..k].to_vec();
            let Some(next) = path.get(k) else {
                return module;
            };
            match self.names.get(&(module.clone(), next.clone())) {
                Some(target) if target[..] != path[..=k] => {
                    let mut p = target.clone();
                    p.extend(path[k + 1..].iter().cloned());
                    path = p;
                }
                _ => return module,
            }
        }
        path
    }
}

/// The map entry (and its layer) a module belongs to: its longest prefix in
/// the map.
fn entry(module: &[String]) -> Option<(usize, &'static str)> {
    let name = join(module);
    LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, l)| l.modules.iter().map(move |m| (i, *m)))
        .filter(|(_, m)| name == *m || (!m.is_empty() && name.starts_with(&format!("{m}::"))))
        .max_by_key(|(_, m)| m.len())
}

/// Every import the map forbids, one message each, and every cycle among
/// map entries; empty when the map holds.
pub(super) fn violations(files: &[(String, String)]) -> (Vec<String>, usize) {
    let c = read_crate(files);
    let mut out = Vec::new();
    for m in &c.modules {
        if c.entry(m).is_none() {
            out.push(format!("module `{}` has no entry in LAYERS", join(m)));
        }
    }
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut checked = 0;
    for imp in &c.imports {
        let target = c.resolve(&imp.path);
        let (Some((lf, ef)), Some((lt, et))) = (c.entry(&imp.from), c.entry(&target)) else {
            continue;
        };
        checked += 1;
        let descendant = target.len() > imp.from.len() && target[..imp.from.len()] == imp.from[..];
        if ef == et || descendant {
            continue;
        }
        graph.entry(ef).or_default().insert(et);
        let (from, to) = (join(&imp.from), join(&target));
        let written = join(&c.written(&imp.path));
        let allowed = ALLOWED
            .iter()
            .any(|(f, t, _)| (from == *f || from.starts_with(&format!("{f}::"))) && written == *t);
        let rule = if allowed {
            continue;
        } else if lt > lf {
            format!(
                "`{ef}` (layer {lf} \"{}\") may not import `{et}` (layer {lt} \"{}\"), a higher layer",
                LAYERS[lf].name, LAYERS[lt].name
            )
        } else if lt == lf && !LAYERS[lf].peers {
            format!(
                "`{ef}` and `{et}` are peers in layer {lf} \"{}\", which allows no imports between its modules",
                LAYERS[lf].name
            )
        } else {
            continue;
        };
        let message = format!(
            "{}:{}: `{}` resolves to `{to}`: {rule}",
            imp.file, imp.line, imp.text
        );
        if !out.contains(&message) {
            out.push(message);
        }
    }
    // Cycles among map entries (peer layers rely on this).
    fn visit<'a>(
        n: &'a str,
        g: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
        out: &mut Vec<String>,
    ) {
        if let Some(i) = stack.iter().position(|&s| s == n) {
            let mut cycle = stack[i..].to_vec();
            cycle.push(n);
            out.push(format!("import cycle: {}", cycle.join(" -> ")));
            return;
        }
        if !done.insert(n) {
            return;
        }
        stack.push(n);
        for &m in g.get(n).into_iter().flatten() {
            visit(m, g, stack, done, out);
        }
        stack.pop();
    }
    let mut done = BTreeSet::new();
    for &n in graph.keys() {
        visit(n, &graph, &mut Vec::new(), &mut done, &mut out);
    }
    (out, checked)
}

/// Every `.rs` file under `src/` but `src/bin`, as (path under `src/`, text).
pub(super) fn source_files() -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("src/ is readable")
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for p in entries {
            let rel = p
                .strip_prefix(root)
                .expect("under src/")
                .to_string_lossy()
                .replace('\\', "/");
            if p.is_dir() {
                if rel != "bin" {
                    walk(&p, root, out);
                }
            } else if rel.ends_with(".rs") {
                out.push((rel, std::fs::read_to_string(&p).expect("utf-8 source")));
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    without_test_modules(out)
}

/// `files` less the files of `#[cfg(test)] mod name;` modules and their children.
fn without_test_modules(mut files: Vec<(String, String)>) -> Vec<(String, String)> {
    let tests = test_module_files(&files);
    files.retain(|(rel, _)| {
        !tests.iter().any(|t| {
            rel == t
                || rel.starts_with(&format!(
                    "{}/",
                    t.trim_end_matches(".rs").trim_end_matches("/mod")
                ))
        })
    });
    files
}

/// The files of modules declared `#[cfg(test)] mod name;` (a `tests.rs` beside
/// the code it tests): test code, read as the `#[cfg(test)]` items inline are
/// (blanked), so it may import any layer.
fn test_module_files(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (rel, text) in files {
        // The folder a file's child modules live in.
        let dir = match rel.rsplit_once('/') {
            _ if rel == "lib.rs" => String::new(),
            Some((d, "mod.rs")) => format!("{d}/"),
            _ => format!("{}/", rel.trim_end_matches(".rs")),
        };
        let mut from = 0;
        while let Some(k) = text[from..].find("#[cfg(test)]") {
            let after = &text[from + k + "#[cfg(test)]".len()..];
            let item = after.trim_start();
            let item = item.strip_prefix("pub(crate) ").unwrap_or(item);
            if let Some(rest) = item.strip_prefix("mod ") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if rest[name.len()..].trim_start().starts_with(';') {
                    out.push(format!("{dir}{name}.rs"));
                    out.push(format!("{dir}{name}/mod.rs"));
                }
            }
            from += k + 1;
        }
    }
    out
}

#[test]
fn test_module_files_are_test_code() {
    // `backend/tests.rs` (declared `#[cfg(test)] mod tests;`) and its child may
    // import an upper layer; `backend/plain.rs` may not, and stays read.
    let f = without_test_modules(files(&[
        ("lib.rs", "mod backend; mod tokenizer;\n"),
        ("tokenizer.rs", "pub struct Tokenizer;\n"),
        ("backend/mod.rs", "mod plain;\n#[cfg(test)]\nmod tests;\n"),
        ("backend/plain.rs", "use crate::tokenizer::Tokenizer;\n"),
        (
            "backend/tests.rs",
            "use crate::tokenizer::Tokenizer;\nmod more;\n",
        ),
        (
            "backend/tests/more.rs",
            "use crate::tokenizer::Tokenizer;\n",
        ),
    ]));
    let kept: Vec<&str> = f.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        kept,
        [
            "lib.rs",
            "tokenizer.rs",
            "backend/mod.rs",
            "backend/plain.rs"
        ]
    );
}

fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
        .collect()
}

#[test]
fn the_checker_finds_forbidden_imports() {
    let src = files(&[
        (
            "lib.rs",
            "mod backend; mod tokenizer; mod error; mod encode;\npub use tokenizer::Tokenizer;\n",
        ),
        ("error.rs", "pub struct Error;\n"),
        (
            "tokenizer.rs",
            "use crate::error::Error;\npub struct Tokenizer;\n",
        ),
        (
            "encode/mod.rs",
            "pub(crate) mod parallel;\npub use crate::contract::SplitSpec;\n",
        ),
        ("encode/parallel.rs", "pub struct ParallelEncoder;\n"),
        ("contract/mod.rs", "pub struct SplitSpec;\n"),
        (
            "backend/mod.rs",
            r#"//! use crate::tokenizer::Doc; (a comment: not an import)
pub(crate) mod hf;
use crate::{
    error::Error,
    encode::{
        SplitSpec,
        parallel::ParallelEncoder as PE,
    },
};
const S: &str = "crate::load::Format";
fn f() -> crate::Tokenizer { todo!() }
#[cfg(test)]
mod tests {
    use crate::tokenizer::Tokenizer;
}
"#,
        ),
        (
            "backend/hf/mod.rs",
            "use super::super::encode::parallel;\nuse super::sentencepiece::Model;\n",
        ),
        ("backend/sentencepiece/mod.rs", "pub struct Model;\n"),
    ]);
    let (bad, _) = violations(&src);
    let expected = [
        "backend/mod.rs:3: `use crate::{ error::Error, encode::{ SplitSpec, parallel::ParallelEncoder as PE, }, };` resolves to `encode::parallel`",
        "backend/mod.rs:11: `crate::Tokenizer` resolves to `tokenizer`",
        "backend/hf/mod.rs:1: `use super::super::encode::parallel;` resolves to `encode::parallel`",
        "backend/hf/mod.rs:2: `use super::sentencepiece::Model;` resolves to `backend::sentencepiece`: `backend::hf` and `backend::sentencepiece` are peers",
    ];
    for e in expected {
        assert!(
            bad.iter().any(|b| b.starts_with(e)),
            "missing `{e}` in:\n{}",
            bad.join("\n")
        );
    }
    // `encode::SplitSpec` is `contract`'s (below `backend`): allowed; the
    // comment, the string and the test module are not imports.
    assert_eq!(bad.len(), expected.len(), "{}", bad.join("\n"));
    assert!(bad[0].contains("a higher layer"), "{}", bad[0]);
}

#[test]
fn the_checker_finds_cycles_and_unmapped_modules() {
    let src = files(&[
        ("lib.rs", "mod backend; mod nowhere;\n"),
        ("backend/mod.rs", "mod bpe; mod byte_memo;\n"),
        (
            "backend/bpe/mod.rs",
            "use crate::backend::byte_memo::Memo;\npub struct Bpe;\n",
        ),
        (
            "backend/byte_memo.rs",
            "pub struct Memo;\nfn f(_: crate::backend::bpe::Bpe) {}\n",
        ),
        ("nowhere.rs", "\n"),
    ]);
    let (bad, _) = violations(&src);
    assert!(
        bad.iter()
            .any(|b| b == "module `nowhere` has no entry in LAYERS"),
        "{}",
        bad.join("\n")
    );
    assert!(
        bad.iter()
            .any(|b| b
                .starts_with("import cycle: backend::bpe -> backend::byte_memo -> backend::bpe")),
        "{}",
        bad.join("\n")
    );
}

#[test]
fn use_trees_and_literals() {
    let paths: Vec<String> = use_tree("crate::a::{b, c::{d, e as f}, self, g::*}")
        .into_iter()
        .map(|(p, n)| format!("{}={}", p.join("::"), n.unwrap_or_default()))
        .collect();
    assert_eq!(
        paths,
        [
            "crate::a::b=b",
            "crate::a::c::d=d",
            "crate::a::c::e=f",
            "crate::a=a",
            "crate::a::g::*="
        ]
    );
    let s =
        strip("let c = '\"'; let l: &'a str = r#\"crate::x\"#; /* crate::y /* z */ */ crate::w");
    assert!(!s.contains("crate::x") && !s.contains("crate::y"), "{s}");
    assert!(s.contains("&'a str") && s.ends_with("crate::w"), "{s}");
}
