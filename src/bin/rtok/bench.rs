//! `rtok bench`: sequential against parallel encoding of one input.

use crate::source::{Input, Parallel, ParallelArg, Source};
use anyhow::Result;
use clap::Args;
use router_tokenizer::Tokenizer;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

// No doc comment: the `Command` variant's is the command's help.
#[derive(Args)]
pub(crate) struct BenchArgs {
    #[command(flatten)]
    source: Source,
    /// Input file.
    #[arg(long, short = 'i')]
    input: PathBuf,
    /// Threads for the parallel encodes; default all cores.
    #[arg(long)]
    threads: Option<usize>,
    /// Timed repeats of each (after one warm-up).
    #[arg(long, default_value_t = 7)]
    repeat: usize,
    /// Parallel mode for the parallel side (`auto` shows the threshold at work).
    #[arg(long, value_enum, default_value = "always")]
    parallel: ParallelArg,
    /// Print `{"tokens":N,"sequential_ms":…,"parallel_ms":…,"speedup":…,"identical":…}`.
    #[arg(long)]
    json: bool,
    /// Also time one sequential encode of the whole input per thread, all at
    /// once: the throughput this machine gives independent encodes bounds
    /// any split's speedup (`ceiling_ms` is the per-encode time at that
    /// throughput, `ceiling_speedup` = sequential / it).
    #[arg(long)]
    ceiling: bool,
}

pub(crate) fn run(args: BenchArgs, out: &mut impl Write) -> Result<()> {
    let options = Parallel {
        parallel: args.parallel,
        threads: args.threads,
    }
    .options()?;
    let pool = options.pool.clone();
    let tok = args.source.load_with(options)?;
    // Time the engines a server runs on, not the regex path a
    // tiktoken encoding takes while its engine is still being built.
    tok.warm_up();
    let text = Input {
        input: Some(args.input),
        text: None,
    }
    .read()?;
    let ceiling = args.ceiling.then_some(pool.as_deref());
    let report = bench(&tok, &text, args.repeat.max(1), ceiling)?;
    if args.json {
        writeln!(out, "{}", report.json())?;
    } else {
        writeln!(
            out,
            "{}: {} tokens, {} bytes, family {}\nsequential {:.3} ms, parallel {:.3} ms, speedup {:.2}x, identical: {}",
            tok.source(),
            report.tokens,
            text.len(),
            tok.split_family(),
            report.sequential_ms,
            report.parallel_ms,
            report.speedup(),
            report.identical
        )?;
        if let (Some(ms), Some(x)) = (report.ceiling_ms, report.ceiling_speedup()) {
            writeln!(
                out,
                "ceiling {ms:.3} ms ({x:.2}x): concurrent independent encodes"
            )?;
        }
    }
    Ok(())
}

struct BenchReport {
    tokens: usize,
    sequential_ms: f64,
    parallel_ms: f64,
    identical: bool,
    ceiling_ms: Option<f64>,
}

impl BenchReport {
    fn speedup(&self) -> f64 {
        if self.parallel_ms > 0.0 {
            self.sequential_ms / self.parallel_ms
        } else {
            0.0
        }
    }

    fn ceiling_speedup(&self) -> Option<f64> {
        self.ceiling_ms.map(|ms| self.sequential_ms / ms)
    }

    fn json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "tokens": self.tokens,
            "sequential_ms": self.sequential_ms,
            "parallel_ms": self.parallel_ms,
            "speedup": self.speedup(),
            "identical": self.identical,
        });
        if let (Some(ms), Some(x), Some(map)) =
            (self.ceiling_ms, self.ceiling_speedup(), v.as_object_mut())
        {
            map.insert("ceiling_ms".into(), ms.into());
            map.insert("ceiling_speedup".into(), x.into());
        }
        v
    }
}

