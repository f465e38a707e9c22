//! Token budgets: the longest prefix or suffix within `n` tokens, chunking
//! and incremental counts, exact on a character boundary.
//!
//! Counts of prefixes are not monotone (BPE and Unigram may need fewer
//! tokens for a longer text), so no binary search over characters is used.
//! Instead the search stands on **restart points** (DESIGN.md, invariants
//! `budget-equals-brute-force` and `restart-point-additive`): a byte position `s` with an ASCII space at `s`, an ASCII graphic
//! char at `s - 1`, where the tokenizer's family guarantees that for every
//! text `X` with such a position, `count(X) = count(X[..s]) + f(X[s..])`,
//! `f` depending only on the text right of `s`. Then:
//!
//! - the count of a prefix at a restart point is a sum of piece counts, and
//!   is monotone over restart points (binary search is valid there);
//! - a prefix ending between two restart points `lo < p < hi` has
//!   `count(T[..p]) = count(T[..lo]) + f(T[lo..p])`, and `f` is measured by
//!   encoding a few bytes before `lo` with and without the piece;
//! - only the last stretch between two restart points is searched char by
//!   char, with re-encoding, from its far end.
//!
//! Families with no such argument have no restart points: the whole text is
//! one stretch (exact, but quadratic in its length).

use super::EdgeRule;
use crate::error::{Error, ErrorKind, Result};

/// Which end of the text [`Tokenizer::truncate`](crate::Tokenizer::truncate)
/// cuts off (transformers' `truncation_side`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Side {
    /// Cut the start: keep the longest suffix within the budget.
    Left,
    /// Cut the end: keep the longest prefix within the budget (the default).
    #[default]
    Right,
}

/// Smallest block the forward (backward) scan encodes at once, in bytes:
/// below it, per-call overhead dominates.
const MIN_BLOCK: usize = 2048;

/// Exact prefix and suffix searches over one text.
///
/// `count` returns the number of tokens of a text without BOS/EOS, exactly as
/// the tokenizer's `encode(text, false)` does.
pub(crate) struct Search<'a, F> {
    text: &'a str,
    /// Restart points exist only when the family's argument holds.
    edges: Option<&'a EdgeRule>,
    count: F,
    /// `count` of each single ASCII char (the context piece before a restart point).
    single: [Option<usize>; 128],
}

impl<'a, F: FnMut(&str) -> Result<usize>> Search<'a, F> {
    pub(crate) fn new(text: &'a str, edges: Option<&'a EdgeRule>, count: F) -> Self {
        Self {
            text,
            edges,
            count,
            single: [None; 128],
        }
    }

    /// Whether `s` is a restart point of the text (invariant `restart-point-additive`).
    pub(crate) fn is_restart(&self, s: usize) -> bool {
        let Some(edges) = self.edges else {
            return false;
        };
        let b = self.text.as_bytes();
        s > 0
            && s < b.len()
            && b[s] == b' '
            && b[s - 1].is_ascii_graphic()
            && edges.allows(self.text, s)
            && (s == 1 || edges.allows(self.text, s - 1))
    }

    /// The first restart point in `[from, to)`.
    fn next_restart(&self, from: usize, to: usize) -> Option<usize> {
        self.edges?;
        let to = to.min(self.text.len());
        let b = self.text.as_bytes();
        let mut i = from.max(1);
        while i < to {
            let off = b[i..to].iter().position(|&c| c == b' ')?;
            let s = i + off;
            if self.is_restart(s) {
                return Some(s);
            }
            i = s + 1;
        }
        None
    }

    /// The last restart point in `[from, to)`.
    pub(super) fn prev_restart(&self, from: usize, to: usize) -> Option<usize> {
        self.edges?;
        let from = from.max(1);
        let b = self.text.as_bytes();
        let mut j = to.min(b.len());
        while j > from {
            let off = b[from..j].iter().rposition(|&c| c == b' ')?;
            let s = from + off;
            if self.is_restart(s) {
                return Some(s);
            }
            j = s;
        }
        None
    }

    /// Every restart point strictly between `lo` and `hi`.
    fn restarts_between(&self, lo: usize, hi: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = lo + 1;
        while let Some(s) = self.next_restart(at, hi) {
            out.push(s);
            at = s + 1;
        }
        out
    }

    fn count(&mut self, piece: &str) -> Result<usize> {
        (self.count)(piece)
    }

