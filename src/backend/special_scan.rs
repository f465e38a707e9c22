//! Finds special tokens in text: the leftmost-longest, non-overlapping
//! matches of a set of token texts, each with its id.
//!
//! Performance notes: the special tokens of one tokenizer mostly share a
//! prefix (`<|` in tiktoken's encodings). Aho-Corasick's prefilter keys on the first byte
//! (`memchr(b'<')`), and code has a `<` every few dozen bytes, each one a
//! stop and an automaton walk: about 4 % of an encode of code (cl100k). A
//! shared prefix of two bytes or more is searched with `memmem` instead
//! (its pair prefilter skips the lone `<`), and each hit is matched by the
//! same automaton, anchored there.
//!
//! Invariant: every match starts with the shared prefix, so trying each of
//! its occurrences left to right, the longest match anchored there, finds
//! the leftmost-longest match; the next search starts at that match's end,
//! as in Aho-Corasick's own non-overlapping iteration.

use aho_corasick::{AhoCorasick, Anchored, Input, MatchKind, StartKind};
use memchr::memmem;

/// A special-token match: the byte span and the token's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpecialMatch {
    pub start: usize,
    pub end: usize,
    pub id: u32,
}

/// The special tokens of one tokenizer.
#[derive(Debug)]
pub(crate) struct SpecialScan {
    automaton: AhoCorasick,
    /// The prefix every token starts with, where it has two bytes or more.
    prefix: Option<memmem::Finder<'static>>,
    /// Id of each pattern.
    ids: Vec<u32>,
}

impl SpecialScan {
    /// A scan for `tokens` (text, id), empty texts left out; `None` for no
    /// tokens. Errs with
    /// Aho-Corasick's message where the automaton cannot be built.
    pub(crate) fn new<'t>(
        tokens: impl IntoIterator<Item = (&'t str, u32)>,
    ) -> Result<Option<Self>, String> {
        // An empty text would match between any two bytes, inside a char too.
        let (texts, ids): (Vec<&str>, Vec<u32>) =
            tokens.into_iter().filter(|(t, _)| !t.is_empty()).unzip();
        if texts.is_empty() {
            return Ok(None);
        }
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .start_kind(StartKind::Both)
            .build(&texts)
            .map_err(|e| e.to_string())?;
        let prefix = shared_prefix(texts.iter().map(|t| t.as_bytes()))
            .filter(|p| p.len() >= 2)
            .map(|p| memmem::Finder::new(p).into_owned());
        Ok(Some(Self {
            automaton,
            prefix,
            ids,
        }))
    }

    /// Whether `text` holds a token.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.find_at(text.as_bytes(), 0).is_some()
    }

    /// The matches in `text`, left to right.
    pub(crate) fn find_iter<'a>(
        &'a self,
        text: &'a str,
    ) -> impl Iterator<Item = SpecialMatch> + 'a {
        let bytes = text.as_bytes();
        let mut at = 0;
        std::iter::from_fn(move || {
            // No text is empty, so each match ends past where it starts.
            let m = self.find_at(bytes, at)?;
            at = m.end;
            Some(m)
        })
    }

    /// The leftmost-longest match starting at or after `from`.
    fn find_at(&self, bytes: &[u8], from: usize) -> Option<SpecialMatch> {
        bytes.get(from..)?;
        let Some(prefix) = &self.prefix else {
            let input = Input::new(bytes).span(from..bytes.len());
            return self.automaton.find(input).map(|m| self.matched(m));
        };
        let mut at = from;
        loop {
            // Occurrences of the prefix may overlap (`<<` in `<<<`): each
            // search goes on from the byte after the last one tried.
            let start = at + prefix.find(bytes.get(at..)?)?;
            let input = Input::new(bytes)
                .span(start..bytes.len())
                .anchored(Anchored::Yes);
            if let Some(m) = self.automaton.find(input) {
                return Some(self.matched(m));
            }
            at = start + 1;
        }
    }

    fn matched(&self, m: aho_corasick::Match) -> SpecialMatch {
        SpecialMatch {
            start: m.start(),
            end: m.end(),
            id: self
                .ids
                .get(m.pattern().as_usize())
                .copied()
                .unwrap_or(u32::MAX),
        }
    }
}

