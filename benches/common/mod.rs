//! Shared bench helpers: the shared data folder and offline loading.
#![allow(dead_code)]

use router_tokenizer::{LoadOptions, PromptCacheOptions, Tokenizer};
use std::path::{Path, PathBuf};

/// Options for the backend alone: the calling thread, never in chunks, never
/// through the prompt caches.
pub fn sequential() -> router_tokenizer::EncodeOptions {
    router_tokenizer::EncodeOptions::new()
        .with_parallelism(router_tokenizer::Parallelism::Sequential)
}

/// Options for `encode` with one byte span per id.
pub fn offsets() -> router_tokenizer::EncodeOptions {
    router_tokenizer::EncodeOptions::new().with_offsets(true)
}

/// `RTOK_SHARED_DIR`, else `../shared` beside the repository.
pub fn shared() -> PathBuf {
    std::env::var_os("RTOK_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"))
}

/// A hub model's snapshot folder in the shared cache.
pub fn snapshot(model: &str) -> PathBuf {
    let folder = shared()
        .join("hf-cache/hub")
        .join(format!("models--{}", model.replace('/', "--")));
    let commit =
        std::fs::read_to_string(folder.join("refs/main")).expect("shared hf-cache missing");
    folder.join("snapshots").join(commit.trim())
}

/// Loads a tokenizer offline from the shared cache, with the L0 prompt cache
/// off: the benches time encoding, and most repeat one text.
pub fn load(source: &str) -> Tokenizer {
    LoadOptions::default()
        .with_cache_dir(shared().join("hf-cache/hub"))
        .with_offline(true)
        .with_prompt_cache(PromptCacheOptions::off())
        .load(source)
        .expect("load")
}

/// The raw `tokenizers` pipeline for a shared hub model.
pub fn raw_hf(model: &str) -> tokenizers::pipeline::PipelineTokenizer {
    let json = std::fs::read_to_string(snapshot(model).join("tokenizer.json")).unwrap();
    tokenizers::from_json(&tokenizers::canonicalize_str(&json).unwrap()).unwrap()
}

/// English prose (Pride and Prejudice, repeated as needed), cut to `n`
/// bytes on a char boundary.
pub fn prose(n: usize) -> String {
    let all =
        std::fs::read_to_string(shared().join("corpus/en-prose/pride-and-prejudice.txt")).unwrap();
    let all = all.repeat(n / all.len() + 1);
    let mut end = n;
    while !all.is_char_boundary(end) {
        end -= 1;
    }
    all[..end].to_owned()
}

/// One corpus kind (`corpus/<category>/`): its files in name order, one
/// after the other (as `scripts/bench_peers.py` reads them).
pub fn kind_text(category: &str) -> String {
    let mut files: Vec<_> = std::fs::read_dir(shared().join("corpus").join(category))
        .expect("shared corpus missing")
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned())
        .collect()
}
