//! The ids of whole CJK pre-tokens, remembered per thread after they were
//! encoded cut (DESIGN.md claim 352).
//!
//! [`CharCuts`] lets a clause of Chinese text be merged as pieces of one or
//! two chars, which is what makes text seen once fast (claim 351). Text seen
//! again then pays the cut and one word-cache probe per piece, where the
//! model's word cache used to answer the whole clause in one. The model's
//! cache cannot be handed the whole clause's ids, so this table keeps them:
//! a clause seen before is one probe here, no cut and no piece probes.
//!
//! The ids are the model's, so the table belongs to one model: it lives in
//! the per-thread scratch of the engine that owns the cuts.

use std::hash::BuildHasher;

use rustc_hash::FxBuildHasher;
use tokenizers::pipeline::{PipelineToken, Span};

use crate::backend::char_cuts::{CharCuts, may_cut};

/// Slots of the table (a power of two): 16 bytes each, 512 KiB.
const SLOTS: usize = 1 << 15;
/// Entries kept before the table starts again empty (a bounded size on any
/// input: a router's thread keeps it for the process's life).
const MAX_ENTRIES: usize = SLOTS / 2;
/// Bytes of clause text kept before the table starts again empty.
const MAX_KEY_BYTES: usize = 4 << 20;
/// A clause longer than this is not remembered.
const MAX_KEY_LEN: usize = u16::MAX as usize;
/// Bits of the seen filter (a power of two): 2^20 bits, 128 KiB.
const SEEN_BITS: usize = 1 << 20;
/// Bits set before the seen filter starts again empty (a sixteenth: a
/// clause seen once is taken for seen before at most one time in sixteen).
const MAX_SEEN: usize = SEEN_BITS / 16;
/// The seen-rate's fixed-point one, and the rate from which clauses are
/// looked up (fifteen in sixteen seen before: text encoded again, or a
/// prompt that repeats itself; a novel's clauses, half of which recur,
/// look up mostly clauses not yet remembered, claim 352).
const RATE_ONE: u32 = 1 << 16;
const LOOKUP_RATE: u32 = RATE_ONE / 16 * 15;

#[derive(Clone, Copy, Default)]
struct Slot {
    /// The high half of the key's hash, never 0 in a used slot.
    tag: u32,
    key_at: u32,
    ids_at: u32,
    key_len: u16,
    ids_len: u16,
}

/// A bounded map from a clause's bytes to its ids: open addressing over
/// [`SLOTS`] slots, keys and ids in two pools, emptied whole when full
/// (no eviction bookkeeping on the hot path).
pub(crate) struct ClauseMemo {
    slots: Box<[Slot]>,
    keys: Vec<u8>,
    ids: Vec<u32>,
    entries: usize,
    /// One bit per hash of a clause seen: only a clause seen before is
    /// looked up and remembered, so text seen once pays a bit, not a table
    /// entry (and its clauses stay in one model call).
    seen: Box<[u64]>,
    seen_count: usize,
    /// How many of the recent clauses were seen before (a moving average
    /// over about 32, in `RATE_ONE`ths). Below [`LOOKUP_RATE`] the table
    /// is left alone: a lookup and a model call per clause cost more than
    /// the cut saves on text mostly new (claim 352).
    seen_rate: u32,
}

impl Default for ClauseMemo {
    fn default() -> Self {
        Self {
            slots: vec![Slot::default(); SLOTS].into_boxed_slice(),
            keys: Vec::new(),
            ids: Vec::new(),
            entries: 0,
            seen: vec![0; SEEN_BITS / 64].into_boxed_slice(),
            seen_count: 0,
            seen_rate: 0,
        }
    }
}

/// A key's hash, split: slot, tag and seen-filter bit.
#[derive(Clone, Copy)]
struct Hash {
    slot: usize,
    tag: u32,
    seen: usize,
}

impl Hash {
    #[inline]
    fn of(key: &[u8]) -> Self {
        let h = FxBuildHasher.hash_one(key);
        Self {
            slot: (h as usize) & (SLOTS - 1),
            tag: ((h >> 32) as u32).max(1),
            seen: ((h >> 12) as usize) & (SEEN_BITS - 1),
        }
    }
}

impl ClauseMemo {
    /// Whether a key of hash `h` was seen before while most recent clauses
    /// were too, so it is worth a lookup; marks it seen.
    #[inline]
    fn look_up(&mut self, h: Hash) -> bool {
        let (word, bit) = (h.seen / 64, 1u64 << (h.seen % 64));
        let Some(w) = self.seen.get_mut(word) else {
            return false;
        };
        let seen = *w & bit != 0;
        self.seen_rate = self.seen_rate - self.seen_rate / 32 + u32::from(seen) * (RATE_ONE / 32);
        if seen {
            return self.seen_rate >= LOOKUP_RATE;
        }
        *w |= bit;
        self.seen_count += 1;
        if self.seen_count > MAX_SEEN {
            self.seen.fill(0);
            self.seen_count = 0;
        }
        false
    }