/// The longest prefix all of `texts` share; `None` for no texts.
fn shared_prefix<'a>(mut texts: impl Iterator<Item = &'a [u8]>) -> Option<&'a [u8]> {
    let mut prefix = texts.next()?;
    for t in texts {
        let n = prefix.iter().zip(t).take_while(|(a, b)| a == b).count();
        prefix = &prefix[..n];
    }
    Some(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(tokens: &[&str]) -> SpecialScan {
        let tokens = tokens.iter().enumerate().map(|(i, t)| (*t, 100 + i as u32));
        SpecialScan::new(tokens).unwrap().unwrap()
    }

    /// Aho-Corasick's own leftmost-longest iteration, the reference.
    fn reference(tokens: &[&str], text: &str) -> Vec<SpecialMatch> {
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(tokens)
            .unwrap();
        ac.find_iter(text)
            .map(|m| SpecialMatch {
                start: m.start(),
                end: m.end(),
                id: 100 + m.pattern().as_u32(),
            })
            .collect()
    }

    const SETS: &[&[&str]] = &[
        &[
            "<|endoftext|>",
            "<|fim_prefix|>",
            "<|fim_middle|>",
            "<|fim_suffix|>",
            "<|endofprompt|>",
        ],
        &["<|a|>", "<|a|>b", "<|ab|>", "<|"],
        &["<<", "<<<", "<<<<x"],
        &["<<a", "<<<b"],
        &["[INST]", "[/INST]", "<s>"],
        &["x"],
        &["ab", "abab", "b"],
    ];

    const TEXTS: &[&str] = &[
        "",
        "plain text",
        "a <|endoftext|> b <|fim_prefix|><|fim_middle|>",
        "<|<|endoftext|><|endofprompt|",
        "if a < b && c <| d |> e <|a|>b <|ab|> <|a|",
        "<<<<<x <<<< << <<<<x<<",
        "<<<a <<<<b <<a<<<b",
        "[INST] hi [/INST]</s><s>",
        "xxx ababab abab b",
        "日本<|endoftext|>語 <|",
    ];

    #[test]
    fn matches_aho_corasick_leftmost_longest() {
        for tokens in SETS {
            let s = scan(tokens);
            for text in TEXTS {
                let got: Vec<_> = s.find_iter(text).collect();
                assert_eq!(s.is_match(text), !got.is_empty(), "{tokens:?} on {text:?}");
                assert_eq!(got, reference(tokens, text), "{tokens:?} on {text:?}");
            }
        }
    }

    #[test]
    fn empty_texts_never_match() {
        let tokens = [("", 1), ("<|a|>", 2)];
        let s = SpecialScan::new(tokens).unwrap().unwrap();
        let got: Vec<_> = s.find_iter("é<|a|>").map(|m| (m.start, m.id)).collect();
        assert_eq!(got, [(2, 2)]);
        assert!(SpecialScan::new([("", 1)]).unwrap().is_none());
    }

    #[test]
    fn shared_prefix_takes_the_memmem_route() {
        assert!(scan(&["<|endoftext|>", "<|fim_prefix|>"]).prefix.is_some());
        assert!(scan(&["[INST]", "[/INST]", "<s>"]).prefix.is_none());
        assert!(scan(&["<s>", "</s>"]).prefix.is_none());
    }

    proptest::proptest! {
        #[test]
        fn random_text_matches_reference(
            set in 0..SETS.len(),
            text in "[<|>a-z_xb\\[\\]/INST ]{0,64}",
        ) {
            let tokens = SETS[set];
            let got: Vec<_> = scan(tokens).find_iter(&text).collect();
            proptest::prop_assert_eq!(got, reference(tokens, &text));
        }
    }
}
