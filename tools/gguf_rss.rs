//! Load time and peak memory of loading one tokenizer file, in a fresh
//! process: the GGUF figures in README.md (vocab-only file, a 16 GB sparse
//! model-sized file, the same model's `tokenizer.json`) come from running
//! this once per file on what `benches/gguf.rs` leaves in
//! `target/tmp/gguf-bench/`.
//!
//! ```sh
//! cargo run --release --features tools --bin gguf_rss -- FILE
//! ```

use std::time::Instant;

use router_tokenizer::{LoadOptions, PromptCacheOptions};

/// `VmHWM` (peak resident set) of this process, in KiB; Linux only.
fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> Result<(), router_tokenizer::Error> {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: gguf_rss FILE");
        std::process::exit(2);
    };
    let before = peak_kib();
    let start = Instant::now();
    let tok = LoadOptions::default()
        .with_bypass_registry(true)
        .with_prompt_cache(PromptCacheOptions::off())
        .load(&path)?;
    let took = start.elapsed();
    let after = peak_kib();
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "{path}: {size} bytes, vocab {}, load {:.1} ms, peak RSS {} KiB before load, {} KiB after",
        tok.vocab_size(),
        took.as_secs_f64() * 1e3,
        before.map_or("?".into(), |k| k.to_string()),
        after.map_or("?".into(), |k| k.to_string()),
    );
    Ok(())
}
