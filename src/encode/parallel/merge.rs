//! The LoPT merge: encodes the planned chunks, then stitches neighbours at
//! cuts, growing a chunk over the next where no cut holds (docs/lopt.md).

use std::borrow::Cow;

use super::{Merged, ParallelEncoder, Piece, Slot};
use crate::backend;
use crate::encode::split::{self, ChunkPlan, Cut, PrevCut};
use crate::encode::{ChunkRequest, SplitSpec};
use crate::encoding::ParallelReport;
use crate::error::{Error, Result};
use crate::metrics::Fallback;

/// The last accepted cut into the current chunk, kept to relocate it when
/// that chunk grows.
#[derive(Clone, Copy)]
struct LastCut {
    left: usize,
    left_prev: PrevCut,
    cut: Cut,
}

impl ParallelEncoder {
    /// The LoPT merge over planned chunks: encodes them (all but the first
    /// when `seed` provides it), then stitches neighbours at cuts, growing a
    /// chunk over the next where no cut holds (docs/lopt.md, C3–C10). The
    /// last chunk (and any chunk grown to the text end) also reports spans
    /// for its last `keep_tail` bytes.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn merge<'a>(
        &self,
        backend: &dyn backend::Tokenizer,
        spec: &SplitSpec,
        text: &str,
        with_offsets: bool,
        plans: &[ChunkPlan],
        seed: Option<Slot<'a>>,
        keep_tail: usize,
        nominal: usize,
        reserve_first: bool,
        report: &mut ParallelReport,
    ) -> Result<Merged<'a>> {
        let n = text.len();
        if seed.is_none() {
            self.metrics.encode();
        }
        let job = ChunkJob {
            backend,
            text,
            with_offsets,
            keep_tail,
            reserve_first,
        };
        let encode = |p: &ChunkPlan| job.encode(p);
        let Some(mut slots) = self.first_slots(plans, seed, &encode)? else {
            return Ok(Merged::GaveUp(Fallback::Chunk));
        };
        let slack = split::window_slack(spec);
        let mut pieces: Vec<Piece> = Vec::with_capacity(plans.len());
        let mut cur = 0usize;
        let mut cur_from = 0usize;
        let mut prev = PrevCut::default();
        let mut last: Option<LastCut> = None;
        let mut next = 1usize;
        while next < plans.len() {
            let lo = slots[next].start.max(prev.pos);
            if let Some(cut) =
                split::find_cut(text, spec, slots[cur].view(), slots[next].view(), lo, prev)
            {
                pieces.push(Piece {
                    slot: cur,
                    from: cur_from,
                    to: cut.left_end,
                    lo: prev.pos,
                    hi: cut.pos,
                });
                report.cuts += 1;
                report.intra_word_cuts += usize::from(cut.intra);
                last = Some(LastCut {
                    left: cur,
                    left_prev: prev,
                    cut,
                });
                cur = next;
                cur_from = cut.right_start;
                prev = PrevCut { pos: cut.pos };
                next += 1;
                continue;
            }
            // No cut: grow the current chunk over the next one.
            report.grows += 1;
            self.metrics.retry_no_cut();
            if report.grows > self.options.max_retries {
                return Ok(Merged::GaveUp(Fallback::Retries));
            }
            let start = slots[cur].start;
            let (end, upto) = self.grow_end(plans, start, next, nominal, n, report);
            let head = last.map_or(0, |l| slots[l.left].end - start + slack);
            let tail = plans.get(upto).map_or(0, |p| end - p.start + slack);
            let grown = encode(&ChunkPlan {
                start,
                end,
                head,
                tail,
            })?;
            if !grown.enc.is_consistent(end - start) {
                return Ok(Merged::GaveUp(Fallback::Chunk));
            }
            slots.push(grown);
            let g = slots.len() - 1;
            if let Some(l) = last {
                let Some(moved) = relocate_cut(text, spec, &slots, g, l) else {
                    return Ok(Merged::GaveUp(Fallback::Relocate));
                };
                cur_from = moved.cut.right_start;
                last = Some(moved);
            }
            cur = g;
            next = upto;
        }
        pieces.push(Piece {
            slot: cur,
            from: cur_from,
            to: slots[cur].len(),
            lo: prev.pos,
            hi: n,
        });
        Ok(Merged::Done(slots, pieces))
    }
    /// The merge's first slots: `seed` (when given), then the planned chunks
    /// it does not cover, encoded; `None` when a fresh one is inconsistent.
    fn first_slots<'a, F>(
        &self,
        plans: &[ChunkPlan],
        seed: Option<Slot<'a>>,
        encode: &F,
    ) -> Result<Option<Vec<Slot<'a>>>>
    where
        F: Fn(&ChunkPlan) -> Result<Slot<'a>> + Sync,
    {
        let seeded = seed.is_some();
        let mut slots: Vec<Slot<'a>> = Vec::with_capacity(plans.len() + 2);
        if let Some(seed) = seed {
            slots.push(seed);
            slots.extend(self.encode_all(plans.get(1..).unwrap_or_default(), encode)?);
        } else {
            slots = self.encode_all(plans, encode)?;
        }
        let fresh = usize::from(seeded);
        if !slots[fresh..]
            .iter()
            .all(|s| s.enc.is_consistent(s.end - s.start))
        {
            return Ok(None);
        }
        Ok(Some(slots))
    }

    /// Where a chunk from `start` grown over plan `next` ends, and the first
    /// plan after it: the text end `n` (past every plan) once it would span
    /// more than four nominal chunks.
    fn grow_end(
        &self,
        plans: &[ChunkPlan],
        start: usize,
        next: usize,
        nominal: usize,
        n: usize,
        report: &mut ParallelReport,
    ) -> (usize, usize) {
        let (mut end, mut upto) = (plans[next].end, next + 1);
        if end - start > 4 * nominal.max(1) {
            end = n;
            upto = plans.len();
            report.grow_limit = true;
            self.metrics.grow_limit();
        }
        (end, upto)
    }
}

