//! The rank path: what ordinary text runs on until the byte-level engine is
//! built, and for what the engine must not take. Pieces from the native
//! grammar where it applies, else from `fancy-regex` (one compiled regex per
//! thread slot), each a rank lookup or tiktoken's byte-pair merge, merged
//! pieces remembered for the rest of a long call.

use rustc_hash::FxHashMap;
use std::sync::OnceLock;
use tokenizers::pipeline::PreTokenizerScratch;

use super::chunk::ChunkState;
use super::{NAME, TiktokenBackend, merge, pieces};
use crate::error::{Error, Result};

/// What the regex path needs beyond the ranks.
pub(super) struct Chunker {
    /// One regex per thread slot, compiled on the slot's first use: clones
    /// of one `fancy_regex::Regex` share the inner matchers' caches, so
    /// threads encoding chunks side by side would serialize on them.
    regexes: Vec<OnceLock<Option<fancy_regex::Regex>>>,
}

/// Regex slots for the chunk encoder: every thread gets its own compiled
/// regex (by a per-thread slot), up to this many threads.
const REGEX_CLONES: usize = 64;

/// A small number fixed per thread, for picking a regex clone.
fn thread_slot() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    SLOT.with(|s| *s)
}

/// From this segment length the rank path remembers each merged piece for
/// the rest of the call (invariant `cache-transparent`).
pub(super) const PIECE_MEMO_MIN_BYTES: usize = 4 << 10;

/// Pieces merged earlier in one rank-path call, and their ids: a piece's
/// ids depend on its bytes alone, and prose and code repeat their words.
/// Text whose merged pieces do not repeat (Chinese clauses) turns it off:
/// after [`Self::TRIAL`] stored pieces with under one hit in eight, it stops
/// storing and looking up.
struct PieceMemo<'s> {
    on: bool,
    at: FxHashMap<&'s [u8], (usize, usize)>,
    ids: Vec<u32>,
    hits: usize,
}

impl<'s> PieceMemo<'s> {
    const TRIAL: usize = 512;

    fn new(on: bool) -> Self {
        Self {
            on,
            at: FxHashMap::default(),
            ids: Vec::new(),
            hits: 0,
        }
    }

    fn get(&mut self, piece: &[u8]) -> Option<&[u32]> {
        if !self.on {
            return None;
        }
        let &(start, len) = self.at.get(piece)?;
        self.hits += 1;
        self.ids.get(start..start + len)
    }

    fn insert(&mut self, piece: &'s [u8], ids: &[u32]) {
        if !self.on || self.at.contains_key(piece) {
            return;
        }
        if self.at.len() >= Self::TRIAL && self.hits * 8 < self.at.len() {
            self.on = false;
            return;
        }
        self.at.insert(piece, (self.ids.len(), ids.len()));
        self.ids.extend_from_slice(ids);
    }
}

impl TiktokenBackend {
    fn chunker(&self) -> Result<&Chunker> {
        let built = self.chunker.get_or_init(|| {
            // Fail early on a bad pattern.
            let regex = fancy_regex::Regex::new(&self.pattern).map_err(|e| e.to_string())?;
            let regexes: Vec<OnceLock<Option<fancy_regex::Regex>>> =
                (0..REGEX_CLONES).map(|_| OnceLock::new()).collect();
            if let Some(first) = regexes.first() {
                let _ = first.set(Some(regex));
            }
            Ok(Chunker { regexes })
        });
        built
            .as_ref()
            .map_err(|e| Error::backend(NAME, format!("chunk encoder: {e}")))
    }