/// Interleaves sequential and parallel encodes of `text` and takes medians.
///
/// Every encode starts the input one char later than the one before, so
/// caches keyed on whole segments (BPE without a pre-tokenizer caches the
/// whole text as one word) never answer a timed encode; word caches stay
/// warm, as in a server. `tools/lopt_scaling.rs` times text seen once
/// (`docs/perf/design_log/byte_level.md` (entry 363)).
fn bench(
    tok: &Tokenizer,
    text: &str,
    repeat: usize,
    // `Some(pool)` times the ceiling too, on that pool (`None`: the global one).
    ceiling: Option<Option<&rayon::ThreadPool>>,
) -> Result<BenchReport> {
    let mut seq = Vec::with_capacity(repeat);
    let mut par = Vec::with_capacity(repeat);
    let mut ceil = Vec::with_capacity(repeat);
    let mut identical = true;
    let mut tokens = 0;
    let mut starts = text.char_indices().map(|(i, _)| i);
    let mut next_slice = || &text[starts.next().unwrap_or(0)..];
    let time = |f: &dyn Fn() -> router_tokenizer::Result<router_tokenizer::Encoding>| {
        let t = Instant::now();
        f().map(|e| (e, t.elapsed().as_secs_f64() * 1e3))
    };
    for round in 0..=repeat {
        // Each timed encode gets its own slice, so no whole-input cache
        // answers one side with the other's work; the order alternates so
        // neither side always finds the caches the other just warmed.
        let (s_slice, p_slice) = (next_slice(), next_slice());
        let run_seq = || tok.encode_with(s_slice, &sequential());
        let run_par = || tok.encode(p_slice, false);
        let ((a, s_ms), (b, p_ms)) = if round % 2 == 0 {
            let a = time(&run_seq)?;
            (a, time(&run_par)?)
        } else {
            let b = time(&run_par)?;
            (time(&run_seq)?, b)
        };
        // Untimed: the parallel ids against the sequential ids of its slice.
        identical &= b.ids() == tok.encode_with(p_slice, &sequential())?.ids();
        if round == 0 {
            tokens = a.len();
            continue;
        }
        seq.push(s_ms);
        par.push(p_ms);
    }
    // A phase of its own: between the timed pairs, all threads' work would
    // evict the caches one side of each pair finds warm.
    if let Some(pool) = ceiling {
        for round in 0..=repeat {
            let (c_ms, k) = concurrent_copies(tok, next_slice(), pool)?;
            if round > 0 {
                // As the time one encode would take at that throughput.
                ceil.push(c_ms / k as f64);
            }
        }
    }
    Ok(BenchReport {
        tokens,
        sequential_ms: median(&mut seq),
        parallel_ms: median(&mut par),
        identical,
        ceiling_ms: ceiling.map(|_| median(&mut ceil)),
    })
}

/// Milliseconds for every pool thread to encode all of `text` sequentially
/// at the same time, and the thread count: `k * sequential / this` is the
/// throughput the machine gives `k` independent encodes, the bound on any
/// split's speedup.
fn concurrent_copies(
    tok: &Tokenizer,
    text: &str,
    pool: Option<&rayon::ThreadPool>,
) -> Result<(f64, usize)> {
    use rayon::prelude::*;
    let k = pool.map_or_else(
        rayon::current_num_threads,
        rayon::ThreadPool::current_num_threads,
    );
    let run = || -> router_tokenizer::Result<Vec<usize>> {
        (0..k)
            .into_par_iter()
            .map(|_| tok.encode_with(text, &sequential()).map(|e| e.len()))
            .collect()
    };
    let t = Instant::now();
    match pool {
        Some(pool) => pool.install(run)?,
        None => run()?,
    };
    Ok((t.elapsed().as_secs_f64() * 1e3, k))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Options for the backend alone: the calling thread, no chunks, no prompt caches.
fn sequential() -> router_tokenizer::EncodeOptions {
    router_tokenizer::EncodeOptions::new()
        .with_parallelism(router_tokenizer::Parallelism::Sequential)
}
