//! llama.cpp's SPM segmentation (`llm_tokenizer_spm_session`), for GGUF
//! `llama` vocabularies.
//!
//! It is not sentencepiece's BPE ([`super::bpe`]), so it lives beside it
//! rather than as a mode of it:
//! - it merges across the whole escaped fragment: no split at `▁`, so pieces
//!   such as `▁▁` or `.▁` form wherever the vocabulary has them;
//! - any token may be the result of a merge, whatever its type (CONTROL,
//!   BYTE and UNUSED included), where sentencepiece admits only
//!   NORMAL/USER_DEFINED/UNUSED pieces and re-splits UNUSED ones;
//! - ties in score go to the leftmost pair, with no piece-length rule.
//!
//! llama.cpp's resegmentation step (`rev_merge`) never fires: a symbol grows
//! only by a merge whose result is a token, so every final symbol is a token
//! or a single character that never merged. The caller resolves the final
//! symbols to ids and sends characters with no token to byte fallback.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Byte length of the UTF-8 sequence a lead byte starts (llama.cpp's
/// `unicode_len_utf8`: 1 for continuation or invalid bytes).
#[inline]
pub(crate) fn utf8_len(lead: u8) -> usize {
    const LEN: [u8; 16] = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4];
    LEN[usize::from(lead >> 4)] as usize
}

#[derive(Debug, Clone, Copy)]
struct Symbol {
    start: usize,
    len: usize,
    prev: usize,
    next: usize,
}

const NONE: usize = usize::MAX;

#[derive(Debug, Clone, Copy)]
struct Bigram {
    score: f32,
    left: usize,
    right: usize,
    size: usize,
}

impl PartialEq for Bigram {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Bigram {}
impl PartialOrd for Bigram {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Bigram {
    /// Higher score first, then the leftmost pair (llama.cpp's comparator).
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.left.cmp(&self.left))
    }
}

/// Reusable buffers for [`segment`].
#[derive(Debug, Default)]
pub(crate) struct LlamaSpmScratch {
    symbols: Vec<Symbol>,
    queue: BinaryHeap<Bigram>,
}

/// Segments `text` (already escaped: spaces as `▁`) the way llama.cpp does.
///
/// `score` returns the score of the token spelled by a byte string, or
/// `None` when the vocabulary has no such token. `out` receives the final
/// symbols as `(start, len)` byte ranges of `text`, in order.
pub(crate) fn segment(
    text: &[u8],
    score: impl Fn(&[u8]) -> Option<f32>,
    scratch: &mut LlamaSpmScratch,
    out: &mut Vec<(usize, usize)>,
) {
    let symbols = &mut scratch.symbols;
    let queue = &mut scratch.queue;
    symbols.clear();
    queue.clear();
    let mut offs = 0;
    while offs < text.len() {
        let len = utf8_len(text[offs]).min(text.len() - offs);
        let index = symbols.len();
        symbols.push(Symbol {
            start: offs,
            len,
            prev: index.wrapping_sub(1),
            next: if offs + len == text.len() {
                NONE
            } else {
                index + 1
            },
        });
        offs += len;
    }
    let try_add =
        |symbols: &[Symbol], queue: &mut BinaryHeap<Bigram>, left: usize, right: usize| {
            if left == NONE || right == NONE {
                return;
            }
            let (l, r) = (symbols[left], symbols[right]);
            let pair = &text[l.start..l.start + l.len + r.len];
            if let Some(score) = score(pair) {
                queue.push(Bigram {
                    score,
                    left,
                    right,
                    size: pair.len(),
                });
            }
        };
    for i in 1..symbols.len() {
        try_add(symbols, queue, i - 1, i);
    }
    while let Some(b) = queue.pop() {
        let (l, r) = (symbols[b.left], symbols[b.right]);
        // One side already merged into something else: a stale pair.
        if l.len == 0 || r.len == 0 || l.len + r.len != b.size {
            continue;
        }
        symbols[b.left].len += r.len;
        symbols[b.right].len = 0;
        symbols[b.left].next = r.next;
        if r.next != NONE {
            symbols[r.next].prev = b.left;
        }
        let prev = symbols[b.left].prev;
        let next = symbols[b.left].next;
        try_add(symbols, queue, prev, b.left);
        try_add(symbols, queue, b.left, next);
    }
    let mut i = if symbols.is_empty() { NONE } else { 0 };
    while i != NONE {
        let s = symbols[i];
        out.push((s.start, s.len));
        i = s.next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, vocab: &[(&str, f32)]) -> Vec<String> {
        let mut out = Vec::new();
        segment(
            text.as_bytes(),
            |s| vocab.iter().find(|(t, _)| t.as_bytes() == s).map(|t| t.1),
            &mut LlamaSpmScratch::default(),
            &mut out,
        );
        out.iter()
            .map(|&(s, l)| text[s..s + l].to_owned())
            .collect()
    }

    #[test]
    fn merges_by_score_then_leftmost() {
        let v = [("ab", -1.0), ("bc", -0.5), ("abc", -3.0)];
        // "bc" scores higher than "ab"; "a"+"bc" = "abc" is a token.
        assert_eq!(run("abc", &v), ["abc"]);
        // A tie goes to the left pair.
        let v = [("aa", -1.0)];
        assert_eq!(run("aaa", &v), ["aa", "a"]);
        // Merges cross the escaped space.
        let v = [("▁▁", -1.0)];
        assert_eq!(run("▁▁x", &v), ["▁▁", "x"]);
        assert!(run("", &v).is_empty());
    }
}
