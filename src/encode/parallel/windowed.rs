//! The windowed encode that fills and reads the L1 prefix cache: an encode
//! that also returns the spans of its last bytes, seeded by a cached one.

use std::borrow::Cow;

use super::{Merged, ParallelEncoder, Piece, Slot, extend_ids};
use crate::backend;
use crate::encode::split::{self, ChunkPlan};
use crate::encode::{ChunkEncoding, ChunkRequest, SplitSpec};
use crate::encoding::ParallelReport;
use crate::error::{Error, Result};
use crate::metrics::Fallback;

/// A cached encoding of a text that agrees with the text being encoded on
/// its first `agree` bytes (`agree` an allowed edge of both texts, or the end
/// of one): the L1 prefix cache's seed, used as the first chunk of a LoPT
/// merge (DESIGN.md, invariants `cache-transparent` and `caches-bounded`).
pub(crate) struct Seed<'a> {
    /// The ids of the cached text's last tokens (its span window) with
    /// their spans (`tail_first` 0) and the pre-token boundaries there, in
    /// the cached text's coordinates; the ids before them stay in the cache.
    pub enc: &'a ChunkEncoding,
    /// Index of `enc.ids[0]` among the cached text's ids.
    pub first: usize,
    /// Bytes both texts share, at an allowed edge.
    pub agree: usize,
}

/// An encode that also returns the spans and boundaries of its last
/// `keep_tail` bytes, so it can seed a later encode (the L1 cache's entries).
pub(crate) struct Windowed {
    /// The result's first `seed_ids` ids are the seed's first ones, which
    /// only the caller holds (0 when no cut into the seed was taken).
    pub seed_ids: usize,
    /// The result's other ids (no BOS/EOS).
    pub ids: Vec<u32>,
    /// The ids of the tokens ending in the last `keep_tail` bytes, their
    /// spans (`tail_first` 0) and the pre-token boundaries from the last one
    /// before them, in text coordinates: a seed for a later encode.
    pub window: ChunkEncoding,
    /// Index of `window.ids[0]` in the result.
    pub window_first: usize,
    /// Text bytes those ids cover (the cut position).
    pub reused_bytes: usize,
    /// Ids the first fresh chunk produced before the cut: the overlap the
    /// seed already held, encoded again to find where both agree.
    pub reencoded_tokens: usize,
    /// A seed was given but no cut into it held (the text was encoded in full).
    pub seed_failed: bool,
}

