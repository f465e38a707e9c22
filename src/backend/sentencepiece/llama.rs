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

use super::cache::{MAX_KEY, WordCache};
pub(crate) use crate::backend::char_cuts::utf8_len;

// Performance note: one queue over a whole fragment (a whole prompt for a
// long text) held an entry per character, so its pops were bound by cache
// misses and the time grew faster than the text (`docs/perf/design_log/gguf.md` (entry 247)).
// Symbols and bigrams use u32 positions (16 bytes each instead of 32); the
// fragment is cut where no token joins two units ([`JoinFilter`]), each
// part has its own queue, and parts up to a word long are memoized (in the
// SentencePiece engine's memo), so the time is linear (invariant `cut-where-no-entry-joins`).

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

/// Reusable buffers for [`segment`], and its memo of parts. The memo
/// holds one vocabulary's results: a scratch must never serve two.
#[derive(Debug, Default)]
pub(crate) struct LlamaSpmScratch {
    symbols: Vec<Symbol>,
    queue: BinaryHeap<Bigram>,
    /// Parts already segmented (up to [`MAX_KEY`] bytes, the memo's own
    /// bound on a word): their bytes, and the byte length of each symbol
    /// they end as, in the arena tier of the SentencePiece engine's memo
    /// (bounded, cleared wholesale when full). The id slot is unused (0):
    /// the caller resolves symbols to ids.
    memo: WordCache,
    /// One part's symbols, for the memo.
    vals: Vec<(u32, u32)>,
}

/// The pairs of adjacent *units* (what [`segment`] starts from: a UTF-8
/// char, or a byte `utf8_len` cuts alone) that occur side by side inside
/// some token of a vocabulary, as a bit set over their hashes.
///
/// Every symbol [`segment`] forms is a token (or one unit), so a symbol
/// can span two adjacent units of the text only if some token holds that
/// pair. Where the set says no token does, no merge ever crosses, and the
/// text is cut there: llama.cpp's whole-fragment queue then splits into
/// independent small ones with the same result (DESIGN.md invariant `cut-where-no-entry-joins`). A
/// hash collision only keeps a cut from being made (never makes a wrong
/// one).
#[derive(Debug)]
pub(crate) struct JoinFilter {
    bits: Box<[u64]>,
    mask: u64,
}

impl JoinFilter {
    /// Smallest and largest set, in bits (8 KiB to 8 MiB).
    const MIN_BITS: usize = 1 << 16;
    const MAX_BITS: usize = 1 << 26;

    /// The filter of every token in `tokens` (each as the bytes
    /// `segment`'s `score` is asked about).
    pub(crate) fn new<'a>(tokens: impl Iterator<Item = &'a [u8]> + Clone) -> Self {
        let pairs: usize = tokens
            .clone()
            .map(|t| units(t).count().saturating_sub(1))
            .sum();
        let n = (pairs.saturating_mul(16))
            .clamp(Self::MIN_BITS, Self::MAX_BITS)
            .next_power_of_two();
        let mut bits = vec![0u64; n / 64].into_boxed_slice();
        let mask = (n - 1) as u64;
        for t in tokens {
            let mut prev: Option<u64> = None;
            for u in units(t) {
                let k = unit_key(u);
                if let Some(p) = prev {
                    let h = pair_hash(p, k) & mask;
                    bits[(h / 64) as usize] |= 1 << (h % 64);
                }
                prev = Some(k);
            }
        }
        Self { bits, mask }
    }

    /// Whether some token may hold unit `a` followed by unit `b`.
    #[inline]
    fn may_join(&self, a: u64, b: u64) -> bool {
        let h = pair_hash(a, b) & self.mask;
        self.bits[(h / 64) as usize] & (1 << (h % 64)) != 0
    }
}

/// The units of `bytes`, cut as [`segment`] cuts a text.
fn units(bytes: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let lead = *bytes.get(at)?;
        let len = utf8_len(lead).min(bytes.len() - at);
        let u = &bytes[at..at + len];
        at += len;
        Some(u)
    })
}

