//! A `tokenizer.json`'s regex splits run on `fancy-regex`, for segments
//! holding a code point that `tokenizers` 1.0's pre-tokenizer (`bitcannon`,
//! Unicode 17) classes differently from the reference, Python `tokenizers`
//! (Unicode 16): the letters, marks and digits new in Unicode 17
//! (DESIGN.md claim 325).
//!
//! DeepSeek-V3's `[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+` took `" 𐥀"` (a
//! Sidetic letter) as one piece where the reference, for which U+10940 is
//! unassigned, splits `" "` and `"𐥀"`: other ids. `fancy-regex` reads
//! `regex-syntax`'s Unicode 16 tables, the reference's classes (claim 197
//! found the same split for tiktoken), and follows `tokenizers`' `Split`:
//! with `Isolated` each match and each non-empty gap between matches is a
//! piece, with `Removed` and `invert` only the matches are; each later
//! split applies to every piece of the one before. `Digits` splits on
//! `char::is_numeric`, as `tokenizers` does: the reference classes digits
//! new in Unicode 17 as digits there (its standard library's tables), so
//! this step keeps the standard library's class, not the regex's. A last
//! `ByteLevel` that splits is the same split on GPT-2's pattern, which it
//! applies `Isolated`. Accepted shapes: one such step, or a `Sequence` of
//! them ending in a `ByteLevel` that adds no prefix space (Llama-3, Qwen3,
//! DeepSeek-V3, gpt-oss, Xenova's gpt-3.5: `Split`s and a `ByteLevel` that
//! does not split; Command-R: `Digits` and a splitting `ByteLevel`).
//!
//! The class-run pre-tokenizers go the same way (claim 347):
//! `BertPreTokenizer` (MiniLM) and `Punctuation` (`Isolated`) isolate
//! punctuation by the reference's own predicate and `unicode_categories`
//! tables, which predate Unicode 10, for texts holding punctuation that
//! `bitcannon` classes otherwise; `Whitespace` is its regex,
//! `\w+|[^\w\s]+`, for texts holding a Unicode 17 letter. Each step is
//! checked against its own list ([`RegexSplit::needs`]). Anything else
//! keeps `tokenizers`' pre-tokenizer.

use fancy_regex::Regex;
use serde_json::Value;
use tokenizers::pipeline::Span;

use crate::backend::divergence::{BERT_PUNCTUATION, CodePointSet, UNICODE17};

/// The pattern a splitting `ByteLevel` pre-tokenizer applies (`tokenizers`'
/// `byte_level.rs`).
const GPT2_PATTERN: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// The `Whitespace` pre-tokenizer's pattern (`tokenizers`' `whitespace.rs`).
const WHITESPACE_PATTERN: &str = r"\w+|[^\w\s]+";

/// The file's splits, in order.
pub(super) struct RegexSplit {
    steps: Vec<Step>,
    /// The divergence lists of its steps ([`RegexSplit::needs`]).
    lists: Vec<&'static CodePointSet>,
}

/// One split.
enum Step {
    /// Matches of a regex, and the gaps between them too (`Isolated`) or
    /// not (`Removed` + `invert`).
    Regex(Regex, bool),
    /// `Digits`: each numeric char (`individual_digits`) or each run of
    /// them is a piece, and so is each gap.
    Numeric { each: bool },
    /// Each punctuation char a piece, and each run between them; with
    /// `bert` (`BertPreTokenizer`) whitespace is dropped too, without it
    /// (`Punctuation`, `Isolated`) it stays in the runs (claim 347).
    Punct { bert: bool },
}

