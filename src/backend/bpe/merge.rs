//! The merge by ranks on one word (`tokenizers` 0.x `Word::merge_all`):
//! the adjacent pair of lowest rank, leftmost on a tie, is joined until no
//! pair left is listed. Runs on internal ids ([`Pairs`]); the answer is
//! written in the vocabulary's ids.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{NO_MERGE, Pairs, product};

/// Words of at most this many bytes merge by rescanning their pair values;
/// longer ones on a heap (a rescan is `O(n)` a merge).
const LINEAR_MAX: usize = 48;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    prev: u32,
    next: u32,
    alive: bool,
}

/// The merge's working memory (one per thread).
#[derive(Default)]
pub(super) struct Merger {
    ids: Vec<u32>,
    /// Linear merge: the value of the pair starting at each symbol.
    values: Vec<u64>,
    symbols: Vec<Symbol>,
    queue: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Merger {
    /// The vocabulary ids of `word`, in this merger's buffer.
    pub(super) fn merge(&mut self, word: &[u8], pairs: &Pairs, unmap: &[u32]) -> &[u32] {
        if word.len() <= LINEAR_MAX {
            self.linear(word, pairs);
        } else {
            self.heap(word, pairs);
        }
        for id in &mut self.ids {
            *id = unmap.get(*id as usize).copied().unwrap_or(*id);
        }
        &self.ids
    }

    fn linear(&mut self, word: &[u8], pairs: &Pairs) {
        let Self { ids, values, .. } = self;
        ids.clear();
        ids.extend(word.iter().map(|&b| u32::from(b)));
        values.clear();
        values.extend(ids.windows(2).map(|w| pairs.get(w[0], w[1])));
        loop {
            let mut best = (NO_MERGE, 0);
            for (i, &value) in values.iter().enumerate() {
                if value < best.0 {
                    best = (value, i);
                }
            }
            if best.0 == NO_MERGE {
                break;
            }
            let at = best.1;
            ids[at] = product(best.0);
            ids.remove(at + 1);
            values.remove(at);
            if at > 0 {
                values[at - 1] = pairs.get(ids[at - 1], ids[at]);
            }
            if at < values.len() {
                values[at] = pairs.get(ids[at], ids[at + 1]);
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
            let merged = product(value);
            symbols[at].id = merged;
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
            ids.push(symbol.id);
            at = symbol.next;
        }
    }
}
