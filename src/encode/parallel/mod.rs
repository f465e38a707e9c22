//! [`ParallelEncoder`]: cuts a long text into chunks, encodes them on the
//! rayon pool, and stitches them with the merge rule of [`super::split`].

use rayon::ThreadPool;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::split::{self, ChunkPlan, Cut, PrevCut, View};
use super::{ChunkEncoding, ChunkRequest, SplitSpec};
use crate::backend;
pub use crate::encoding::ParallelReport;
use crate::encoding::{Encoding, EncodingBuilder};
use crate::error::{Error, Result};
use crate::metrics::{Fallback, Labels, ParallelMetrics};

/// When [`Tokenizer::encode`](crate::Tokenizer::encode) takes the parallel path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParallelMode {
    /// From [`ParallelOptions::min_bytes`] up (the tokenizer's measured
    /// threshold by default), with at least two threads.
    #[default]
    Auto,
    /// Whenever the tokenizer's family allows it, at least two chunks (for
    /// tests and benchmarks).
    Always,
    /// Never.
    Never,
}

/// How long inputs are encoded in parallel. Part of [`LoadOptions`](crate::LoadOptions).
///
/// By default each tokenizer splits from its own threshold, measured with
/// `rtok bench` on two cores so that no prompt gets slower: a tokenizer that
/// encodes at hundreds of MB/s (the Hugging Face regex BPEs) needs a longer
/// input to repay the fork and join than tiktoken or a whole-text BPE does
/// (each backend declares the threshold it was measured at). On a
/// larger pool that threshold falls as `2 / threads`, down to 64 KiB, and
/// the text is cut into one chunk per thread of at least 32 KiB (measured on
/// 16 cores, DESIGN.md invariant `lopt-equals-sequential`). A `min_bytes` set here is used as
/// given.
///
/// ```
/// use router_tokenizer::{LoadOptions, ParallelOptions};
/// let options = LoadOptions::new().with_parallel(ParallelOptions {
///     min_bytes: Some(1 << 20),
///     ..ParallelOptions::default()
/// });
/// # let _ = options;
/// ```
#[derive(Debug, Clone)]
pub struct ParallelOptions {
    /// When to split.
    pub mode: ParallelMode,
    /// Inputs shorter than this (bytes) are encoded sequentially in `Auto`
    /// mode; `None` takes the tokenizer's measured threshold, scaled to the
    /// pool.
    pub min_bytes: Option<usize>,
    /// Number of chunks; default one per thread of the pool.
    pub chunks: Option<usize>,
    /// Fixed chunk length in bytes, instead of a chunk count (tests, tuning).
    pub chunk_bytes: Option<usize>,
    /// How far (in chars) each chunk runs past the next one's start.
    pub overlap_chars: usize,
    /// How many times a chunk may grow over its neighbour when no cut is
    /// found before the whole text is encoded sequentially.
    pub max_retries: usize,
    /// The pool to run on; default the current rayon pool (the global one
    /// outside any `install`). Never created per call.
    pub pool: Option<Arc<ThreadPool>>,
}

impl ParallelOptions {
    /// Default for [`overlap_chars`](Self::overlap_chars).
    pub const DEFAULT_OVERLAP_CHARS: usize = 1024;
    /// Default for [`max_retries`](Self::max_retries).
    pub const DEFAULT_MAX_RETRIES: usize = 8;

    /// Options that never split.
    pub fn never() -> Self {
        Self {
            mode: ParallelMode::Never,
            ..Self::default()
        }
    }

    /// Options that always split (when the family allows), into `chunk_bytes` chunks.
    pub fn always_with_chunk_bytes(chunk_bytes: usize) -> Self {
        Self {
            mode: ParallelMode::Always,
            chunk_bytes: Some(chunk_bytes),
            ..Self::default()
        }
    }

    /// Most chunks one encode may be cut into.
    pub const MAX_CHUNKS: usize = 1 << 16;

