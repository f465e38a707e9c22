//! tiktoken's byte-pair merge of one piece, for the rank path (text the
//! byte-level engine does not take, or takes before it is built).
//!
//! The order is `_byte_pair_merge`'s in tiktoken (and `tiktoken-rs`): the
//! adjacent pair whose bytes have the lowest rank merges first, the leftmost
//! among equal ranks, until no adjacent pair has a rank. Like tiktoken, a
//! short piece is merged by scanning its parts (cache-friendly, no
//! allocation) and a long one with a heap (O(n log n), so a hostile run of
//! one byte cannot make it quadratic); both give the same parts.
//!
//! Written here rather than called from `tiktoken-rs` (issue #15 keeps that
//! crate as the tests' reference only): its public merge allocates a `Vec`
//! of slices per piece, and its heap version is not public.

use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Pieces at least this long are merged with the heap (tiktoken's own
/// threshold).
pub(crate) const LONG_PIECE: usize = 100;

/// No rank: the pair does not merge.
const NONE: u32 = u32::MAX;

/// Appends the ids of `piece` merged by `ranks` to `out`; `None` (with
/// `out` as it was) when a part the merge leaves has no rank, which only a
/// byte missing from the ranks can cause.
pub(crate) fn byte_pair_encode_into(
    piece: &[u8],
    ranks: &FxHashMap<Vec<u8>, u32>,
    out: &mut Vec<u32>,
) -> Option<()> {
    let first = out.len();
    let done = if piece.len() < LONG_PIECE {
        merge_short(piece, ranks, out)
    } else {
        merge_long(piece, ranks, out)
    };
    if done.is_none() {
        out.truncate(first);
    }
    done
}

/// [`byte_pair_encode_into`] into a new vector.
#[cfg(test)]
pub(crate) fn byte_pair_encode(piece: &[u8], ranks: &FxHashMap<Vec<u8>, u32>) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    byte_pair_encode_into(piece, ranks, &mut out).map(|()| out)
}

/// The scan for a piece under [`LONG_PIECE`] bytes: `parts[k]` is the start
/// of part `k` and the rank of the pair it starts (parts `k` and `k + 1`).
fn merge_short(piece: &[u8], ranks: &FxHashMap<Vec<u8>, u32>, out: &mut Vec<u32>) -> Option<()> {
    let n = piece.len();
    if n < 2 {
        if n == 1 {
            out.push(*ranks.get(piece)?);
        }
        return Some(());
    }
    let rank = |s: u32, e: u32| {
        piece
            .get(s as usize..e as usize)
            .and_then(|b| ranks.get(b))
            .copied()
            .unwrap_or(NONE)
    };
    // Positions fit in `u32`: a short piece is under `LONG_PIECE` bytes.
    let mut parts = [(0u32, NONE); LONG_PIECE + 1];
    let parts = parts.get_mut(..=n)?;
    let last = n as u32;
    for (k, part) in (0u32..).zip(parts.iter_mut()) {
        *part = (k, if k + 2 <= last { rank(k, k + 2) } else { NONE });
    }
    // Live parts are `parts[..len]`; the last one is the end sentinel.
    let mut len = n + 1;
    loop {
        // The lowest rank, the leftmost among equals (strict `<`).
        let mut min = (NONE, 0);
        for (k, &(_, r)) in parts.get(..len - 1)?.iter().enumerate() {
            if r < min.0 {
                min = (r, k);
            }
        }
        if min.0 == NONE {
            break;
        }
        let i = min.1;
        // Part `i + 1` goes: the pairs that start at `i - 1` and `i` now
        // end one part further on (tiktoken's `+ 3`, read before removing).
        let pair_rank = |parts: &[(u32, u32)], k: usize| match (parts.get(k), parts.get(k + 3)) {
            (Some(&(s, _)), Some(&(e, _))) if k + 3 < len => rank(s, e),
            _ => NONE,
        };
        if i > 0 {
            parts[i - 1].1 = pair_rank(parts, i - 1);
        }
        parts[i].1 = pair_rank(parts, i);
        parts.copy_within(i + 2..len, i + 1);
        len -= 1;
    }
    for w in parts.get(..len)?.windows(2) {
        out.push(*ranks.get(piece.get(w[0].0 as usize..w[1].0 as usize)?)?);
    }
    Some(())
}

