//! A `tokenizer.json` whose only normalizer replaces one ASCII char by a
//! string (Gemma: `" "` → `"▁"`) is normalized by the crate (DESIGN.md
//! invariant `crate-steps-equal-reference`).
//!
//! `tokenizers`' `Replace` finds the pattern with `bitcannon`'s literal
//! searcher and grows its output as it goes: with the copies, a quarter of
//! a Gemma-3 encode of code. Here the matches are counted first (`memchr`,
//! vectorized), the output is allocated once at its final size, and the
//! gaps are copied between matches. Same result: every occurrence, left to
//! right, replaced by the content (one char cannot overlap itself), and
//! the text itself when there is none.

use serde_json::Value;
use std::borrow::Cow;

/// One ASCII char replaced by a string everywhere.
pub(super) struct LoneReplace {
    from: u8,
    to: String,
}

impl LoneReplace {
    /// From the file's `normalizer`: a `Replace` of a `String` that is one
    /// ASCII char (alone, or the only member of a `Sequence`), else `None`.
    pub(super) fn new(normalizer: &Value) -> Option<Self> {
        let step = match normalizer.get("type")?.as_str()? {
            "Sequence" => match normalizer.get("normalizers")?.as_array()?.as_slice() {
                [only] => only,
                _ => return None,
            },
            _ => normalizer,
        };
        if step.get("type")?.as_str()? != "Replace" {
            return None;
        }
        let from = match step.get("pattern")?.get("String")?.as_str()?.as_bytes() {
            &[b] if b.is_ascii() => b,
            _ => return None,
        };
        let to = step.get("content")?.as_str()?.to_owned();
        Some(Self { from, to })
    }

    /// `text` with every `from` replaced, borrowed when there is none.
    pub(super) fn normalize<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let bytes = text.as_bytes();
        let count = memchr::memchr_iter(self.from, bytes).count();
        if count == 0 {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len() - count + count * self.to.len());
        let mut at = 0;
        for i in memchr::memchr_iter(self.from, bytes) {
            // `from` is ASCII, so `i` and `i + 1` are char boundaries.
            out.push_str(text.get(at..i).unwrap_or_default());
            out.push_str(&self.to);
            at = i + 1;
        }
        out.push_str(text.get(at..).unwrap_or_default());
        Cow::Owned(out)
    }
}

#[cfg(test)]
mod tests {
    use super::LoneReplace;
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use tokenizers::pipeline::Normalizer;

    fn replace(from: &str, to: &str) -> Value {
        json!({"type": "Replace", "pattern": {"String": from}, "content": to})
    }

    #[test]
    fn takes_one_ascii_char_patterns_only() {
        assert!(LoneReplace::new(&replace(" ", "\u{2581}")).is_some());
        let seq = json!({"type": "Sequence", "normalizers": [replace("a", "")]});
        assert!(LoneReplace::new(&seq).is_some());
        for refused in [
            replace("ab", "x"),
            replace("", "x"),
            replace("\u{2581}", " "),
            json!({"type": "Replace", "pattern": {"Regex": " "}, "content": "x"}),
            json!({"type": "Sequence", "normalizers": [replace(" ", "x"), {"type": "NFC"}]}),
            json!({"type": "NFC"}),
            Value::Null,
        ] {
            assert!(LoneReplace::new(&refused).is_none(), "{refused}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Against `tokenizers`' own `Replace`: ASCII patterns, contents
        /// that are empty, hold the pattern or are longer than it.
        #[test]
        fn matches_tokenizers_replace(
            text in proptest::collection::vec(prop::sample::select(vec![
                " ", "  ", "a", "\u{2581}", "é", "中", "🦀", "\n", "\t", "\u{a0}", "▁▁",
            ]), 0..40).prop_map(|v| v.concat()),
            from in prop::sample::select(vec![" ", "a", "\n"]),
            to in prop::sample::select(vec!["\u{2581}", "", " ", "aa", "🦀x"]),
        ) {
            let ours = LoneReplace::new(&replace(from, to)).unwrap().normalize(&text).into_owned();
            let theirs = tokenizers::normalizers::Replace::new(from, to)
                .unwrap()
                .normalize(&text, 0)
                .unwrap()
                .into_owned();
            prop_assert_eq!(ours, theirs, "{:?} {:?} -> {:?}", text, from, to);
        }
    }
}
