//! GGUF backend: load time (vocab-only files, and an 8 GiB sparse model file
//! with a real header), and encode throughput at 32 KB and 512 KB of English
//! prose against the same vocabulary through another format of this crate,
//! in the same run:
//! - `gpt-2.gguf` against `r50k_base` (tiktoken; the same GPT-2 vocabulary
//!   and regex, equal ids on llama.cpp's vectors);
//! - `bert-bge.gguf` against all-MiniLM-L6-v2's `tokenizer.json` (the same
//!   bert-base-uncased vocabulary);
//! - `llama-spm.gguf` (llama.cpp's SPM merge) alone: no Llama-2
//!   `tokenizer.json` is in the shared data.
//!
//! Data: `$RTOK_SHARED_DIR` (default `../shared`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::PathBuf;

mod common;

use common::{load, shared};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use router_tokenizer::{LoadOptions, Tokenizer};

fn gguf(name: &str) -> PathBuf {
    shared().join(format!("fixtures/gguf/ggml-vocab-{name}.gguf"))
}

fn fresh(path: &std::path::Path) -> Tokenizer {
    LoadOptions {
        bypass_registry: true,
        prompt_cache: router_tokenizer::PromptCacheOptions::off(),
        ..LoadOptions::default()
    }
    .load(path.to_str().unwrap())
    .unwrap()
}

/// English prose of at least `n` bytes, cut at a character boundary.
fn prose(n: usize) -> String {
    let dir = shared().join("corpus/en-prose");
    let mut text = String::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    while text.len() < n {
        for f in &files {
            text.push_str(&std::fs::read_to_string(f).unwrap_or_default());
        }
    }
    let mut e = n;
    while !text.is_char_boundary(e) {
        e -= 1;
    }
    text.truncate(e);
    text
}

fn bench_load(c: &mut Criterion) {
    let mut g = c.benchmark_group("gguf_load");
    g.sample_size(10);
    for name in ["llama-spm", "gpt-2", "bert-bge"] {
        let p = gguf(name);
        g.bench_function(name, |b| b.iter(|| black_box(fresh(&p))));
    }
    // A model-sized file: the real header, then 8 GiB of holes.
    let sparse =
        std::env::temp_dir().join(format!("rtok-bench-sparse-{}.gguf", std::process::id()));
    std::fs::copy(gguf("llama-spm"), &sparse).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&sparse)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    g.bench_function("llama-spm_sparse_8GiB", |b| {
        b.iter(|| black_box(fresh(&sparse)))
    });
    g.finish();
    let _ = std::fs::remove_file(&sparse);
}

fn bench_encode(c: &mut Criterion) {
    let pairs: [(&str, Tokenizer, &str, Option<Tokenizer>); 3] = [
        (
            "gpt-2.gguf",
            fresh(&gguf("gpt-2")),
            "r50k_base",
            Some(load("r50k_base")),
        ),
        (
            "bert-bge.gguf",
            fresh(&gguf("bert-bge")),
            "MiniLM tokenizer.json",
            Some(load("sentence-transformers/all-MiniLM-L6-v2")),
        ),
        ("llama-spm.gguf", fresh(&gguf("llama-spm")), "", None),
    ];
    let mut g = c.benchmark_group("gguf_encode");
    g.sample_size(10);
    for size in [32 << 10, 512 << 10] {
        let text = prose(size);
        g.throughput(Throughput::Bytes(text.len() as u64));
        for (name, tok, peer_name, peer) in &pairs {
            g.bench_with_input(BenchmarkId::new(*name, size), &text, |b, t| {
                b.iter(|| black_box(tok.encode_sequential(t, false).unwrap()))
            });
            if let Some(peer) = peer {
                g.bench_with_input(BenchmarkId::new(*peer_name, size), &text, |b, t| {
                    b.iter(|| black_box(peer.encode_sequential(t, false).unwrap()))
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench_load, bench_encode);
criterion_main!(benches);
