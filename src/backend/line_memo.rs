//! Whole lines of text seen again, answered from a per-thread memo before
//! the pre-tokenizer runs (DESIGN.md claim 357).
//!
//! A byte-level BPE encodes text it has seen before at the speed of its
//! pre-tokenizer plus one word-cache probe per pre-token, each likely a
//! cache miss. A router sees the same text again and again (a
//! conversation's history with every turn, a system prompt, a document sent
//! with each question), so this memo keeps the ids of whole groups of lines:
//! one hash, one probe and one copy per group.
//!
//! **Where the text is cut.** A group ends after a `\n` after which no `\r`
//! or `\n` comes before the next char that is not whitespace, and that char
//! is not `/` (a [`safe_cut`]). Under the
//! pre-tokenizer patterns `contract::family::cuts_after_lines` admits, that
//! position is a pre-token boundary whatever text surrounds it, and the
//! pre-tokens on either side are the same whether the other side is there
//! or not (the argument is claim 357). So the ids of a group encoded alone
//! are its ids inside the text, and a group seen again (the same bytes) has
//! the same ids. The backend decides whether its pre-tokenizer is one of
//! those; this module only cuts and remembers. The SentencePiece engine
//! uses it too, with its own edge rule (claim 359).

use std::cell::RefCell;

use crate::backend::byte_memo::{self, RecurringMemo};

/// Bytes a group must have to be looked up: below it, the probe and copy
/// cost about what encoding it does.
const MIN_GROUP: usize = 160;
/// Texts shorter than this are encoded whole.
pub(crate) const MIN_TEXT: usize = 4 << 10;
/// Whether a group may end after the `\n` at `nl` (claim 357): what
/// follows is a run of spaces, tabs and U+3000 (possibly empty), then an
/// ASCII char that is neither whitespace nor `/`, or a CJK ideograph of
/// U+4000..U+9FFF (lead byte 0xE4..=0xE9, none of them whitespace). So no
/// `\r` or `\n` follows before the next char that is not whitespace.
#[inline]
pub(crate) fn safe_cut(bytes: &[u8], nl: usize) -> bool {
    let mut at = nl + 1;
    loop {
        match bytes.get(at..) {
            Some([b' ' | b'\t', ..]) => at += 1,
            Some([0xE3, 0x80, 0x80, ..]) => at += 3,
            Some([b, ..]) => {
                return (b.is_ascii_graphic() && *b != b'/') || (0xE4..=0xE9).contains(b);
            }
            _ => return false,
        }
    }
}

/// A backend's line memos, one per thread (made on first use), for the
/// backends whose pre-tokenizer admits the cut.
#[derive(Default)]
pub(crate) struct LineMemos(thread_local::ThreadLocal<RefCell<LineMemo>>);

impl LineMemos {
    /// `text`'s ids appended to `out`: through this thread's memo when
    /// the text is long enough, else `encode(text, out)`. An encode on this
    /// thread already holding the memo (none does today) goes without it
    /// rather than panic.
    pub(crate) fn encode<E>(
        &self,
        text: &str,
        out: &mut Vec<u32>,
        edge: impl Fn(usize) -> bool,
        mut encode: impl FnMut(&str, &mut Vec<u32>) -> Result<(), E>,
    ) -> Result<(), E> {
        if text.len() >= MIN_TEXT
            && let Ok(mut memo) = self.0.get_or_default().try_borrow_mut()
        {
            return memo.encode(text, out, edge, encode);
        }
        encode(text, out)
    }

    /// [`LineMemo::recurs`] on this thread's memo; `false` for a text the
    /// memo would not take.
    pub(crate) fn recurs(&self, text: &str, want: usize) -> bool {
        text.len() >= MIN_TEXT
            && self
                .0
                .get_or_default()
                .try_borrow_mut()
                .is_ok_and(|mut m| m.recurs(text, want))
    }
}

/// One thread's memo for one model: group bytes → ids.
#[derive(Default)]
pub(crate) struct LineMemo(RecurringMemo);

impl std::fmt::Debug for LineMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineMemo").finish_non_exhaustive()
    }
}