    /// This thread's regex clone.
    fn chunk_regex<'c>(&self, chunker: &'c Chunker) -> Result<&'c fancy_regex::Regex> {
        let slot = thread_slot() % chunker.regexes.len().max(1);
        chunker
            .regexes
            .get(slot)
            .and_then(|r| {
                r.get_or_init(|| fancy_regex::Regex::new(&self.pattern).ok())
                    .as_ref()
            })
            .ok_or_else(|| Error::backend(NAME, "no chunk regex"))
    }

    /// The regex path: `fancy-regex` pieces (whitespace runs cut without
    /// it), then a rank lookup or tiktoken's byte-pair merge per piece.
    pub(super) fn regex_ordinary(
        &self,
        segment: &str,
        base: usize,
        st: &mut ChunkState,
    ) -> Result<()> {
        // The native grammar's pieces where it applies (invariants `native-pieces-equal-regex` and
        // `unicode-classes-are-reference`: the
        // regex's pieces), else the regex's.
        let mut memo = PieceMemo::new(segment.len() >= PIECE_MEMO_MIN_BYTES);
        if let Some(native) = &self.native {
            let mut spans = Vec::new();
            if native
                .spans(
                    segment,
                    segment.is_ascii(),
                    &mut PreTokenizerScratch::default(),
                    &mut spans,
                )
                .map_err(|e| Error::backend(NAME, format!("pre-tokenizing: {e}")))?
            {
                for span in &spans {
                    let (start, end) = (span.start as usize, span.end as usize);
                    self.rank_piece(segment, start, end, base, st, &mut memo)?;
                }
                return Ok(());
            }
        }
        let chunker = self.chunker()?;
        let regex = self.chunk_regex(chunker)?;
        for m in pieces::Pieces::new(regex, segment, self.ws_rule) {
            let (start, end) =
                m.map_err(|e| Error::backend(NAME, format!("regex error while tokenizing: {e}")))?;
            self.rank_piece(segment, start, end, base, st, &mut memo)?;
        }
        Ok(())
    }

    /// tiktoken's merge of one piece `segment[start..end]` (the whole piece
    /// when it is a token), its ids appended to `st`; a piece that is not a
    /// token is merged once per call (`memo`).
    fn rank_piece<'s>(
        &self,
        segment: &'s str,
        start: usize,
        end: usize,
        base: usize,
        st: &mut ChunkState,
        memo: &mut PieceMemo<'s>,
    ) -> Result<()> {
        let piece = segment
            .as_bytes()
            .get(start..end)
            .ok_or_else(|| Error::backend(NAME, "a piece out of the segment"))?;
        let (ps, pe) = (base + start, base + end);
        let first = st.ids.len();
        let mut merged = false;
        if let Some(&id) = self.ranks.get(piece) {
            st.ids.push(id);
        } else if piece.len() < 2 {
            return Err(Error::backend(NAME, "a single byte missing from the ranks"));
        } else if let Some(ids) = memo.get(piece) {
            st.ids.extend_from_slice(ids);
        } else {
            merged = true;
            merge::byte_pair_encode_into(piece, &self.ranks, &mut st.ids)
                .ok_or_else(|| Error::backend(NAME, "a byte missing from the ranks"))?;
        }
        if merged {
            memo.insert(piece, &st.ids[first..]);
        }
        if st.touches(ps, pe) {
            st.bounds.extend([ps, pe]);
            let mut p = ps;
            for k in first..st.ids.len() {
                let l = self.bytes_of(st.ids[k]).map_or(0, <[u8]>::len);
                st.known.push(k);
                st.spans.push((p, p + l));
                p += l;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The memo answers a repeated piece, and turns itself off where stored
    /// pieces do not come back.
    #[test]
    fn piece_memo_stores_and_gives_up() {
        let text: String = (0..600).map(|i| format!("w{i} ")).collect();
        let mut memo = PieceMemo::new(true);
        for piece in text.split(' ').filter(|p| !p.is_empty()) {
            memo.insert(piece.as_bytes(), &[1, 2]);
        }
        assert!(!memo.on, "600 pieces stored, none asked for again");
        let mut memo = PieceMemo::new(true);
        memo.insert(b"ab", &[7, 8]);
        assert_eq!(memo.get(b"ab"), Some(&[7, 8][..]));
        assert_eq!(memo.get(b"abc"), None);
        assert_eq!(PieceMemo::new(false).get(b"ab"), None);
    }
}
