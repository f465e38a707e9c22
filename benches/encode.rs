//! Facade against the raw libraries, in the same run: encode and decode at
//! 1 KB, 32 KB and 512 KB, load time, and the cost of metrics.
//!
//! **Text seen again.** Every encode group here repeats one text each
//! iteration (the group names say `seen_again`): the prompt caches are off
//! (`common::load`), but the backend's per-thread word caches hold every
//! word of it. These
//! figures are the cost of a text the handle has seen before, not encode
//! speed: text seen once is `benches/seen_once.rs` and
//! `scripts/bench_peers.py` (issue #43).

mod common;

use common::{load, raw_hf, snapshot};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use router_tokenizer::{LoadOptions, Tokenizer};
use std::hint::black_box;
use std::time::Duration;
use tokenizers::pipeline::{EncodeOptions, Override, PipelineToken};

/// English prose, cut to `n` bytes on a char boundary.
fn text(n: usize) -> String {
    common::prose(n)
}

const SIZES: [usize; 3] = [1 << 10, 32 << 10, 512 << 10];

/// The raw `tokenizers` options that match `encode(text, false)`.
fn raw_options() -> EncodeOptions {
    EncodeOptions {
        add_special_tokens: false,
        padding: Override::Off,
        truncation: Override::Off,
        ..EncodeOptions::default()
    }
}

/// Encode at every size and decode 32 KB, the facade against a raw library,
/// each pair in one group so their ratio comes from the same run. The same
/// text every iteration: text seen again (the module docs).
fn facade_vs_raw<R1, R2>(
    c: &mut Criterion,
    name: &str,
    tok: &Tokenizer,
    raw_name: &str,
    raw_encode: impl Fn(&str) -> R1,
    raw_decode: impl Fn(&[u32]) -> R2,
) {
    let mut g = c.benchmark_group(format!("encode_seen_again/{name}"));
    for size in SIZES {
        let input = text(size);
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(
            BenchmarkId::new("router-tokenizer", size),
            &input,
            |b, t| b.iter(|| tok.encode(black_box(t), false).unwrap()),
        );
        g.bench_with_input(BenchmarkId::new(raw_name, size), &input, |b, t| {
            b.iter(|| raw_encode(black_box(t)))
        });
    }
    g.finish();
    let mut g = c.benchmark_group(format!("decode/{name}"));
    let input = text(32 << 10);
    let ids = tok.encode(&input, false).unwrap().into_ids();
    g.throughput(Throughput::Bytes(input.len() as u64));
    g.bench_function("router-tokenizer", |b| {
        b.iter(|| tok.decode(black_box(&ids), false).unwrap())
    });
    g.bench_function(raw_name, |b| b.iter(|| raw_decode(black_box(&ids))));
    g.finish();
}

fn encode_hf(c: &mut Criterion) {
    let opts = raw_options();
    for model in ["meta-llama/Meta-Llama-3-8B-Instruct", "Qwen/Qwen3-8B"] {
        let raw = raw_hf(model);
        facade_vs_raw(
            c,
            &format!("hf/{model}"),
            &load(model),
            "tokenizers",
            |t| {
                let mut out: Vec<PipelineToken> = Vec::with_capacity(t.len() / 4);
                raw.encode_into(t, &opts, &mut out).unwrap();
                out
            },
            |ids| raw.decode(ids, false).unwrap(),
        );
    }
}

fn encode_tiktoken(c: &mut Criterion) {
    let raw = tiktoken_rs::o200k_base().unwrap();
    let tok = load("o200k_base");
    tok.warm_up();
    facade_vs_raw(
        c,
        "tiktoken/o200k_base",
        &tok,
        "tiktoken-rs",
        |t| raw.encode_ordinary(t),
        |ids| raw.decode(ids).unwrap(),
    );
}

/// 1 MiB of one corpus category (its files concatenated), cut on a char boundary.
fn corpus_mib(category: &str) -> String {
    let dir = common::shared().join("corpus").join(category);
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut all = String::new();
    for f in files {
        all.push_str(&std::fs::read_to_string(f).unwrap());
    }
    let mut end = (1 << 20).min(all.len());
    while !all.is_char_boundary(end) {
        end -= 1;
    }
    all.truncate(end);
    all
}