    /// Checks the options: chunk size and count positive, at most
    /// [`MAX_CHUNKS`](Self::MAX_CHUNKS) chunks. [`LoadOptions::load`](crate::LoadOptions::load)
    /// calls it; an encode with invalid options fails with the same error.
    pub fn check(&self) -> Result<()> {
        if self.chunk_bytes == Some(0) || self.chunks == Some(0) {
            return Err(Error::config(
                "parallel chunk size and count must be positive",
            ));
        }
        if self.chunks.is_some_and(|k| k > Self::MAX_CHUNKS) {
            return Err(Error::config(format!(
                "parallel chunk count must be at most {}",
                Self::MAX_CHUNKS
            )));
        }
        Ok(())
    }
}

impl Default for ParallelOptions {
    fn default() -> Self {
        Self {
            mode: ParallelMode::Auto,
            min_bytes: None,
            chunks: None,
            chunk_bytes: None,
            overlap_chars: Self::DEFAULT_OVERLAP_CHARS,
            max_retries: Self::DEFAULT_MAX_RETRIES,
            pool: None,
        }
    }
}

impl PartialEq for ParallelOptions {
    fn eq(&self, other: &Self) -> bool {
        let same_pool = match (&self.pool, &other.pool) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        same_pool
            && self.mode == other.mode
            && self.min_bytes == other.min_bytes
            && self.chunks == other.chunks
            && self.chunk_bytes == other.chunk_bytes
            && self.overlap_chars == other.overlap_chars
            && self.max_retries == other.max_retries
    }
}

/// The parallel path of one tokenizer handle: its options and metric handles.
#[derive(Clone)]
pub(crate) struct ParallelEncoder {
    options: ParallelOptions,
    metrics: ParallelMetrics,
}

struct Slot<'a> {
    start: usize,
    end: usize,
    /// Index of `enc.ids[0]` among the chunk's ids (0 unless a seed).
    first: usize,
    /// Encoded here, or borrowed from the L1 prefix cache (the seed).
    enc: Cow<'a, ChunkEncoding>,
}

impl Slot<'_> {
    fn view(&self) -> View<'_> {
        View {
            start: self.start,
            end: self.end,
            first: self.first,
            enc: &self.enc,
        }
    }

    /// Number of ids in the chunk, held or not.
    fn len(&self) -> usize {
        self.first + self.enc.ids.len()
    }
}

/// The last accepted cut into the current chunk, kept to relocate it when
/// that chunk grows.
#[derive(Clone, Copy)]
struct LastCut {
    left: usize,
    left_prev: PrevCut,
    cut: Cut,
}

/// One stretch of the merged output: `slots[slot].enc.ids[from..to]`,
/// covering the text bytes from `lo` (the previous cut, or 0) to `hi` (the
/// next cut, or the text end).
#[derive(Clone, Copy)]
struct Piece {
    slot: usize,
    from: usize,
    to: usize,
    lo: usize,
    hi: usize,
}

