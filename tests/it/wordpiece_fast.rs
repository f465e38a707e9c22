//! The BERT normalizer's fast path (DESIGN.md invariants `crate-steps-equal-reference` and
//! `pipeline-walk-equals-pipeline`) against
//! `tokenizers`' own pipeline on MiniLM: whole adversarial files, slices of
//! every corpus file (4 KiB–64 KiB, where the fast path starts, sampled at
//! seeded char boundaries, and the first 256 KiB), with and without the
//! template tokens and with special-token text as plain text.
//! `tests/it/parity.rs` checks the same tokenizer against Python's goldens.

use crate::common;

use common::{all_inputs, char_slice as slice, offline_options, pipeline, pipeline_ids};
use router_tokenizer::{SpecialTokenPolicy, Tokenizer};

const MINILM: &str = "sentence-transformers/all-MiniLM-L6-v2";

#[test]
fn minilm_fast_path_matches_tokenizers() {
    let pipe = pipeline(MINILM);
    let tok = common::tokenizer(MINILM);
    let plain: Tokenizer = offline_options()
        .with_special_tokens(SpecialTokenPolicy::PlainText)
        .load(MINILM)
        .unwrap();
    let mut rng = common::Xorshift(0x9E37_79B9_7F4A_7C15u64);
    let mut next = |bound: usize| rng.below(bound);
    let mut bad = Vec::new();
    let mut checked = 0usize;
    for (name, path) in all_inputs() {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut pieces: Vec<&str> = vec![slice(&text, 0, 256 << 10)];
        if name.starts_with("adversarial/") {
            pieces.push(&text);
        }
        for len in [4096, 4097 + next(4096), 16 << 10, 64 << 10] {
            pieces.push(slice(&text, next(text.len()), len));
        }
        for piece in pieces {
            checked += piece.len();
            let got = tok
                .encode_with(piece, &crate::common::sequential(false))
                .unwrap();
            if got.ids() != pipeline_ids(&pipe, piece, false, false) {
                bad.push(format!("{name} ({} bytes)", piece.len()));
            }
            let got = tok
                .encode_with(piece, &crate::common::sequential(true))
                .unwrap();
            if got.ids() != pipeline_ids(&pipe, piece, true, false) {
                bad.push(format!(
                    "{name} ({} bytes, add_special_tokens)",
                    piece.len()
                ));
            }
            let got = plain
                .encode_with(piece, &crate::common::sequential(false))
                .unwrap();
            if got.ids() != pipeline_ids(&pipe, piece, false, true) {
                bad.push(format!("{name} ({} bytes, specials as text)", piece.len()));
            }
        }
    }
    assert!(
        checked > 1 << 20,
        "too little text checked: {checked} bytes"
    );
    assert!(
        bad.is_empty(),
        "ids differ from tokenizers on:\n{}",
        bad.join("\n")
    );
}