/// The Llama-3 rank file as `tiktoken-rs` loads it (Meta's pattern).
fn llama3_core() -> tiktoken_rs::CoreBPE {
    use base64::Engine as _;
    let path = common::shared().join("fixtures/tiktoken/llama3-tokenizer.model");
    let mut ranks = rustc_hash::FxHashMap::default();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        if let Some((tok, rank)) = line.split_once(' ') {
            let tok = base64::engine::general_purpose::STANDARD
                .decode(tok)
                .unwrap();
            ranks.insert(tok, rank.parse::<u32>().unwrap());
        }
    }
    let pattern = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    tiktoken_rs::CoreBPE::new(ranks, Default::default(), pattern).unwrap()
}

/// tiktoken encodings and the Llama-3 rank file on 1 MiB of three corpus
/// categories, single thread, against `tiktoken-rs` in the same run. One
/// text every iteration: this crate's line memo answers it from the second
/// iteration on (text seen again), `tiktoken-rs` has no such memo, so the
/// ratio here is not the seen-once ratio (`benches/seen_once.rs`).
fn tiktoken_corpus(c: &mut Criterion) {
    let llama3 = common::shared()
        .join("fixtures/tiktoken/llama3-tokenizer.model")
        .display()
        .to_string();
    let encodings: [(&str, String, tiktoken_rs::CoreBPE); 3] = [
        (
            "o200k_base",
            "o200k_base".into(),
            tiktoken_rs::o200k_base().unwrap(),
        ),
        (
            "cl100k_base",
            "cl100k_base".into(),
            tiktoken_rs::cl100k_base().unwrap(),
        ),
        ("llama3-rank-file", llama3, llama3_core()),
    ];
    for category in ["en-prose", "code", "zh"] {
        let text = corpus_mib(category);
        for (name, source, raw) in &encodings {
            let tok = load(source);
            tok.warm_up();
            assert_eq!(
                tok.encode_with(&text, &common::sequential()).unwrap().ids(),
                raw.encode_ordinary(&text).as_slice(),
                "{name} {category}"
            );
            let mut g = c.benchmark_group(format!("tiktoken-1mib-seen-again/{name}/{category}"));
            g.throughput(Throughput::Bytes(text.len() as u64));
            g.sample_size(10);
            g.bench_function("router-tokenizer", |b| {
                b.iter(|| {
                    tok.encode_with(black_box(&text), &common::sequential())
                        .unwrap()
                })
            });
            g.bench_function("tiktoken-rs", |b| {
                b.iter(|| raw.encode_ordinary(black_box(&text)))
            });
            g.finish();
        }
    }
    let mut g = c.benchmark_group("load/tiktoken");
    g.sample_size(10);
    for (name, source, _) in &encodings {
        let load = || {
            LoadOptions::default()
                .with_bypass_registry(true)
                .load(source)
                .unwrap()
        };
        // Load and wait for the background build: timing the load alone would
        // leave each iteration's build running into the next ones.
        g.bench_function(format!("{name}+warm_up"), |b| {
            b.iter(|| {
                let tok = load();
                tok.warm_up();
                tok
            })
        });
    }
    g.finish();
}

fn load_time(c: &mut Criterion) {
    let mut g = c.benchmark_group("load");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    for model in [
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "google/gemma-3-4b-it",
    ] {
        let dir = snapshot(model);
        g.bench_function(model, |b| {
            b.iter(|| {
                LoadOptions::default()
                    .with_bypass_registry(true)
                    .load(dir.to_str().unwrap())
                    .unwrap()
            })
        });
    }
    g.finish();
}

/// The cost of a metrics recorder on a 30-char encode (the same text each
/// iteration: the word cache answers its words, as it would in a router).
fn metrics_overhead(c: &mut Criterion) {
    let input = "The quick brown fox jumps over.";
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let with_metrics =
        metrics::with_local_recorder(&recorder, || load("meta-llama/Meta-Llama-3-8B-Instruct"));
    let raw = raw_hf("meta-llama/Meta-Llama-3-8B-Instruct");
    let opts = raw_options();
    let mut g = c.benchmark_group("metrics/encode-30-chars");
    g.bench_function("router-tokenizer+recorder", |b| {
        b.iter(|| with_metrics.encode(black_box(input), false).unwrap())
    });
    g.bench_function("tokenizers", |b| {
        b.iter(|| {
            let mut out: Vec<PipelineToken> = Vec::with_capacity(16);
            raw.encode_into(black_box(input), &opts, &mut out).unwrap();
            out
        })
    });
    g.finish();
}

