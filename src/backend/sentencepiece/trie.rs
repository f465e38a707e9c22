//! A compact byte trie over pieces, used for Unigram's lattice, the
//! user-defined-symbol prefix matcher and exact piece lookups.
//!
//! Nodes are stored breadth-first; each node's outgoing edges are contiguous
//! and sorted by byte, and the root has a direct 256-entry table. In
//! breadth-first order edge `k` leads to node `k + 1` (every node but the
//! root is the end of one edge, and both are numbered in the same walk), so
//! an edge stores only its byte.

const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Node {
    first_edge: u32,
    n_edges: u32,
    value: u32,
}

/// An immutable byte trie mapping keys to `u32` values.
#[derive(Debug, Clone)]
pub(crate) struct Trie {
    nodes: Vec<Node>,
    edge_bytes: Vec<u8>,
    root: Box<[u32; 256]>,
    len: usize,
}

struct BuildNode {
    children: Vec<(u8, usize)>,
    value: u32,
}

impl Trie {
    /// Builds a trie; for a duplicated key the last value wins.
    pub(crate) fn build<'a>(entries: impl IntoIterator<Item = (&'a [u8], u32)>) -> Self {
        let mut tmp = vec![BuildNode {
            children: Vec::new(),
            value: NONE,
        }];
        let mut len = 0usize;
        for (key, value) in entries {
            let mut n = 0usize;
            for &b in key {
                let next = match tmp[n].children.binary_search_by_key(&b, |c| c.0) {
                    Ok(i) => tmp[n].children[i].1,
                    Err(i) => {
                        let id = tmp.len();
                        tmp.push(BuildNode {
                            children: Vec::new(),
                            value: NONE,
                        });
                        tmp[n].children.insert(i, (b, id));
                        id
                    }
                };
                n = next;
            }
            if tmp[n].value == NONE {
                len += 1;
            }
            tmp[n].value = value;
        }
        // Breadth-first renumbering.
        let mut order = Vec::with_capacity(tmp.len());
        let mut new_id = vec![0u32; tmp.len()];
        order.push(0usize);
        let mut i = 0;
        while i < order.len() {
            let n = order[i];
            new_id[n] = i as u32;
            for &(_, c) in &tmp[n].children {
                order.push(c);
            }
            i += 1;
        }
        let mut nodes = Vec::with_capacity(order.len());
        let mut edge_bytes = Vec::with_capacity(order.len());
        for &n in &order {
            let node = &tmp[n];
            nodes.push(Node {
                first_edge: edge_bytes.len() as u32,
                n_edges: node.children.len() as u32,
                value: node.value,
            });
            for &(b, c) in &node.children {
                edge_bytes.push(b);
                debug_assert_eq!(new_id[c] as usize, edge_bytes.len());
            }
        }
        let mut root = Box::new([NONE; 256]);
        for &(b, c) in &tmp[0].children {
            root[usize::from(b)] = new_id[c];
        }
        Self {
            nodes,
            edge_bytes,
            root,
            len,
        }
    }

    /// Number of keys.
    pub(crate) fn len(&self) -> usize {
        self.len
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
        let e = s + n.n_edges as usize;
        let bytes = self.edge_bytes.get(s..e)?;
        let i = if bytes.len() <= 8 {
            bytes.iter().position(|&b| b == byte)?
        } else {
            bytes.binary_search(&byte).ok()?
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
        for (i, &b) in text.iter().enumerate() {
            match self.child(n, b) {
                Some(c) => n = c,
                None => return,
            }
            if let Some(v) = self.value(n) {
                if !f(i + 1, v) {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