    /// `f(T[a..b])`: the tokens `T[a..b]` contributes after a restart point
    /// `a` (or the start, `a = 0`), measured with the one char before `a` as
    /// context (invariant `restart-point-additive`).
    pub(super) fn ctx(&mut self, a: usize, b: usize) -> Result<usize> {
        let text = self.text;
        if a == 0 {
            return self.count(&text[..b]);
        }
        let byte = text.as_bytes()[a - 1];
        let single = match self.single.get(usize::from(byte)).copied().flatten() {
            Some(c) => c,
            None => {
                let c = self.count(&text[a - 1..a])?;
                if let Some(slot) = self.single.get_mut(usize::from(byte)) {
                    *slot = Some(c);
                }
                c
            }
        };
        let with = self.count(&text[a - 1..b])?;
        with.checked_sub(single).ok_or_else(|| {
            Error::new(ErrorKind::Backend {
                backend: "budget",
                detail: format!("restart point {a}: the piece count went negative"),
            })
        })
    }

    /// Bytes per token seen so far, for the next block's size.
    fn block(done_bytes: usize, done_tokens: usize, tokens_left: usize) -> usize {
        let per_token = done_bytes
            .checked_div(done_tokens)
            .map_or(4, |b| b.clamp(1, 16));
        // Aim a little short: overshooting costs a binary search over the
        // block, undershooting one more (small) block.
        (tokens_left.saturating_mul(per_token) / 10 * 9).max(MIN_BLOCK)
    }

    /// The longest prefix `T[..p]` (`p` a char boundary) with
    /// `count(T[..p]) <= n`, and that count. `(0, 0)` when none but the empty one.
    pub(crate) fn prefix(&mut self, n: usize) -> Result<(usize, usize)> {
        let len = self.text.len();
        // Forward blocks over restart points: `lo` is 0 or a restart point
        // with `count(T[..lo]) = c_lo <= n`.
        let (mut lo, mut c_lo) = (0usize, 0usize);
        let (hi, _c_hi) = loop {
            let step = Self::block(lo, c_lo, n - c_lo);
            let target = lo.saturating_add(step);
            let hi = if target >= len {
                len
            } else {
                self.next_restart(target, len).unwrap_or(len)
            };
            let c_hi = c_lo + self.ctx(lo, hi)?;
            if c_hi > n {
                break (hi, c_hi);
            }
            if hi == len {
                return Ok((len, c_hi));
            }
            (lo, c_lo) = (hi, c_hi);
        };
        // Binary search over the restart points inside the block: counts at
        // restart points are monotone (invariant `budget-equals-brute-force`).
        let mut hi = hi;
        let mut inner = self.restarts_between(lo, hi);
        let mut slice = &inner[..];
        while !slice.is_empty() {
            let k = slice.len() / 2;
            let mid = slice[k];
            let c_mid = c_lo + self.ctx(lo, mid)?;
            if c_mid <= n {
                (lo, c_lo) = (mid, c_mid);
                slice = &slice[k + 1..];
            } else {
                hi = mid;
                slice = &slice[..k];
            }
        }
        inner.clear();
        // The last stretch: every char boundary, from the far end.
        let text = self.text;
        for (i, _) in text[lo..hi].char_indices().rev() {
            if i == 0 {
                break;
            }
            let c = c_lo + self.ctx(lo, lo + i)?;
            if c <= n {
                return Ok((lo + i, c));
            }
        }
        Ok((lo, c_lo))
    }

