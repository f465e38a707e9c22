//! A sequential encode against `tokenizers`' own pipeline
//! (`PipelineTokenizer::encode_into`) for every hub tokenizer in the shared
//! cache. Since DESIGN.md invariant `pipeline-walk-equals-pipeline` a BPE's sequential encode runs
//! the chunk
//! encoder's walk of the pipeline stages (one word cache per thread for
//! sequential encodes and chunks), so this checks that walk where the
//! pipeline itself was the path before: whole adversarial files, seeded
//! slices of every corpus file (text with and without CJK), text that spells other models' special tokens, before and
//! after the same text was seen (the word cache and memos warm), and with
//! special-token text as plain text. `tests/it/parity.rs` checks the same
//! tokenizers against Python's goldens.
//!
//! Command-R+ is left out: there the crate corrects `tokenizers` 1.0's
//! pipeline toward Python `tokenizers` (the reference) twice, with its own
//! NFC (invariant `crate-steps-equal-reference`) and the fold fix-ups (`Vocab::fold_fixups`,
//! invariant `interim-equals-built`),
//! so the two differ on `multibyte-boundary.txt` and `unicode-edge.txt`,
//! before invariant `pipeline-walk-equals-pipeline` as after, and the crate's ids there are
//! Python's
//! (`tests/it/parity.rs`).

use crate::common;

use common::{
    HUB_MODELS, all_inputs, char_slice as slice, offline_options, pipeline, pipeline_ids,
};
use router_tokenizer::{SpecialTokenPolicy, Tokenizer};

/// Short texts a router sends: chat turns written with several models'
/// special-token spellings, whitespace runs and mixed scripts.
const SHORT: &[&str] = &[
    "Hello, how are you today?",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\n你好<|im_end|>\n",
    "<s>[INST] What is 2+2? [/INST]</s>",
    "<|endoftext|>  \n\n\t  trailing spaces   ",
    "<start_of_turn>user\nこんにちは世界<end_of_turn>\n",
    "{\"role\": \"user\", \"content\": \"Café naïve — ½ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🙂\"}\n",
];

fn check(model: &str, tok: &Tokenizer, plain: &Tokenizer) -> (usize, Vec<String>) {
    let pipe = pipeline(model);
    let mut rng = common::Xorshift(0x2545_F491_4F6C_DD1Du64);
    let mut next = |bound: usize| rng.below(bound);
    let mut bad = Vec::new();
    let mut checked = 0usize;
    let mut one = |what: &str, piece: &str| {
        checked += piece.len();
        for round in ["cold", "seen"] {
            if tok
                .encode_with(piece, &crate::common::sequential(false))
                .unwrap()
                .ids()
                != pipeline_ids(&pipe, piece, false, false)
            {
                bad.push(format!("{model} {what} ({} bytes, {round})", piece.len()));
            }
            if plain
                .encode_with(piece, &crate::common::sequential(false))
                .unwrap()
                .ids()
                != pipeline_ids(&pipe, piece, false, true)
            {
                bad.push(format!(
                    "{model} {what} ({} bytes, {round}, specials as text)",
                    piece.len()
                ));
            }
        }
    };
    for short in SHORT {
        one("short text", short);
    }
    for (name, path) in all_inputs() {
        let text = std::fs::read_to_string(&path).unwrap();
        if name.starts_with("adversarial/") {
            one(&name, slice(&text, 0, 64 << 10));
        }
        for len in [300 + next(700), 4096 + next(4096), 24 << 10] {
            one(&name, slice(&text, next(text.len()), len));
        }
    }
    (checked, bad)
}

#[test]
fn sequential_encodes_match_the_pipeline() {
    let mut bad = Vec::new();
    for model in HUB_MODELS {
        if *model == "CohereForAI/c4ai-command-r-plus" {
            continue;
        }
        let tok = common::tokenizer(model);
        let plain = offline_options()
            .with_special_tokens(SpecialTokenPolicy::PlainText)
            .load(model)
            .unwrap();
        let (checked, wrong) = check(model, &tok, &plain);
        assert!(
            checked > 256 << 10,
            "{model}: too little text checked: {checked} bytes"
        );
        bad.extend(wrong);
    }
    assert!(
        bad.is_empty(),
        "ids differ from tokenizers' pipeline on:\n{}",
        bad.join("\n")
    );
}
