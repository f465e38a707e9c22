//! How parallel (LoPT) encoding scales with threads and chunk counts, against
//! the machine's own ceiling: for each tokenizer, text size and pool size it
//! times sequential encodes, parallel encodes under several chunk policies,
//! and `threads` independent sequential encodes at once (the ceiling: no split
//! can beat the throughput the machine gives that many encodes).
//!
//! ```sh
//! cargo run --release --features tools --bin lopt_scaling -- [--threads 2,4,8,16] \
//!     [--sizes 524288,2097152] [--variants auto,t1,t2,t4] [--budget-ms 600] \
//!     [--cold-pool] [--paired] SRC...
//! ```
//!
//! `--paired` gives each round's sides one slice and adds each variant's
//! median per-round ratio (`paired_x`); the ceiling is then the same texts
//! one after another against all at once.
//!
//! Variants: `auto` is the handle's default policy (`ParallelMode::Auto`),
//! `tK` forces `K × threads` chunks, `bK` chunks of `K` KiB, `oK` is `auto`
//! as it was before DESIGN.md invariant `lopt-equals-sequential` for a threshold of `K` KiB. Every
//! timed
//! encode takes text no encode saw before (the next slice of the whole shared
//! corpus, `common/fresh.rs`), sequential and parallel
//! interleaved in rotating order, the prompt cache off; each variant's ids
//! are checked against the sequential ids of the same slice. One JSON
//! object per line (`docs/perf/design_log/lopt.md` (entry 322) has what it measured).

// Finding the shared data and loading from it offline, as the examples do.
#[path = "../examples/common/mod.rs"]
mod common;
#[path = "common/fresh.rs"]
mod fresh;

use router_tokenizer::{
    ParallelMode, ParallelOptions, ParallelReport, PromptCacheOptions, Tokenizer,
};
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Copy)]
enum Variant {
    Auto,
    /// `auto` through the default L0 prompt cache (every slice a miss).
    AutoL0,
    PerThread(usize),
    KiB(usize),
    /// `Auto` as it was before invariant `lopt-equals-sequential`, for a tokenizer whose threshold
    /// is this many KiB: that threshold on every pool, one chunk per thread
    /// but none shorter than half the threshold.
    Before336(usize),
}

impl Variant {
    fn parse(s: &str) -> Option<Self> {
        if s == "auto" {
            return Some(Self::Auto);
        }
        if s == "auto-l0" {
            return Some(Self::AutoL0);
        }
        let n: usize = s.get(1..)?.parse().ok().filter(|&n| n > 0)?;
        match s.as_bytes().first()? {
            b't' => Some(Self::PerThread(n)),
            b'b' => Some(Self::KiB(n)),
            b'o' => Some(Self::Before336(n)),
            _ => None,
        }
    }

    fn name(self) -> String {
        match self {
            Self::Auto => "auto".into(),
            Self::AutoL0 => "auto-l0".into(),
            Self::PerThread(k) => format!("t{k}"),
            Self::KiB(k) => format!("b{k}"),
            Self::Before336(k) => format!("o{k}"),
        }
    }

    fn options(self, pool: &Arc<rayon::ThreadPool>, len: usize) -> ParallelOptions {
        let threads = pool.current_num_threads();
        let base = ParallelOptions {
            pool: Some(pool.clone()),
            ..ParallelOptions::default()
        };
        match self {
            Self::Auto | Self::AutoL0 => base,
            Self::PerThread(k) => ParallelOptions {
                mode: ParallelMode::Always,
                chunks: Some(k * threads),
                ..base
            },
            Self::KiB(k) => ParallelOptions {
                mode: ParallelMode::Always,
                chunk_bytes: Some(k << 10),
                ..base
            },
            Self::Before336(k) => ParallelOptions {
                min_bytes: Some(k << 10),
                chunks: Some(threads.min(len / (k << 9).max(1)).max(1)),
                ..base
            },
        }
    }
}

struct Args {
    threads: Vec<usize>,
    sizes: Vec<usize>,
    variants: Vec<Variant>,
    budget_ms: f64,
    cold_pool: bool,
    paired: bool,
    sources: Vec<String>,
}

fn list<T>(s: &str, parse: impl Fn(&str) -> Option<T>) -> Vec<T> {
    s.split(',')
        .map(|x| {
            parse(x.trim()).unwrap_or_else(|| {
                eprintln!("bad list item {x:?}");
                std::process::exit(2)
            })
        })
        .collect()
}

