//! A `tokenizer.json`'s regex splits run on `fancy-regex`, for segments
//! holding a code point that `tokenizers` 1.0's pre-tokenizer (`bitcannon`,
//! Unicode 17) classes differently from the reference, Python `tokenizers`
//! (Unicode 16): the letters, marks and digits new in Unicode 17
//! (DESIGN.md invariant `unicode-classes-are-reference`).
//!
//! DeepSeek-V3's `[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+` took `" 𐥀"` (a
//! Sidetic letter) as one piece where the reference, for which U+10940 is
//! unassigned, splits `" "` and `"𐥀"`: other ids. `fancy-regex` reads
//! `regex-syntax`'s Unicode 16 tables, the reference's classes (invariant
//! `unicode-classes-are-reference`
//! found the same split for tiktoken). Each step is the reference's
//! `NormalizedString::split(pattern, behavior)` (invariant `crate-steps-equal-reference`): the
//! pattern's
//! matches and the gaps between them, inverted or not, then `Removed`,
//! `Isolated`, `MergedWithPrevious`, `MergedWithNext` or `Contiguous` as
//! its fold has them, empty pieces dropped; each later step applies to
//! every piece of the one before. Patterns: a regex, a string, `Digits`'
//! `char::is_numeric` (the reference classes digits new in Unicode 17 as
//! digits there, its standard library's tables, so this step keeps the
//! standard library's class, not the regex's), `Punctuation`'s and
//! `BertPreTokenizer`'s punctuation by the reference's own predicate and
//! `unicode_categories` tables, which predate Unicode 10 (invariant
//! `unicode-classes-are-reference`),
//! whitespace, one char. Shapes: those steps (`Split`, `Digits`,
//! `Punctuation`, `BertPreTokenizer`, `Whitespace`, `WhitespaceSplit`,
//! `CharDelimiterSplit`) alone or in a `Sequence`, which may end in a
//! `ByteLevel` that adds no prefix space (a splitting one is the same split
//! on GPT-2's pattern, `Isolated`). Anything else keeps `tokenizers`'
//! pre-tokenizer.
//!
//! Texts go here when they hold a code point a step's engine classes
//! differently ([`RegexSplit::needs`], each step checked against its own
//! list), and every text does for a file whose `Split` regex `tokenizers`
//! 1.0 has no engine for (BLOOM's; [`RegexSplit::always`]).

use fancy_regex::Regex;
use serde_json::Value;
use tokenizers::pipeline::Span;

use crate::backend::divergence::{BERT_PUNCTUATION, CodePointSet, UNICODE17};

/// The pattern a splitting `ByteLevel` pre-tokenizer applies (`tokenizers`'
/// `byte_level.rs`).
const GPT2_PATTERN: &str = crate::contract::family::BYTE_LEVEL_PATTERN;

/// The `Whitespace` pre-tokenizer's pattern (`tokenizers`' `whitespace.rs`).
const WHITESPACE_PATTERN: &str = r"\w+|[^\w\s]+";

/// The file's splits, in order.
pub(super) struct RegexSplit {
    steps: Vec<Step>,
    /// The divergence lists of its steps ([`RegexSplit::needs`]).
    lists: Vec<&'static CodePointSet>,
    /// Every text splits here: `tokenizers` 1.0 cannot run the file's
    /// pre-tokenizer (a `Split` regex it has no engine for, invariant
    /// `crate-steps-equal-reference`).
    always: bool,
}

/// What one split matches.
enum Matcher {
    Regex(Regex),
    /// A `Split` on a string: its non-overlapping occurrences.
    Literal(String),
    /// `char::is_ascii_punctuation` or `unicode_categories`' `is_punctuation`
    /// (`Punctuation`, `BertPreTokenizer`): the reference's own tables.
    Punct,
    /// `char::is_whitespace` (`WhitespaceSplit`, `BertPreTokenizer`).
    Space,
    /// One char (`CharDelimiterSplit`).
    Char(char),
    /// `char::is_numeric` (`Digits`).
    Numeric,
}

/// `tokenizers`' `SplitDelimiterBehavior`: what becomes of the matches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Behavior {
    Removed,
    Isolated,
    MergedWithPrevious,
    MergedWithNext,
    Contiguous,
}