impl ParallelEncoder {
    /// Encodes `text` (no BOS/EOS) and returns, with the ids, the spans and
    /// pre-token boundaries of its last `keep_tail` bytes: what the L1 cache
    /// stores. With a `seed`, the seed is the first chunk of a LoPT merge
    /// and only the text from an overlap before `seed.agree` on is encoded;
    /// where no cut into the seed holds, the merge's own fallback (grow, then
    /// encode in one piece) encodes the text in full. Returns `None` when
    /// the backend's family cannot be cut (the caller encodes normally).
    pub(crate) fn encode_windowed(
        &self,
        backend: &dyn backend::Tokenizer,
        text: &str,
        keep_tail: usize,
        seed: Option<Seed<'_>>,
    ) -> Result<Option<Windowed>> {
        let Some(spec) = backend.split_spec().filter(|s| s.family.is_parallel()) else {
            return Ok(None);
        };
        self.options.check()?;
        let n = text.len();
        let seed_given = seed.is_some();
        let mut report = ParallelReport::default();
        let planned = match seed {
            Some(seed) => self
                .seeded_plans(spec, text, &seed)
                .map(|(plans, nominal)| {
                    let slot = Slot {
                        start: 0,
                        end: seed.agree,
                        first: seed.first,
                        enc: Cow::Borrowed(seed.enc),
                    };
                    (plans, nominal, Some(slot))
                }),
            None => {
                let targets = match self.wanted(backend, text) {
                    Some(_) => self.targets(n, spec),
                    None => Vec::new(),
                };
                let nominal = n / (targets.len() + 1).max(1);
                let radius = (nominal / 2).clamp(16, 4096);
                let plans =
                    split::plan_chunks(text, spec, &targets, self.options.overlap_chars, radius);
                (plans.len() >= 2).then_some((plans, nominal, None))
            }
        };
        let merged = match planned {
            Some((plans, nominal, seed_slot)) => self.merge(
                backend,
                spec,
                text,
                false,
                &plans,
                seed_slot,
                keep_tail,
                nominal,
                false,
                &mut report,
            )?,
            None => Merged::GaveUp(Fallback::Edges),
        };
        let (slots, pieces) = match merged {
            Merged::Done(slots, pieces) => (slots, pieces),
            Merged::GaveUp(reason) => {
                if reason != Fallback::Edges || seed_given {
                    self.metrics.fallback(reason);
                }
                let enc = backend.encode_chunk(text, &ChunkRequest::new(0, keep_tail, false))?;
                if !enc.is_consistent(n) {
                    return Err(Error::backend(
                        backend.backend_name(),
                        "chunk encoding inconsistent",
                    ));
                }
                let (ids, window, window_first) = split_window(enc);
                return Ok(Some(Windowed {
                    seed_ids: 0,
                    ids,
                    window,
                    window_first,
                    reused_bytes: 0,
                    reencoded_tokens: 0,
                    seed_failed: seed_given,
                }));
            }
        };
        let seed_cut =
            seed_given && pieces.first().is_some_and(|p| p.slot == 0) && pieces.len() > 1;
        let (reused_bytes, reencoded_tokens) = match (seed_cut, pieces.get(..2)) {
            (true, Some([first, second])) => (first.hi, second.from),
            _ => (0, 0),
        };
        let external = usize::from(seed_cut);
        let (seed_ids, ids, window, window_first) =
            windowed_body(backend, &slots, &pieces, external, n, keep_tail)?;
        Ok(Some(Windowed {
            seed_ids,
            ids,
            window,
            window_first,
            reused_bytes,
            reencoded_tokens,
            seed_failed: seed_given && !seed_cut,
        }))
    }

    /// Plans for a seeded merge: the seed covers `[0, agree)`, the first fresh
    /// chunk starts at an allowed edge about `overlap_chars` before `agree`
    /// (inside the seed's span window), and the rest of the text is split as
    /// a parallel encode of it would be. `None` when no such start exists.
    fn seeded_plans(
        &self,
        spec: &SplitSpec,
        text: &str,
        seed: &Seed<'_>,
    ) -> Option<(Vec<ChunkPlan>, usize)> {
        let n = text.len();
        let m = seed.agree;
        let slack = split::window_slack(spec);
        // The seed knows spans from its first tail token on; the fresh chunk
        // must start `slack` bytes inside that window.
        let known = seed.enc.tail.first().map_or(usize::MAX, |&(s, _)| s);
        let floor = known.checked_add(slack)?;
        let target = split::retreat_chars(text, m, self.options.overlap_chars).max(floor);
        if m > n || target >= m {
            return None;
        }
        let b = split::find_edge(text, &spec.edges, target, floor, m)?;
        if m - b < 2 * spec.max_token_bytes + 2 {
            return None;
        }
        let rest = n - b;
        let mut targets = vec![b];
        if self.wanted_len(spec, rest) {
            targets.extend(self.targets(rest, spec).into_iter().map(|t| t + b));
        }
        let nominal = rest / targets.len().max(1);
        let radius = (nominal / 2).clamp(16, 4096);
        let mut plans =
            split::plan_chunks(text, spec, &targets, self.options.overlap_chars, radius);
        if plans.len() < 2 || plans[1].start != b {
            return None;
        }
        plans[0] = ChunkPlan {
            start: 0,
            end: m,
            head: 0,
            tail: 0,
        };
        plans[1].head = m - b + slack;
        Some((plans, nominal))
    }
}

