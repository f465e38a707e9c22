//! Parallel encoding of a long document (LoPT): the same ids as sequential
//! encoding, and what the parallel path did.
//!
//! ```sh
//! cargo run --release --example long_prompt [TOKENIZER] [BYTES]
//! ```

mod common;

use router_tokenizer::{EncodeOptions, Parallelism};
use std::time::Instant;

fn main() -> Result<(), router_tokenizer::Error> {
    let source = common::source_arg("meta-llama/Llama-3.2-1B-Instruct");
    let bytes: usize = std::env::args()
        .nth(2)
        .and_then(|b| b.parse().ok())
        .unwrap_or(512 * 1024);
    let tok = common::load(&source);
    let text = common::corpus_text(bytes);
    println!(
        "{source}: {} bytes, split family {:?}",
        text.len(),
        tok.split_family()
    );

    let start = Instant::now();
    let sequential = tok.encode_with(&text, &common::sequential())?;
    let sequential_time = start.elapsed();

    let start = Instant::now();
    // A forced split (whatever the size), which reports what it did.
    let split = EncodeOptions::new().with_parallelism(Parallelism::Split);
    let parallel = tok.encode_with(&text, &split)?;
    let parallel_time = start.elapsed();

    println!(
        "sequential: {} tokens in {:.2?}\nparallel:   {} tokens in {:.2?} on {} threads",
        sequential.len(),
        sequential_time,
        parallel.len(),
        parallel_time,
        rayon::current_num_threads()
    );
    println!("report: {:?}", parallel.parallel_report());
    let identical = sequential.ids() == parallel.ids();
    println!("identical ids: {identical}");
    if !identical {
        eprintln!("parallel encoding differs from sequential: this is a bug");
        std::process::exit(1);
    }
    Ok(())
}
