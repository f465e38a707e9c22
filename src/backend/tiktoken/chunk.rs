//! The chunk encoder: one chunk of a parallel encode, its ids with the piece
//! boundaries and token spans near both ends that the merge reads (byte-level
//! engine where it takes the segment, else the rank path).

use super::{NAME, TiktokenBackend};
use crate::contract::{ChunkEncoding, ChunkRequest};
use crate::error::{Error, Result};
use crate::special::SpecialTokenPolicy;

/// The chunk encoder's running state.
pub(super) struct ChunkState {
    pub(super) ids: Vec<u32>,
    /// Spans of the ids listed in `known`.
    pub(super) spans: Vec<(usize, usize)>,
    pub(super) known: Vec<usize>,
    pub(super) bounds: Vec<usize>,
    head: usize,
    tail_from: usize,
    all: bool,
}

impl ChunkState {
    /// A state that collects ids only (no spans, no chunk edges).
    pub(super) fn ids_only(ids: Vec<u32>) -> Self {
        Self {
            ids,
            spans: Vec::new(),
            known: Vec::new(),
            bounds: Vec::new(),
            head: 0,
            tail_from: usize::MAX,
            all: false,
        }
    }

    pub(super) fn touches(&self, start: usize, end: usize) -> bool {
        self.all || start < self.head || end > self.tail_from
    }
}

impl TiktokenBackend {
    /// The chunk encoder: `CoreBPE::encode`'s loop (regex pieces, then a rank
    /// lookup or byte-pair merge), keeping piece boundaries and token spans
    /// near both ends.
    pub(super) fn encode_chunk_impl(
        &self,
        text: &str,
        request: &ChunkRequest,
    ) -> Result<ChunkEncoding> {
        let len = text.len();
        let (head, tail_from, all) = if request.all_offsets {
            (len, 0, true)
        } else {
            (
                request.head.min(len),
                len.saturating_sub(request.tail),
                false,
            )
        };
        let mut st = ChunkState {
            // The sequential encode's estimate.
            ids: Vec::with_capacity(len.max(request.reserve_bytes) / 3 + 1),
            spans: Vec::new(),
            known: Vec::new(),
            bounds: vec![0, len],
            head,
            tail_from,
            all,
        };
        let mut start = 0;
        if self.policy == SpecialTokenPolicy::Parse
            && let Some(scan) = &self.special_scan
        {
            for m in scan.find_iter(text) {
                self.chunk_ordinary(&text[start..m.start], start, &mut st)?;
                if st.touches(m.start, m.end) {
                    st.known.push(st.ids.len());
                    st.spans.push((m.start, m.end));
                    st.bounds.extend([m.start, m.end]);
                }
                st.ids.push(m.id);
                start = m.end;
            }
        }
        self.chunk_ordinary(&text[start..], start, &mut st)?;
        let ChunkState {
            ids,
            spans,
            known,
            mut bounds,
            ..
        } = st;
        bounds.sort_unstable();
        bounds.dedup();
        if all {
            return Ok(ChunkEncoding::from_spans(ids, spans, len, request, bounds));
        }
        let n = ids.len();
        let head_n = known
            .iter()
            .enumerate()
            .take_while(|&(k, &i)| k == i)
            .count();
        let tail_n = known
            .iter()
            .rev()
            .enumerate()
            .take_while(|&(k, &i)| i + k + 1 == n)
            .count();
        Ok(ChunkEncoding {
            head: spans[..head_n].to_vec(),
            tail_first: n - tail_n,
            tail: spans[spans.len() - tail_n..].to_vec(),
            ids,
            boundaries: bounds,
            offsets: None,
        })
    }

    /// One run of ordinary text at chunk position `base`: the byte-level
    /// engine when it takes the segment, else the regex path.
    fn chunk_ordinary(&self, segment: &str, base: usize, st: &mut ChunkState) -> Result<()> {
        if segment.is_empty() {
            return Ok(());
        }
        if let Some(fast) = self.engine(segment.len()) {
            let first = st.ids.len();
            let (head, tail_from, bounds) = (st.head, st.tail_from, &mut st.bounds);
            // Pre-tokens touching a window are a prefix (start before `head`)
            // and a suffix (end after `tail_from`) of the segment's.
            let taken = fast
                .encode_with_pieces(segment, &mut st.ids, |pieces| {
                    let lo = pieces.partition_point(|p| base + (p.start as usize) < head);
                    let hi = pieces
                        .partition_point(|p| base + (p.end as usize) <= tail_from)
                        .max(lo);
                    for p in pieces[..lo].iter().chain(&pieces[hi..]) {
                        bounds.extend([base + p.start as usize, base + p.end as usize]);
                    }
                })
                .map_err(|e| Error::backend(NAME, e))?;
            if taken {
                self.window_spans(base, base + segment.len(), first, st);
                return Ok(());
            }
        }
        self.regex_ordinary(segment, base, st)
    }

    /// Spans of the tokens `st.ids[first..]` that touch a window, the
    /// tokens covering `[start, end)` exactly (byte-level BPE): summed
    /// forward from `start` through the head window and backward from `end`
    /// through the tail window, so the middle of a chunk costs no lookups.
    fn window_spans(&self, start: usize, end: usize, first: usize, st: &mut ChunkState) {
        let len = |id: u32| self.bytes_of(id).map_or(0, <[u8]>::len);
        let n = st.ids.len();
        let (mut i, mut p) = (first, start);
        while i < n && (st.all || p < st.head) {
            let q = p + len(st.ids[i]);
            st.known.push(i);
            st.spans.push((p, q));
            (i, p) = (i + 1, q);
        }
        // The tail's first token, found backwards; recorded in id order, and
        // never one the head walk took (short chunks: the windows overlap).
        let (mut j, mut q) = (n, end);
        while j > i && q > st.tail_from {
            q = q.saturating_sub(len(st.ids[j - 1]));
            j -= 1;
        }
        for k in j..n {
            let r = q + len(st.ids[k]);
            st.known.push(k);
            st.spans.push((q, r));
            q = r;
        }
    }
}
