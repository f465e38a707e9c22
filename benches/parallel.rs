//! Sequential against parallel encoding (LoPT) at 8K, 32K, 128K and 512K
//! tokens, for Llama-3, Qwen3, Mistral-7B (`tokenizer.json` and the
//! SentencePiece `.model`) and o200k, with 1 and 2 threads (two chunks either
//! way: on one thread the run measures the overhead).
//!
//! `ceiling-2t` encodes the two halves of the slice sequentially on the two
//! threads, with no overlap and no merge: the best any split can do on this
//! machine. On a shared 2-vCPU VM it is well under 2x for cache-heavy
//! encoders, so LoPT is judged against it (`parallel-2t / ceiling-2t`).
//!
//! Every iteration encodes text no encode saw before, the next slice of the
//! whole shared corpus (`tools/common/fresh.rs`): a slice one char further
//! into the same text is text seen again (`docs/perf/design_log/byte_level.md` (entry 363)). Word
//! caches stay
//! warm, as in a server. `cargo bench --bench parallel`; `rtok bench` times
//! one file sent again and again.

mod common;
#[path = "../tools/common/fresh.rs"]
mod fresh;

use common::{load, shared};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use router_tokenizer::{ParallelMode, ParallelOptions, Tokenizer};
use std::cell::RefCell;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MODELS: [&str; 5] = [
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "Qwen/Qwen3-8B",
    "mistralai/Mistral-7B-v0.1",
    "fixtures/sentencepiece/mistral-tokenizer.model.v1",
    "o200k_base",
];

const TOKENS: [usize; 4] = [8 << 10, 32 << 10, 128 << 10, 512 << 10];

fn floor(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The bytes of text like `sample` that hold about `tokens` tokens.
fn bytes_for(tok: &Tokenizer, sample: &str, tokens: usize) -> usize {
    let per_token = sample.len() as f64
        / tok
            .encode_with(sample, &common::sequential())
            .unwrap()
            .len() as f64;
    (tokens as f64 * per_token) as usize
}

fn pool(threads: usize) -> Arc<rayon::ThreadPool> {
    Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap(),
    )
}

fn parallel(c: &mut Criterion) {
    let slices = RefCell::new(fresh::FreshSlices::new(&shared()));
    let sample = slices.borrow_mut().next(1 << 20).to_owned();
    let pools = [(1, pool(1)), (2, pool(2))];
    for model in MODELS {
        let tok = if model.starts_with("fixtures/") {
            load(&shared().join(model).to_string_lossy())
        } else {
            load(model)
        };
        let mut g = c.benchmark_group(format!("parallel/{model}"));
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3));
        for tokens in TOKENS {
            let len = bytes_for(&tok, &sample, tokens);
            g.throughput(Throughput::Elements(tokens as u64));
            let next_slice = || slices.borrow_mut().next(len).to_owned();
            g.bench_function(BenchmarkId::new("sequential", tokens), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let slice = next_slice();
                        let t0 = Instant::now();
                        black_box(
                            tok.encode_with(black_box(&slice), &common::sequential())
                                .unwrap(),
                        );
                        total += t0.elapsed();
                    }
                    total
                })
            });
            g.bench_function(BenchmarkId::new("ceiling-2t", tokens), |b| {
                let p = &pools[1].1;
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let slice = next_slice();
                        let (a, z) = slice.split_at(floor(&slice, slice.len() / 2));
                        let t0 = Instant::now();
                        let (x, y) = p.install(|| {
                            rayon::join(
                                || tok.encode_with(black_box(a), &common::sequential()),
                                || tok.encode_with(black_box(z), &common::sequential()),
                            )
                        });
                        black_box((x.unwrap(), y.unwrap()));
                        total += t0.elapsed();
                    }
                    total
                })
            });
            for (threads, p) in &pools {
                // Two chunks, encoded from inside a pool of `threads` threads:
                // with one thread the caller encodes both (the overhead), with
                // two the other worker takes one.
                let t = tok.with_parallel(ParallelOptions {
                    mode: ParallelMode::Always,
                    chunks: Some(2),
                    pool: Some(Arc::clone(p)),
                    ..ParallelOptions::default()
                });
                g.bench_function(
                    BenchmarkId::new(format!("parallel-{threads}t"), tokens),
                    |b| {
                        b.iter_custom(|iters| {
                            let mut total = Duration::ZERO;
                            for _ in 0..iters {
                                let slice = next_slice();
                                let t0 = Instant::now();
                                black_box(
                                    p.install(|| t.encode(black_box(&slice), false)).unwrap(),
                                );
                                total += t0.elapsed();
                            }
                            total
                        })
                    },
                );
            }
        }
        g.finish();
    }
}

criterion_group!(benches, parallel);
criterion_main!(benches);
