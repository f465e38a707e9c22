//! llama.cpp's special-token split (`tokenizer_st_partition`): before any
//! segmentation, the text is cut at occurrences of CONTROL, USER_DEFINED and
//! UNKNOWN tokens, one token at a time, longest text first, each token
//! splitting every text fragment left to right. CONTROL and UNKNOWN tokens
//! take part only when special-token text is parsed; USER_DEFINED ones always.
//! Tokens marked LSTRIP/RSTRIP eat the ASCII whitespace beside them.
//!
//! An Aho-Corasick pass over the text first finds which special tokens occur
//! at all, so the per-token passes run only for those.

use aho_corasick::AhoCorasick;

use super::vocab::{Vocab, attr};

/// A piece of the input: raw text `[start, end)` or a special token found there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fragment {
    Text(usize, usize),
    Token(u32, usize, usize),
}

/// Finds the special tokens (in `Vocab::special_cache` order) in a text.
pub(crate) struct Partitioner {
    /// Patterns are the texts of `special_cache`, by position; `None` when
    /// there are no special tokens.
    finder: Option<AhoCorasick>,
}

/// C's `isspace` in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

impl Partitioner {
    pub(crate) fn new(vocab: &Vocab) -> Self {
        let patterns: Vec<&[u8]> = vocab
            .special_cache
            .iter()
            .map(|&id| vocab.token(id))
            .collect();
        let finder = if patterns.is_empty() {
            None
        } else {
            AhoCorasick::new(&patterns).ok()
        };
        Self { finder }
    }

    /// Splits `text`; an empty text has no fragments. The ids in `markers`
    /// (sorted) are never cut out: the chat layer's control markers, text.
    pub(crate) fn split(
        &self,
        vocab: &Vocab,
        text: &str,
        parse_special: bool,
        markers: &[u32],
    ) -> Vec<Fragment> {
        if text.is_empty() {
            return Vec::new();
        }
        let whole = vec![Fragment::Text(0, text.len())];
        let cache = &vocab.special_cache;
        if cache.is_empty() {
            return whole;
        }
        let eligible = |id: u32| {
            (parse_special || vocab.attr(id) & (attr::CONTROL | attr::UNKNOWN) == 0)
                && markers.binary_search(&id).is_err()
        };
        let mut present = vec![false; cache.len()];
        match &self.finder {
            Some(ac) => {
                let mut any = false;
                for m in ac.find_overlapping_iter(text.as_bytes()) {
                    let i = m.pattern().as_usize();
                    if eligible(cache[i]) {
                        present[i] = true;
                        any = true;
                    }
                }
                if !any {
                    return whole;
                }
            }
            None => present.iter_mut().for_each(|p| *p = true),
        }
        let bytes = text.as_bytes();
        let mut fragments = whole;
        let mut next = Vec::with_capacity(8);
        for (i, &id) in cache.iter().enumerate() {
            if !present[i] || !eligible(id) {
                continue;
            }
            let needle = vocab.token(id);
            if needle.is_empty() {
                continue;
            }
            let a = vocab.attr(id);
            let finder = memchr::memmem::Finder::new(needle);
            next.clear();
            for &f in &fragments {
                let Fragment::Text(s, e) = f else {
                    next.push(f);
                    continue;
                };
                let mut pos = s;
                while let Some(m) = finder.find(&bytes[pos..e]).map(|m| pos + m) {
                    let mut left_end = m;
                    if a & attr::LSTRIP != 0 {
                        while left_end > pos && is_c_space(bytes[left_end - 1]) {
                            left_end -= 1;
                        }
                    }
                    if left_end > pos {
                        next.push(Fragment::Text(pos, left_end));
                    }
                    next.push(Fragment::Token(id, m, m + needle.len()));
                    pos = m + needle.len();
                    if a & attr::RSTRIP != 0 {
                        while pos < e && is_c_space(bytes[pos]) {
                            pos += 1;
                        }
                    }
                }
                if pos < e {
                    next.push(Fragment::Text(pos, e));
                }
            }
            std::mem::swap(&mut fragments, &mut next);
        }
        fragments
    }
}
