//! [`ParallelEncoder`]: cuts a long text into chunks, encodes them on the
//! rayon pool, and stitches them with the merge rule of [`super::split`].

use rayon::ThreadPool;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

mod merge;
mod windowed;

use super::split::{self, ChunkPlan, View};
use super::{ChunkEncoding, SplitSpec};
use crate::backend;
pub use crate::encoding::ParallelReport;
use crate::encoding::{Encoding, EncodingBuilder};
use crate::error::{Error, Result};
use crate::metrics::{Fallback, Labels, ParallelMetrics};
pub(crate) use windowed::{Seed, Windowed};

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
