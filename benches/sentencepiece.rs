//! Encode throughput of the native SentencePiece engine (Mistral-7B
//! `tokenizer.model`) against the HF `tokenizer.json` of the same model
//! (tokenizers 1.0.0-rc.3 `PipelineTokenizer`, after `canonicalize_file`),
//! on 1 KB, 32 KB and 512 KB of English prose, in the same run.
//!
//! Two input patterns:
//! - `repeat`: the same text every iteration (the classic microbenchmark).
//!   Both engines then answer from a whole-input memo: HF's BPE word cache
//!   keys on the whole input (this tokenizer.json has no pre-tokenizer), and
//!   the native engine keeps the last few inputs per thread.
//! - `distinct`: every iteration encodes a different window of the English
//!   corpus, cycling through them (about 34,700 windows at 1 KB, 4,100 at
//!   32 KB, 390 at 512 KB; a window repeats after that many iterations). The
//!   windows overlap (a stride of 61, 509 or 4,093 bytes), so from 4 KiB on
//!   each shares nearly all its lines with the one before: at 32 KB and
//!   512 KB its chunks are mostly in the engine's chunk memo, text seen
//!   again, not text seen once (that is `benches/seen_once.rs`).
//!   HF runs BPE over the whole input.
//!
//! Data: `$RTOK_SHARED_DIR` (default `../shared`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

mod common;

use common::{shared, snapshot};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use router_tokenizer::sentencepiece::SentencePieceModel;
use tokenizers::pipeline::EncodeOptions;

/// `text[start..start + n]`, both ends moved back to character boundaries.
fn window(text: &str, start: usize, n: usize) -> &str {
    let mut s = start.min(text.len());
    while !text.is_char_boundary(s) {
        s -= 1;
    }
    let mut e = (s + n).min(text.len());
    while !text.is_char_boundary(e) {
        e -= 1;
    }
    &text[s..e]
}

fn bench_encode(c: &mut Criterion) {
    let shared = shared();
    let snap = snapshot("mistralai/Mistral-7B-v0.1");
    let spm = SentencePieceModel::from_bytes(&std::fs::read(snap.join("tokenizer.model")).unwrap())
        .unwrap();
    // The hub file is a 1.0-format tokenizer.json; rc.3 reads the canonical 2.0 form.
    let canonical = tokenizers::canonicalize_file(snap.join("tokenizer.json")).unwrap();
    let hf = tokenizers::from_json(&canonical).unwrap();
    let opts = EncodeOptions::no_specials();
    let prose_dir = shared.join("corpus/en-prose");
    let prose: String = [
        "pride-and-prejudice.txt",
        "botchan.txt",
        "tinyshakespeare.txt",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(prose_dir.join(f)).unwrap())
    .collect::<Vec<_>>()
    .join("\n");
    let hf_ids = |t: &str| -> Vec<u32> {
        hf.encode(t, &opts).wait().unwrap()[0]
            .ids()
            .iter()
            .map(|t| t.id())
            .collect()
    };

    let sizes = [
        ("1KB", 1usize << 10, 61usize),
        ("32KB", 32 << 10, 509),
        ("512KB", 512 << 10, 4093),
    ];

    let mut group = c.benchmark_group("mistral7b_encode_repeat");
    for (label, size, _) in sizes {
        let text = window(&prose, 0, size);
        assert_eq!(
            spm.encode(text),
            hf_ids(text),
            "ids differ on the {label} bench input"
        );
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("spm_native", label), text, |b, t| {
            let mut ids = Vec::new();
            b.iter(|| {
                spm.encode_into(black_box(t), &mut ids);
                black_box(ids.len())
            })
        });
        group.bench_with_input(
            BenchmarkId::new("hf_tokenizer_json", label),
            text,
            |b, t| {
                b.iter(|| {
                    black_box(
                        hf.encode(black_box(t), &opts).wait().unwrap()[0]
                            .ids()
                            .len(),
                    )
                })
            },
        );
    }
    group.finish();

    let mut group = c.benchmark_group("mistral7b_encode_distinct");
    group.sample_size(10);
    for (label, size, stride) in sizes {
        let windows: Vec<&str> = (0..)
            .map(|k| k * stride)
            .take_while(|&s| s + size <= prose.len())
            .map(|s| window(&prose, s, size))
            .collect();
        for w in windows.iter().step_by(windows.len() / 3) {
            assert_eq!(spm.encode(w), hf_ids(w), "ids differ on a {label} window");
        }
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::new("spm_native", label), |b| {
            let mut ids = Vec::new();
            let mut k = 0usize;
            b.iter(|| {
                k = (k + 1) % windows.len();
                spm.encode_into(black_box(windows[k]), &mut ids);
                black_box(ids.len())
            })
        });
        group.bench_function(BenchmarkId::new("hf_tokenizer_json", label), |b| {
            let mut k = 0usize;
            b.iter(|| {
                k = (k + 1) % windows.len();
                black_box(
                    hf.encode(black_box(windows[k]), &opts).wait().unwrap()[0]
                        .ids()
                        .len(),
                )
            })
        });
    }
    group.finish();
}