impl LineMemo {
    /// `text`'s ids appended to `out`. `encode` appends the ids of a piece
    /// of `text` (the whole text when no group is looked up); `edge(p)` says
    /// whether the text may be cut at `p` (no added token across it), and
    /// `edge(0)` whether the group at the text's start may be answered
    /// (not where the start encodes differently: a dummy prefix). Where
    /// the pattern admits it (claim 357) the ids are `encode(text)`'s.
    pub(crate) fn encode<E>(
        &mut self,
        text: &str,
        out: &mut Vec<u32>,
        edge: impl Fn(usize) -> bool,
        mut encode: impl FnMut(&str, &mut Vec<u32>) -> Result<(), E>,
    ) -> Result<(), E> {
        let bytes = text.as_bytes();
        // Text before `done` is encoded.
        let mut done = 0;
        for (from, end) in Groups::new(bytes) {
            let group = bytes.get(from..end).unwrap_or_default();
            let h = byte_memo::hash(group);
            if !self.0.look_up(h) || !((from == done && from > 0) || edge(from)) || !edge(end) {
                continue;
            }
            if let Some(ids) = self.0.get_counted(group, h) {
                if done < from {
                    encode(slice(text, done, from), out)?;
                }
                done = end;
                out.extend_from_slice(ids);
                continue;
            }
            if !self.0.keeps(group.len()) {
                // Left to the encode of the text around it.
                continue;
            }
            if done < from {
                encode(slice(text, done, from), out)?;
            }
            done = end;
            let first = out.len();
            encode(slice(text, from, end), out)?;
            let ids = out.get(first..).unwrap_or_default();
            self.0.insert(group, h, ids);
        }
        if done < text.len() {
            encode(slice(text, done, text.len()), out)?;
        }
        Ok(())
    }

    /// Whether `text` comes back: whether its groups this memo holds or
    /// has seen make up `want` of its bytes or more, estimated on the
    /// groups whose first bytes' hash picks one in [`SAMPLE`] (a text sent
    /// again picks the same ones), which it marks seen. When it answers
    /// `true` for a text the memo does not hold yet, every group is marked
    /// seen and the rate set high, so the encode that follows looks every
    /// group up and keeps it, and the next answers them (claim 362).
    pub(crate) fn recurs(&mut self, text: &str, want: usize) -> bool {
        let bytes = text.as_bytes();
        let (mut sampled, mut recurring, mut held) = (0u128, 0u128, 0u128);
        for (from, end) in Groups::new(bytes) {
            let group = bytes.get(from..end).unwrap_or_default();
            let head = group.get(..SAMPLE_HEAD).unwrap_or(group);
            if byte_memo::hash(head) >> (64 - SAMPLE.trailing_zeros()) != 0 {
                continue;
            }
            let h = byte_memo::hash(group);
            let len = group.len() as u128;
            sampled += len;
            let seen = self.0.mark_seen(h);
            if self.0.get(group, h).is_some() {
                held += len;
                recurring += len;
            } else if seen {
                recurring += len;
            }
        }
        // share / sampled ≥ want / len, in integers.
        let enough =
            |share: u128| sampled > 0 && share * bytes.len() as u128 >= want as u128 * sampled;
        let recurs = enough(recurring);
        // Held already: the encode answers it; nothing to prepare.
        if recurs && !enough(held) {
            for (from, end) in Groups::new(bytes) {
                let group = bytes.get(from..end).unwrap_or_default();
                self.0.mark_seen(byte_memo::hash(group));
            }
            self.0.expect_recurring();
        }
        recurs
    }
}

/// [`LineMemo::recurs`] looks at one group in this many (a power of two)...
const SAMPLE: u32 = 8;
/// ...picked by the hash of its first this many bytes.
const SAMPLE_HEAD: usize = 16;

/// The line groups of a text, as `(start, end)`: whole lines, each ending
/// at a [`safe_cut`], of at least `MIN_GROUP` bytes. Short lines join the
/// next, so the search for a group's end starts `MIN_GROUP` bytes on (a line
/// that long ends a group wherever the last one began, so texts that share
/// lines share groups from there on). What follows the last group is none.
struct Groups<'a> {
    bytes: &'a [u8],
    /// Where the next group starts.
    start: usize,
    /// Where the search for its closing `\n` goes on.
    at: usize,
}