/// A thread that encodes with two models in turn (a router serving both):
/// each keeps its warm scratch and word cache (invariant `caches-bounded`), so a 1 KiB encode
/// costs what it costs with one model. Both the tiktoken engine and the
/// `tokenizer.json` chunk encoder (offsets) are timed. The same 1 KiB every
/// iteration (text seen again: under the line memo's 4 KiB, but every word
/// is in the word cache); what is compared is one model against two.
fn alternating_models(c: &mut Criterion) {
    let input = text(1 << 10);
    let mut g = c.benchmark_group("alternating_models/1KiB");
    g.throughput(Throughput::Bytes(2 * input.len() as u64));
    let pairs = [
        ("o200k+cl100k", load("o200k_base"), load("cl100k_base")),
        (
            "llama3+qwen3",
            load("meta-llama/Meta-Llama-3-8B-Instruct"),
            load("Qwen/Qwen3-8B"),
        ),
    ];
    for (name, a, b) in &pairs {
        a.warm_up();
        b.warm_up();
        g.bench_function(format!("{name}/one_model_twice"), |bench| {
            bench.iter(|| {
                a.encode_with(black_box(&input), &common::offsets())
                    .unwrap();
                a.encode_with(black_box(&input), &common::offsets())
                    .unwrap()
            })
        });
        g.bench_function(format!("{name}/alternating"), |bench| {
            bench.iter(|| {
                a.encode_with(black_box(&input), &common::offsets())
                    .unwrap();
                b.encode_with(black_box(&input), &common::offsets())
                    .unwrap()
            })
        });
    }
    g.finish();
}

/// One fast route on and off: the same `tokenizer.json` loaded twice in
/// one process, encoded at a prompt's length and a document's. The same
/// text every iteration (text seen again: at 256 KiB the line memo answers
/// where the file admits it); what is compared is the route on against off.
fn route_on_off(
    c: &mut Criterion,
    model: &str,
    route: router_tokenizer::__testing::FastRoute,
    group: &str,
    categories: &[&str],
) {
    use router_tokenizer::__testing::hf_json_route;
    use router_tokenizer::SpecialTokenPolicy;
    let path = snapshot(model).join("tokenizer.json");
    let load = |on| hf_json_route(&path, SpecialTokenPolicy::Parse, route, on).unwrap();
    let ((on, _), (off, _)) = (load(true), load(false));
    for category in categories {
        let all = corpus_mib(category);
        let mut g = c.benchmark_group(format!("{group}/{category}"));
        for size in [1 << 10, 256 << 10] {
            let mut end = size.min(all.len());
            while !all.is_char_boundary(end) {
                end -= 1;
            }
            let input = &all[..end];
            g.throughput(Throughput::Bytes(end as u64));
            for (name, tok) in [("on", &on), ("off", &off)] {
                g.bench_with_input(BenchmarkId::new(name, size), input, |b, t| {
                    b.iter(|| {
                        tok.encode_with(black_box(t), &common::sequential())
                            .unwrap()
                    })
                });
            }
        }
        g.finish();
    }
}

/// The NFC shortcut (DESIGN.md invariant `crate-steps-equal-reference`): Qwen3.
fn nfc_shortcut(c: &mut Criterion) {
    use router_tokenizer::__testing::FastRoute;
    let categories = ["en-prose", "zh", "multilingual"];
    route_on_off(c, "Qwen/Qwen3-8B", FastRoute::Nfc, "nfc/Qwen3", &categories);
}

/// Gemma-3's space routes (DESIGN.md invariants `crate-steps-equal-reference` and
/// `cut-where-no-entry-joins`): pieces that
/// skip the pre-tokenizer, the lone `Replace` run by the crate, and pieces
/// cut where no entry joins (text seen again here: the figures for text
/// seen once come from `scripts/bench_peers.py --unseen`).
fn space_routes(c: &mut Criterion) {
    use router_tokenizer::__testing::FastRoute;
    let categories = ["code", "en-prose", "zh"];
    let model = "google/gemma-3-4b-it";
    for (route, group) in [
        (FastRoute::WholePieces, "whole_pieces/Gemma3"),
        (FastRoute::LoneReplace, "lone_replace/Gemma3"),
        (FastRoute::JoinCuts, "join_cuts/Gemma3"),
    ] {
        route_on_off(c, model, route, group, &categories);
    }
}

criterion_group!(
    benches,
    encode_hf,
    nfc_shortcut,
    space_routes,
    encode_tiktoken,
    tiktoken_corpus,
    load_time,
    metrics_overhead,
    alternating_models
);
criterion_main!(benches);
