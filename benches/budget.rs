//! Token budgets against `encode` in the same run: `count`,
//! `prefix_within` (budget: 90% of the text's tokens) and `TokenCounter`
//! (the text appended in 1 KiB pieces, counted after each) at 1 KB, 32 KB
//! and 512 KB, for Llama-3, Qwen3, Mistral-7B and o200k.
//!
//! The same text every iteration: text seen again (the prompt caches are
//! off, but the backend's line memo answers repeated text from 4 KiB on, and
//! `encode` and `count` share it). What these groups compare is the budget
//! calls against `encode` on one text, not encode speed; text seen once is
//! `benches/seen_once.rs`.

mod common;

use common::{load, prose};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const SIZES: [usize; 3] = [1 << 10, 32 << 10, 512 << 10];

const TOKENIZERS: &[(&str, &str)] = &[
    ("llama3", "meta-llama/Meta-Llama-3-8B-Instruct"),
    ("qwen3", "Qwen/Qwen3-8B"),
    ("mistral7b", "mistralai/Mistral-7B-v0.1"),
    ("o200k", "o200k_base"),
];

fn budget(c: &mut Criterion) {
    for &(name, source) in TOKENIZERS {
        let tok = load(source);
        let mut g = c.benchmark_group(format!("budget/{name}"));
        g.sample_size(10);
        for size in SIZES {
            let input = prose(size);
            let total = tok.count(&input, false).unwrap();
            let n = total / 10 * 9;
            g.throughput(Throughput::Bytes(size as u64));
            g.bench_with_input(BenchmarkId::new("encode", size), &input, |b, t| {
                b.iter(|| tok.encode(black_box(t), false).unwrap().len())
            });
            g.bench_with_input(BenchmarkId::new("count", size), &input, |b, t| {
                b.iter(|| tok.count(black_box(t), false).unwrap())
            });
            g.bench_with_input(
                BenchmarkId::new("prefix_within_90pct", size),
                &input,
                |b, t| b.iter(|| tok.prefix_within(black_box(t), n, false).unwrap().len()),
            );
            g.bench_with_input(
                BenchmarkId::new("suffix_within_90pct", size),
                &input,
                |b, t| b.iter(|| tok.suffix_within(black_box(t), n, false).unwrap().len()),
            );
            g.bench_with_input(
                BenchmarkId::new("token_counter_1k_pieces", size),
                &input,
                |b, t| {
                    b.iter(|| {
                        let mut counter = tok.token_counter(false);
                        let mut at = 0;
                        let mut last = 0;
                        while at < t.len() {
                            let mut next = (at + 1024).min(t.len());
                            while !t.is_char_boundary(next) {
                                next += 1;
                            }
                            counter.push(&t[at..next]).unwrap();
                            last = counter.count().unwrap();
                            at = next;
                        }
                        last
                    })
                },
            );
        }
        g.finish();
    }
}

criterion_group!(benches, budget);
criterion_main!(benches);