impl Behavior {
    /// The file's spelling; a missing one is `Isolated`, as `tokenizers`
    /// reads it.
    fn read(item: &Value) -> Option<Self> {
        Some(match item.get("behavior").map(Value::as_str) {
            None => Self::Isolated,
            Some(Some("Removed")) => Self::Removed,
            Some(Some("Isolated")) => Self::Isolated,
            Some(Some("MergedWithPrevious")) => Self::MergedWithPrevious,
            Some(Some("MergedWithNext")) => Self::MergedWithNext,
            Some(Some("Contiguous")) => Self::Contiguous,
            Some(_) => return None,
        })
    }
}

/// One split: the reference's `NormalizedString::split(pattern, behavior)`
/// with the pattern's matches inverted or not.
struct Step {
    matcher: Matcher,
    behavior: Behavior,
    invert: bool,
}

impl Step {
    fn new(matcher: Matcher, behavior: Behavior) -> Self {
        Self {
            matcher,
            behavior,
            invert: false,
        }
    }

    /// The reference's `find_matches` of the pattern on `hay`: matches and
    /// the gaps between them, in order, covering it (a regex's empty
    /// matches included, as its engine yields them).
    fn matches(&self, hay: &str, out: &mut Vec<(usize, usize, bool)>) -> Option<()> {
        let mut at = 0;
        let mut push = |s: usize, e: usize, out: &mut Vec<(usize, usize, bool)>| {
            if at != s {
                out.push((at, s, false));
            }
            out.push((s, e, true));
            at = e;
        };
        match &self.matcher {
            Matcher::Regex(regex) => {
                for m in regex.find_iter(hay) {
                    let m = m.ok()?;
                    push(m.start(), m.end(), out);
                }
            }
            Matcher::Literal(literal) => {
                for (s, m) in hay.match_indices(literal.as_str()) {
                    push(s, s + m.len(), out);
                }
            }
            matcher => {
                for (i, c) in hay.char_indices() {
                    let hit = match matcher {
                        Matcher::Punct => is_punct(c),
                        Matcher::Space => c.is_whitespace(),
                        Matcher::Char(d) => c == *d,
                        _ => c.is_numeric(),
                    };
                    if hit {
                        push(i, i + c.len_utf8(), out);
                    }
                }
            }
        }
        if at != hay.len() {
            out.push((at, hay.len(), false));
        }
        Some(())
    }

