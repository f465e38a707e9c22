//! Letters, marks and digits new in Unicode 17 (DESIGN.md claims 325, 337):
//! `tokenizers` 1.0's pre-tokenizer classes them by Unicode 17, Python
//! `tokenizers` 0.23.3 (the reference) by Unicode 16, where they are
//! unassigned. The ids must be the reference's: the goldens
//! (`tests/golden/unicode17/`, written by the script beside them) hold its
//! ids for probes that put each new code point after letters, digits,
//! spaces, newlines, punctuation and contractions, and for 8 KiB of prose
//! with one every 97 chars, encoded whole, with offsets, and in forced
//! parallel chunks; seven models, among them Command-R (`Digits` and a
//! splitting `ByteLevel`, claim 337) and Mistral-Nemo.

mod common;

use common::*;
use router_tokenizer::ParallelOptions;
use serde_json::Value;

fn golden() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/unicode17/unicode17.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| u32::try_from(x.as_u64().unwrap()).unwrap())
        .collect()
}

#[test]
fn unicode17_code_points_take_the_reference_classes() {
    let golden = golden();
    let texts: Vec<&str> = golden["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let long = golden["long"].as_str().unwrap();
    let models = golden["models"].as_object().unwrap();
    assert_eq!(models.len(), 7);
    for (model, want) in models {
        let tok = tokenizer(model);
        for (text, want) in texts.iter().zip(want["texts"].as_array().unwrap()) {
            let got = tok.encode_sequential(text, false).unwrap();
            assert_eq!(got.ids(), ids(want), "{model} {text:?}");
            let got = tok.encode_with_offsets_sequential(text, false).unwrap();
            assert_eq!(got.ids(), ids(want), "{model} {text:?} with offsets");
        }
        let want = ids(&want["long"]);
        assert_eq!(
            tok.encode_sequential(long, false).unwrap().ids(),
            want,
            "{model} long"
        );
        let chunked = tok.with_parallel(ParallelOptions::always_with_chunk_bytes(1 << 10));
        assert_eq!(
            chunked.encode(long, false).unwrap().ids(),
            want,
            "{model} long, chunked"
        );
    }
}