/// The outcome of a merge: the slots and the pieces taken from them, or the
/// reason to encode the whole text in one piece instead.
enum Merged<'a> {
    Done(Vec<Slot<'a>>, Vec<Piece>),
    GaveUp(Fallback),
}

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
    pub(crate) fn new(options: ParallelOptions, labels: &Labels) -> Self {
        Self {
            options,
            metrics: ParallelMetrics::new(labels.clone()),
        }
    }

    pub(crate) fn options(&self) -> &ParallelOptions {
        &self.options
    }

    pub(crate) fn with_options(&self, options: ParallelOptions) -> Self {
        Self {
            options,
            metrics: self.metrics.clone(),
        }
    }

    fn threads(&self) -> usize {
        match &self.options.pool {
            Some(pool) => pool.current_num_threads(),
            None => rayon::current_num_threads(),
        }
    }

    /// Runs `side` on the pool while the calling thread runs `main`, when
    /// the options allow a second thread (not `Never`, two threads or
    /// more); else one after the other on the calling thread. `side` runs
    /// exactly once: a pool thread that has not started it by the time
    /// `main` returns finds it taken, and the caller runs it itself (so a
    /// slow wake-up costs no more than running both in turn). `None` only
    /// if `side` never ran, which the scope's join rules out.
    pub(crate) fn join<RA, RB>(
        &self,
        side: impl Fn() -> RA + Sync,
        main: impl FnOnce() -> RB,
    ) -> (Option<RA>, RB)
    where
        RA: Send + Sync,
    {
        if self.options.mode == ParallelMode::Never || self.threads() < 2 {
            let b = main();
            return (Some(side()), b);
        }
        let taken = AtomicBool::new(false);
        let result = OnceLock::new();
        let run = || {
            if !taken.swap(true, Ordering::AcqRel) {
                let _ = result.set(side());
            }
        };
        let b = self.in_place_scope(|s| beside(s, &run, main));
        (result.into_inner(), b)
    }

    /// `in_place_scope` on the options' pool (the current one by default).
    fn in_place_scope<'s, R>(&self, op: impl FnOnce(&rayon::Scope<'s>) -> R) -> R {
        match &self.options.pool {
            Some(pool) => pool.in_place_scope(op),
            None => rayon::in_place_scope(op),
        }
    }

    /// The size from which `Auto` splits: the options' own, else the
    /// tokenizer's threshold scaled to the pool (invariant `lopt-equals-sequential`).
    fn min_bytes(&self, spec: &SplitSpec) -> usize {
        self.options
            .min_bytes
            .unwrap_or_else(|| scaled_min_bytes(spec.min_bytes, self.threads()))
    }

    /// Chunk starts to aim at, for a text of `n` bytes (empty: do not split).
    /// In `Auto` mode one chunk per thread, none shorter than
    /// [`MIN_CHUNK_BYTES`] or half the threshold, whichever is less.
    fn targets(&self, n: usize, spec: &SplitSpec) -> Vec<usize> {
        let o = &self.options;
        if let Some(size) = o.chunk_bytes {
            // Never more than MAX_CHUNKS chunks, however small the size asked.
            let size = size.max(n.div_ceil(ParallelOptions::MAX_CHUNKS)).max(1);
            return (1..).map(|i| i * size).take_while(|&t| t < n).collect();
        }
        let k = match (o.chunks, o.mode) {
            (Some(k), _) => k,
            (None, ParallelMode::Always) => self.threads().max(2),
            (None, _) => auto_chunks(n, self.min_bytes(spec), self.threads()),
        }
        .min(n);
        (1..k).map(|i| i * n / k).collect()
    }

    /// The spec to split with, when this text should be split.
    fn wanted<'b>(&self, backend: &'b dyn backend::Tokenizer, text: &str) -> Option<&'b SplitSpec> {
        let spec = backend.split_spec()?;
        (spec.family.is_parallel() && self.wanted_len(spec, text.len())).then_some(spec)
    }

    /// Whether the options split a text of `n` bytes of a parallel family.
    fn wanted_len(&self, spec: &SplitSpec, n: usize) -> bool {
        match self.options.mode {
            ParallelMode::Never => false,
            ParallelMode::Auto => n >= self.min_bytes(spec) && self.threads() >= 2,
            ParallelMode::Always => true,
        }
    }

    /// Encodes `text`, in parallel when the options and the backend allow.
    pub(crate) fn encode(
        &self,
        backend: &dyn backend::Tokenizer,
        text: &str,
        add_special_tokens: bool,
        with_offsets: bool,
    ) -> Result<Encoding> {
        if let Some(spec) = self.wanted(backend, text) {
            self.options.check()?;
            let targets = self.targets(text.len(), spec);
            if !targets.is_empty() {
                let (encoding, _) = self.run(
                    backend,
                    spec,
                    text,
                    add_special_tokens,
                    with_offsets,
                    &targets,
                )?;
                return Ok(encoding);
            }
        }
        sequential(backend, text, add_special_tokens, with_offsets)
    }

    /// Always takes the split path when the family allows (ignoring the size
    /// threshold), with chunks starting near `starts` when given.
    pub(crate) fn encode_report(
        &self,
        backend: &dyn backend::Tokenizer,
        text: &str,
        add_special_tokens: bool,
        with_offsets: bool,
        starts: Option<&[usize]>,
    ) -> Result<(Encoding, ParallelReport)> {
        self.options.check()?;
        let spec = match backend.split_spec() {
            Some(spec) if spec.family.is_parallel() && self.options.mode != ParallelMode::Never => {
                spec
            }
            _ => {
                let report = ParallelReport {
                    fallback: Some("sequential family"),
                    ..ParallelReport::default()
                };
                return Ok((
                    sequential(backend, text, add_special_tokens, with_offsets)?,
                    report,
                ));
            }
        };
        let targets = match starts {
            Some(s) => {
                let mut t: Vec<usize> = s
                    .iter()
                    .copied()
                    .filter(|&x| x > 0 && x < text.len())
                    .collect();
                t.sort_unstable();
                t.dedup();
                t
            }
            None => {
                let t = self.targets(text.len(), spec);
                if t.is_empty() && text.len() >= 2 {
                    vec![text.len() / 2]
                } else {
                    t
                }
            }
        };
        self.run(
            backend,
            spec,
            text,
            add_special_tokens,
            with_offsets,
            &targets,
        )
    }

    /// Encodes every planned chunk on the calling thread and up to one
    /// helper per other pool thread. Each thread claims the next chunk not
    /// yet taken, the caller included (an `in_place_scope`, so it works
    /// instead of sleeping): a helper that wakes late, or whose core another
    /// process holds, only takes fewer chunks, and when none is left for it
    /// the caller has encoded them all, as a sequential encode would.
    fn encode_all<'a, F>(&self, plans: &[ChunkPlan], encode: &F) -> Result<Vec<Slot<'a>>>
    where
        F: Fn(&ChunkPlan) -> Result<Slot<'a>> + Sync,
    {
        let threads = self.threads();
        if threads < 2 || plans.len() < 2 {
            // One thread asked for: no helper thread at all (the caller
            // would otherwise be a second one).
            return plans.iter().map(encode).collect();
        }
        let results: Vec<OnceLock<Result<Slot<'a>>>> =
            plans.iter().map(|_| OnceLock::new()).collect();
        let next = AtomicUsize::new(0);
        let work = || {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let (Some(plan), Some(slot)) = (plans.get(i), results.get(i)) else {
                    break;
                };
                let _ = slot.set(encode(plan));
            }
        };
        let work = &work;
        let helpers = (threads - 1).min(plans.len() - 1);
        self.in_place_scope(|s| share(s, helpers, work));
        results
            .into_iter()
            .map(|r| {
                r.into_inner()
                    .unwrap_or_else(|| Err(Error::backend("parallel", "a chunk was not encoded")))
            })
            .collect()
    }

    fn fallback(
        &self,
        reason: Fallback,
        mut report: ParallelReport,
        backend: &dyn backend::Tokenizer,
        text: &str,
        add_special_tokens: bool,
        with_offsets: bool,
    ) -> Result<(Encoding, ParallelReport)> {
        self.metrics.fallback(reason);
        report.fallback = Some(reason.name());
        Ok((
            sequential(backend, text, add_special_tokens, with_offsets)?,
            report,
        ))
    }

    fn run(
        &self,
        backend: &dyn backend::Tokenizer,
        spec: &SplitSpec,
        text: &str,
        add_special_tokens: bool,
        with_offsets: bool,
        targets: &[usize],
    ) -> Result<(Encoding, ParallelReport)> {
        let n = text.len();
        let nominal = n / (targets.len() + 1).max(1);
        let radius = (nominal / 2).clamp(16, 4096);
        let plans = split::plan_chunks(text, spec, targets, self.options.overlap_chars, radius);
        let mut report = ParallelReport {
            chunks: plans.len(),
            ..ParallelReport::default()
        };
        if plans.len() < 2 {
            return self.fallback(
                Fallback::Edges,
                report,
                backend,
                text,
                add_special_tokens,
                with_offsets,
            );
        }
        // The output adopts the first chunk's buffer (below) when nothing
        // goes before its ids: that chunk then sizes it for the whole text.
        let adoptable = (!add_special_tokens || spec.prefix.is_empty()) && !with_offsets;
        let (mut slots, pieces) = match self.merge(
            backend,
            spec,
            text,
            with_offsets,
            &plans,
            None,
            0,
            nominal,
            adoptable,
            &mut report,
        )? {
            Merged::Done(slots, pieces) => (slots, pieces),
            Merged::GaveUp(reason) => {
                return self.fallback(
                    reason,
                    report,
                    backend,
                    text,
                    add_special_tokens,
                    with_offsets,
                );
            }
        };

        let body: usize = pieces.iter().map(|p| p.to.saturating_sub(p.from)).sum();
        let out_of_range = || Error::backend(backend.backend_name(), "parallel merge out of range");
        // The first piece starts the first chunk: adopt its buffer rather
        // than copy it (not under a prefix, nor with offsets, which still
        // read the slots).
        let adopt = adoptable && pieces.first().is_some_and(|p| p.from == 0);
        let mut out = EncodingBuilder::new(
            &spec.prefix,
            &spec.suffix,
            add_special_tokens,
            if adopt { 0 } else { body },
            with_offsets,
        );
        let mut rest = &pieces[..];
        if adopt && let Some((first_piece, tail)) = pieces.split_first() {
            let mut first = std::mem::take(&mut slots[first_piece.slot].enc.to_mut().ids);
            if first_piece.to > first.len() {
                return Err(out_of_range());
            }
            first.truncate(first_piece.to);
            first.reserve(body - first_piece.to + spec.suffix.len());
            out.ids = first;
            rest = tail;
        }
        extend_ids(&mut out.ids, &slots, rest).ok_or_else(out_of_range)?;
        if let Some(offsets) = out.offsets.as_mut() {
            for p in &pieces {
                let slot = &slots[p.slot];
                let spans = slot
                    .enc
                    .offsets
                    .as_ref()
                    .and_then(|o| o.get(p.from..p.to))
                    .ok_or_else(|| {
                        Error::backend(backend.backend_name(), "chunk returned no offsets")
                    })?;
                offsets.extend(spans.iter().map(|&(a, b)| (slot.start + a, slot.start + b)));
            }
        }
        Ok((out.finish(n, backend.backend_name())?, report))
    }

    /// The LoPT merge over planned chunks: encodes them (all but the first
    /// when `seed` provides it), then stitches neighbours at cuts, growing a
    /// chunk over the next where no cut holds (docs/lopt.md, C3–C10). The
    /// last chunk (and any chunk grown to the text end) also reports spans
    /// for its last `keep_tail` bytes.
    #[allow(clippy::too_many_arguments)]
    fn merge<'a>(
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
        let encode = |p: &ChunkPlan| -> Result<Slot<'a>> {
            let chunk = text.get(p.start..p.end).ok_or_else(|| {
                Error::backend(backend.backend_name(), "chunk edge off a char boundary")
            })?;
            let tail = if p.end == n {
                p.tail.max(keep_tail)
            } else {
                p.tail
            };
            let mut request = ChunkRequest::new(p.head, tail, with_offsets);
            if p.start == 0 && reserve_first {
                request = request.with_reserve(n);
            }
            let enc = backend.encode_chunk(chunk, &request)?;
            Ok(Slot {
                start: p.start,
                end: p.end,
                first: 0,
                enc: Cow::Owned(enc),
            })
        };
        let seeded = seed.is_some();
        let mut slots: Vec<Slot<'a>> = Vec::with_capacity(plans.len() + 2);
        if let Some(seed) = seed {
            slots.push(seed);
            slots.extend(self.encode_all(plans.get(1..).unwrap_or_default(), &encode)?);
        } else {
            slots = self.encode_all(plans, &encode)?;
        }
        let fresh = usize::from(seeded);
        if !slots[fresh..]
            .iter()
            .all(|s| s.enc.is_consistent(s.end - s.start))
        {
            return Ok(Merged::GaveUp(Fallback::Chunk));
        }

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
            let (mut end, mut upto) = (plans[next].end, next + 1);
            if end - start > 4 * nominal.max(1) {
                end = n;
                upto = plans.len();
                report.grow_limit = true;
                self.metrics.grow_limit();
            }
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
                // Relocate the accepted cut into the grown chunk by its position;
                // encoding never restarts at a cut.
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
                    Some(cut) if cut.left_end == l.cut.left_end => {
                        cur_from = cut.right_start;
                        last = Some(LastCut { cut, ..l });
                    }
                    _ => return Ok(Merged::GaveUp(Fallback::Relocate)),
                }
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

