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

// Performance note: the queue holds up to one entry per character of a
// fragment (a whole prompt for a long text), so for long inputs the pops are
// bound by memory traffic, not by comparisons. Symbols and bigrams use u32
// positions (16 bytes each instead of 32), and the first pairs are heapified
// in one O(n) pass instead of n pushes (DESIGN.md claim 247 has the
// figures; the cost stays super-linear, bound by cache misses).

#[derive(Debug, Clone, Copy)]
struct Symbol {
    start: u32,
    len: u32,
    prev: u32,
    next: u32,
}

const NONE: u32 = u32::MAX;

/// The longest fragment [`segment`] takes: positions are u32 and
/// [`NONE`] is reserved.
pub(crate) const MAX_FRAGMENT_BYTES: usize = (u32::MAX - 1) as usize;

#[derive(Debug, Clone, Copy)]
struct Bigram {
    score: f32,
    left: u32,
    right: u32,
    size: u32,
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
/// symbols as `(start, len)` byte ranges of `text`, in order. `text` must be
/// at most [`MAX_FRAGMENT_BYTES`] long (callers check; a longer text is
/// returned as one symbol rather than segmented wrongly).
pub(crate) fn segment(
    text: &[u8],
    score: impl Fn(&[u8]) -> Option<f32>,
    scratch: &mut LlamaSpmScratch,
    out: &mut Vec<(usize, usize)>,
) {
    if text.is_empty() {
        return;
    }
    if text.len() > MAX_FRAGMENT_BYTES {
        out.push((0, text.len()));
        return;
    }
    let total = text.len() as u32;
    let symbols = &mut scratch.symbols;
    symbols.clear();
    let mut offs = 0u32;
    while offs < total {
        let len = (utf8_len(text[offs as usize]) as u32).min(total - offs);
        let index = symbols.len() as u32;
        symbols.push(Symbol {
            start: offs,
            len,
            prev: index.wrapping_sub(1),
            next: if offs + len == total { NONE } else { index + 1 },
        });
        offs += len;
    }
    let bigram = |symbols: &[Symbol], left: u32, right: u32| -> Option<Bigram> {
        if left == NONE || right == NONE {
            return None;
        }
        let (l, r) = (symbols[left as usize], symbols[right as usize]);
        let size = l.len + r.len;
        let pair = &text[l.start as usize..(l.start + size) as usize];
        score(pair).map(|score| Bigram {
            score,
            left,
            right,
            size,
        })
    };
    // The first pairs are heapified at once (O(n)), reusing the queue's buffer.
    let mut first = std::mem::take(&mut scratch.queue).into_vec();
    first.clear();
    first.extend((1..symbols.len() as u32).filter_map(|i| bigram(symbols, i - 1, i)));
    let mut queue = BinaryHeap::from(first);
    while let Some(b) = queue.pop() {
        let (l, r) = (symbols[b.left as usize], symbols[b.right as usize]);
        // One side already merged into something else: a stale pair.
        if l.len == 0 || r.len == 0 || l.len + r.len != b.size {
            continue;
        }
        symbols[b.left as usize].len += r.len;
        symbols[b.right as usize].len = 0;
        symbols[b.left as usize].next = r.next;
        if r.next != NONE {
            symbols[r.next as usize].prev = b.left;
        }
        let prev = symbols[b.left as usize].prev;
        let next = symbols[b.left as usize].next;
        if let Some(pair) = bigram(symbols, prev, b.left) {
            queue.push(pair);
        }
        if let Some(pair) = bigram(symbols, b.left, next) {
            queue.push(pair);
        }
    }
    scratch.queue = queue;
    let mut i = 0;
    while i != NONE {
        let s = symbols[i as usize];
        out.push((s.start as usize, s.len as usize));
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