/// A whole-text chunk encoding split into its ids and its tail window (the
/// window's ids copied, boundaries from the last one before it).
fn split_window(enc: ChunkEncoding) -> (Vec<u32>, ChunkEncoding, usize) {
    let first = enc.tail_first;
    let from = enc.tail.first().map_or(usize::MAX, |&(a, _)| a);
    let mut boundaries = enc.boundaries;
    let keep = boundaries.partition_point(|&x| x <= from).saturating_sub(1);
    boundaries.drain(..keep);
    let window = ChunkEncoding {
        ids: enc.ids.get(first..).unwrap_or_default().to_vec(),
        head: Vec::new(),
        tail_first: 0,
        tail: enc.tail,
        boundaries,
        offsets: None,
    };
    (enc.ids, window, first)
}

/// The merged ids of `pieces`, with the ids and spans of the tokens in the
/// last `keep_tail` bytes (as far back as the slots' windows reach without
/// a gap) and the pre-token boundaries each piece's slot reports inside its
/// stretch (from the last one at or before the window's start), in text
/// coordinates. The first `external` pieces (0 or 1: the seed's) are not
/// copied: their id count comes first in the result, then the other ids,
/// the window and the index of its first id.
fn windowed_body(
    backend: &dyn backend::Tokenizer,
    slots: &[Slot<'_>],
    pieces: &[Piece],
    external: usize,
    n: usize,
    keep_tail: usize,
) -> Result<(usize, Vec<u32>, ChunkEncoding, usize)> {
    let out_of_range = || Error::backend(backend.backend_name(), "parallel merge out of range");
    let count = |ps: &[Piece]| {
        ps.iter()
            .map(|p| p.to.saturating_sub(p.from))
            .sum::<usize>()
    };
    let (outside, held) = pieces.split_at(external.min(pieces.len()));
    let seed_ids = count(outside);
    let total = seed_ids + count(held);
    let mut ids = Vec::with_capacity(total - seed_ids);
    extend_ids(&mut ids, slots, held).ok_or_else(out_of_range)?;
    // Spans, walking back from the end until the window is covered or a
    // slot's window leaves a gap.
    let window_start = n.saturating_sub(keep_tail);
    let mut spans_rev: Vec<(usize, usize)> = Vec::new();
    let mut ids_rev: Vec<u32> = Vec::new();
    'pieces: for p in pieces.iter().rev() {
        let slot = &slots[p.slot];
        let tf = slot.first + slot.enc.tail_first;
        let known_from = p.from.max(tf);
        for i in (known_from..p.to).rev() {
            let &(a, b) = slot.enc.tail.get(i - tf).ok_or_else(out_of_range)?;
            if slot.start + b <= window_start {
                break 'pieces;
            }
            let id = slot.enc.ids.get(i - slot.first).ok_or_else(out_of_range)?;
            spans_rev.push((slot.start + a, slot.start + b));
            ids_rev.push(*id);
        }
        if known_from > p.from {
            break;
        }
    }
    spans_rev.reverse();
    ids_rev.reverse();
    let window_first = total - spans_rev.len();
    let mut boundaries: Vec<usize> = Vec::new();
    for p in pieces {
        let slot = &slots[p.slot];
        boundaries.extend(
            slot.enc
                .boundaries
                .iter()
                .map(|&x| slot.start + x)
                .filter(|&x| (x > p.lo || (p.lo == 0 && x == 0)) && x <= p.hi),
        );
    }
    let from = spans_rev.first().map_or(n, |&(a, _)| a);
    let keep = boundaries.partition_point(|&x| x <= from).saturating_sub(1);
    boundaries.drain(..keep);
    let window = ChunkEncoding {
        ids: ids_rev,
        head: Vec::new(),
        tail_first: 0,
        tail: spans_rev,
        boundaries,
        offsets: None,
    };
    Ok((seed_ids, ids, window, window_first))
}
