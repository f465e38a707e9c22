//! Encodes texts read as JSON strings, one per line, and prints each
//! one's ids as a JSON array on its own line (an error as a JSON string),
//! for `scripts/fuzz_reference.py`, which compares them with the Python
//! references.
//!
//! ```sh
//! cargo run --release --features tools --bin encode_jsonl -- SRC TEXTS.jsonl [warm] > IDS.jsonl
//! ```
//!
//! `warm` waits for what the load left building (`warm_up`) first, so the
//! texts run on the finished engines; without it the first texts run on
//! whatever encodes while the load's background builds go on.

// Finding the shared data and loading from it offline, as the examples do.
#[path = "../examples/common/mod.rs"]
mod common;

use std::io::{BufRead, BufWriter, Write};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: encode_jsonl SRC TEXTS.jsonl [warm]");
        std::process::exit(2);
    }
    let tok = common::load(&args[1]);
    if args.get(3).map(String::as_str) == Some("warm") {
        tok.warm_up();
    }
    let file = std::fs::File::open(&args[2]).unwrap_or_else(|e| {
        eprintln!("{}: {e}", args[2]);
        std::process::exit(1);
    });
    let mut out = BufWriter::new(std::io::stdout().lock());
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.unwrap_or_else(|e| {
            eprintln!("{}:{}: {e}", args[2], n + 1);
            std::process::exit(1);
        });
        let text: String = serde_json::from_str(&line).unwrap_or_else(|e| {
            eprintln!("{}:{}: not a JSON string: {e}", args[2], n + 1);
            std::process::exit(1);
        });
        let json = match tok.encode(&text, false) {
            Ok(enc) => serde_json::to_string(enc.ids()),
            Err(e) => serde_json::to_string(&format!("error: {e}")),
        };
        let written = json
            .map_err(std::io::Error::other)
            .and_then(|j| writeln!(out, "{j}"));
        if written.is_err() {
            std::process::exit(1);
        }
    }
}