/// The heap for a long piece: the lowest `(rank, start)` pops first; an
/// entry whose two parts are no longer adjacent is skipped.
fn merge_long(piece: &[u8], ranks: &FxHashMap<Vec<u8>, u32>, out: &mut Vec<u32>) -> Option<()> {
    const DEAD: usize = usize::MAX;
    let n = piece.len();
    // `end[i]`: where the part starting at `i` ends (`DEAD` once merged into
    // its left neighbour); `prev[i]`: where the part before it starts.
    let mut end: Vec<usize> = (1..=n).collect();
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
    let rank = |s: usize, e: usize| piece.get(s..e).and_then(|b| ranks.get(b)).copied();
    let mut heap: BinaryHeap<Reverse<(u32, usize, usize)>> = (0..n.saturating_sub(1))
        .filter_map(|i| Some(Reverse((rank(i, i + 2)?, i, i + 2))))
        .collect();
    while let Some(Reverse((_, s, e))) = heap.pop() {
        let mid = *end.get(s)?;
        if mid == DEAD || mid >= n || *end.get(mid)? != e {
            continue; // No longer a pair of adjacent parts.
        }
        end[s] = e;
        end[mid] = DEAD;
        if e < n {
            prev[e] = s;
        }
        if s > 0
            && let Some(r) = rank(prev[s], e)
        {
            heap.push(Reverse((r, prev[s], e)));
        }
        if e < n
            && let Some(r) = rank(s, end[e])
        {
            heap.push(Reverse((r, s, end[e])));
        }
    }
    let mut i = 0;
    while i < n {
        let e = *end.get(i)?;
        out.push(rank(i, e)?);
        i = e;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::tiktoken::encodings::BuiltinEncoding;
    use proptest::prelude::*;
    use std::sync::LazyLock;

    static CL100K: LazyLock<FxHashMap<Vec<u8>, u32>> =
        LazyLock::new(|| BuiltinEncoding::Cl100kBase.spec().unwrap().ranks);

    /// `tiktoken-rs`' ids for `piece` (the reference; it asserts on a
    /// piece shorter than two bytes).
    fn reference(piece: &[u8], ranks: &FxHashMap<Vec<u8>, u32>) -> Vec<u32> {
        if piece.len() < 2 {
            return piece.iter().map(|_| ranks[piece]).collect();
        }
        tiktoken_rs::byte_pair_split(piece, ranks)
            .into_iter()
            .map(|p| ranks[p])
            .collect()
    }

    #[test]
    fn both_merges_match_tiktoken() {
        let ranks = &*CL100K;
        let texts = [
            "a".repeat(300),
            " ".repeat(257),
            "abababababcabcabcabc".repeat(9),
            "Supercalifragilisticexpialidocious".into(),
            "\u{3000}\u{3000}é中文字".repeat(20),
            "aaaaaaaa".into(),
            "aaa".into(),
            "   ".into(),
            " the".into(),
            "x".into(),
            String::new(),
        ];
        for text in &texts {
            let piece = text.as_bytes();
            let want = reference(piece, ranks);
            assert_eq!(
                byte_pair_encode(piece, ranks),
                Some(want.clone()),
                "{text:?}"
            );
            // The heap alone, whatever the length, and the scan where it applies.
            let mut out = vec![7];
            assert_eq!(merge_long(piece, ranks, &mut out), Some(()), "{text:?}");
            assert_eq!(out[1..], want[..], "{text:?}");
            if piece.len() < LONG_PIECE {
                let mut out = vec![7];
                assert_eq!(merge_short(piece, ranks, &mut out), Some(()), "{text:?}");
                assert_eq!(out[1..], want[..], "{text:?}");
            }
        }
    }

    #[test]
    fn a_byte_without_a_rank_leaves_the_output_as_it_was() {
        let mut ranks = CL100K.clone();
        ranks.remove(&b"q"[..]);
        ranks.retain(|k, _| !k.contains(&b'q'));
        for piece in ["q", "aqa", &"aq".repeat(80)] {
            let mut out = vec![1, 2];
            assert_eq!(
                byte_pair_encode_into(piece.as_bytes(), &ranks, &mut out),
                None
            );
            assert_eq!(out, [1, 2]);
        }
    }

    proptest! {
        /// Random pieces over a few bytes that merge often, and over any
        /// bytes, short and long: both merges give tiktoken's ids.
        #[test]
        fn merges_match_tiktoken(
            piece in prop_oneof![
                proptest::collection::vec(prop::sample::select(b"ab c\n".to_vec()), 0..240),
                proptest::collection::vec(any::<u8>(), 0..160),
                "\\PC{0,60}".prop_map(String::into_bytes),
            ]
        ) {
            let ranks = &*CL100K;
            prop_assert_eq!(byte_pair_encode(&piece, ranks), Some(reference(&piece, ranks)));
            let mut out = Vec::new();
            prop_assert_eq!(merge_long(&piece, ranks, &mut out), Some(()));
            prop_assert_eq!(out, reference(&piece, ranks));
        }
    }
}