impl RegexSplit {
    /// From the file's `pre_tokenizer`, or `None` for a shape not covered.
    pub(super) fn new(pre_tokenizer: &Value) -> Option<Self> {
        let items: Vec<&Value> = match pre_tokenizer.get("type")?.as_str()? {
            "Sequence" => pre_tokenizer
                .get("pretokenizers")?
                .as_array()?
                .iter()
                .collect(),
            "Split" | "Digits" | "ByteLevel" | "BertPreTokenizer" | "Whitespace"
            | "Punctuation" => vec![pre_tokenizer],
            _ => return None,
        };
        let mut steps = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item.get("type")?.as_str()? {
                "Split" => {
                    let (regex, keep_gaps) = split_step(item)?;
                    steps.push(Step::Regex(regex, keep_gaps));
                }
                "Digits" => {
                    // `tokenizers` reads a missing flag as false.
                    let each = match item.get("individual_digits") {
                        Some(v) => v.as_bool()?,
                        None => false,
                    };
                    steps.push(Step::Numeric { each });
                }
                "BertPreTokenizer" => steps.push(Step::Punct { bert: true }),
                // `tokenizers` 0.x: the matches of `\w+|[^\w\s]+` on the
                // `regex` crate (Unicode 16, as `fancy-regex`'s tables).
                "Whitespace" => {
                    steps.push(Step::Regex(Regex::new(WHITESPACE_PATTERN).ok()?, false))
                }
                // `Isolated` is the reference's default; other behaviors
                // keep `tokenizers`' pre-tokenizer.
                "Punctuation" => match item.get("behavior") {
                    None => steps.push(Step::Punct { bert: false }),
                    Some(b) if b.as_str()? == "Isolated" => steps.push(Step::Punct { bert: false }),
                    Some(_) => return None,
                },
                "ByteLevel" if i + 1 == items.len() => {
                    if item.get("add_prefix_space")?.as_bool()? {
                        return None;
                    }
                    // `use_regex` defaults to true in `tokenizers`.
                    if item.get("use_regex").map_or(Some(true), Value::as_bool)? {
                        steps.push(Step::Regex(Regex::new(GPT2_PATTERN).ok()?, true));
                    }
                }
                _ => return None,
            }
        }
        let mut lists: Vec<&'static CodePointSet> = Vec::new();
        for step in &steps {
            let list = match step {
                Step::Punct { .. } => &BERT_PUNCTUATION,
                Step::Regex(..) | Step::Numeric { .. } => &UNICODE17,
            };
            if !lists.iter().any(|l| std::ptr::eq(*l, list)) {
                lists.push(list);
            }
        }
        (!steps.is_empty()).then_some(Self { steps, lists })
    }

    /// Whether `text` holds a code point that `tokenizers`' pre-tokenizer
    /// classes differently from the reference for one of these steps: the
    /// text must then be split here.
    pub(super) fn needs(&self, text: &str) -> bool {
        self.lists.iter().any(|list| list.in_text(text))
    }

    /// The pieces of `text` (byte spans into it), or `None` when a regex
    /// gives up (its backtracking limit): the caller keeps `tokenizers`'
    /// pre-tokenizer then.
    pub(super) fn split(&self, text: &str) -> Option<Vec<Span>> {
        let len = u32::try_from(text.len()).ok()?;
        let mut pieces = vec![Span::new(0, len)];
        let mut next = Vec::new();
        for step in &self.steps {
            next.clear();
            for piece in &pieces {
                let (start, end) = (piece.start as usize, piece.end as usize);
                let hay = text.get(start..end)?;
                match step {
                    Step::Regex(regex, keep_gaps) => {
                        let mut at = 0;
                        for m in regex.find_iter(hay) {
                            let m = m.ok()?;
                            if m.start() == m.end() {
                                continue;
                            }
                            if *keep_gaps && m.start() > at {
                                next.push(span(start + at, start + m.start())?);
                            }
                            next.push(span(start + m.start(), start + m.end())?);
                            at = m.end();
                        }
                        if *keep_gaps && at < hay.len() {
                            next.push(span(start + at, end)?);
                        }
                    }
                    Step::Numeric { each } => split_numeric(hay, start, *each, &mut next)?,
                    Step::Punct { bert } => split_punct(hay, start, *bert, &mut next)?,
                }
            }
            std::mem::swap(&mut pieces, &mut next);
        }
        Some(pieces)
    }
}

