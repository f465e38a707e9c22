//! Mistral's `tekken.json`, read as mistral-common's `Tekkenizer` reads it:
//! tiktoken ranks (base64 bytes) behind a block of special tokens that take
//! the first `default_num_special_tokens` ids, the file's own pre-tokenizer
//! pattern, and a vocabulary cut to `default_vocab_size`.
//!
//! The result runs on the crate's tiktoken backend with every ordinary id
//! shifted by the special block's size (the merge order, a rank order, is
//! unchanged by the shift). Like the `Tekkenizer`, it never parses
//! special-token text: `[INST]` typed in a text is text.

use std::path::Path;

use base64::Engine as _;
use rustc_hash::FxHashMap;
use serde::Deserialize;

use crate::backend::tiktoken::{SpecialRoles, TiktokenSpec};
use crate::error::{Error, Result};

/// The versions mistral-common knows (`TokenizerVersion`).
const VERSIONS: &[&str] = &["v1", "v2", "v3", "v7", "v11", "v13", "v15"];

/// Versions after which a file must list its special tokens.
const LISTS_SPECIALS_FROM: &[&str] = &["v11", "v13", "v15"];

/// The special tokens of a file that lists none (mistral-common's
/// `DEPRECATED_SPECIAL_TOKENS`), at ids 0, 1, 2, ….
const DEFAULT_SPECIALS: &[&str] = &[
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
];

/// The name of the filler special token at `id` (`<SPECIAL_42>`).
fn filler(id: u32) -> String {
    format!("<SPECIAL_{id}>")
}

#[derive(Deserialize)]
struct File {
    config: Config,
    vocab: Vec<Entry>,
    special_tokens: Option<Vec<Special>>,
}

#[derive(Deserialize)]
struct Config {
    pattern: String,
    default_vocab_size: u32,
    default_num_special_tokens: u32,
    version: Option<String>,
}

#[derive(Deserialize)]
struct Entry {
    rank: u32,
    token_bytes: String,
}

#[derive(Deserialize)]
struct Special {
    rank: u32,
    token_str: String,
}

/// What the loader keeps of a Tekken file beside the backend's spec.
pub(crate) struct Tekken {
    pub spec: TiktokenSpec,
    /// The file's `config.version` (`v3`, `v7`, …).
    pub version: String,
}

/// Whether a JSON document's head looks like a Tekken file: its first key is
/// `config`, `vocab` or `special_tokens` (a `tokenizer.json` has none of
/// them at the top level).
pub(crate) fn looks_like_tekken(head: &[u8]) -> bool {
    let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let mut rest = body.iter().skip_while(|b| b.is_ascii_whitespace());
    if rest.next() != Some(&b'{') {
        return false;
    }
    let rest: Vec<u8> = rest
        .skip_while(|b| b.is_ascii_whitespace())
        .take(18)
        .copied()
        .collect();
    [&b"\"config\""[..], b"\"vocab\"", b"\"special_tokens\""]
        .iter()
        .any(|key| rest.starts_with(key))
}

/// Reads `bytes` (the whole file) as mistral-common does, refusing what it
/// refuses.
pub(crate) fn read(file: &Path, bytes: &[u8]) -> Result<Tekken> {
    let bad = |detail: String| Error::parse(file, detail);
    let doc: File = serde_json::from_slice(bytes)
        .map_err(|e| bad(format!("not a tekken.json (config, vocab): {e}")))?;
    let version = doc.config.version.unwrap_or_default();
    if !VERSIONS.contains(&version.as_str()) {
        return Err(bad(format!(
            "unknown tekken version {version:?} (mistral-common knows {VERSIONS:?})"
        )));
    }
    let num_special = doc.config.default_num_special_tokens;
    let vocab_size = doc.config.default_vocab_size;
    let entries = u32::try_from(doc.vocab.len()).map_err(|_| bad("vocabulary too large".into()))?;
    if vocab_size > entries.saturating_add(num_special) || vocab_size < num_special {
        return Err(bad(format!(
            "default_vocab_size {vocab_size} does not fit {entries} entries and {num_special} special tokens"
        )));
    }
    let specials = specials(file, doc.special_tokens, &version, num_special)?;
    let inner = vocab_size - num_special;
    let mut ranks: FxHashMap<Vec<u8>, u32> =
        FxHashMap::with_capacity_and_hasher(inner as usize, Default::default());
    let engine = base64::engine::general_purpose::STANDARD;
    for (i, entry) in doc.vocab.iter().take(inner as usize).enumerate() {
        let i = i as u32;
        if entry.rank != i {
            return Err(bad(format!("vocab entry {i} has rank {}", entry.rank)));
        }
        let token = engine
            .decode(&entry.token_bytes)
            .map_err(|e| bad(format!("vocab entry {i}: token_bytes is not base64: {e}")))?;
        if i < 256 && token != [i as u8] {
            return Err(bad(format!("vocab entry {i} is not the single byte {i}")));
        }
        if ranks.insert(token, i + num_special).is_some() {
            return Err(bad(format!("vocab entry {i} repeats an earlier token")));
        }
    }
    if inner < 256 {
        return Err(bad(format!(
            "{inner} ordinary tokens: the 256 single bytes are required"
        )));
    }
    let roles = SpecialRoles {
        bos: Some("<s>".into()),
        eos: Some("</s>".into()),
        unk: Some("<unk>".into()),
        pad: Some("<pad>".into()),
    };
    let add_bos = specials.iter().find(|(t, _)| t == "<s>").map(|&(_, id)| id);
    Ok(Tekken {
        spec: TiktokenSpec {
            ranks,
            specials,
            pattern: doc.config.pattern.into(),
            roles,
            add_bos,
            runs_apart: true,
        },
        version,
    })
}