    /// The pieces of `hay` (at `start` in the text), appended to `out`.
    fn split(
        &self,
        hay: &str,
        start: usize,
        scratch: &mut Vec<(usize, usize, bool)>,
        out: &mut Vec<Span>,
    ) -> Option<()> {
        scratch.clear();
        self.matches(hay, scratch)?;
        if self.invert {
            scratch.iter_mut().for_each(|m| m.2 = !m.2);
        }
        // `(start, end, removed)`, as the reference's `split` folds them.
        let mut pieces: Vec<(usize, usize, bool)> = Vec::with_capacity(scratch.len());
        let mut previous = false;
        match self.behavior {
            Behavior::Removed => pieces.extend(scratch.iter().copied()),
            Behavior::Isolated => pieces.extend(scratch.iter().map(|&(s, e, _)| (s, e, false))),
            Behavior::Contiguous | Behavior::MergedWithPrevious => {
                for &(s, e, hit) in scratch.iter() {
                    let merge = match self.behavior {
                        Behavior::Contiguous => hit == previous,
                        _ => hit && !previous,
                    };
                    match pieces.last_mut() {
                        Some(last) if merge => last.1 = e,
                        _ => pieces.push((s, e, false)),
                    }
                    previous = hit;
                }
            }
            Behavior::MergedWithNext => {
                for &(s, e, hit) in scratch.iter().rev() {
                    match pieces.last_mut() {
                        Some(last) if hit && !previous => last.0 = s,
                        _ => pieces.push((s, e, false)),
                    }
                    previous = hit;
                }
                pieces.reverse();
            }
        }
        // Removed matches go, and empty pieces (the reference drops them).
        for (s, e, removed) in pieces {
            if !removed && s < e {
                out.push(span(start + s, start + e)?);
            }
        }
        Some(())
    }
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
            | "WhitespaceSplit" | "Punctuation" | "CharDelimiterSplit" => vec![pre_tokenizer],
            _ => return None,
        };
        let mut steps = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item.get("type")?.as_str()? {
                "Split" => steps.push(split_step(item)?),
                "Digits" => {
                    // `tokenizers` reads a missing flag as false.
                    let each = match item.get("individual_digits") {
                        Some(v) => v.as_bool()?,
                        None => false,
                    };
                    let behavior = if each {
                        Behavior::Isolated
                    } else {
                        Behavior::Contiguous
                    };
                    steps.push(Step::new(Matcher::Numeric, behavior));
                }
                "BertPreTokenizer" => {
                    steps.push(Step::new(Matcher::Space, Behavior::Removed));
                    steps.push(Step::new(Matcher::Punct, Behavior::Isolated));
                }
                // `tokenizers` 0.x: the matches of `\w+|[^\w\s]+` on the
                // `regex` crate (Unicode 16, as `fancy-regex`'s tables).
                "Whitespace" => steps.push(Step {
                    matcher: Matcher::Regex(Regex::new(WHITESPACE_PATTERN).ok()?),
                    behavior: Behavior::Removed,
                    invert: true,
                }),
                "WhitespaceSplit" => steps.push(Step::new(Matcher::Space, Behavior::Removed)),
                "CharDelimiterSplit" => {
                    let mut chars = item.get("delimiter")?.as_str()?.chars();
                    let (Some(c), None) = (chars.next(), chars.next()) else {
                        return None;
                    };
                    steps.push(Step::new(Matcher::Char(c), Behavior::Removed));
                }
                "Punctuation" => steps.push(Step::new(Matcher::Punct, Behavior::read(item)?)),
                "ByteLevel" if i + 1 == items.len() => {
                    if item.get("add_prefix_space")?.as_bool()? {
                        return None;
                    }
                    // `use_regex` defaults to true in `tokenizers`.
                    if item.get("use_regex").map_or(Some(true), Value::as_bool)? {
                        let regex = Regex::new(GPT2_PATTERN).ok()?;
                        steps.push(Step::new(Matcher::Regex(regex), Behavior::Isolated));
                    }
                }
                _ => return None,
            }
        }
        let mut lists: Vec<&'static CodePointSet> = Vec::new();
        for step in &steps {
            let list = match step.matcher {
                Matcher::Punct => &BERT_PUNCTUATION,
                Matcher::Regex(_) | Matcher::Numeric => &UNICODE17,
                Matcher::Literal(_) | Matcher::Space | Matcher::Char(_) => continue,
            };
            if !lists.iter().any(|l| std::ptr::eq(*l, list)) {
                lists.push(list);
            }
        }
        (!steps.is_empty()).then_some(Self {
            steps,
            lists,
            always: false,
        })
    }

    /// Every text splits here from now on (invariant `crate-steps-equal-reference`).
    pub(super) fn always(self) -> Self {
        Self {
            always: true,
            ..self
        }
    }

    /// Whether `text` must be split here: always, or when it holds a code
    /// point that `tokenizers`' pre-tokenizer classes differently from the
    /// reference for one of these steps.
    pub(super) fn needs(&self, text: &str) -> bool {
        self.needs_in(text, false)
    }

    /// [`Self::needs`] where the caller knows whether `text` is all ASCII
    /// (then it holds none of the listed code points).
    pub(super) fn needs_in(&self, text: &str, ascii: bool) -> bool {
        self.always || (!ascii && self.lists.iter().any(|list| list.in_text(text)))
    }

    /// The pieces of `text` (byte spans into it), or `None` when a regex
    /// gives up (its backtracking limit): the caller keeps `tokenizers`'
    /// pre-tokenizer then.
    pub(super) fn split(&self, text: &str) -> Option<Vec<Span>> {
        let len = u32::try_from(text.len()).ok()?;
        let mut pieces = vec![Span::new(0, len)];
        let mut next = Vec::new();
        let mut scratch = Vec::new();
        for step in &self.steps {
            next.clear();
            for piece in &pieces {
                let (start, end) = (piece.start as usize, piece.end as usize);
                let hay = text.get(start..end)?;
                step.split(hay, start, &mut scratch, &mut next)?;
            }
            std::mem::swap(&mut pieces, &mut next);
        }
        Some(pieces)
    }
}

/// The reference's punctuation (`tokenizers` 0.x `is_punc`/`is_bert_punc`):
/// `unicode_categories`' tables, which predate Unicode 10 (invariant
/// `unicode-classes-are-reference`).
fn is_punct(c: char) -> bool {
    use unicode_categories::UnicodeCategories;
    c.is_ascii_punctuation() || c.is_punctuation()
}

