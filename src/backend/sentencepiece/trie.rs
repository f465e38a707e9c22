//! A compact byte trie over pieces, used for Unigram's lattice, the
//! user-defined-symbol prefix matcher and exact piece lookups.
//!
//! Nodes are stored breadth-first; each node's outgoing edges are contiguous
//! and sorted by byte, and the root has a direct 256-entry table. In
//! breadth-first order edge `k` leads to node `k + 1` (every node but the
//! root is the end of one edge, and both are numbered in the same walk), so
//! an edge stores only its byte.
//!
//! A node with more than [`SCAN_EDGES`] edges also gets a 256-bit map of its
//! edge bytes with the popcount before each of its four words, so the edge
//! index is a rank: one step costs the same at a CJK lead byte (up to 64
//! continuation bytes below it) as at a Latin letter, where a binary search
//! took half of a Chinese Unigram encode (invariant `sentencepiece-fast-paths-exact`).

use super::utf8::{three_byte_at, three_byte_index};

const NONE: u32 = u32::MAX;

/// Up to this many edges a node's bytes are scanned; past it they are ranked
/// in the node's [`EdgeMap`].
const SCAN_EDGES: usize = 8;

#[derive(Debug, Clone, Copy)]
struct Node {
    first_edge: u32,
    n_edges: u32,
    value: u32,
    /// Index into [`Trie::maps`] for a node with more than [`SCAN_EDGES`]
    /// edges, else [`NONE`].
    map: u32,
}

/// The edge bytes of one wide node as a 256-bit set, with the number of
/// edges before each 64-bit word (the rank's base).
#[derive(Debug, Clone, Copy)]
struct EdgeMap {
    bits: [u64; 4],
    before: [u16; 4],
}

impl EdgeMap {
    fn new(bytes: &[u8]) -> Self {
        let mut bits = [0u64; 4];
        for &b in bytes {
            bits[usize::from(b >> 6)] |= 1u64 << (b & 63);
        }
        let mut before = [0u16; 4];
        let mut total = 0u16;
        for (w, slot) in bits.iter().zip(before.iter_mut()) {
            *slot = total;
            total += w.count_ones() as u16;
        }
        Self { bits, before }
    }

    /// The index of `byte` among the node's sorted edge bytes, if present.
    #[inline]
    fn rank(&self, byte: u8) -> Option<usize> {
        let word = usize::from(byte >> 6);
        let bit = 1u64 << (byte & 63);
        let w = self.bits[word];
        if w & bit == 0 {
            return None;
        }
        Some(usize::from(self.before[word]) + (w & (bit - 1)).count_ones() as usize)
    }
}

/// An immutable byte trie mapping keys to `u32` values.
#[derive(Debug, Clone)]
pub(crate) struct Trie {
    nodes: Vec<Node>,
    edge_bytes: Vec<u8>,
    maps: Vec<EdgeMap>,
    root: Box<[u32; 256]>,
    len: usize,
    /// The longest key, in bytes.
    max_key_len: usize,
    /// [`with_char_jump`](Self::with_char_jump)'s table: the node after
    /// each three-byte sequence `E0..=EF, 80..=BF, 80..=BF`, by
    /// [`three_byte_at`].
    jump: Option<Box<[u32]>>,
}

/// [`Trie::with_char_jump`] keeps its table only when at least this many
/// three-byte chars start a key.
const MIN_JUMP_STARTS: usize = 1024;