/// The file's special tokens (or mistral-common's defaults for an older
/// file), then fillers up to `count`: each at its rank, every text once.
fn specials(
    file: &Path,
    listed: Option<Vec<Special>>,
    version: &str,
    count: u32,
) -> Result<Vec<(String, u32)>> {
    let bad = |detail: String| Error::parse(file, detail);
    let named: Vec<(String, u32)> = match listed {
        Some(list) => list.into_iter().map(|s| (s.token_str, s.rank)).collect(),
        None if LISTS_SPECIALS_FROM.contains(&version) => {
            return Err(bad(format!(
                "a {version} tekken.json must list its special_tokens"
            )));
        }
        None => DEFAULT_SPECIALS
            .iter()
            .zip(0u32..)
            .map(|(t, id)| ((*t).to_owned(), id))
            .collect(),
    };
    let defined = u32::try_from(named.len()).unwrap_or(u32::MAX);
    if defined > count {
        return Err(bad(format!(
            "{defined} special tokens for {count} special ids"
        )));
    }
    let mut out = named;
    out.extend((defined..count).map(|id| (filler(id), id)));
    let mut texts: Vec<&str> = out.iter().map(|(t, _)| t.as_str()).collect();
    texts.sort_unstable();
    if texts.windows(2).any(|w| w[0] == w[1]) {
        return Err(bad("two special tokens share a text".into()));
    }
    let mut ids: Vec<u32> = out.iter().map(|&(_, id)| id).collect();
    ids.sort_unstable();
    if ids.iter().copied().ne(0..count) {
        return Err(bad(format!(
            "special token ranks are not 0..{count}, each once"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_tekken_heads_only() {
        assert!(looks_like_tekken(b"{\n  \"config\": {\"pattern\""));
        assert!(looks_like_tekken(b"\xEF\xBB\xBF{\"vocab\": ["));
        assert!(!looks_like_tekken(b"{\"version\": \"1.0\", \"model\""));
        assert!(!looks_like_tekken(b"{\"added_tokens\": []"));
        assert!(!looks_like_tekken(b"[\"config\"]"));
    }

    /// The shared files carry the pattern the byte-level engine knows as
    /// Tekken's (else they would run on the regex, 40x slower).
    #[test]
    fn shared_files_carry_the_tekken_pattern() {
        let dir = crate::test_support::shared_dir().join("fixtures/mistral");
        for name in ["tekken_240718.json", "tekken_240911.json"] {
            let path = dir.join(name);
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let pattern = read(&path, &bytes).unwrap().spec.pattern;
            assert_eq!(
                pattern,
                crate::backend::tiktoken::encodings::TEKKEN_PATTERN,
                "{name}"
            );
        }
    }

    #[test]
    fn refuses_what_mistral_common_refuses() {
        let file = Path::new("tekken.json");
        // 256 ordinary tokens after 20 special ids.
        let doc = |version: &str, specials: &str, size: u32| {
            let vocab: Vec<String> = (0..256u32)
                .map(|i| {
                    let b = base64::engine::general_purpose::STANDARD.encode([i as u8]);
                    format!("{{\"rank\": {i}, \"token_bytes\": \"{b}\", \"token_str\": null}}")
                })
                .collect();
            format!(
                "{{\"config\": {{\"pattern\": \"\\\\s+\", \"num_vocab_tokens\": 256, \"default_vocab_size\": {size}, \"default_num_special_tokens\": 20, \"version\": \"{version}\"}}, \"vocab\": [{}]{specials}}}",
                vocab.join(",")
            )
        };
        let old = read(file, doc("v3", "", 276).as_bytes()).unwrap();
        assert_eq!(old.spec.specials[3], ("[INST]".to_owned(), 3));
        assert_eq!(old.spec.ranks.get(&b"a"[..]), Some(&(97 + 20)));
        let listed =
            ", \"special_tokens\": [{\"rank\": 0, \"token_str\": \"<unk>\", \"is_control\": true}]";
        let t = read(file, doc("v13", listed, 276).as_bytes()).unwrap();
        assert_eq!(
            t.spec.specials[..3],
            [
                ("<unk>".to_owned(), 0),
                ("<SPECIAL_1>".to_owned(), 1),
                ("<SPECIAL_2>".to_owned(), 2)
            ]
        );
        assert_eq!(t.spec.specials.len(), 20);
        for (version, specials, size) in [
            ("v9", "", 276),
            ("v13", "", 276),
            ("v3", "", 300),
            (
                "v3",
                ", \"special_tokens\": [{\"rank\": 0, \"token_str\": \"a\"}, {\"rank\": 0, \"token_str\": \"b\"}]",
                276,
            ),
        ] {
            assert!(
                read(file, doc(version, specials, size).as_bytes()).is_err(),
                "{version} {specials} {size}"
            );
        }
        assert!(read(file, b"{\"config\": 1}").is_err());
    }
}