impl<'a> Groups<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            start: 0,
            at: MIN_GROUP - 1,
        }
    }
}

impl Iterator for Groups<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        loop {
            let at = self.at;
            let nl = at + memchr::memchr(b'\n', self.bytes.get(at..)?)?;
            self.at = nl + 1;
            if safe_cut(self.bytes, nl) {
                let group = (self.start, nl + 1);
                self.start = nl + 1;
                self.at = nl + MIN_GROUP;
                return Some(group);
            }
        }
    }
}

/// `text[a..b]`, where both are 0, the text's end or after a `\n` (char
/// boundaries).
fn slice(text: &str, a: usize, b: usize) -> &str {
    text.get(a..b).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_cuts_need_a_char_that_ends_the_newline_run() {
        let cut = |s: &str| safe_cut(s.as_bytes(), 0);
        for ok in [
            "\nx",
            "\n}",
            "\n#",
            "\n    def",
            "\n\t\tx",
            "\n\u{3000}\u{3000}第",
            "\n中",
            "\n鿿",
        ] {
            assert!(cut(ok), "{ok:?}");
        }
        // A newline or CR ahead (whitespace runs join across them), `/`
        // (o200k's punctuation runs take `[\r\n/]*`), other whitespace and
        // chars outside the two classes, and the text's end.
        for no in [
            "\n",
            "\n\n",
            "\n \n",
            "\n\r\n",
            "\n/",
            "\n  /",
            "\n\u{a0}x",
            "\n\u{2028}",
            "\n\u{3001}",
            "\né",
            "\n ",
            "\n\u{3000}",
        ] {
            assert!(!cut(no), "{no:?}");
        }
    }

    /// Lines of `n` bytes or so, numbered, so texts built from them share
    /// their lines.
    fn lines(range: std::ops::Range<usize>) -> String {
        range
            .map(|i| format!("line {i} says something about the tokenizer and its memo, {i}\n"))
            .collect()
    }

    /// Runs `memo` on `text` with a stand-in encoder (one id per byte, so
    /// any cut gives the same ids) and returns the ids and the byte ranges
    /// of the pieces it was handed.
    fn run(
        memo: &mut LineMemo,
        text: &str,
        edge: impl Fn(usize) -> bool,
    ) -> (Vec<u32>, Vec<(usize, usize)>) {
        let (mut out, mut calls) = (Vec::new(), Vec::new());
        let base = text.as_ptr() as usize;
        memo.encode(text, &mut out, edge, |piece, out| {
            let at = piece.as_ptr() as usize - base;
            calls.push((at, at + piece.len()));
            out.extend(piece.bytes().map(u32::from));
            Ok::<(), ()>(())
        })
        .expect("stand-in encoder");
        (out, calls)
    }

    #[test]
    fn text_seen_again_is_answered_and_ids_never_change() {
        let text = lines(0..400);
        let expected: Vec<u32> = text.bytes().map(u32::from).collect();
        let mut memo = LineMemo::default();
        let mut calls_per_run = Vec::new();
        for _ in 0..6 {
            let (ids, calls) = run(&mut memo, &text, |_| true);
            assert!(ids == expected);
            // Pieces in order, never overlapping.
            assert!(calls.windows(2).all(|w| w[0].1 <= w[1].0));
            calls_per_run.push(calls.len());
        }
        // Seen once: one call. Seen again: groups encoded alone and kept.
        // Then the memo answers them: only the groups looked up before the
        // rate had risen this run go to the encoder.
        assert_eq!(calls_per_run[0], 1);
        assert!(calls_per_run[2] > 10, "{calls_per_run:?}");
        assert!(calls_per_run[5] <= 2, "{calls_per_run:?}");
        // Text with a new first line and the rest shared is answered too.
        let shifted = format!("a new first line\n{}", lines(3..400));
        let (ids, calls) = run(&mut memo, &shifted, |_| true);
        assert!(ids == shifted.bytes().map(u32::from).collect::<Vec<_>>());
        assert!(calls.len() <= 3, "{calls:?}");
    }

    #[test]
    fn a_text_recurs_once_its_sampled_groups_were_seen() {
        let text = lines(0..400);
        let mut memo = LineMemo::default();
        // Seen for the first time: marks its sample, recurs the next time.
        assert!(!memo.recurs(&text, text.len() / 2));
        assert!(memo.recurs(&text, text.len() / 2));
        // That answer marked every group: the next encode keeps them all
        // (groups encoded alone), and the one after answers them.
        let (_, calls) = run(&mut memo, &text, |_| true);
        assert!(calls.len() > 100, "{}", calls.len());
        let (ids, calls) = run(&mut memo, &text, |_| true);
        assert!(calls.len() <= 1, "{calls:?}");
        assert!(ids == text.bytes().map(u32::from).collect::<Vec<_>>());
        // The same text with as much again appended: half of it recurs.
        let longer = format!("{text}{}", lines(1000..1400));
        assert!(memo.recurs(&longer, longer.len() * 2 / 5));
        assert!(!memo.recurs(&lines(5000..5400), 1000));
        // A share above what recurs is refused (the appended half is now
        // marked seen, so it is asked of a text with a third part new).
        let third = format!("{longer}{}", lines(7000..7800));
        assert!(!memo.recurs(&third, third.len() * 3 / 4));
        // No newline, no group: never.
        assert!(!memo.recurs(&"x".repeat(10_000), 1));
    }

    /// The share of `text` the memo answered (not handed to the encoder).
    fn answered(text: &str, calls: &[(usize, usize)]) -> f64 {
        let encoded: usize = calls.iter().map(|&(a, b)| b - a).sum();
        1.0 - encoded as f64 / text.len() as f64
    }

    #[test]
    fn a_cycle_longer_than_the_memo_is_answered_in_part_and_new_text_relearned() {
        // About 1.2 MB of lines, sent again and again: more than the memo's
        // 4 MiB of keys and ids take (one id per byte here).
        let text = lines(0..16_000);
        let mut memo = LineMemo::default();
        let mut shares = Vec::new();
        for _ in 0..5 {
            let (ids, calls) = run(&mut memo, &text, |_| true);
            assert!(
                ids.len() == text.len()
                    && ids
                        .iter()
                        .zip(text.bytes())
                        .all(|(&i, b)| i == u32::from(b))
            );
            shares.push(answered(&text, &calls));
        }
        // The memo keeps the part it took (emptying it whenever it filled
        // answered nothing, run after run).
        assert!(shares[3] > 0.5 && shares[4] > 0.5, "{shares:?}");
        // Other text that recurs: the full memo's lookups all miss, so a
        // window on it is emptied and learns the new text.
        let other = lines(100_000..116_000);
        let mut shares = Vec::new();
        for _ in 0..6 {
            let (ids, calls) = run(&mut memo, &other, |_| true);
            assert_eq!(ids.len(), other.len());
            shares.push(answered(&other, &calls));
        }
        assert!(shares[5] > 0.5, "{shares:?}");
    }

    #[test]
    fn new_text_goes_whole_and_refused_edges_are_never_cut() {
        let text = lines(0..400);
        let mut memo = LineMemo::default();
        let (_, calls) = run(&mut memo, &text, |_| true);
        assert_eq!(calls, [(0, text.len())]);
        for _ in 0..6 {
            // Every cut refused: the text stays one piece however often seen.
            let (ids, calls) = run(&mut memo, &text, |_| false);
            assert_eq!(calls, [(0, text.len())]);
            assert_eq!(ids.len(), text.len());
        }
        // Cuts refused after every fifth line: no piece starts or ends there.
        let refused = |p: usize| {
            p > 0 && p < text.len() && text.get(..p).is_some_and(|h| h.lines().count() % 5 == 0)
        };
        let mut pieces = 0;
        for _ in 0..6 {
            let (ids, calls) = run(&mut memo, &text, |p| !refused(p));
            assert_eq!(ids.len(), text.len());
            for &(a, b) in &calls {
                assert!(
                    !refused(a) && !refused(b),
                    "cut at a refused edge: {a}..{b}"
                );
            }
            pieces += calls.len();
        }
        assert!(pieces > 12, "the memo never cut: {pieces}");
    }
}