impl Trie {
    /// Builds a trie; for a duplicated key the last value wins.
    ///
    /// From the keys sorted (stably, so equal keys keep their order): a
    /// node is a run of keys that share its prefix, those that end there
    /// first, then one run per next byte, and the runs are numbered
    /// breadth-first as they are queued, so the trie is laid out in flat
    /// arrays without a node of its own per key byte. Building nodes with
    /// a vector of children each was half of a Unigram model's load
    /// (invariant `sentencepiece-fast-paths-exact`).
    pub(crate) fn build<'a>(entries: impl IntoIterator<Item = (&'a [u8], u32)>) -> Self {
        let mut keys: Vec<(&[u8], u32)> = entries.into_iter().collect();
        if !keys.is_sorted_by(|a, b| a.0 <= b.0) {
            keys.sort_by(|a, b| a.0.cmp(b.0));
        }
        let max_key_len = keys.iter().map(|k| k.0.len()).max().unwrap_or(0);
        // (first key, end, depth) of every node, in breadth-first order
        // (`u32`: node ids are `u32` too, and the queue holds every node).
        let mut queue: Vec<(u32, u32, u32)> = vec![(0, keys.len() as u32, 0)];
        let mut nodes = Vec::with_capacity(keys.len() * 2);
        let mut edge_bytes = Vec::with_capacity(keys.len() * 2);
        let mut maps = Vec::new();
        let mut len = 0usize;
        let mut at = 0;
        while let Some(&(lo, hi, depth)) = queue.get(at) {
            at += 1;
            let (lo, hi, depth) = (lo as usize, hi as usize, depth as usize);
            let mut i = lo;
            let mut value = NONE;
            while let Some(&(key, v)) = keys.get(i).filter(|_| i < hi) {
                if key.len() != depth {
                    break;
                }
                value = v;
                i += 1;
            }
            len += usize::from(i > lo);
            let first = edge_bytes.len();
            while i < hi {
                let Some(&b) = keys.get(i).and_then(|k| k.0.get(depth)) else {
                    break;
                };
                let mut j = i + 1;
                while j < hi && keys.get(j).and_then(|k| k.0.get(depth)) == Some(&b) {
                    j += 1;
                }
                edge_bytes.push(b);
                queue.push((i as u32, j as u32, depth as u32 + 1));
                i = j;
            }
            let n_edges = edge_bytes.len() - first;
            let map = if n_edges > SCAN_EDGES {
                maps.push(EdgeMap::new(&edge_bytes[first..]));
                (maps.len() - 1) as u32
            } else {
                NONE
            };
            nodes.push(Node {
                first_edge: first as u32,
                n_edges: n_edges as u32,
                value,
                map,
            });
        }
        // Edge `k` leads to node `k + 1`; the root's edges are the first.
        let mut root = Box::new([NONE; 256]);
        let root_edges = nodes.first().map_or(0, |n| n.n_edges as usize);
        for (k, &b) in edge_bytes.iter().enumerate().take(root_edges) {
            root[usize::from(b)] = k as u32 + 1;
        }
        Self {
            nodes,
            edge_bytes,
            maps,
            root,
            len,
            max_key_len,
            jump: None,
        }
    }

    /// This trie with a table that takes a prefix search over a
    /// three-byte char (CJK, kana, most of the BMP) in one load instead of
    /// three steps (invariant `sentencepiece-fast-paths-exact`), where that gives the same answers:
    /// when no
    /// key ends inside such a char (its first one or two bytes), whose
    /// value the jump would skip, and where at least [`MIN_JUMP_STARTS`]
    /// such chars start a key. 256 KiB; worth it for a Unigram lattice,
    /// which searches at every char of the text.
    pub(crate) fn with_char_jump(self) -> Self {
        self.char_jump(MIN_JUMP_STARTS)
    }

    /// [`with_char_jump`](Self::with_char_jump) with the table kept from
    /// `min_starts` chars that start a key.
    fn char_jump(mut self, min_starts: usize) -> Self {
        let ends_inside = (0xE0..=0xEFu8).any(|b0| {
            let Some(n1) = self.child(0, b0) else {
                return false;
            };
            self.value(n1).is_some()
                || (0x80..=0xBFu8)
                    .filter_map(|b1| self.child(n1, b1))
                    .any(|n2| self.value(n2).is_some())
        });
        if ends_inside {
            return self;
        }
        // The three-byte chars that start a key, found by walking the trie:
        // few (a vocabulary of another script) and the byte walk fails at
        // once where the table would be a cache miss, so the table (and
        // its 256 KiB, a third of a small model's load) is not made.
        let trie = &self;
        let starts: Vec<(usize, u32)> = (0xE0..=0xEFu8)
            .filter_map(|b0| Some((b0, trie.child(0, b0)?)))
            .flat_map(|(b0, n1)| {
                (0x80..=0xBFu8).filter_map(move |b1| Some((b0, b1, trie.child(n1, b1)?)))
            })
            .flat_map(|(b0, b1, n2)| {
                (0x80..=0xBFu8)
                    .filter_map(move |b2| Some((three_byte_at(b0, b1, b2), trie.child(n2, b2)?)))
            })
            .collect();
        if starts.len() >= min_starts {
            let mut jump = vec![NONE; 1 << 16].into_boxed_slice();
            for (at, n3) in starts {
                if let Some(slot) = jump.get_mut(at) {
                    *slot = n3;
                }
            }
            self.jump = Some(jump);
        }
        self
    }

    /// Number of keys.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The longest key, in bytes: no prefix
    /// [`for_each_prefix`](Self::for_each_prefix) reports is longer.
    pub(crate) fn max_key_len(&self) -> usize {
        self.max_key_len
    }

    /// The child of `node` along `byte`, if any.
    #[inline]
    fn child(&self, node: u32, byte: u8) -> Option<u32> {
        if node == 0 {
            let c = self.root[usize::from(byte)];
            return (c != NONE).then_some(c);
        }
        let n = self.nodes.get(node as usize)?;
        let s = n.first_edge as usize;
        let i = if n.map == NONE {
            let e = s + n.n_edges as usize;
            let bytes = self.edge_bytes.get(s..e)?;
            bytes.iter().position(|&b| b == byte)?
        } else {
            self.maps.get(n.map as usize)?.rank(byte)?
        };
        // Edge `s + i` leads to node `s + i + 1` (breadth-first order).
        u32::try_from(s + i + 1).ok()
    }

    #[inline]
    fn value(&self, node: u32) -> Option<u32> {
        self.nodes
            .get(node as usize)
            .map(|n| n.value)
            .filter(|&v| v != NONE)
    }

    /// Exact lookup.
    #[cfg(test)]
    pub(crate) fn get(&self, key: &[u8]) -> Option<u32> {
        let mut n = 0u32;
        for &b in key {
            n = self.child(n, b)?;
        }
        self.value(n)
    }

    /// Calls `f(length, value)` for every key that is a prefix of `text`, in
    /// increasing length. `f` returns `false` to stop early.
    #[inline]
    pub(crate) fn for_each_prefix(&self, text: &[u8], mut f: impl FnMut(usize, u32) -> bool) {
        let mut n = 0u32;
        let mut skip = 0;
        if let (Some(jump), Some(at)) = (&self.jump, three_byte_index(text)) {
            // No key ends inside the char (checked when the table was made).
            match jump.get(at) {
                Some(&c) if c != NONE => n = c,
                _ => return,
            }
            if let Some(v) = self.value(n)
                && !f(3, v)
            {
                return;
            }
            skip = 3;
        }
        for (i, &b) in text.iter().enumerate().skip(skip) {
            match self.child(n, b) {
                Some(c) => n = c,
                None => return,
            }
            if let Some(v) = self.value(n)
                && !f(i + 1, v)
            {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// ASCII `a`/`b`, or a three-byte sequence over a few lead and
    /// continuation bytes.
    fn unit() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(vec![b'a']),
            Just(vec![b'b']),
            (
                prop_oneof![Just(0xE0u8), Just(0xE4), Just(0xED), Just(0xEF)],
                0x80u8..0x84,
                prop_oneof![0x80u8..0x84, Just(0xBF)],
            )
                .prop_map(|(a, b, c)| vec![a, b, c]),
        ]
    }

    /// Every key that is a prefix of `text`, shortest first, the last
    /// value of a duplicated key winning (what `for_each_prefix` promises).
    fn naive_prefixes(keys: &[(Vec<u8>, u32)], text: &[u8]) -> Vec<(usize, u32)> {
        let mut found: Vec<(usize, u32)> = Vec::new();
        for (k, v) in keys {
            if !k.is_empty() && text.starts_with(k) {
                found.retain(|&(l, _)| l != k.len());
                found.push((k.len(), *v));
            }
        }
        found.sort_unstable();
        found
    }

    #[test]
    fn a_wide_node_ranks_every_byte() {
        let keys: Vec<Vec<u8>> = (0..=255u8).step_by(3).map(|b| vec![b'A', b]).collect();
        let t = Trie::build(
            keys.iter()
                .enumerate()
                .map(|(i, k)| (k.as_slice(), i as u32)),
        );
        assert_eq!(t.maps.len(), 1);
        for b in 0..=255u8 {
            let want = (b % 3 == 0).then(|| u32::from(b) / 3);
            assert_eq!(t.get(&[b'A', b]), want, "byte {b:#04x}");
        }
    }

    #[test]
    fn the_char_jump_is_made_only_where_no_key_ends_inside_a_char() {
        let whole: Vec<(&[u8], u32)> = vec![("中".as_bytes(), 1), ("中文".as_bytes(), 2)];
        assert!(Trie::build(whole.clone()).char_jump(1).jump.is_some());
        assert!(Trie::build(whole.clone()).char_jump(2).jump.is_none());
        for inside in [&b"\xE4"[..], b"\xE4\xB8"] {
            let mut keys = whole.clone();
            keys.push((inside, 3));
            assert!(Trie::build(keys).char_jump(0).jump.is_none());
        }
    }

    proptest! {
        /// The char jump answers as the byte walk does: keys of whole
        /// units (ASCII, three-byte sequences in valid, overlong and
        /// surrogate forms over few continuation bytes, so keys share
        /// prefixes), sometimes with keys ending inside a char (no table
        /// then); texts of the same units cut anywhere and stray bytes.
        #[test]
        fn the_char_jump_matches_the_byte_walk(
            keys in proptest::collection::vec(
                (proptest::collection::vec(unit(), 1..4).prop_map(|u| u.concat()),
                 any::<u32>().prop_map(|v| v % 100)),
                0..200,
            ),
            inside in proptest::option::of(proptest::collection::vec(0x80u8..0x84, 0..2)),
            texts in proptest::collection::vec(
                (proptest::collection::vec(unit(), 0..5).prop_map(|u| u.concat()),
                 0usize..3, proptest::collection::vec(any::<u8>(), 0..2)),
                1..30,
            ),
        ) {
            let mut keys = keys;
            if let Some(tail) = inside {
                keys.push(([&[0xE4u8][..], &tail].concat(), 7));
            }
            let texts: Vec<Vec<u8>> = texts
                .into_iter()
                .map(|(t, cut, stray)| [&t[t.len().min(cut)..], &stray[..]].concat())
                .collect();
            let walk = Trie::build(keys.iter().map(|(k, v)| (k.as_slice(), *v)));
            let jump = walk.clone().char_jump(0);
            let mut probes = texts;
            probes.extend(keys.iter().map(|(k, _)| k.clone()));
            for text in &probes {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                walk.for_each_prefix(text, |l, v| {
                    a.push((l, v));
                    true
                });
                jump.for_each_prefix(text, |l, v| {
                    b.push((l, v));
                    true
                });
                prop_assert_eq!(a, b);
            }
        }

        /// Narrow nodes (scanned) and wide ones (ranked in their edge map)
        /// answer as a plain list of keys does: keys over a small alphabet
        /// give deep narrow paths, single bytes over all 256 give a wide
        /// root and wide inner nodes, with bytes in all four map words.
        #[test]
        fn prefixes_match_a_plain_key_list(
            keys in proptest::collection::vec(
                (prop_oneof![
                    proptest::collection::vec(0u8..4, 0..5),
                    proptest::collection::vec(any::<u8>(), 0..3),
                    proptest::collection::vec(prop_oneof![Just(0xE4u8), 0x80u8..0xC0], 1..4),
                ], any::<u32>().prop_map(|v| v % 1000)),
                0..300,
            ),
            texts in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..6), 1..20),
        ) {
            let t = Trie::build(keys.iter().map(|(k, v)| (k.as_slice(), *v)));
            let mut probes = texts;
            probes.extend(keys.iter().map(|(k, _)| k.clone()));
            for text in &probes {
                let mut seen = Vec::new();
                t.for_each_prefix(text, |l, v| {
                    seen.push((l, v));
                    true
                });
                prop_assert_eq!(seen, naive_prefixes(&keys, text));
            }
        }
    }

    #[test]
    fn prefixes_and_lookup() {
        let keys: Vec<(&[u8], u32)> =
            vec![(b"a", 1), (b"ab", 2), (b"abc", 3), (b"b", 4), (b"abd", 5)];
        let t = Trie::build(keys);
        assert_eq!(t.len(), 5);
        assert_eq!(t.get(b"ab"), Some(2));
        assert_eq!(t.get(b"abx"), None);
        assert_eq!(t.get(b""), None);
        let mut seen = Vec::new();
        t.for_each_prefix(b"abcz", |l, v| {
            seen.push((l, v));
            true
        });
        assert_eq!(seen, vec![(1, 1), (2, 2), (3, 3)]);
    }
}