fn args() -> Args {
    let mut a = Args {
        threads: vec![2, 4, 8, 16],
        sizes: vec![512 << 10, 2 << 20],
        variants: vec![Variant::Auto, Variant::PerThread(1), Variant::PerThread(2)],
        budget_ms: 600.0,
        cold_pool: false,
        paired: false,
        sources: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next().unwrap_or_else(|| {
                eprintln!("{arg} needs a value");
                std::process::exit(2)
            })
        };
        match arg.as_str() {
            "--threads" => a.threads = list(&value(), |x| x.parse().ok().filter(|&n| n > 0)),
            "--sizes" => a.sizes = list(&value(), |x| x.parse().ok()),
            "--variants" => a.variants = list(&value(), Variant::parse),
            "--budget-ms" => a.budget_ms = value().parse().unwrap_or(600.0),
            "--cold-pool" => a.cold_pool = true,
            "--paired" => a.paired = true,
            _ => a.sources.push(arg),
        }
    }
    if a.sources.is_empty() {
        a.sources.push("meta-llama/Meta-Llama-3-8B-Instruct".into());
    }
    a
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

fn fail(e: &router_tokenizer::Error) -> ! {
    eprintln!("encode failed: {e}");
    std::process::exit(1)
}

fn main() {
    let args = args();
    let mut slices = fresh::FreshSlices::new(&common::shared_dir());
    for source in &args.sources {
        let options = common::options().with_prompt_cache(PromptCacheOptions::off());
        let tok = match options.load(source) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("cannot load {source}: {e}");
                continue;
            }
        };
        tok.warm_up();
        for &size in &args.sizes {
            for &threads in &args.threads {
                let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(threads).build() else {
                    eprintln!("cannot build a pool of {threads}");
                    std::process::exit(1)
                };
                run(
                    &tok,
                    source,
                    size,
                    &mut slices,
                    &Arc::new(pool),
                    &args.variants,
                    args.budget_ms,
                    !args.cold_pool,
                    args.paired,
                );
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run(
    tok: &Tokenizer,
    source: &str,
    size: usize,
    slices: &mut fresh::FreshSlices,
    pool: &Arc<rayon::ThreadPool>,
    variants: &[Variant],
    budget_ms: f64,
    warm_pool: bool,
    paired: bool,
) {
    let threads = pool.current_num_threads();
    // Warm-up text only: every timed encode below takes a fresh slice.
    let text = &slices.next(size).to_owned();
    let handles: Vec<Tokenizer> = variants
        .iter()
        .map(|v| {
            let h = tok.with_parallel(v.options(pool, text.len()));
            match v {
                Variant::AutoL0 => h.with_prompt_cache(PromptCacheOptions::default()),
                _ => h,
            }
        })
        .collect();
    // Warm every thread's caches on this text, and size the rounds. Each
    // pool thread encodes the whole text too: the sequential thread and the
    // ceiling's threads have all seen every word of it, while a chunk may
    // land on any pool thread; with cold pool threads the split would pay
    // per-thread cache misses (word cache, chunk memo) that sequential never
    // pays in this repeated-text loop (`--cold-pool` measures that).
    if warm_pool {
        pool.broadcast(|_| std::hint::black_box(tok.encode_with(text, &common::sequential()).ok()));
    }
    let t = Instant::now();
    let seq0 = tok
        .encode_with(text, &common::sequential())
        .unwrap_or_else(|e| fail(&e));
    let seq_ms0 = ms(t);
    for h in &handles {
        std::hint::black_box(h.encode(text, false).unwrap_or_else(|e| fail(&e)));
    }
    let rounds = ((budget_ms / seq_ms0.max(1e-3)) as usize).clamp(5, 41);
    let mut slice = || slices.next(size).to_owned();
    let mut seq = Vec::new();
    // With `paired`, each round's sides share one slice, and each variant's
    // speedup is also the median of its per-round ratios: the rounds'
    // slices differ in kind (code, prose, Chinese), which the medians of
    // separate slices leave in the ratio.
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); handles.len()];
    let mut par: Vec<Vec<f64>> = vec![Vec::new(); handles.len()];
    let mut reports: Vec<Option<ParallelReport>> = vec![None; handles.len()];
    let mut identical = vec![true; handles.len()];
    for round in 0..rounds {
        // Rotate the order so no side always finds the caches another warmed.
        let order = round % (handles.len() + 1);
        let shared = paired.then(&mut slice);
        let (mut seq_round, mut par_round) = (0.0, vec![0.0; handles.len()]);
        for k in 0..=handles.len() {
            let which = (k + order) % (handles.len() + 1);
            let own;
            let s = match &shared {
                Some(s) => s,
                None => {
                    own = slice();
                    &own
                }
            };
            if which == handles.len() {
                let t = Instant::now();
                let e = tok
                    .encode_with(s, &common::sequential())
                    .unwrap_or_else(|e| fail(&e));
                seq_round = ms(t);
                seq.push(seq_round);
                std::hint::black_box(e);
            } else {
                let h = &handles[which];
                let t = Instant::now();
                let e = h.encode(s, false).unwrap_or_else(|e| fail(&e));
                par_round[which] = ms(t);
                par[which].push(par_round[which]);
                if round == 0 {
                    let want = tok
                        .encode_with(s, &common::sequential())
                        .unwrap_or_else(|e| fail(&e));
                    identical[which] &= e.ids() == want.ids();
                    // What the policy did (`auto` may not split at all).
                    let split = router_tokenizer::EncodeOptions::new()
                        .with_parallelism(router_tokenizer::Parallelism::Split);
                    let e = h.encode_with(s, &split).unwrap_or_else(|e| fail(&e));
                    reports[which] = e.parallel_report().cloned();
                }
            }
        }
        if paired {
            for (r, p) in ratios.iter_mut().zip(&par_round) {
                r.push(seq_round / p);
            }
        }
    }
    // The ceiling, in a phase of its own: `threads` whole sequential encodes
    // at once, as the time one would take at that throughput, against a
    // sequential encode timed in the same phase (between the timed rounds
    // above, every thread's work evicts caches a lone encode finds warm;
    // here the concurrent encodes warm them instead: each ratio compares
    // like with like).
    let mut ceil = Vec::new();
    let mut ceil_seq = Vec::new();
    for round in 0..rounds.min(15) {
        for k in 0..2 {
            // One fresh slice per concurrent encode.
            let texts: Vec<String> = (0..threads).map(|_| slice()).collect();
            let t = Instant::now();
            if (k + round) % 2 == 0 {
                std::hint::black_box(
                    tok.encode_with(&texts[0], &common::sequential())
                        .map(|e| e.len())
                        .ok(),
                );
                ceil_seq.push(ms(t));
            } else {
                pool.scope(|scope| {
                    for s in &texts {
                        scope.spawn(move |_| {
                            std::hint::black_box(
                                tok.encode_with(s, &common::sequential())
                                    .map(|e| e.len())
                                    .ok(),
                            );
                        });
                    }
                });
                ceil.push(ms(t) / threads as f64);
            }
        }
    }
    let mut ceiling_x = median(&mut ceil_seq) / median(&mut ceil);
    if paired {
        // The same texts encoded one after another, then all at once.
        let mut x = Vec::new();
        for round in 0..rounds.min(15) {
            let texts: Vec<String> = (0..threads).map(|_| slice()).collect();
            let one_by_one = || {
                let t = Instant::now();
                for s in &texts {
                    std::hint::black_box(tok.encode_with(s, &common::sequential()).ok());
                }
                ms(t)
            };
            let at_once = || {
                let t = Instant::now();
                pool.scope(|scope| {
                    for s in &texts {
                        scope.spawn(move |_| {
                            std::hint::black_box(tok.encode_with(s, &common::sequential()).ok());
                        });
                    }
                });
                ms(t)
            };
            let (a, b) = if round % 2 == 0 {
                let a = one_by_one();
                (a, at_once())
            } else {
                let b = at_once();
                (one_by_one(), b)
            };
            x.push(a / b);
        }
        ceiling_x = median(&mut x);
    }
    let seq_ms = median(&mut seq);
    let mut out = serde_json::Map::new();
    for (i, v) in variants.iter().enumerate() {
        let p = median(&mut par[i]);
        // With `auto` the report's chunks are the policy's own (every size
        // here is above the thresholds, so it splits).
        let report = reports[i].clone().unwrap_or_default();
        out.insert(
            v.name(),
            serde_json::json!({
                "ms": p,
                "x": seq_ms / p,
                "of_ceiling": (seq_ms / p) / ceiling_x,
                "chunks": report.chunks,
                "cuts": report.cuts,
                "grows": report.grows,
                "fallback": report.fallback,
                "identical": identical[i],
                "paired_x": paired.then(|| median(&mut ratios[i])),
            }),
        );
    }
    println!(
        "{}",
        serde_json::json!({
            "source": source,
            "family": format!("{:?}", tok.split_family()),
            "bytes": text.len(),
            "tokens": seq0.len(),
            "threads": threads,
            "rounds": rounds,
            "pool_warm": warm_pool,
            "sequential_ms": seq_ms,
            "ceiling_x": ceiling_x,
            "variants": out,
        })
    );
}