    /// The longest suffix `T[q..]` (`q` a char boundary) with
    /// `count(T[q..]) <= n`, and that count.
    pub(crate) fn suffix(&mut self, n: usize) -> Result<(usize, usize)> {
        let len = self.text.len();
        // Backward blocks: `hi` is the end or a restart point with
        // `F(hi) = f(T[hi..]) = f_hi <= n` (invariant `budget-equals-brute-force`).
        let (mut hi, mut f_hi) = (len, 0usize);
        let mut over: Option<usize> = None;
        loop {
            let step = Self::block(len - hi, f_hi, n - f_hi);
            let target = hi.saturating_sub(step);
            let lo = self
                .prev_restart(1, target.saturating_add(1))
                .or_else(|| self.next_restart(target.saturating_add(1), hi));
            let Some(lo) = lo.filter(|&lo| lo < hi) else {
                break;
            };
            let f_lo = self.ctx(lo, hi)? + f_hi;
            if f_lo > n {
                over = Some(lo);
                break;
            }
            (hi, f_hi) = (lo, f_lo);
        }
        // Binary search between the last restart over the budget and `hi`.
        let mut x = 0usize;
        if let Some(mut lo) = over {
            let inner = self.restarts_between(lo, hi);
            let mut slice = &inner[..];
            while !slice.is_empty() {
                let k = slice.len() / 2;
                let mid = slice[k];
                let f_mid = self.ctx(mid, hi)? + f_hi;
                if f_mid > n {
                    lo = mid;
                    slice = &slice[k + 1..];
                } else {
                    (hi, f_hi) = (mid, f_mid);
                    slice = &slice[..k];
                }
            }
            x = lo;
        }
        // Stretches from `x` rightwards, each char boundary in order; no
        // suffix starting left of `x` fits.
        let text = self.text;
        let (mut y, mut f_y) = (hi, f_hi);
        loop {
            for (i, _) in text[x..y].char_indices() {
                let q = x + i;
                let s = self.count(&text[q..y])? + f_y;
                if s <= n {
                    return Ok((q, s));
                }
            }
            if y >= len {
                return Ok((len, 0));
            }
            let next = self.next_restart(y + 1, len).unwrap_or(len);
            let f_next = if next == len {
                0
            } else {
                f_y.checked_sub(self.ctx(y, next)?).ok_or_else(|| {
                    Error::new(ErrorKind::Backend {
                        backend: "budget",
                        detail: format!("restart point {y}: suffix counts out of order"),
                    })
                })?
            };
            (x, y, f_y) = (y, next, f_next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy count where a longer text can cost fewer tokens: `ab` is one
    /// token only when followed by `c`, like the `bpe` README's `abab`/`ababc`.
    fn toy(t: &str) -> Result<usize> {
        let mut n = 0;
        let b = t.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i..].starts_with(b"abc") {
                i += 3;
            } else {
                i += t[i..].chars().next().map_or(1, char::len_utf8);
            }
            n += 1;
        }
        Ok(n)
    }

    fn brute_prefix(t: &str, n: usize) -> (usize, usize) {
        let mut best = (0, 0);
        for (i, _) in t
            .char_indices()
            .skip(1)
            .chain(std::iter::once((t.len(), ' ')))
        {
            let c = toy(&t[..i]).unwrap();
            if c <= n {
                best = (i, c);
            }
        }
        best
    }

    fn brute_suffix(t: &str, n: usize) -> (usize, usize) {
        for (i, _) in t.char_indices() {
            let c = toy(&t[i..]).unwrap();
            if c <= n {
                return (i, c);
            }
        }
        (t.len(), 0)
    }

    #[test]
    fn non_monotone_counts_without_restart_points() {
        for t in ["ab", "abc", "xabcab", "ababcabc", "aé🙂abc", "abcabcabcab"] {
            for n in 0..8 {
                let mut s = Search::new(t, None, toy);
                assert_eq!(s.prefix(n).unwrap(), brute_prefix(t, n), "{t:?} {n}");
                let mut s = Search::new(t, None, toy);
                assert_eq!(s.suffix(n).unwrap(), brute_suffix(t, n), "{t:?} {n}");
            }
        }
    }

    #[test]
    fn restart_points_split_the_search_exactly() {
        // The toy's tokens never cross a space, as invariant `restart-point-additive` asks.
        let edges = EdgeRule::default();
        for t in [
            "ab abc abcab x",
            "abcabc ab abab abc",
            " ab  abc",
            "xx yy zz ab",
        ] {
            for n in 0..12 {
                let mut s = Search::new(t, Some(&edges), toy);
                assert_eq!(s.prefix(n).unwrap(), brute_prefix(t, n), "{t:?} {n}");
                let mut s = Search::new(t, Some(&edges), toy);
                assert_eq!(s.suffix(n).unwrap(), brute_suffix(t, n), "{t:?} {n}");
            }
        }
    }

    #[test]
    fn restart_points_need_space_after_ascii() {
        let edges = EdgeRule::default();
        let s = Search::new("a b  c é d", Some(&edges), toy);
        let found: Vec<usize> = (0..11).filter(|&i| s.is_restart(i)).collect();
        assert_eq!(found, vec![1, 3, 6]);
    }
}
