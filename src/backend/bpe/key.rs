//! A word's key: its length and its first and last eight bytes, read once.
//! Words of at most 16 bytes (nearly every pre-token) are compared by the
//! key alone, without touching the bytes stored behind a table entry.

/// See the module docs. `head` holds bytes `[0, 8)`, `tail` bytes
/// `[len - 8, len)` (overlapping `head` below 16 bytes); words under eight
/// bytes pack all their bytes into the two without overlap loss.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct WordKey {
    pub(crate) head: u64,
    pub(crate) tail: u64,
    pub(crate) len: u32,
}

/// Words longer than this compare their middle bytes too.
pub(crate) const KEY_BYTES: usize = 16;

#[inline]
fn u32_at(w: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&w[at..at + 4]);
    u64::from(u32::from_le_bytes(b))
}

#[inline]
fn u64_at(w: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&w[at..at + 8]);
    u64::from_le_bytes(b)
}

impl WordKey {
    /// The key of `word` (at most `u32::MAX` bytes: a pre-token of a text
    /// the handle accepted).
    #[inline]
    pub(crate) fn of(word: &[u8]) -> Self {
        let n = word.len();
        let (head, tail) = match n {
            0 => (0, 0),
            1..=3 => {
                // Every position is one of these three for n <= 3.
                let v =
                    u64::from(word[0]) | u64::from(word[n / 2]) << 8 | u64::from(word[n - 1]) << 16;
                (v, 0)
            }
            4..=7 => (u32_at(word, 0) | u32_at(word, n - 4) << 32, 0),
            _ => (u64_at(word, 0), u64_at(word, n - 8)),
        };
        Self {
            head,
            tail,
            len: n as u32,
        }
    }

    /// The key's hash (the probe's and the caches'): two multiplies with
    /// shifts between, so the low bits the tables index by depend on every
    /// byte of the key.
    #[inline]
    pub(crate) fn hash(&self) -> u64 {
        const K1: u64 = 0x9E37_79B9_7F4A_7C15;
        const K2: u64 = 0xBF58_476D_1CE4_E5B9;
        let x = (self.head ^ (u64::from(self.len) << 56)).wrapping_mul(K1) ^ self.tail;
        let x = (x ^ (x >> 31)).wrapping_mul(K2);
        x ^ (x >> 29)
    }
}
