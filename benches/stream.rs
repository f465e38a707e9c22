//! ns/token for streaming detokenization on 2,048-token streams: our
//! `DecodeStream`, tokenizers' own decode stream, naive double decode, and
//! `StopSequenceDecoder` with 1, 8 and 64 stop strings.

mod common;

use common::{load, raw_hf, shared};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use router_tokenizer::{DecodeStream, StopConfig, StopSequenceDecoder, Tokenizer};
use std::hint::black_box;

fn ids_2048(tok: &Tokenizer) -> Vec<u32> {
    let text =
        std::fs::read_to_string(shared().join("corpus/multilingual/ntrex-eng-src.txt")).unwrap();
    let mut ids = tok.encode(&text, false).unwrap().into_ids();
    ids.truncate(2048);
    ids
}

fn streams(c: &mut Criterion) {
    for source in [
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "Qwen/Qwen3-8B",
        "google/gemma-3-4b-it",
        "o200k_base",
    ] {
        let tok = load(source);
        let ids = ids_2048(&tok);
        let mut g = c.benchmark_group(format!("stream/{source}"));
        g.throughput(Throughput::Elements(ids.len() as u64));
        g.bench_function("DecodeStream", |b| {
            b.iter(|| {
                let mut s = DecodeStream::new(&tok, &[], false);
                let mut n = 0;
                for &id in &ids {
                    n += s.step(black_box(id)).unwrap().map_or(0, |t| t.len());
                }
                n
            })
        });
        g.bench_function("naive-double-decode", |b| {
            b.iter(|| {
                let mut n = 0;
                let mut prev = String::new();
                for i in 0..ids.len() {
                    let lo = i.saturating_sub(6);
                    let full = tok.decode(&ids[lo..=i], false).unwrap();
                    let before = tok.decode(&ids[lo..i], false).unwrap();
                    n += full.len() - before.len().min(full.len());
                    prev = full;
                }
                (n, prev)
            })
        });
        if source != "o200k_base" {
            let raw = raw_hf(source);
            g.bench_function("tokenizers-decode-stream", |b| {
                b.iter(|| {
                    let mut s = raw.decode_stream(false);
                    let mut n = 0;
                    for &id in &ids {
                        n += s.step(black_box(id)).unwrap().map_or(0, |t| t.len());
                    }
                    n
                })
            });
        }
        for n_stops in [1usize, 8, 64] {
            let stops: Vec<String> = (0..n_stops).map(|i| format!("<stop-{i}>")).collect();
            g.bench_function(format!("StopSequenceDecoder/{n_stops}-stops"), |b| {
                b.iter(|| {
                    let mut d = StopSequenceDecoder::new(
                        &tok,
                        &[],
                        StopConfig {
                            stop_strings: stops.clone(),
                            ..StopConfig::default()
                        },
                    )
                    .unwrap();
                    for &id in &ids {
                        black_box(d.process_token(black_box(id)).unwrap());
                    }
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, streams);
criterion_main!(benches);
