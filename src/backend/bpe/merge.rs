//! The merge by ranks on one word (`tokenizers` 0.x `Word::merge_all`):
//! the adjacent pair of lowest rank, leftmost on a tie, is joined until no
//! pair left is listed. Runs on tokens, internal and vocabulary id
//! together ([`super::token`]): pairs are looked up by internal id, the
//! answer is written in the vocabulary's. Words of up to [`LINEAR_MAX`] bytes
//! rescan their pair values ([`Lane`]), several side by side
//! ([`Merger::merge_lanes`]); longer ones merge on a heap.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{NO_MERGE, Pairs, internal, token, vocabulary};

/// Words of at most this many bytes merge by rescanning their pair values;
/// longer ones on a heap (a rescan is `O(n)` a merge).
const LINEAR_MAX: usize = 48;

/// The longest word [`Merger::merge_lanes`] takes.
pub(super) const LANE_WORD_MAX: usize = LINEAR_MAX;

const NONE: u32 = u32::MAX;

/// Words merged side by side by [`Merger::merge_lanes`].
const LANES: usize = 8;

/// A lane's `word` when it has none.
const IDLE: usize = usize::MAX;

/// One word's merge by rescanning its pair values, a step at a time.
#[derive(Default)]
struct Lane {
    ids: Vec<u64>,
    /// The value of the pair starting at each id.
    values: Vec<u64>,
    /// Where the last step merged: the values beside it are still to read.
    merged: Option<usize>,
    /// The word's index in [`Merger::merge_lanes`].
    word: usize,
}

impl Lane {
    /// Starts the word `words[*next]` of `text` and moves `next` on;
    /// `false` (the lane idle) when none is left.
    fn take(&mut self, text: &[u8], words: &[(u32, u32)], next: &mut usize, pairs: &Pairs) -> bool {
        let Some(&(start, end)) = words.get(*next) else {
            self.word = IDLE;
            return false;
        };
        self.start(
            text.get(start as usize..end as usize).unwrap_or_default(),
            pairs,
        );
        self.word = *next;
        *next += 1;
        true
    }

    /// Starts `word`: its bytes' pairs are asked for here and read on
    /// the lane's first step.
    fn start(&mut self, word: &[u8], pairs: &Pairs) {
        self.ids.clear();
        self.ids.extend(word.iter().map(|&b| pairs.byte_token(b)));
        for w in self.ids.windows(2) {
            pairs.prefetch(internal(w[0]), internal(w[1]));
        }
        self.values.clear();
        self.merged = None;
    }

    /// Reads the values the last step left to read, then joins the best
    /// pair and asks for the lines of the two pairs beside it. `false`
    /// when no pair is left to join.
    #[inline]
    fn step(&mut self, pairs: &Pairs) -> bool {
        let Self {
            ids,
            values,
            merged,
            ..
        } = self;
        if values.is_empty() && ids.len() > 1 {
            values.extend(
                ids.windows(2)
                    .map(|w| pairs.get(internal(w[0]), internal(w[1]))),
            );
        } else if let Some(at) = merged.take() {
            if at > 0
                && let (Some(v), Some(&l), Some(&r)) =
                    (values.get_mut(at - 1), ids.get(at - 1), ids.get(at))
            {
                *v = pairs.get(internal(l), internal(r));
            }
            if let (Some(v), Some(&l), Some(&r)) =
                (values.get_mut(at), ids.get(at), ids.get(at + 1))
            {
                *v = pairs.get(internal(l), internal(r));
            }
        }
        let mut best = (NO_MERGE, 0);
        for (i, &value) in values.iter().enumerate() {
            if value < best.0 {
                best = (value, i);
            }
        }
        if best.0 == NO_MERGE {
            return false;
        }
        let at = best.1;
        if at + 1 >= ids.len() {
            return false;
        }
        ids[at] = token(best.0);
        ids.remove(at + 1);
        values.remove(at);
        if at > 0 {
            pairs.prefetch(internal(ids[at - 1]), internal(ids[at]));
        }
        if let Some(&r) = ids.get(at + 1) {
            pairs.prefetch(internal(ids[at]), internal(r));
        }
        *merged = Some(at);
        true
    }
}

#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    vocabulary: u32,
    prev: u32,
    next: u32,
    alive: bool,
}