    /// The ids remembered for `key` (of hash `h`).
    #[inline]
    fn get(&self, key: &[u8], h: Hash) -> Option<&[u32]> {
        let (mut i, tag) = (h.slot, h.tag);
        loop {
            let slot = self.slots.get(i)?;
            if slot.tag == 0 {
                return None;
            }
            if slot.tag == tag && usize::from(slot.key_len) == key.len() {
                let at = slot.key_at as usize;
                if self.keys.get(at..at + key.len()) == Some(key) {
                    let at = slot.ids_at as usize;
                    return self.ids.get(at..at + usize::from(slot.ids_len));
                }
            }
            i = (i + 1) & (SLOTS - 1);
        }
    }

    /// Remembers `ids` for `key` (of hash `h`; absent: the caller asked first).
    fn insert(&mut self, key: &[u8], h: Hash, ids: &[PipelineToken]) {
        if key.len() > MAX_KEY_LEN || ids.len() > usize::from(u16::MAX) {
            return;
        }
        if self.entries >= MAX_ENTRIES || self.keys.len() + key.len() > MAX_KEY_BYTES {
            self.slots.fill(Slot::default());
            self.keys.clear();
            self.ids.clear();
            self.entries = 0;
        }
        let (mut i, tag) = (h.slot, h.tag);
        while self.slots.get(i).is_some_and(|s| s.tag != 0) {
            i = (i + 1) & (SLOTS - 1);
        }
        let Some(slot) = self.slots.get_mut(i) else {
            return;
        };
        // Both pools stay far below 4 GiB (`MAX_KEY_BYTES`, and at most
        // `MAX_ENTRIES` lists of at most `u16::MAX` ids).
        *slot = Slot {
            tag,
            key_at: self.keys.len() as u32,
            ids_at: self.ids.len() as u32,
            key_len: key.len() as u16,
            ids_len: ids.len() as u16,
        };
        self.keys.extend_from_slice(key);
        self.ids.extend(ids.iter().map(|&t| u32::from(t)));
        self.entries += 1;
    }
}

/// The working memory of [`encode_spans`] on one thread, for one model:
/// the spans of the next model call and the memo (made on first use).
#[derive(Default)]
pub(crate) struct CutScratch {
    pieces: Vec<Span>,
    memo: Option<Box<ClauseMemo>>,
}

impl CutScratch {
    /// Drops the span buffer (after a huge input; the memo is bounded).
    pub(crate) fn release_pieces(&mut self) {
        self.pieces = Vec::new();
    }
}

