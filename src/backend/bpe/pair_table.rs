//! The pairs the grid does not hold: `pair_key` → value, in buckets of
//! one cache line (four slots of a key and a code, keys inline).
//!
//! Performance notes: a word seen for the first time asks this table for
//! most of its pairs, and the table (megabytes) is out of cache. A
//! `hashbrown` map reads its control bytes and then its slot, two misses
//! one after the other, and cannot be prefetched by key; a bucket here is
//! one line, a pair is nearly always in its home bucket (2.5 pairs a
//! bucket on average), and [`PairTable::prefetch`] asks for that line
//! before the merge needs it.
//!
//! Most pairs a new word asks for (about three in five on code) are in no
//! merge. A filter of one bit per hash (512 KiB, mostly in L2) answers
//! nearly all of those without the table's line: 5 % faster on code seen
//! once (Llama-3), where the merge waits on each lookup.

use super::NO_MERGE;
use crate::backend::huge_pages::HugeBox;
use crate::backend::prefetch::prefetch;

/// An empty slot's key (no pair packs to it: internal ids stay far below
/// `u32::MAX`).
const EMPTY: u64 = u64::MAX;

const SLOTS: usize = 4;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Bucket {
    keys: [u64; SLOTS],
    values: [u32; SLOTS],
}

const EMPTY_BUCKET: Bucket = Bucket {
    keys: [EMPTY; SLOTS],
    values: [NO_MERGE; SLOTS],
};

/// `log2` of the filter's bits.
const FILTER_BITS: u32 = 22;

/// See the module docs.
pub(super) struct PairTable {
    buckets: HugeBox<Bucket>,
    /// `64 - log2(buckets.len())`.
    shift: u32,
    /// Bit `filter_bit(key)` is set for every key held: a clear bit is a
    /// key the table does not hold.
    filter: HugeBox<u64>,
}

/// A key's bit in the filter: another multiplier than the buckets' hash,
/// so that keys sharing a bucket rarely share a bit.
#[inline(always)]
fn filter_bit(key: u64) -> usize {
    (key.wrapping_mul(0xD6E8_FEB8_6659_FD93) >> (64 - FILTER_BITS)) as usize
}

impl PairTable {
    /// A table of `pairs` (`pair_key` → value; keys distinct).
    pub(super) fn new(pairs: &[(u64, u32)]) -> Self {
        let buckets = (pairs.len() * 2 / 5 + 1).next_power_of_two().max(2);
        let mut table = Self {
            buckets: HugeBox::filled(buckets, EMPTY_BUCKET),
            shift: 64 - buckets.trailing_zeros(),
            filter: HugeBox::filled(1 << (FILTER_BITS - 6), 0),
        };
        let mask = buckets - 1;
        for &(key, value) in pairs {
            if key == EMPTY {
                continue;
            }
            let bit = filter_bit(key);
            if let Some(word) = table.filter.get_mut(bit >> 6) {
                *word |= 1 << (bit & 63);
            }
            // Four slots a bucket for at most 2.5 pairs a bucket: a free
            // slot is always found.
            let mut at = table.home(key);
            'place: while let Some(bucket) = table.buckets.get_mut(at) {
                for (k, v) in bucket.keys.iter_mut().zip(&mut bucket.values) {
                    if *k == EMPTY {
                        (*k, *v) = (key, value);
                        break 'place;
                    }
                }
                at = (at + 1) & mask;
            }
        }
        table
    }

    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// Asks for `key`'s filter word and home bucket: a hint, nothing is
    /// read.
    #[inline(always)]
    pub(super) fn prefetch(&self, key: u64) {
        prefetch(
            self.filter.as_ptr().wrapping_add(filter_bit(key) >> 6),
            true,
        );
        prefetch(self.buckets.as_ptr().wrapping_add(self.home(key)), true);
    }

    /// The pair's value, or [`NO_MERGE`].
    #[inline]
    pub(super) fn get(&self, key: u64) -> u32 {
        let bit = filter_bit(key);
        if self.filter.get(bit >> 6).copied().unwrap_or(0) >> (bit & 63) & 1 == 0 {
            return NO_MERGE;
        }
        let mask = self.buckets.len() - 1;
        let mut at = self.home(key);
        loop {
            let Some(bucket) = self.buckets.get(at) else {
                return NO_MERGE;
            };
            for (&k, &v) in bucket.keys.iter().zip(&bucket.values) {
                if k == key {
                    return v;
                }
                if k == EMPTY {
                    return NO_MERGE;
                }
            }
            at = (at + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_pair_and_no_other() {
        let pairs: Vec<(u64, u32)> = (0..10_000u32)
            .map(|i| (u64::from(i) * 7919 + 3, i))
            .collect();
        let table = PairTable::new(&pairs);
        for &(k, v) in &pairs {
            assert_eq!(table.get(k), v);
        }
        for k in (0..10_000u64).map(|i| i * 7919 + 4) {
            assert_eq!(table.get(k), NO_MERGE);
        }
        assert_eq!(PairTable::new(&[]).get(5), NO_MERGE);
    }
}
