//! [`ParallelEncoder`]: cuts a long text into chunks, encodes them on the
//! rayon pool, and stitches them with the merge rule of [`super::split`].

use rayon::ThreadPool;
use std::sync::Arc;

use super::split::{self, ChunkPlan, Cut, PrevCut, View};
use super::{ChunkEncoding, ChunkRequest, SplitSpec};
use crate::backend;
use crate::encoding::{Encoding, EncodingBuilder};
use crate::error::{Error, Result};
use crate::metrics::{Fallback, ParallelMetrics};

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
/// (see [`SplitSpec::min_bytes`](crate::traits::SplitSpec::min_bytes)).
///
/// ```
/// use router_tokenizer::{LoadOptions, ParallelOptions};
/// let options = LoadOptions {
///     parallel: ParallelOptions { min_bytes: Some(1 << 20), ..ParallelOptions::default() },
///     ..LoadOptions::default()
/// };
/// # let _ = options;
/// ```
#[derive(Debug, Clone)]
pub struct ParallelOptions {
    /// When to split.
    pub mode: ParallelMode,
    /// Inputs shorter than this (bytes) are encoded sequentially in `Auto`
    /// mode; `None` takes the tokenizer's measured threshold.
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

/// What one parallel encode did, from
/// [`Tokenizer::encode_parallel_report`](crate::Tokenizer::encode_parallel_report).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParallelReport {
    /// Chunks encoded (before any growth).
    pub chunks: usize,
    /// Cuts accepted (merges).
    pub cuts: usize,
    /// Of those, cuts inside one long pre-token.
    pub intra_word_cuts: usize,
    /// Times a chunk grew over its neighbour because no cut was found.
    pub grows: usize,
    /// Whether the rest of the text past four chunk lengths was encoded in one piece.
    pub grow_limit: bool,
    /// Why the whole text was encoded sequentially instead, if it was.
    pub fallback: Option<&'static str>,
}

/// The parallel path of one tokenizer handle: its options and metric handles.
#[derive(Clone)]
pub(crate) struct ParallelEncoder {
    options: ParallelOptions,
    metrics: ParallelMetrics,
}

struct Slot {
    start: usize,
    end: usize,
    enc: ChunkEncoding,
}