/// What `merge` encodes a planned chunk with: the chunk's text, the spans
/// its plan asks for (at least `keep_tail` bytes' at the text end), and for
/// the first chunk, when `reserve_first`, room for the whole text's ids.
struct ChunkJob<'t> {
    backend: &'t dyn backend::Tokenizer,
    text: &'t str,
    with_offsets: bool,
    keep_tail: usize,
    reserve_first: bool,
}

impl ChunkJob<'_> {
    /// Encodes the chunk `p` plans.
    fn encode<'a>(&self, p: &ChunkPlan) -> Result<Slot<'a>> {
        let n = self.text.len();
        let chunk = self.text.get(p.start..p.end).ok_or_else(|| {
            Error::backend(
                self.backend.backend_name(),
                "chunk edge off a char boundary",
            )
        })?;
        let tail = if p.end == n {
            p.tail.max(self.keep_tail)
        } else {
            p.tail
        };
        let mut request = ChunkRequest::new(p.head, tail, self.with_offsets);
        if p.start == 0 && self.reserve_first {
            request = request.with_reserve(n);
        }
        let enc = self.backend.encode_chunk(chunk, &request)?;
        Ok(Slot {
            start: p.start,
            end: p.end,
            first: 0,
            enc: Cow::Owned(enc),
        })
    }
}

/// The accepted cut `l` relocated into the grown chunk `slots[g]` by its
/// position (encoding never restarts at a cut); `None` where it no longer
/// holds there with the same left end.
fn relocate_cut(
    text: &str,
    spec: &SplitSpec,
    slots: &[Slot<'_>],
    g: usize,
    l: LastCut,
) -> Option<LastCut> {
    let lo = slots[g].start.max(l.left_prev.pos);
    match split::check_cut_at(
        text,
        spec,
        slots[l.left].view(),
        slots[g].view(),
        l.cut.pos,
        lo,
        l.left_prev,
    ) {
        Some(cut) if cut.left_end == l.cut.left_end => Some(LastCut { cut, ..l }),
        _ => None,
    }
}