/// `Digits` on `hay` (at `start` in the text): `char::is_numeric` (Nd, Nl
/// and No in the standard library's Unicode, 17 — which the reference's
/// `Digits` follows too: it isolates Tolong Siki digits), each numeric
/// char a piece or each run, and every gap a piece.
fn split_numeric(hay: &str, start: usize, each: bool, out: &mut Vec<Span>) -> Option<()> {
    let mut at = 0;
    let mut run: Option<usize> = None;
    for (i, c) in hay.char_indices() {
        if !c.is_numeric() {
            if let Some(r) = run.take() {
                out.push(span(start + r, start + i)?);
                at = i;
            }
            continue;
        }
        if i > at && run.is_none() {
            out.push(span(start + at, start + i)?);
        }
        if each {
            out.push(span(start + i, start + i + c.len_utf8())?);
            at = i + c.len_utf8();
        } else if run.is_none() {
            run = Some(i);
        }
    }
    if let Some(r) = run {
        out.push(span(start + r, start + hay.len())?);
    } else if at < hay.len() {
        out.push(span(start + at, start + hay.len())?);
    }
    Some(())
}

/// `BertPreTokenizer` (`bert`) or `Punctuation` (`Isolated`) on `hay` (at
/// `start` in the text), as the reference (`tokenizers` 0.x) splits: each
/// char that `char::is_ascii_punctuation` or `unicode_categories`'
/// `is_punctuation` takes (the reference's own tables, which predate
/// Unicode 10) is a piece of its own, and so is each run between them;
/// `BertPreTokenizer` first drops `char::is_whitespace`.
fn split_punct(hay: &str, start: usize, bert: bool, out: &mut Vec<Span>) -> Option<()> {
    use unicode_categories::UnicodeCategories;
    let mut run: Option<usize> = None;
    for (i, c) in hay.char_indices() {
        let punct = c.is_ascii_punctuation() || c.is_punctuation();
        if punct || (bert && c.is_whitespace()) {
            if let Some(r) = run.take() {
                out.push(span(start + r, start + i)?);
            }
            if punct {
                out.push(span(start + i, start + i + c.len_utf8())?);
            }
        } else if run.is_none() {
            run = Some(i);
        }
    }
    if let Some(r) = run {
        out.push(span(start + r, start + hay.len())?);
    }
    Some(())
}

fn span(start: usize, end: usize) -> Option<Span> {
    Some(Span::new(
        u32::try_from(start).ok()?,
        u32::try_from(end).ok()?,
    ))
}

/// A `Split` on a regex: `Isolated` and not inverted (matches and gaps
/// are pieces), or `Removed` and inverted (matches are the pieces, the
/// gaps between them are dropped). A missing `behavior` is `Isolated` and a
/// missing `invert` false, as `tokenizers` reads them: the canonical form
/// writes a splitting `ByteLevel` as a `Split` on GPT-2's pattern with
/// neither.
fn split_step(item: &Value) -> Option<(Regex, bool)> {
    let invert = match item.get("invert") {
        Some(v) => v.as_bool()?,
        None => false,
    };
    let behavior = match item.get("behavior") {
        Some(v) => v.as_str()?,
        None => "Isolated",
    };
    let keep_gaps = match (behavior, invert) {
        ("Isolated", false) => true,
        ("Removed", true) => false,
        _ => return None,
    };
    let regex = Regex::new(item.get("pattern")?.get("Regex")?.as_str()?).ok()?;
    Some((regex, keep_gaps))
}

#[cfg(test)]
mod tests {
    use super::RegexSplit;
    use crate::backend::divergence::{BERT_PUNCTUATION, UNICODE17};
    use crate::test_support::shared_dir;
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use tokenizers::pipeline::{PipelineTokenizer, PreTokenizer, PreTokenizerScratch, Span};