/// A unit (at most 4 bytes) as one number, its length included.
#[inline]
fn unit_key(u: &[u8]) -> u64 {
    let mut k = [0u8; 8];
    let n = u.len().min(4);
    k[..n].copy_from_slice(&u[..n]);
    k[7] = n as u8;
    u64::from_le_bytes(k)
}

#[inline]
fn pair_hash(a: u64, b: u64) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let h = (a.wrapping_mul(K) ^ b).wrapping_mul(K);
    h ^ (h >> 29)
}

/// Segments `text` (already escaped: spaces as `▁`) the way llama.cpp does.
///
/// `score` returns the score of the token spelled by a byte string, or
/// `None` when the vocabulary has no such token; `joins` is the
/// vocabulary's [`JoinFilter`]. `out` receives the final symbols as
/// `(start, len)` byte ranges of `text`, in order. `text` must be at most
/// [`MAX_FRAGMENT_BYTES`] long (callers check; a longer text is returned
/// as one symbol rather than segmented wrongly).
///
/// Performance: the text is cut where no token spans two adjacent units
/// (`joins`), and each part runs its own queue: the queue stays the size
/// of a word instead of the whole fragment, and the time is linear in the
/// text (invariant `cut-where-no-entry-joins`; before, one queue per fragment made a 1 MiB English
/// prompt take over a second).
pub(crate) fn segment(
    text: &[u8],
    score: impl Fn(&[u8]) -> Option<f32>,
    joins: &JoinFilter,
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
    let LlamaSpmScratch {
        symbols,
        queue,
        memo,
        vals,
    } = scratch;
    seed_symbols(text, symbols);
    let n = symbols.len() as u32;
    let mut part = 0u32;
    while part < n {
        let end = part_end(text, symbols, joins, part);
        if end == part + 1 {
            // One unit: nothing to merge.
            let s = symbols[part as usize];
            out.push((s.start as usize, s.len as usize));
            part = end;
            continue;
        }
        let from = symbols[part as usize].start as usize;
        let to = symbols
            .get(end as usize)
            .map_or(text.len(), |s| s.start as usize);
        let bytes = &text[from..to];
        if let Some(hit) = memo.get_arena(bytes) {
            let mut at = from;
            for &(_, l) in hit {
                out.push((at, l as usize));
                at += l as usize;
            }
            part = end;
            continue;
        }
        merge_part(text, &score, symbols, queue, (part, end));
        let first_out = out.len();
        let mut i = part;
        while i < end {
            let s = symbols[i as usize];
            out.push((s.start as usize, s.len as usize));
            i = s.next;
        }
        if bytes.len() <= MAX_KEY {
            vals.clear();
            vals.extend(out[first_out..].iter().map(|&(_, l)| (0, l as u32)));
            memo.insert(bytes, vals, false);
        }
        part = end;
    }
}

/// [`segment`]'s initial symbols: one per unit of `text`, linked in order.
#[inline]
fn seed_symbols(text: &[u8], symbols: &mut Vec<Symbol>) {
    let total = text.len() as u32;
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
}

/// The end (exclusive symbol index) of the part that starts at symbol
/// `part`: the part ends where no token joins two adjacent units. A pair
/// across that cut is never a token, so the part's merges never reach past
/// it ([`bigram`] finds no score there), and its result depends on its
/// bytes alone: the memo's key.
#[inline]
fn part_end(text: &[u8], symbols: &[Symbol], joins: &JoinFilter, part: u32) -> u32 {
    let key = |s: &Symbol| unit_key(&text[s.start as usize..(s.start + s.len) as usize]);
    let n = symbols.len() as u32;
    let mut end = part + 1;
    let mut prev_key = key(&symbols[part as usize]);
    while end < n {
        let k = key(&symbols[end as usize]);
        if !joins.may_join(prev_key, k) {
            break;
        }
        prev_key = k;
        end += 1;
    }
    end
}

/// The merge candidate of symbols `left` and `right` (either may be
/// [`NONE`]): their pair, if it spells a token.
#[inline]
fn bigram(
    text: &[u8],
    score: &impl Fn(&[u8]) -> Option<f32>,
    symbols: &[Symbol],
    left: u32,
    right: u32,
) -> Option<Bigram> {
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
}