fn span(start: usize, end: usize) -> Option<Span> {
    Some(Span::new(
        u32::try_from(start).ok()?,
        u32::try_from(end).ok()?,
    ))
}

/// A `Split` on a regex or a string, with its behavior and `invert`. A
/// missing `behavior` is `Isolated` and a missing `invert` false, as
/// `tokenizers` reads them: the canonical form writes a splitting
/// `ByteLevel` as a `Split` on GPT-2's pattern with neither.
fn split_step(item: &Value) -> Option<Step> {
    let invert = match item.get("invert") {
        Some(v) => v.as_bool()?,
        None => false,
    };
    let pattern = item.get("pattern")?;
    let matcher = match (pattern.get("Regex"), pattern.get("String")) {
        (Some(regex), None) => Matcher::Regex(Regex::new(regex.as_str()?).ok()?),
        (None, Some(literal)) => {
            Matcher::Literal(literal.as_str().filter(|l| !l.is_empty())?.into())
        }
        _ => return None,
    };
    Some(Step {
        matcher,
        behavior: Behavior::read(item)?,
        invert,
    })
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
            json!({"type": "Punctuation", "behavior": "Removed"}),
            seq(vec![json!({"type": "WhitespaceSplit"}), digits.clone()]),
            json!({"type": "CharDelimiterSplit", "delimiter": "e"}),
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
            seq(vec![json!({"type": "Metaspace"}), digits.clone()]),
            json!({"type": "Punctuation", "behavior": "Sideways"}),
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

    /// `tokenizers` 0.x's own cases for `Split` (`pre_tokenizers/split.rs`:
    /// `basic`, `regex_string`, `invert`), `Digits` (`digits.rs`) and
    /// a `CharDelimiterSplit` run of delimiters: every behavior on the inverted whitespace
    /// regex, and the pairs of splits its tests find equal.
    #[test]
    fn the_references_split_behavior_cases() {
        let regex = |behavior: &str, invert: bool| {
            json!({"type": "Split", "pattern": {"Regex": r"\w+|[^\w\s]+"},
                   "behavior": behavior, "invert": invert})
        };
        let text = "How are you doing?";
        let cases: [(&str, &[&str]); 5] = [
            ("Removed", &["How", "are", "you", "doing", "?"]),
            (
                "Isolated",
                &["How", " ", "are", " ", "you", " ", "doing", "?"],
            ),
            (
                "MergedWithPrevious",
                &["How ", "are ", "you ", "doing", "?"],
            ),
            ("MergedWithNext", &["How", " are", " you", " doing", "?"]),
            (
                "Contiguous",
                &["How", " ", "are", " ", "you", " ", "doing?"],
            ),
        ];
        for (behavior, want) in cases {
            let split = RegexSplit::new(&regex(behavior, true)).unwrap();
            assert_eq!(pieces(&split, text), want, "{behavior}");
        }
        let same = |a: Value, b: Value, text: &str| {
            let (a, b) = (RegexSplit::new(&a).unwrap(), RegexSplit::new(&b).unwrap());
            assert_eq!(pieces(&a, text), pieces(&b, text), "{text:?}");
        };
        same(
            json!({"type": "Split", "pattern": {"Regex": r"\s+"}, "behavior": "Removed", "invert": false}),
            json!({"type": "Split", "pattern": {"String": " "}, "behavior": "Removed", "invert": false}),
            "Hey, man!",
        );
        same(
            json!({"type": "Split", "pattern": {"String": " "}, "behavior": "Removed", "invert": false}),
            json!({"type": "Split", "pattern": {"String": "Hello"}, "behavior": "Removed", "invert": true}),
            "Hello Hello Hello",
        );
        let digits = |each: bool| json!({"type": "Digits", "individual_digits": each});
        assert_eq!(
            pieces(&RegexSplit::new(&digits(false)).unwrap(), "Hey 123 friend!"),
            ["Hey ", "123", " friend!"]
        );
        assert_eq!(
            pieces(&RegexSplit::new(&digits(true)).unwrap(), "Hey 123 friend!"),
            ["Hey ", "1", "2", "3", " friend!"]
        );
        let delimiter = json!({"type": "CharDelimiterSplit", "delimiter": "-"});
        assert_eq!(
            pieces(&RegexSplit::new(&delimiter).unwrap(), "Hey-friend--x-"),
            ["Hey", "friend", "x"]
        );
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
