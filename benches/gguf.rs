//! GGUF backend: load time (vocab-only files, and a 16 GB Llama-3-8B-shaped
//! model file: the same metadata plus 291 tensor infos, the data a sparse
//! hole), and encode throughput at 32 KB and 512 KB of English prose against
//! the same vocabulary through another format of this crate, in the same run:
//! - Llama-3 and Qwen3 GGUFs made from the shared `tokenizer.json` (as
//!   `convert_hf_to_gguf.py --vocab-only` writes them, `tests/it/gguf_writer`)
//!   against that `tokenizer.json`, for loading and encoding;
//! - `gpt-2.gguf` against `r50k_base` (tiktoken; the same GPT-2 vocabulary
//!   and regex, equal ids on llama.cpp's vectors);
//! - `bert-bge.gguf` against all-MiniLM-L6-v2's `tokenizer.json` (the same
//!   bert-base-uncased vocabulary);
//! - `llama-spm.gguf` (llama.cpp's SPM merge) alone: no Llama-2
//!   `tokenizer.json` is in the shared data.
//!
//! The encode groups repeat one text each iteration: text seen again (the
//! prompt caches are off; the backends' memos of line groups answer where
//! they apply), so they compare the formats with each other, not with text
//! seen once (`benches/seen_once.rs`).
//!
//! Data: `$RTOK_SHARED_DIR` (default `../shared`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::PathBuf;

mod common;
#[path = "../tests/it/gguf_writer/mod.rs"]
mod gguf_writer;

use common::{load, shared, snapshot};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use router_tokenizer::{LoadOptions, Tokenizer};

fn gguf(name: &str) -> PathBuf {
    shared().join(format!("fixtures/gguf/ggml-vocab-{name}.gguf"))
}

fn fresh(path: &std::path::Path) -> Tokenizer {
    LoadOptions::default()
        .with_bypass_registry(true)
        .with_prompt_cache(router_tokenizer::PromptCacheOptions::off())
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

/// Vocab-only GGUFs made from shared `tokenizer.json` files, and a
/// model-sized Llama-3 file, kept in the bench's target folder (the peak
/// memory figures in README.md come from `tools/gguf_rss.rs` on them).
struct Converted {
    llama3: PathBuf,
    llama3_model: PathBuf,
    qwen3: PathBuf,
}

fn converted() -> Converted {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("gguf-bench");
    std::fs::create_dir_all(&dir).unwrap();
    let json = |model: &str| snapshot(model).join("tokenizer.json");
    let llama3 = dir.join("llama3-vocab.gguf");
    let llama3_model = dir.join("llama3-8b-f16-sparse.gguf");
    let qwen3 = dir.join("qwen3-vocab.gguf");
    let (kvs, n) = gguf_writer::convert_kvs(&json("meta-llama/Llama-3.2-1B-Instruct"), "llama-bpe");
    gguf_writer::write_gguf(&llama3, &kvs, &[]);
    let mut model_kvs = vec![("general.architecture", gguf_writer::V::Str("llama".into()))];
    model_kvs.extend(kvs);
    let len = gguf_writer::write_gguf(
        &llama3_model,
        &model_kvs,
        &gguf_writer::llama3_8b_tensors(n as u64),
    );
    assert!(len > 16_000_000_000, "{len}");
    gguf_writer::convert(&json("Qwen/Qwen3-8B"), "qwen2", &qwen3);
    Converted {
        llama3,
        llama3_model,
        qwen3,
    }
}

fn bench_load(c: &mut Criterion) {
    let files = converted();
    let mut g = c.benchmark_group("gguf_load");
    g.sample_size(10);
    for name in ["llama-spm", "gpt-2", "bert-bge"] {
        let p = gguf(name);
        g.bench_function(name, |b| b.iter(|| black_box(fresh(&p))));
    }
    let llama3_json = snapshot("meta-llama/Llama-3.2-1B-Instruct").join("tokenizer.json");
    for (name, p) in [
        ("llama3_vocab_only", &files.llama3),
        ("llama3_8b_f16_sparse_16GB", &files.llama3_model),
        ("llama3_tokenizer.json", &llama3_json),
    ] {
        g.bench_function(name, |b| b.iter(|| black_box(fresh(p))));
    }
    g.finish();
}

fn bench_encode(c: &mut Criterion) {
    let files = converted();
    let pairs: [(&str, Tokenizer, &str, Option<Tokenizer>); 5] = [
        (
            "llama3.gguf",
            fresh(&files.llama3),
            "llama3 tokenizer.json",
            Some(load("meta-llama/Llama-3.2-1B-Instruct")),
        ),
        (
            "qwen3.gguf",
            fresh(&files.qwen3),
            "qwen3 tokenizer.json",
            Some(load("Qwen/Qwen3-8B")),
        ),
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
                b.iter(|| black_box(tok.encode_with(t, &common::sequential()).unwrap()))
            });
            if let Some(peer) = peer {
                g.bench_with_input(BenchmarkId::new(*peer_name, size), &text, |b, t| {
                    b.iter(|| black_box(peer.encode_with(t, &common::sequential()).unwrap()))
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench_load, bench_encode);
criterion_main!(benches);