/// Appends the ids of `pieces` to `out`; `None` when a piece is out of range.
fn extend_ids(out: &mut Vec<u32>, slots: &[Slot<'_>], pieces: &[Piece]) -> Option<()> {
    for p in pieces {
        let slot = &slots[p.slot];
        let (from, to) = (
            p.from.checked_sub(slot.first)?,
            p.to.checked_sub(slot.first)?,
        );
        out.extend_from_slice(slot.enc.ids.get(from..to)?);
    }
    Some(())
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

/// Spawns `side` on the scope's pool, runs `main` here, then `side` (a
/// no-op when the pool has run it).
fn beside<'s, R>(
    scope: &rayon::Scope<'s>,
    side: &'s (impl Fn() + Sync),
    main: impl FnOnce() -> R,
) -> R {
    scope.spawn(move |_| side());
    let r = main();
    side();
    r
}

/// The shortest chunk `Auto` plans (bytes). On 4–16 threads, 32 KiB chunks
/// gained 1.6–2.4x at 128 KiB and 1.4–3.8x at 256 KiB where the old floor
/// (half the two-thread threshold, 128 KiB) gained 0.8–1.2x; 16 KiB chunks
/// were slower in 27 of 32 cells (invariant `lopt-equals-sequential`).
const MIN_CHUNK_BYTES: usize = 32 << 10;

/// How many chunks `Auto` cuts `n` bytes into on `threads` threads, given
/// its threshold: one per thread, none shorter than [`MIN_CHUNK_BYTES`] or
/// half the threshold, whichever is less.
fn auto_chunks(n: usize, min_bytes: usize, threads: usize) -> usize {
    let floor = MIN_CHUNK_BYTES.min(min_bytes / 2).max(1);
    threads.min(n / floor)
}

/// A tokenizer's [`SplitSpec::min_bytes`] is measured on two threads. A pool
/// of `threads` divides the work further, so the split repays its fixed
/// costs from a shorter text: the threshold scales as `2 / threads`, down to
/// two [`MIN_CHUNK_BYTES`] chunks (or the tokenizer's own threshold, when
/// that is lower).
fn scaled_min_bytes(min_bytes: usize, threads: usize) -> usize {
    if threads <= 2 {
        return min_bytes;
    }
    (min_bytes.saturating_mul(2) / threads).max(min_bytes.min(2 * MIN_CHUNK_BYTES))
}

/// Starts `helpers` pool jobs running `work`, and runs it on the calling thread.
fn share<'s, W: Fn() + Sync>(scope: &rayon::Scope<'s>, helpers: usize, work: &'s W) {
    for _ in 0..helpers {
        scope.spawn(move |_| work());
    }
    work();
}

