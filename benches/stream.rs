//! ns/token for streaming detokenization on 2,048-token streams: our
//! `DecodeStream` (one `step` per id, and `step_many` of 4), `tokenizers`'
//! own `DecodeStream::step` in the same run, and `StopSequenceDecoder` with
//! 1 and 8 stop strings (issue 13's goals: ≤100 ns/token, ≤300 ns/token
//! with 8 stops, `step_many` of 4 ≤ 4 × `step`).

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

/// (label, source, whether `tokenizers` reads it as a hub `tokenizer.json`).
fn sources() -> Vec<(String, String, bool)> {
    let hub = |m: &str| (m.to_owned(), m.to_owned(), true);
    let mut out = vec![
        hub("meta-llama/Meta-Llama-3-8B-Instruct"),
        hub("Qwen/Qwen3-8B"),
        hub("google/gemma-3-4b-it"),
        hub("mistralai/Mistral-7B-v0.1"),
        (
            "mistral-tokenizer.model.v1".to_owned(),
            shared()
                .join("fixtures/sentencepiece/mistral-tokenizer.model.v1")
                .to_string_lossy()
                .into_owned(),
            false,
        ),
        hub("sentence-transformers/all-MiniLM-L6-v2"),
        ("o200k_base".to_owned(), "o200k_base".to_owned(), false),
    ];
    if let Ok(only) = std::env::var("RTOK_BENCH_ONLY") {
        out.retain(|(label, _, _)| label.contains(&only));
    }
    out
}

fn streams(c: &mut Criterion) {
    for (label, source, hf) in sources() {
        let tok = load(&source);
        let ids = ids_2048(&tok);
        let mut g = c.benchmark_group(format!("stream/{label}"));
        g.throughput(Throughput::Elements(ids.len() as u64));
        g.bench_function("DecodeStream::step", |b| {
            b.iter(|| {
                let mut s = DecodeStream::new(&tok, &[], false);
                let mut n = 0;
                for &id in &ids {
                    n += s.step(black_box(id)).unwrap().map_or(0, |t| t.len());
                }
                n
            })
        });
        g.bench_function("DecodeStream::step_many/4", |b| {
            b.iter(|| {
                let mut s = DecodeStream::new(&tok, &[], false);
                let mut n = 0;
                for batch in ids.chunks(4) {
                    n += s
                        .step_many(black_box(batch))
                        .unwrap()
                        .map_or(0, |t| t.len());
                }
                n
            })
        });
        if hf {
            let raw = raw_hf(&source);
            g.bench_function("tokenizers::DecodeStream::step", |b| {
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
        for n_stops in [1usize, 8] {
            let stops: Vec<String> = (0..n_stops).map(|i| format!("<stop-{i}>")).collect();
            g.bench_function(format!("StopSequenceDecoder/{n_stops}-stops"), |b| {
                b.iter(|| {
                    let mut d = StopSequenceDecoder::new(
                        &tok,
                        &[],
                        StopConfig {
                            stop_strings: stops.clone(),
                            ignore_eos: true,
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
