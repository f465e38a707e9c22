//! What `encode_chat` knows about a tokenizer's special-token texts, built
//! once per tokenizer: a matcher, the alphabet of their characters (for
//! sentinels) and their proper prefixes and suffixes (for fragments at the
//! edges of a request string).

use aho_corasick::{AhoCorasick, MatchKind};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::backend;
use crate::error::{Error, Result};

/// Fragments shorter than this many chars are not flagged at a string's
/// edges (DESIGN.md, claim 203).
pub(crate) const MIN_FRAGMENT_CHARS: usize = 2;

/// A tokenizer's special-token texts.
pub(crate) struct SpecialText {
    /// Each text's id, in pattern order.
    pub ids: Vec<u32>,
    /// Leftmost-longest over every text; `None` when there are none.
    pub matcher: Option<AhoCorasick>,
    /// The distinct chars of all texts, sorted; a sentinel is `base + index`.
    pub alphabet: Vec<char>,
    pub index: FxHashMap<char, u32>,
    /// Proper prefixes and suffixes (at least [`MIN_FRAGMENT_CHARS`] chars).
    prefixes: FxHashSet<Box<str>>,
    suffixes: FxHashSet<Box<str>>,
    /// First and last chars of the texts: a fragment at a string's start
    /// ends with one of `last`, one at its end starts with one of `first`.
    first: FxHashSet<char>,
    last: FxHashSet<char>,
    /// ASCII bytes that are a first or last char; `None` when some first or
    /// last char is not ASCII (then no prefilter).
    edge_bytes: Option<[bool; 128]>,
    /// The longest text, in bytes.
    max_len: usize,
}

