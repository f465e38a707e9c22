//! The merge by ranks on one word (`tokenizers` 0.x `Word::merge_all`):
//! the adjacent pair of lowest rank, leftmost on a tie, is joined until no
//! pair left is listed. Runs on internal ids: a pair's lookup answers a
//! code that names its product ([`super::Pairs`]), and the answer is
//! written in the vocabulary's ids. A word starts as its bytes, or as its
//! atoms and other bytes ([`Atoms::symbols`]). Words of up to
//! [`STACK_MAX`] symbols merge on the stack, rescanning their pair codes
//! ([`stack_merge`]); longer ones merge on a heap.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::atoms::Atoms;
use super::{NO_MERGE, Pairs, product};

/// A symbol a word starts as: a byte (its internal id is the byte), or an
/// atom's internal id ([`Atoms::symbols`]).
trait Start: Copy {
    fn id(self) -> u32;
}

impl Start for u8 {
    #[inline(always)]
    fn id(self) -> u32 {
        u32::from(self)
    }
}

impl Start for u32 {
    #[inline(always)]
    fn id(self) -> u32 {
        self
    }
}

/// Words of at most this many bytes merge on the stack: a rescan of their
/// pair values is `O(n)` a merge, a heap's `O(log n)` costs more below.
const STACK_MAX: usize = 48;

/// The stack arrays of most words: a word seen once is 9 bytes on average
/// (`corpus/code`, Llama-3), and a smaller frame is cheaper to set up.
const STACK_SHORT: usize = 16;

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
    /// A word's start with atoms ([`Atoms::symbols`]).
    start: Vec<u32>,
    symbols: Vec<Symbol>,
    queue: BinaryHeap<Reverse<(u32, u32)>>,
}

impl Merger {
    /// The vocabulary ids of `word`, in this merger's buffer.
    pub(super) fn merge(&mut self, word: &[u8], pairs: &Pairs, atoms: Option<&Atoms>) -> &[u32] {
        let mut ids = std::mem::take(&mut self.ids);
        ids.clear();
        self.merge_into(word, pairs, atoms, &mut ids);
        self.ids = ids;
        &self.ids
    }

    /// Appends the vocabulary ids of `word` to `out`, starting from the
    /// atoms it holds (invariant *atoms-merge-as-bytes*).
    pub(super) fn merge_into(
        &mut self,
        word: &[u8],
        pairs: &Pairs,
        atoms: Option<&Atoms>,
        out: &mut Vec<u32>,
    ) {
        if let Some(atoms) = atoms
            && word.iter().any(|&b| super::atoms::is_lead(b))
        {
            let mut start = std::mem::take(&mut self.start);
            if atoms.symbols(word, &mut start) {
                self.merge_start(&start, pairs, out);
                self.start = start;
                return;
            }
            self.start = start;
        }
        self.merge_start(word, pairs, out);
    }

    fn merge_start<S: Start>(&mut self, word: &[S], pairs: &Pairs, out: &mut Vec<u32>) {
        if word.len() <= STACK_SHORT {
            stack_merge::<STACK_SHORT, S>(word, pairs, out);
        } else if word.len() <= STACK_MAX {
            stack_merge::<STACK_MAX, S>(word, pairs, out);
        } else {
            self.heap(word, pairs, out);
        }
    }

    fn heap<S: Start>(&mut self, word: &[S], pairs: &Pairs, out: &mut Vec<u32>) {
        let Self { symbols, queue, .. } = self;
        symbols.clear();
        queue.clear();
        let last = word.len().saturating_sub(1);
        for (i, &b) in word.iter().enumerate() {
            // Positions fit: a pre-token is at most `u32::MAX` bytes.
            let i = i as u32;
            symbols.push(Symbol {
                id: b.id(),
                prev: if i == 0 { NONE } else { i - 1 },
                next: if i as usize == last { NONE } else { i + 1 },
                alive: true,
            });
        }
        for (i, w) in word.windows(2).enumerate() {
            let value = pairs.get(w[0].id(), w[1].id());
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
        let mut at = if symbols.is_empty() { NONE } else { 0 };
        while at != NONE {
            let symbol = symbols[at as usize];
            out.push(pairs.vocabulary(symbol.id));
            at = symbol.next;
        }
    }
}

/// Appends the vocabulary ids of `word` (1 to `N` symbols, `N` under 255)
/// to `out`, merged in arrays on the stack.
///
/// Performance notes: `values[i]` is the pair starting at symbol `i`
/// (symbols never move; a joined one is skipped by `next`), so the next
/// merge is the leftmost minimum of one short array, and a merge rewrites
/// two values. Both pairs a merge makes are asked for before the list is
/// updated, and most are in the grid (L1/L2); the rest are the pair
/// table's, mostly absent pairs that the table's filter answers without
/// reading its lines (`pair_table.rs`). Eight words merged side by side, one step
/// each in turn (to overlap the table's misses), measured 9–12 % slower
/// on code seen once: the lanes' state went through memory at every step.
#[inline(always)]
fn stack_merge<const N: usize, S: Start>(word: &[S], pairs: &Pairs, out: &mut Vec<u32>) {
    let n = word.len();
    if n == 0 || n > N {
        return;
    }
    let mut ids = [0u32; N];
    let mut values = [NO_MERGE; N];
    let mut next = [0u8; N];
    let mut prev = [0u8; N];
    for (i, &b) in word.iter().enumerate() {
        ids[i] = b.id();
        next[i] = (i + 1) as u8;
        // The first symbol's `prev` wraps to 255, past any word.
        prev[i] = (i as u8).wrapping_sub(1);
    }
    for (value, pair) in values.iter_mut().zip(word.windows(2)) {
        *value = pairs.get(pair[0].id(), pair[1].id());
    }
    loop {
        let (mut best, mut at) = (NO_MERGE, 0);
        for (i, &value) in values[..n - 1].iter().enumerate() {
            if value < best {
                (best, at) = (value, i);
            }
        }
        if best == NO_MERGE {
            break;
        }
        let joined = product(best);
        let dead = usize::from(next[at]);
        if dead >= n {
            break;
        }
        let right = usize::from(next[dead]);
        let left = usize::from(prev[at]);
        if right < n {
            pairs.prefetch(joined, ids[right]);
        }
        if left < n {
            pairs.prefetch(ids[left], joined);
        }
        ids[at] = joined;
        next[at] = right as u8;
        values[dead] = NO_MERGE;
        values[at] = if right < n {
            prev[right] = at as u8;
            pairs.get(joined, ids[right])
        } else {
            NO_MERGE
        };
        if left < n {
            values[left] = pairs.get(ids[left], joined);
        }
    }
    let mut i = 0;
    while i < n {
        out.push(pairs.vocabulary(ids[i]));
        i = usize::from(next[i]);
    }
}