impl Slot {
    fn view(&self) -> View<'_> {
        View {
            start: self.start,
            end: self.end,
            enc: &self.enc,
        }
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

impl ParallelEncoder {
    pub(crate) fn new(options: ParallelOptions, backend_name: &'static str) -> Self {
        Self {
            options,
            metrics: ParallelMetrics::new(backend_name),
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

    /// The size from which `Auto` splits.
    fn min_bytes(&self, spec: &SplitSpec) -> usize {
        self.options.min_bytes.unwrap_or(spec.min_bytes)
    }

    /// Chunk starts to aim at, for a text of `n` bytes (empty: do not split).
    /// In `Auto` mode no chunk is shorter than half the threshold.
    fn targets(&self, n: usize, spec: &SplitSpec) -> Vec<usize> {
        let o = &self.options;
        if let Some(size) = o.chunk_bytes {
            // Never more than MAX_CHUNKS chunks, however small the size asked.
            let size = size.max(n.div_ceil(ParallelOptions::MAX_CHUNKS)).max(1);
            return (1..).map(|i| i * size).take_while(|&t| t < n).collect();
        }
        let by_size = n / (self.min_bytes(spec) / 2).max(1);
        let k = match (o.chunks, o.mode) {
            (Some(k), _) => k,
            (None, ParallelMode::Always) => self.threads().max(2),
            (None, _) => self.threads().min(by_size),
        }
        .min(n);
        (1..k).map(|i| i * n / k).collect()
    }

    /// The spec to split with, when this text should be split.
    fn wanted<'b>(&self, backend: &'b dyn backend::Tokenizer, n: usize) -> Option<&'b SplitSpec> {
        let spec = backend.split_spec()?;
        if !spec.family.is_parallel() {
            return None;
        }
        match self.options.mode {
            ParallelMode::Never => None,
            ParallelMode::Auto if n < self.min_bytes(spec) || self.threads() < 2 => None,
            _ => Some(spec),
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
        if let Some(spec) = self.wanted(backend, text.len()) {
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

    /// Encodes every planned chunk: the calling thread takes the first one
    /// while the pool takes the others (an `in_place_scope`, so the caller
    /// works instead of sleeping until a pool thread wakes up).
    fn encode_all<F>(&self, plans: &[ChunkPlan], encode: &F) -> Result<Vec<Slot>>
    where
        F: Fn(&ChunkPlan) -> Result<Slot> + Sync,
    {
        if self.threads() < 2 {
            // One thread asked for: no helper thread at all (the caller
            // would otherwise be a second one).
            return plans.iter().map(encode).collect();
        }
        let mut results: Vec<Option<Result<Slot>>> = plans.iter().map(|_| None).collect();
        match &self.options.pool {
            Some(pool) => pool.in_place_scope(|s| fill(s, plans, &mut results, encode)),
            None => rayon::in_place_scope(|s| fill(s, plans, &mut results, encode)),
        }
        results
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| Err(Error::backend("parallel", "a chunk was not encoded")))
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
        let give_up = |reason: Fallback, report: ParallelReport| {
            self.fallback(
                reason,
                report,
                backend,
                text,
                add_special_tokens,
                with_offsets,
            )
        };
        if plans.len() < 2 {
            return give_up(Fallback::Edges, report);
        }
        self.metrics.encodes.increment(1);
        let encode = |p: &ChunkPlan| -> Result<Slot> {
            let chunk = text.get(p.start..p.end).ok_or_else(|| {
                Error::backend(backend.backend_name(), "chunk edge off a char boundary")
            })?;
            let enc =
                backend.encode_chunk(chunk, &ChunkRequest::new(p.head, p.tail, with_offsets))?;
            Ok(Slot {
                start: p.start,
                end: p.end,
                enc,
            })
        };
        let mut slots: Vec<Slot> = self.encode_all(&plans, &encode)?;
        if !slots.iter().all(|s| s.enc.is_consistent(s.end - s.start)) {
            return give_up(Fallback::Chunk, report);
        }

        let slack = split::window_slack(spec);
        let mut pieces: Vec<(usize, usize, usize)> = Vec::with_capacity(plans.len());
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
                pieces.push((cur, cur_from, cut.left_end));
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
            self.metrics.retry_no_cut.increment(1);
            if report.grows > self.options.max_retries {
                return give_up(Fallback::Retries, report);
            }
            let start = slots[cur].start;
            let (mut end, mut upto) = (plans[next].end, next + 1);
            if end - start > 4 * nominal.max(1) {
                end = n;
                upto = plans.len();
                report.grow_limit = true;
                self.metrics.grow_limit.increment(1);
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
                return give_up(Fallback::Chunk, report);
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
                    _ => {
                        return give_up(Fallback::Relocate, report);
                    }
                }
            }
            cur = g;
            next = upto;
        }
        pieces.push((cur, cur_from, slots[cur].enc.ids.len()));

        let body: usize = pieces.iter().map(|&(_, a, b)| b.saturating_sub(a)).sum();
        let out_of_range = || Error::backend(backend.backend_name(), "parallel merge out of range");
        // The first piece starts the first chunk: adopt its buffer rather
        // than copy it (not under a prefix, nor with offsets, which still
        // read the slots).
        let adopt = (!add_special_tokens || spec.prefix.is_empty())
            && !with_offsets
            && pieces.first().is_some_and(|&(_, from, _)| from == 0);
        let mut out = EncodingBuilder::new(
            &spec.prefix,
            &spec.suffix,
            add_special_tokens,
            if adopt { 0 } else { body },
            with_offsets,
        );
        let mut rest = &pieces[..];
        if adopt && let Some((&(s, _, to), tail)) = pieces.split_first() {
            let mut first = std::mem::take(&mut slots[s].enc.ids);
            if to > first.len() {
                return Err(out_of_range());
            }
            first.truncate(to);
            first.reserve(body - to + spec.suffix.len());
            out.ids = first;
            rest = tail;
        }
        for &(s, from, to) in rest {
            let chunk_ids = slots[s].enc.ids.get(from..to).ok_or_else(out_of_range)?;
            out.ids.extend_from_slice(chunk_ids);
        }
        if let Some(offsets) = out.offsets.as_mut() {
            for &(s, from, to) in &pieces {
                let slot = &slots[s];
                let spans = slot
                    .enc
                    .offsets
                    .as_ref()
                    .and_then(|o| o.get(from..to))
                    .ok_or_else(|| {
                        Error::backend(backend.backend_name(), "chunk returned no offsets")
                    })?;
                offsets.extend(spans.iter().map(|&(a, b)| (slot.start + a, slot.start + b)));
            }
        }
        Ok((out.finish(n, backend.backend_name())?, report))
    }
}

/// Spawns every chunk but the first on the scope's pool and encodes the
/// first on the calling thread.
fn fill<'s, F>(
    scope: &rayon::Scope<'s>,
    plans: &'s [ChunkPlan],
    results: &'s mut [Option<Result<Slot>>],
    encode: &'s F,
) where
    F: Fn(&ChunkPlan) -> Result<Slot> + Sync,
{
    let Some((first, rest)) = results.split_first_mut() else {
        return;
    };
    for (slot, plan) in rest.iter_mut().zip(plans.iter().skip(1)) {
        scope.spawn(move |_| *slot = Some(encode(plan)));
    }
    *first = plans.first().map(encode);
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