/// The merge's working memory (one per thread).
#[derive(Default)]
pub(super) struct Merger {
    ids: Vec<u32>,
    lane: Lane,
    lanes: Vec<Lane>,
    symbols: Vec<Symbol>,
    queue: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Merger {
    /// The vocabulary ids of `word`, in this merger's buffer.
    pub(super) fn merge(&mut self, word: &[u8], pairs: &Pairs) -> &[u32] {
        if word.len() <= LINEAR_MAX {
            self.linear(word, pairs);
        } else {
            self.heap(word, pairs);
        }
        &self.ids
    }

    fn linear(&mut self, word: &[u8], pairs: &Pairs) {
        let Self { lane, ids, .. } = self;
        lane.start(word, pairs);
        while lane.step(pairs) {}
        ids.clear();
        ids.extend(lane.ids.iter().map(|&t| vocabulary(t)));
    }

    /// The vocabulary ids of each word of `words` (byte ranges of `text`,
    /// each at most [`LINEAR_MAX`] bytes) appended to `out`, and each
    /// word's range of `out` in `spans`, in the order of `words`.
    ///
    /// Performance notes: a merge step waits on the pairs the last step
    /// made, and for a word seen once those are out of cache: one word
    /// alone is a chain of misses. [`LANES`] words merge side by side
    /// instead, one step each in turn; a step asks for the lines of the
    /// pairs it made, and reads them only on its next turn, after the
    /// other lanes' steps.
    pub(super) fn merge_lanes(
        &mut self,
        text: &[u8],
        words: &[(u32, u32)],
        pairs: &Pairs,
        out: &mut Vec<u32>,
        spans: &mut Vec<(u32, u32)>,
    ) {
        spans.clear();
        spans.resize(words.len(), (0, 0));
        if self.lanes.is_empty() {
            self.lanes.resize_with(LANES, Lane::default);
        }
        let mut next = 0;
        let mut busy = 0;
        for lane in &mut self.lanes {
            busy += usize::from(lane.take(text, words, &mut next, pairs));
        }
        while busy > 0 {
            for lane in &mut self.lanes {
                if lane.word == IDLE || lane.step(pairs) {
                    continue;
                }
                let from = out.len() as u32;
                out.extend(lane.ids.iter().map(|&t| vocabulary(t)));
                if let Some(span) = spans.get_mut(lane.word) {
                    *span = (from, out.len() as u32);
                }
                if !lane.take(text, words, &mut next, pairs) {
                    busy -= 1;
                }
            }
        }
    }

    fn heap(&mut self, word: &[u8], pairs: &Pairs) {
        let Self {
            ids,
            symbols,
            queue,
            ..
        } = self;
        symbols.clear();
        queue.clear();
        let last = word.len().saturating_sub(1);
        for (i, &b) in word.iter().enumerate() {
            // Positions fit: a pre-token is at most `u32::MAX` bytes.
            let i = i as u32;
            symbols.push(Symbol {
                id: u32::from(b),
                vocabulary: vocabulary(pairs.byte_token(b)),
                prev: if i == 0 { NONE } else { i - 1 },
                next: if i as usize == last { NONE } else { i + 1 },
                alive: true,
            });
        }
        for (i, w) in word.windows(2).enumerate() {
            let value = pairs.get(u32::from(w[0]), u32::from(w[1]));
            if value != NO_MERGE {
                queue.push(Reverse((value, i as u32)));
            }
        }
        // The queue orders by value (the rank), then by position: leftmost
        // on a tie, as the reference's queue.
        while let Some(Reverse((value, pos))) = queue.pop() {
            let at = pos as usize;
            let left = symbols[at];
            if !left.alive || left.next == NONE {
                continue;
            }
            let right = symbols[left.next as usize];
            if pairs.get(left.id, right.id) != value {
                continue;
            }
            let merged = token(value);
            let merged_vocabulary = vocabulary(merged);
            let merged = internal(merged);
            symbols[at].id = merged;
            symbols[at].vocabulary = merged_vocabulary;
            symbols[at].next = right.next;
            symbols[left.next as usize].alive = false;
            if right.next != NONE {
                symbols[right.next as usize].prev = pos;
            }
            if left.prev != NONE {
                let v = pairs.get(symbols[left.prev as usize].id, merged);
                if v != NO_MERGE {
                    queue.push(Reverse((v, left.prev)));
                }
            }
            if right.next != NONE {
                let v = pairs.get(merged, symbols[right.next as usize].id);
                if v != NO_MERGE {
                    queue.push(Reverse((v, pos)));
                }
            }
        }
        ids.clear();
        let mut at = if symbols.is_empty() { NONE } else { 0 };
        while at != NONE {
            let symbol = symbols[at as usize];
            ids.push(symbol.vocabulary);
            at = symbol.next;
        }
    }
}