impl SpecialText {
    pub(crate) fn new(backend: &dyn backend::Tokenizer) -> Result<Self> {
        let specials = backend.special_tokens();
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        let mut texts: Vec<&str> = Vec::new();
        let mut ids = Vec::new();
        for t in specials
            .named()
            .map(|(_, t)| t)
            .chain(specials.additional.iter())
        {
            if !t.content.is_empty() && seen.insert(t.content.as_str()) {
                texts.push(t.content.as_str());
                ids.push(t.id);
            }
        }
        let matcher = if texts.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&texts)
                    .map_err(|e| Error::config(format!("special-token matcher: {e}")))?,
            )
        };
        let mut alphabet: Vec<char> = texts.iter().flat_map(|t| t.chars()).collect();
        alphabet.sort_unstable();
        alphabet.dedup();
        let index = alphabet
            .iter()
            .enumerate()
            .filter_map(|(i, &c)| Some((c, u32::try_from(i).ok()?)))
            .collect();
        let mut prefixes = FxHashSet::default();
        let mut suffixes = FxHashSet::default();
        for t in &texts {
            let bounds: Vec<usize> = t.char_indices().map(|(i, _)| i).skip(1).collect();
            for (k, &b) in bounds.iter().enumerate() {
                // `t[..b]` has k + 1 chars, `t[b..]` the rest.
                if k + 1 >= MIN_FRAGMENT_CHARS {
                    prefixes.insert(Box::from(&t[..b]));
                }
                if bounds.len() - k >= MIN_FRAGMENT_CHARS {
                    suffixes.insert(Box::from(&t[b..]));
                }
            }
        }
        let max_len = texts.iter().map(|t| t.len()).max().unwrap_or(0);
        let first: FxHashSet<char> = texts.iter().filter_map(|t| t.chars().next()).collect();
        let last: FxHashSet<char> = texts.iter().filter_map(|t| t.chars().next_back()).collect();
        let edge_bytes = first
            .iter()
            .chain(&last)
            .try_fold([false; 128], |mut map, &c| {
                let b = usize::from(u8::try_from(c).ok().filter(u8::is_ascii)?);
                map[b] = true;
                Some(map)
            });
        Ok(Self {
            edge_bytes,
            first,
            last,
            ids,
            matcher,
            alphabet,
            index,
            prefixes,
            suffixes,
            max_len,
        })
    }

    /// Whether `s` holds a whole special-token text.
    pub(crate) fn has_text(&self, s: &str) -> bool {
        self.matcher.as_ref().is_some_and(|m| m.is_match(s))
    }

    /// The first special-token text in `s`.
    pub(crate) fn first_text<'s>(&self, s: &'s str) -> Option<&'s str> {
        let m = self.matcher.as_ref()?.find(s)?;
        s.get(m.start()..m.end())
    }

    /// The byte ranges of `s` to mark: every special-token text, the longest
    /// prefix of `s` (or of `s` without leading whitespace) that ends a
    /// special-token text, and the longest suffix (of `s` or of `s` without
    /// trailing whitespace) that starts one. Empty when none.
    pub(crate) fn marks(&self, s: &str) -> Vec<std::ops::Range<usize>> {
        let mut out = Vec::new();
        if let Some(m) = &self.matcher {
            out.extend(m.find_iter(s).map(|m| m.start()..m.end()));
        }
        if self.max_len < 2 {
            return out;
        }
        let trimmed_start = s.len() - s.trim_start().len();
        for from in [0, trimmed_start] {
            if let Some(end) = self.longest_head(&s[from..]) {
                out.push(from..from + end);
            }
        }
        let trimmed_end = s.trim_end().len();
        for to in [s.len(), trimmed_end] {
            if let Some(start) = self.longest_tail(&s[..to]) {
                out.push(start..to);
            }
        }
        out.sort_unstable_by_key(|r| (r.start, r.end));
        out.dedup();
        out
    }

    /// Whether `s` needs marks at all (no allocation).
    ///
    /// A special-token text starts with one of `first`; a fragment at the
    /// start ends with one of `last`, one at the end starts with one of
    /// `first`: a string with none of those chars needs no marks.
    pub(crate) fn needs_marks(&self, s: &str) -> bool {
        if let Some(map) = &self.edge_bytes
            && !s
                .bytes()
                .any(|b| map.get(usize::from(b)).copied().unwrap_or(false))
        {
            return false;
        }
        if self.has_text(s) {
            return true;
        }
        if self.max_len < 2 {
            return false;
        }
        let t = s.trim_start();
        let e = s.trim_end();
        self.longest_head(s).is_some()
            || self.longest_head(t).is_some()
            || self.longest_tail(s).is_some()
            || self.longest_tail(e).is_some()
    }

    /// The end of the longest prefix of `s` that is a proper suffix of a text.
    fn longest_head(&self, s: &str) -> Option<usize> {
        s.char_indices()
            .take_while(|&(i, _)| i + 1 < self.max_len)
            .filter(|(_, c)| self.last.contains(c))
            .map(|(i, c)| i + c.len_utf8())
            .filter(|&b| self.suffixes.contains(&s[..b]))
            .last()
    }

    /// The start of the longest suffix of `s` that is a proper prefix of a text.
    fn longest_tail(&self, s: &str) -> Option<usize> {
        s.char_indices()
            .rev()
            .take_while(|&(i, _)| s.len() - i < self.max_len)
            .filter(|(_, c)| self.first.contains(c))
            .map(|(i, _)| i)
            .filter(|&i| self.prefixes.contains(&s[i..]))
            .last()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::mock::MockTokenizer;

    #[test]
    fn marks_whole_texts_and_edge_fragments() {
        let st = SpecialText::new(&MockTokenizer::default()).unwrap();
        assert_eq!(st.marks("a<s>b"), vec![1..4]);
        assert!(st.marks("plain").is_empty());
        // `</` starts `</s>`; `s>` ends `<s>`/`</s>`.
        assert_eq!(st.marks("x </"), vec![2..4]);
        assert_eq!(st.marks("s> y"), vec![0..2]);
        assert_eq!(st.marks("  s> y \n"), vec![2..4]);
        assert!(st.needs_marks("x </  "));
        assert!(!st.needs_marks("x < y"));
    }
}
