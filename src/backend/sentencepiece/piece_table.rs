//! Piece text → id for a vocabulary whose pieces lie in one string.
//!
//! The table holds only ids, hashed by their piece's text, and compares a
//! candidate by reading that text from the vocabulary: no piece is copied
//! into a key of its own. A keyed map (`FxHashMap<Box<[u8]>, u32>`) made one
//! allocation per piece when a model loaded, and its 24-byte slots and
//! scattered keys did not stay in cache while the BPE pair table looks up
//! every split of every piece, most of a load (`perf`, Mistral-7B).

use std::hash::Hasher;

use hashbrown::HashTable;
use rustc_hash::FxHasher;

/// Piece ids, found by their text.
#[derive(Debug, Default, Clone)]
pub(crate) struct PieceTable(HashTable<u32>);

#[inline]
fn hash(piece: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(piece);
    h.finish()
}

impl PieceTable {
    /// An empty table with room for `n` pieces.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self(HashTable::with_capacity(n))
    }

    /// Adds `id`, whose text is `piece`, unless a piece of that text is
    /// there: then returns its id and adds nothing. `text_of` gives the text
    /// of every id already in the table.
    pub(crate) fn insert<'a>(
        &mut self,
        piece: &[u8],
        id: u32,
        text_of: impl Fn(u32) -> &'a [u8],
    ) -> Option<u32> {
        let h = hash(piece);
        if let Some(&old) = self.0.find(h, |&other| text_of(other) == piece) {
            return Some(old);
        }
        self.0.insert_unique(h, id, |&other| hash(text_of(other)));
        None
    }

    /// The id of the piece whose text is `piece`; `text_of` as for
    /// [`insert`](Self::insert).
    #[inline]
    pub(crate) fn get<'a>(&self, piece: &[u8], text_of: impl Fn(u32) -> &'a [u8]) -> Option<u32> {
        self.0
            .find(hash(piece), |&other| text_of(other) == piece)
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts that differ in one byte, in length, or only by trailing NULs
    /// are different pieces; a second piece of one text is refused with the
    /// first one's id; lookups find exactly the inserted texts.
    #[test]
    fn finds_pieces_by_their_text() {
        let texts: Vec<&[u8]> = vec![
            b"a",
            b"a\0",
            b"\0",
            b"ab",
            b"ba",
            "\u{2581}the".as_bytes(),
            "\u{2581}thE".as_bytes(),
            &[b'x'; 40],
            &[b'x'; 41],
        ];
        let text_of = |id: u32| texts[id as usize];
        let mut t = PieceTable::with_capacity(2);
        for (id, p) in texts.iter().enumerate() {
            assert_eq!(t.insert(p, id as u32, text_of), None, "{p:?}");
        }
        for (id, p) in texts.iter().enumerate() {
            assert_eq!(t.get(p, text_of), Some(id as u32), "{p:?}");
        }
        assert_eq!(t.get(b"b", text_of), None);
        assert_eq!(t.get(b"", text_of), None);
        assert_eq!(t.get(&[b'x'; 42], text_of), None);
        assert_eq!(t.insert(b"ab", 99, text_of), Some(3));
        assert_eq!(t.get(b"ab", text_of), Some(3));
    }
}