/// The model's ids for `spans` of `text`, appended to `out`, where `model`
/// encodes a list of spans. Without `cuts`, or without a CJK lead byte in
/// `text`, that is one `model` call. Otherwise a CJK pre-token seen for the
/// first time is cut by `cuts` and encoded with the spans around it; seen
/// again (while most clauses are), it is encoded alone and remembered;
/// after that, the memo answers it. The ids are the same as `model` on
/// `spans` (claim 351 for the cut, claim 352 for the memo).
pub(crate) fn encode_spans<E>(
    cuts: Option<&CharCuts>,
    scratch: &mut CutScratch,
    text: &str,
    spans: &[Span],
    out: &mut Vec<PipelineToken>,
    mut model: impl FnMut(&[Span], &mut Vec<PipelineToken>) -> Result<(), E>,
) -> Result<(), E> {
    let Some(cuts) = cuts.filter(|_| may_cut(text)) else {
        return model(spans, out);
    };
    let CutScratch { pieces, memo } = scratch;
    let memo = memo.get_or_insert_with(Box::default);
    let bytes = text.as_bytes();
    // What is not answered yet, encoded together: the spans since the last
    // answer, first-seen clauses cut.
    pieces.clear();
    for span in spans {
        let Some(word) = bytes
            .get(span.range())
            .filter(|w| CharCuts::may_cut_word(w))
        else {
            pieces.push(*span);
            continue;
        };
        let h = Hash::of(word);
        if !memo.look_up(h) {
            cuts.cut_span(bytes, *span, pieces);
            continue;
        }
        if !pieces.is_empty() {
            model(pieces, out)?;
            pieces.clear();
        }
        if let Some(ids) = memo.get(word, h) {
            out.extend(ids.iter().map(|&id| PipelineToken::from(id)));
            continue;
        }
        let first = out.len();
        cuts.cut_span(bytes, *span, pieces);
        model(pieces, out)?;
        pieces.clear();
        memo.insert(word, h, out.get(first..).unwrap_or_default());
    }
    if !pieces.is_empty() {
        model(pieces, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(ids: &[u32]) -> Vec<PipelineToken> {
        ids.iter().map(|&i| PipelineToken::from(i)).collect()
    }

    #[test]
    fn remembers_and_empties_when_full() {
        let mut memo = ClauseMemo::default();
        let get = |memo: &ClauseMemo, k: &[u8]| memo.get(k, Hash::of(k)).map(<[u32]>::to_vec);
        assert_eq!(get(&memo, b"abc"), None);
        for (k, ids) in [(&b"abc"[..], &[1, 2][..]), (b"abd", &[3]), (b"", &[])] {
            memo.insert(k, Hash::of(k), &tokens(ids));
        }
        assert_eq!(get(&memo, b"abc"), Some(vec![1, 2]));
        assert_eq!(get(&memo, b"abd"), Some(vec![3]));
        assert_eq!(get(&memo, b""), Some(vec![]));
        assert_eq!(get(&memo, b"ab"), None);
        for n in 0..MAX_ENTRIES as u32 {
            let k = n.to_le_bytes();
            memo.insert(&k, Hash::of(&k), &tokens(&[n]));
        }
        // The table started again empty on the way; the last entries stay.
        assert!(memo.entries <= MAX_ENTRIES);
        assert_eq!(get(&memo, b"abc"), None);
        let last = MAX_ENTRIES as u32 - 1;
        assert_eq!(get(&memo, &last.to_le_bytes()), Some(vec![last]));
    }

    #[test]
    fn lookups_follow_the_seen_rate_and_the_filter_starts_again_when_full() {
        let mut memo = ClauseMemo::default();
        let abc = Hash::of(b"abc");
        assert!(!memo.look_up(abc));
        // Seen, but the recent clauses were not: no lookup yet.
        assert!(!memo.look_up(abc));
        let mut lookups = 0;
        // The rate passes fifteen sixteenths after about 90 clauses seen.
        for _ in 0..128 {
            lookups += usize::from(memo.look_up(abc));
        }
        assert!(lookups > 0 && memo.look_up(abc));
        // New text brings the rate down again.
        for n in 0..64u32 {
            memo.look_up(Hash::of(&n.to_le_bytes()));
        }
        assert!(!memo.look_up(abc));
        let mut n = 64u32;
        while memo.seen_count > 0 {
            memo.look_up(Hash::of(&n.to_le_bytes()));
            n += 1;
        }
        assert!(n as usize >= MAX_SEEN - 1);
        assert!(!memo.look_up(abc));
    }

    /// A stand-in model: one id per char, so cutting a span anywhere gives
    /// the same ids, and the memo's answers can be told from the model's
    /// only by the calls made.
    fn per_char(text: &str, spans: &[Span], out: &mut Vec<PipelineToken>, calls: &mut usize) {
        *calls += 1;
        for s in spans {
            out.extend(
                text[s.range()]
                    .chars()
                    .map(|c| PipelineToken::from(u32::from(c))),
            );
        }
    }

    #[test]
    fn clauses_seen_often_are_answered_and_ids_never_change() {
        let cuts =
            CharCuts::build(["中文".as_bytes(), "天".as_bytes()].into_iter(), None).expect("rules");
        let text = "天天中文，天中。ab 中文字幕";
        let bounds = [0, 12, 15, 21, 24, 26, 27, text.len()];
        let spans: Vec<Span> = bounds
            .windows(2)
            .map(|w| Span::new(w[0] as u32, w[1] as u32))
            .collect();
        let expected: Vec<u32> = text.chars().map(u32::from).collect();
        let mut scratch = CutScratch::default();
        let mut calls_per_encode = Vec::new();
        for _ in 0..80 {
            let (mut out, mut calls) = (Vec::new(), 0);
            encode_spans(
                Some(&cuts),
                &mut scratch,
                text,
                &spans,
                &mut out,
                |sp, o| {
                    per_char(text, sp, o, &mut calls);
                    Ok::<(), ()>(())
                },
            )
            .expect("stand-in model");
            assert_eq!(PipelineToken::cast_slice(&out), expected);
            calls_per_encode.push(calls);
        }
        // Text seen once: one model call. Seen often: its three clauses are
        // remembered, the memo answers them and the model gets the two runs
        // between them (`，` and `。ab `).
        assert_eq!(calls_per_encode[0], 1);
        assert_eq!(scratch.memo.as_ref().map(|m| m.entries), Some(3));
        assert_eq!(calls_per_encode.last(), Some(&2));
        // Without cuts, or without CJK, the spans go to the model as they are.
        let plain = [Span::new(0, 2), Span::new(2, 11)];
        for (cuts, text, spans) in [
            (None, text, &spans[..]),
            (Some(&cuts), "ab cd ef gh", &plain),
        ] {
            let (mut out, mut calls) = (Vec::new(), 0);
            encode_spans(cuts, &mut scratch, text, spans, &mut out, |sp, o| {
                assert_eq!(sp, spans);
                per_char(text, sp, o, &mut calls);
                Ok::<(), ()>(())
            })
            .expect("stand-in model");
            assert_eq!((calls, out.len()), (1, text.chars().count()));
        }
    }

    #[test]
    fn long_keys_and_id_lists_are_not_kept() {
        let mut memo = ClauseMemo::default();
        let long = vec![b'a'; MAX_KEY_LEN + 1];
        memo.insert(&long, Hash::of(&long), &tokens(&[1]));
        assert_eq!(memo.get(&long, Hash::of(&long)), None);
        assert_eq!(memo.entries, 0);
    }
}
