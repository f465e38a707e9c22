//! What the examples share (and the harness programs in `tools/`, through
//! `#[path]`): finding the project's test data and loading a tokenizer from
//! it offline.
#![allow(dead_code)]

use router_tokenizer::{LoadOptions, Tokenizer};
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

/// The shared data folder: `RTOK_SHARED_DIR`, else `../shared` beside the repository.
pub fn shared_dir() -> PathBuf {
    std::env::var_os("RTOK_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"))
}

/// Options that resolve hub ids in the shared cache without the network when
/// the shared folder is there; otherwise the environment decides
/// (`HF_HOME`, `HF_HUB_OFFLINE`, …), as in a real deployment.
pub fn options() -> LoadOptions {
    let cache = shared_dir().join("hf-cache/hub");
    if cache.is_dir() {
        LoadOptions::default()
            .with_cache_dir(cache)
            .with_offline(true)
    } else {
        LoadOptions::default()
    }
}

/// The tokenizer named on the command line, else `default`.
pub fn source_arg(default: &str) -> String {
    std::env::args()
        .nth(1)
        .unwrap_or_else(|| default.to_owned())
}

/// About `bytes` of real text from the shared corpus (prose, code, Chinese,
/// structured data, in turn), or a repeated sentence without it.
pub fn corpus_text(bytes: usize) -> String {
    let files = [
        "corpus/en-prose/pride-and-prejudice.txt",
        "corpus/code/rust.txt",
        "corpus/zh/hongloumeng.txt",
        "corpus/structured/twitter.json",
    ];
    let mut text = String::with_capacity(bytes + 64);
    let parts: Vec<String> = files
        .iter()
        .filter_map(|f| std::fs::read_to_string(shared_dir().join(f)).ok())
        .collect();
    if parts.is_empty() {
        while text.len() < bytes {
            text.push_str("The quick brown fox jumps over the lazy dog. ");
        }
        return text;
    }
    'fill: loop {
        for part in &parts {
            for line in part.lines() {
                if text.len() >= bytes {
                    break 'fill;
                }
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    text
}

/// Loads `source` with [`options`].
pub fn load(source: &str) -> Tokenizer {
    match options().load(source) {
        Ok(tok) => tok,
        Err(e) => {
            eprintln!("cannot load {source}: {e}");
            std::process::exit(1);
        }
    }
}