/// llama.cpp's merge loop over the symbols `part..end`: repeatedly merges
/// the best-scoring pair (leftmost on ties) until no pair is a token.
#[inline]
fn merge_part(
    text: &[u8],
    score: &impl Fn(&[u8]) -> Option<f32>,
    symbols: &mut [Symbol],
    queue: &mut BinaryHeap<Bigram>,
    (part, end): (u32, u32),
) {
    // The part's first pairs are heapified at once (O(n)), reusing the
    // queue's buffer.
    let mut first = std::mem::take(queue).into_vec();
    first.clear();
    first.extend((part + 1..end).filter_map(|i| bigram(text, score, symbols, i - 1, i)));
    *queue = BinaryHeap::from(first);
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
        if let Some(pair) = bigram(text, score, symbols, prev, b.left) {
            queue.push(pair);
        }
        if let Some(pair) = bigram(text, score, symbols, b.left, next) {
            queue.push(pair);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    impl JoinFilter {
        /// A filter that cuts nowhere: one queue per fragment, as llama.cpp.
        fn nowhere() -> Self {
            Self {
                bits: vec![u64::MAX; 1].into_boxed_slice(),
                mask: 63,
            }
        }
    }

    fn segment_with(
        text: &str,
        vocab: &[(String, f32)],
        joins: &JoinFilter,
        scratch: &mut LlamaSpmScratch,
    ) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        segment(
            text.as_bytes(),
            |s| vocab.iter().find(|(t, _)| t.as_bytes() == s).map(|t| t.1),
            joins,
            scratch,
            &mut out,
        );
        out
    }

    fn run(text: &str, vocab: &[(&str, f32)]) -> Vec<String> {
        let vocab: Vec<(String, f32)> = vocab.iter().map(|&(t, s)| (t.to_owned(), s)).collect();
        let joins = JoinFilter::new(vocab.iter().map(|(t, _)| t.as_bytes()));
        segment_with(text, &vocab, &joins, &mut LlamaSpmScratch::default())
            .iter()
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
        // "b" then "c" is in no token: a cut there, and "ab" and "cd" form
        // on both sides of it; with "abcd" in the vocabulary, no cut.
        let v = [("ab", -1.0), ("cd", -1.0)];
        assert_eq!(run("abcd", &v), ["ab", "cd"]);
        let v = [("ab", -1.0), ("cd", -1.0), ("abcd", -0.1)];
        assert_eq!(run("abcd", &v), ["abcd"]);
    }

    proptest! {
        /// Cutting where no token joins two units, and the memo of parts,
        /// change nothing: the symbols equal one whole-fragment queue's
        /// (llama.cpp's), on texts and vocabularies over a small alphabet
        /// of one- to four-byte units, with the memo cold and warm.
        #[test]
        fn cuts_and_memo_equal_one_queue(
            text in "[ab▁é中😀]{0,80}",
            tokens in proptest::collection::vec(("[ab▁é中😀]{2,5}", -8.0f32..0.0), 0..40),
        ) {
            let mut vocab: Vec<(String, f32)> = tokens;
            vocab.sort_by(|a, b| a.0.cmp(&b.0));
            vocab.dedup_by(|a, b| a.0 == b.0);
            let joins = JoinFilter::new(vocab.iter().map(|(t, _)| t.as_bytes()));
            let want = segment_with(&text, &vocab, &JoinFilter::nowhere(), &mut LlamaSpmScratch::default());
            let mut scratch = LlamaSpmScratch::default();
            let cold = segment_with(&text, &vocab, &joins, &mut scratch);
            prop_assert_eq!(&cold, &want);
            let doubled = format!("{text}{text}");
            let want2 = segment_with(&doubled, &vocab, &JoinFilter::nowhere(), &mut LlamaSpmScratch::default());
            prop_assert_eq!(segment_with(&doubled, &vocab, &joins, &mut scratch), want2);
            prop_assert_eq!(segment_with(&text, &vocab, &joins, &mut scratch), want);
        }
    }
}
