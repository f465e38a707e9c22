//! Long whitespace runs under the tiktoken patterns (issue 11, item 8): from
//! about a million consecutive whitespace chars tiktoken's backtracking regex
//! fails. They must encode exactly as tiktoken defines it, on every path
//! (sequential, parallel, `Auto`), in linear time.
//!
//! Goldens: `tests/golden/tiktoken_whitespace/goldens.json`, made by
//! `make_goldens.py` beside it (Python tiktoken, see its docstring).

use crate::common;

use router_tokenizer::{LoadOptions, ParallelOptions, Tokenizer};
use serde_json::Value;
use std::time::{Duration, Instant};

fn goldens() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/tiktoken_whitespace/goldens.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn load(name: &str) -> Tokenizer {
    let source = match name {
        "llama3" => common::shared_dir()
            .join("fixtures/tiktoken/llama3-tokenizer.model")
            .display()
            .to_string(),
        other => other.to_owned(),
    };
    let tok = LoadOptions::default()
        .with_parallel(ParallelOptions::never())
        .load(&source)
        .unwrap();
    // The byte-level engine (built in the background) must be the path tested.
    tok.warm_up();
    tok
}

fn text_of(recipe: &Value) -> String {
    recipe
        .as_array()
        .unwrap()
        .iter()
        .map(|part| {
            let s = part[0].as_str().unwrap();
            s.repeat(usize::try_from(part[1].as_u64().unwrap()).unwrap())
        })
        .collect()
}

fn check(name: &str, case: &str, ids: &[u32], want: &Value, path: &str) {
    assert_eq!(
        ids.len() as u64,
        want["count"].as_u64().unwrap(),
        "{name} {case} ({path}): count"
    );
    let head: Vec<u64> = ids.iter().take(8).map(|&i| u64::from(i)).collect();
    assert_eq!(
        Value::from(head),
        want["head"],
        "{name} {case} ({path}): head"
    );
    assert_eq!(
        common::ids_sha256(ids),
        want["sha256"].as_str().unwrap(),
        "{name} {case} ({path}): sha256"
    );
}

/// Which golden cases each encoding runs here (the goldens hold all of them;
/// CI time goes to the two encodings the issue names).
fn cases_for(name: &str) -> &'static [&'static str] {
    match name {
        "o200k_base" => &[
            "spaces-1000500-then-a",
            "tabs-1000500-then-words",
            "words-spaces-newlines",
            "mixed-runs",
            "spaces-to-end",
            "ideographic-spaces",
            "space-newline-pairs",
            "short-runs",
        ],
        "llama3" => &["short-runs", "spaces-1000500-then-a", "mixed-runs"],
        _ => &["short-runs", "spaces-1000500-then-a"],
    }
}

/// The cases that also run on the parallel paths (o200k only: the other
/// encodings share the code).
const PARALLEL_CASES: &[&str] = &["tabs-1000500-then-words", "mixed-runs", "short-runs"];

#[test]
fn long_whitespace_runs_match_tiktoken_on_every_path() {
    let goldens = goldens();
    let cases = &goldens["cases"];
    for (name, results) in goldens["encodings"].as_object().unwrap() {
        let tok = load(name);
        let parallel = tok.with_parallel(ParallelOptions::always_with_chunk_bytes(1 << 18));
        let auto = tok.with_parallel(ParallelOptions::default());
        for &case in cases_for(name) {
            let text = text_of(&cases[case]);
            let want = &results[case];
            check(
                name,
                case,
                tok.encode(&text, false).unwrap().ids(),
                want,
                "sequential",
            );
            if name == "o200k_base" && PARALLEL_CASES.contains(&case) {
                check(
                    name,
                    case,
                    parallel.encode(&text, false).unwrap().ids(),
                    want,
                    "parallel",
                );
                check(
                    name,
                    case,
                    auto.encode(&text, false).unwrap().ids(),
                    want,
                    "auto",
                );
            }
        }
    }
}

/// Encode time of a whitespace run grows linearly: 8× the input takes far
/// less than the 64× a quadratic scan would (a ratio of the best of three
/// runs, not a time; linear is 8×, and the bound leaves a shared machine's
/// noise 3× of room).
/// Each run is a fresh load's first encode of the text, so no memo of the
/// handle or the backend answers it (a repeat would time a cache).
#[test]
fn whitespace_runs_encode_in_linear_time() {
    let best = |n: usize| -> Duration {
        let text = format!(
            "x{}y{}\n\n{} z",
            " ".repeat(n),
            "\t".repeat(n / 2),
            " \n".repeat(n / 4)
        );
        (0..3)
            .map(|_| {
                let tok = LoadOptions::default()
                    .with_parallel(ParallelOptions::never())
                    .with_bypass_registry(true)
                    .load("o200k_base")
                    .unwrap();
                tok.warm_up();
                let start = Instant::now();
                let ids = tok.encode(&text, false).unwrap();
                assert!(!ids.ids().is_empty());
                start.elapsed()
            })
            .min()
            .unwrap()
    };
    let small = best(75_000);
    let large = best(600_000);
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    assert!(
        ratio < 24.0,
        "8x input took {ratio:.1}x the time ({small:?} -> {large:?})"
    );
}