    /// The pieces `split` cuts `text` into.
    fn pieces<'a>(split: &RegexSplit, text: &'a str) -> Vec<&'a str> {
        split
            .split(text)
            .unwrap()
            .iter()
            .map(|s| &text[s.range()])
            .collect()
    }

    /// Every shared `tokenizer.json` whose pre-tokenizer this module takes,
    /// with that pre-tokenizer alone in a `tokenizers` pipeline.
    fn shapes() -> Vec<(String, RegexSplit, PipelineTokenizer)> {
        let hub = shared_dir().join("hf-cache/hub");
        let mut files: Vec<_> = std::fs::read_dir(&hub)
            .unwrap_or_else(|e| panic!("{}: {e} (set RTOK_SHARED_DIR; README.md)", hub.display()))
            .flatten()
            .flat_map(|model| std::fs::read_dir(model.path().join("snapshots")).into_iter())
            .flatten()
            .flatten()
            .map(|snap| snap.path().join("tokenizer.json"))
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        let byte_level = json!({"type": "ByteLevel", "add_prefix_space": false,
                                "trim_offsets": true, "use_regex": true});
        let digits = |each: bool| json!({"type": "Digits", "individual_digits": each});
        let seq = |items: Vec<Value>| json!({"type": "Sequence", "pretokenizers": items});
        // Shapes no shared file has: `Digits` on runs, alone and before a
        // splitting `ByteLevel`; a splitting `ByteLevel` alone (GPT-2).
        let synthetic = [
            ("Digits(runs)", digits(false)),
            ("Digits(each)", digits(true)),
            ("ByteLevel", byte_level.clone()),
            (
                "Digits(runs)+ByteLevel",
                seq(vec![digits(false), byte_level]),
            ),
            ("Whitespace", json!({"type": "Whitespace"})),
            (
                "Punctuation",
                json!({"type": "Punctuation", "behavior": "Isolated"}),
            ),
            ("BertPreTokenizer", json!({"type": "BertPreTokenizer"})),
        ];
        let mut out = Vec::new();
        let read = |file: &std::path::PathBuf| -> (String, Value) {
            let value: Value =
                serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
            let pre = value.get("pre_tokenizer").cloned().unwrap_or(Value::Null);
            (file.display().to_string(), pre)
        };
        let all = files
            .iter()
            .map(read)
            .chain(synthetic.into_iter().map(|(n, v)| (n.to_owned(), v)));
        for (name, pre) in all {
            let raw = RegexSplit::new(&pre);
            let mut alone = json!({
                "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
                "normalizer": null, "pre_tokenizer": pre, "post_processor": null,
                "decoder": null,
                "model": {"type": "BPE", "dropout": null, "unk_token": null,
                          "continuing_subword_prefix": null, "end_of_word_suffix": null,
                          "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                          "vocab": byte_alphabet(), "merges": []},
            });
            tokenizers::canonicalize_value(&mut alone).unwrap();
            // The backend reads the canonical form (`HfBackend::prepare`);
            // the file's own form must give the same splits.
            let canonical = RegexSplit::new(&alone["pre_tokenizer"]);
            assert_eq!(canonical.is_some(), raw.is_some(), "{name}");
            let pipe = tokenizers::from_json(&alone.to_string()).unwrap();
            for (form, split) in [("canonical", canonical), ("file", raw)] {
                if let Some(split) = split {
                    out.push((format!("{name} ({form})"), split, pipe.clone()));
                }
            }
        }
        out
    }

    /// Whether either engine's classes may differ on `c` (the regex splits'
    /// or `BertPreTokenizer`'s).
    fn diverges(c: char) -> bool {
        UNICODE17.contains(c) || BERT_PUNCTUATION.contains(c)
    }

    /// GPT-2's 256 byte chars as a vocabulary: what a byte-level BPE must hold.
    fn byte_alphabet() -> Value {
        let mut shifted = 0;
        let vocab: serde_json::Map<String, Value> = (0u32..256)
            .map(|b| {
                let printable = matches!(b, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF);
                let c = if printable {
                    b
                } else {
                    shifted += 1;
                    255 + shifted
                };
                (char::from_u32(c).unwrap().to_string(), json!(b))
            })
            .collect();
        Value::Object(vocab)
    }

    fn pairs(spans: &[Span]) -> Vec<(u32, u32)> {
        spans.iter().map(|s| (s.start, s.end)).collect()
    }

    /// Off the Unicode 17 table both engines class every char alike, so
    /// the route's pieces must be `tokenizers`' own.
    fn assert_same(shapes: &[(String, RegexSplit, PipelineTokenizer)], text: &str) {
        assert!(!text.chars().any(diverges));
        let mut scratch = PreTokenizerScratch::default();
        for (file, split, pipe) in shapes {
            let mut want = Vec::new();
            pipe.get_pre_tokenizer()
                .pre_tokenize(text, &mut scratch, &mut want)
                .unwrap();
            let got = split.split(text).expect("no regex gave up");
            assert_eq!(pairs(&got), pairs(&want), "{file}: {text:?}");
        }
    }

    #[test]
    fn accepts_the_shapes_it_can_run_and_no_others() {
        let bl = |prefix: Value, regex: Value| json!({"type": "ByteLevel", "add_prefix_space": prefix, "use_regex": regex});
        let digits = json!({"type": "Digits", "individual_digits": true});
        let seq = |items: Vec<Value>| json!({"type": "Sequence", "pretokenizers": items});
        for ok in [
            seq(vec![digits.clone(), bl(json!(false), json!(true))]),
            bl(json!(false), json!(true)),
            digits.clone(),
            json!({"type": "BertPreTokenizer"}),
            seq(vec![json!({"type": "BertPreTokenizer"}), digits.clone()]),
            json!({"type": "Whitespace"}),
            json!({"type": "Punctuation"}),
            json!({"type": "Punctuation", "behavior": "Isolated"}),
        ] {
            assert!(RegexSplit::new(&ok).is_some(), "{ok}");
        }
        for refused in [
            // A prefix space is more than a split.
            seq(vec![digits.clone(), bl(json!(true), json!(true))]),
            seq(vec![
                digits.clone(),
                json!({"type": "ByteLevel", "use_regex": true}),
            ]),
            // A ByteLevel that neither splits nor follows a split adds nothing.
            bl(json!(false), json!(false)),
            // ByteLevel must come last; other pre-tokenizers are not covered.
            seq(vec![bl(json!(false), json!(true)), digits.clone()]),
            seq(vec![json!({"type": "WhitespaceSplit"}), digits.clone()]),
            json!({"type": "Punctuation", "behavior": "Removed"}),
            json!({"type": "Digits", "individual_digits": "yes"}),
            Value::Null,
        ] {
            assert!(RegexSplit::new(&refused).is_none(), "{refused}");
        }
    }

    /// Only a step's own divergent code points send a text here: a BERT
    /// split ignores Unicode 17 letters, a regex split ignores the
    /// punctuation `BertPreTokenizer` classes differently.
    #[test]
    fn each_step_checks_its_own_table() {
        let bert = RegexSplit::new(&json!({"type": "BertPreTokenizer"})).unwrap();
        let digits =
            RegexSplit::new(&json!({"type": "Digits", "individual_digits": true})).unwrap();
        let (new_letter, new_punct) = ("a\u{10940}b", "a\u{2E4E}b");
        assert!(bert.needs(new_punct) && !bert.needs(new_letter));
        assert!(digits.needs(new_letter) && !digits.needs(new_punct));
        assert!(!bert.needs("plain text, “quoted” — and 中文。"));
        // The reference's split: U+2E4E stays inside its word, U+00BF and
        // ASCII punctuation are pieces, whitespace of every kind goes.
        let text = "a\u{2E4E}b ¿x!\u{3000}y\u{166D}z";
        assert_eq!(
            pieces(&bert, text),
            ["a\u{2E4E}b", "¿", "x", "!", "y", "\u{166D}", "z"]
        );
    }

    /// `tokenizers` 0.x's own unit cases for the three class-run
    /// pre-tokenizers (`pre_tokenizers/{bert,punctuation,whitespace}.rs`):
    /// the crate-side steps split as the reference does.
    #[test]
    fn the_references_own_cases() {
        let cases: [(Value, &str, &[&str]); 6] = [
            (
                json!({"type": "BertPreTokenizer"}),
                "Hey friend!     How are you?!?",
                &["Hey", "friend", "!", "How", "are", "you", "?", "!", "?"],
            ),
            // `chinese_chars`, on the text its normalizer made (CJK padded).
            (
                json!({"type": "BertPreTokenizer"}),
                " 野  口  里  佳  Noguchi Rika",
                &["野", "口", "里", "佳", "Noguchi", "Rika"],
            ),
            (
                json!({"type": "Punctuation"}),
                "Hey friend!     How are you?!?",
                &["Hey friend", "!", "     How are you", "?", "!", "?"],
            ),
            (
                json!({"type": "Whitespace"}),
                "Hey man!",
                &["Hey", "man", "!"],
            ),
            (
                json!({"type": "Whitespace"}),
                "How are you doing?",
                &["How", "are", "you", "doing", "?"],
            ),
            (json!({"type": "Whitespace"}), "\n", &[]),
        ];
        for (pre, text, want) in cases {
            let split = RegexSplit::new(&pre).unwrap();
            assert_eq!(pieces(&split, text), want, "{pre} {text:?}");
        }
    }

    #[test]
    fn splits_as_the_files_pre_tokenizer_on_the_corpus() {
        let shapes = shapes();
        let names: Vec<&str> = shapes.iter().map(|s| s.0.as_str()).collect();
        // Llama-3 (two), Qwen3, DeepSeek-V3, gpt-oss, gpt-3.5, Mistral-Nemo,
        // Command-R and the four synthetic shapes, each as written and in
        // canonical form.
        assert!(shapes.len() >= 24, "{names:?}");
        assert!(names.iter().any(|n| n.contains("command-r")), "{names:?}");
        for probe in [
            "Hello world's 12345 a1b22c333 ½ Ⅻ ²³ ٣٤٥ ١٢ 𝟙𝟚",
            "  leading\tand  trailing  \n\n\r\n x  ",
            "I'LL we'Re they've 'd 's'll''m",
            "中文字符１２３。。。！ emoji 🦀🦀 and ZWJ 👩\u{200d}💻",
            "combining e\u{301}\u{302} ́ alone, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ᐊᓂᔑᓈ",
            "",
        ] {
            assert_same(&shapes, probe);
        }
        let corpus = shared_dir().join("corpus");
        let mut dirs: Vec<_> = std::fs::read_dir(&corpus).unwrap().flatten().collect();
        dirs.sort_by_key(|d| d.path());
        for dir in dirs {
            let Ok(files) = std::fs::read_dir(dir.path()) else {
                continue;
            };
            for file in files.flatten() {
                let Ok(text) = std::fs::read_to_string(file.path()) else {
                    continue;
                };
                let mut end = text.len().min(48 << 10);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                let text: String = text[..end].chars().filter(|&c| !diverges(c)).collect();
                assert_same(&shapes, &text);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Texts from an alphabet of the classes the patterns tell apart:
        /// letters of each case, marks, digits of every numeric category,
        /// spaces, newlines, apostrophes, punctuation, symbols, CJK, emoji.
        #[test]
        fn splits_as_the_files_pre_tokenizer_on_hostile_alphabets(
            text in proptest::collection::vec(prop::sample::select(vec![
                "a", "Z", "é", "\u{301}", "ǅ", "ʰ", "1", "٣", "²", "½", "Ⅻ", "𝟙", " ", "  ",
                "\t", "\n", "\r\n", "\u{a0}", "\u{3000}", "'", "'s", "'LL", "-", ".", "$",
                "€", "中", "文", "🦀", "\u{200d}", "ﬁ", "\u{10D40}", "\u{1CCF0}",
            ]), 0..40).prop_map(|v| v.concat())
        ) {
            thread_local! {
                static SHAPES: Vec<(String, RegexSplit, PipelineTokenizer)> = shapes();
            }
            SHAPES.with(|shapes| assert_same(shapes, &text));
        }
    }
}