/// Mistral-7B's `tokenizer.json` through the facade on the SentencePiece
/// route (DESIGN.md invariant `spm-route-same-merges`) and with the route off, its
/// `tokenizer.model` through the facade, and raw `tokenizers`: 1 MiB of
/// English, code and Chinese, single thread. Every iteration takes a window
/// no earlier iteration took (`tokenizers`' word cache keys on the whole
/// input here, and would answer a repeated one), but the windows are 1 MiB
/// apart by 4,093 bytes: each shares all but its last 4 KB with the ones
/// before: text seen again, not seen once (`benches/seen_once.rs`).
fn bench_json_route(c: &mut Criterion) {
    use router_tokenizer::__testing::hf_json;
    use router_tokenizer::SpecialTokenPolicy;
    let shared = shared();
    let snap = snapshot("mistralai/Mistral-7B-v0.1");
    let json = snap.join("tokenizer.json");
    let routed = hf_json(&json, SpecialTokenPolicy::Parse, true).unwrap();
    let general = hf_json(&json, SpecialTokenPolicy::Parse, false).unwrap();
    let model = common::load(snap.join("tokenizer.model").to_str().unwrap());
    let raw = common::raw_hf("mistralai/Mistral-7B-v0.1");
    let opts = EncodeOptions::no_specials();
    let read = |files: &[&str]| -> String {
        files
            .iter()
            .map(|f| std::fs::read_to_string(shared.join("corpus").join(f)).unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let inputs = [
        (
            "english",
            read(&[
                "en-prose/pride-and-prejudice.txt",
                "en-prose/botchan.txt",
                "en-prose/tinyshakespeare.txt",
            ]),
        ),
        ("code", read(&["code/rust.txt", "code/python.txt"])),
        ("chinese", read(&["zh/hongloumeng.txt"])),
    ];
    const SIZE: usize = 1 << 20;
    let mut group = c.benchmark_group("mistral7b_json_route_1MiB");
    group.sample_size(10);
    group.warm_up_time(std::time::Duration::from_secs(1));
    group.measurement_time(std::time::Duration::from_secs(4));
    group.throughput(Throughput::Bytes(SIZE as u64));
    for (label, text) in &inputs {
        let span = text.len() - SIZE;
        let at = |k: usize| window(text, (k * 4093) % span, SIZE);
        // Criterion calls each routine several times; the counter outlives them.
        let next = std::cell::Cell::new(0usize);
        let w = at(3);
        let ids = routed.encode_with(w, &common::sequential()).unwrap();
        assert_eq!(
            ids.ids(),
            general.encode_with(w, &common::sequential()).unwrap().ids()
        );
        assert_eq!(
            ids.ids(),
            model.encode_with(w, &common::sequential()).unwrap().ids()
        );
        let variants: [(&str, &router_tokenizer::Tokenizer); 3] = [
            ("json_spm_route", &routed),
            ("json_general", &general),
            ("model_file", &model),
        ];
        for (name, tok) in variants {
            group.bench_function(BenchmarkId::new(name, label), |b| {
                b.iter(|| {
                    let k = next.get() + 1;
                    next.set(k);
                    black_box(
                        tok.encode_with(black_box(at(k)), &common::sequential())
                            .unwrap()
                            .len(),
                    )
                })
            });
        }
        group.bench_function(BenchmarkId::new("raw_tokenizers", label), |b| {
            b.iter(|| {
                let k = next.get() + 1;
                next.set(k);
                black_box(
                    raw.encode(black_box(at(k)), &opts).wait().unwrap()[0]
                        .ids()
                        .len(),
                )
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_encode, bench_json_route);
criterion_main!(benches);