fn sequential(
    backend: &dyn backend::Tokenizer,
    text: &str,
    add_special_tokens: bool,
    with_offsets: bool,
) -> Result<Encoding> {
    if with_offsets {
        backend.encode_with_offsets(text, add_special_tokens)
    } else {
        backend.encode(text, add_special_tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::{auto_chunks, scaled_min_bytes};

    const K: usize = 1 << 10;

    #[test]
    fn threshold_scales_with_the_pool_down_to_two_minimal_chunks() {
        // Two threads (and one) keep the measured threshold.
        assert_eq!(scaled_min_bytes(256 * K, 1), 256 * K);
        assert_eq!(scaled_min_bytes(256 * K, 2), 256 * K);
        assert_eq!(scaled_min_bytes(256 * K, 4), 128 * K);
        assert_eq!(scaled_min_bytes(256 * K, 8), 64 * K);
        assert_eq!(scaled_min_bytes(256 * K, 16), 64 * K);
        // A threshold already below two minimal chunks is never raised.
        assert_eq!(scaled_min_bytes(32 * K, 16), 32 * K);
        assert_eq!(scaled_min_bytes(64 * K, 4), 64 * K);
        // Saturates rather than overflowing.
        assert_eq!(scaled_min_bytes(usize::MAX, 16), usize::MAX / 16);
    }

    #[test]
    fn auto_plans_one_chunk_per_thread_of_at_least_32_kib() {
        assert_eq!(auto_chunks(2048 * K, 256 * K, 16), 16);
        assert_eq!(auto_chunks(512 * K, 64 * K, 16), 16);
        assert_eq!(auto_chunks(256 * K, 64 * K, 16), 8);
        assert_eq!(auto_chunks(128 * K, 128 * K, 4), 4);
        assert_eq!(auto_chunks(512 * K, 256 * K, 2), 2);
        // A low threshold lowers the floor with it.
        assert_eq!(auto_chunks(32 * K, 32 * K, 4), 2);
        assert_eq!(auto_chunks(0, 0, 4), 0);
    }
}
