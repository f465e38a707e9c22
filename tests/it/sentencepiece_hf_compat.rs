//! Mistral-7B-v0.1 in the shared hub cache has both `tokenizer.model` and
//! `tokenizer.json`: the native engine on the first must give the ids the
//! HF `tokenizers` crate (1.0.0-rc.3) gives on the second, on every corpus
//! and adversarial file (whole file as one string, no special tokens added).
//!
//! The one known difference is not a bug: `tokenizers` parses the literal
//! texts `<s>`, `</s>`, `<unk>` in the input as special tokens, sentencepiece
//! treats them as text. With `encode_special_tokens` (special-token text
//! encoded as text) every file matches.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::spm_common;

use router_tokenizer::sentencepiece::SentencePieceModel;
use spm_common::*;
use tokenizers::pipeline::EncodeOptions;

#[test]
fn mistral_model_matches_tokenizer_json() {
    let snaps = shared_dir().join("hf-cache/hub/models--mistralai--Mistral-7B-v0.1/snapshots");
    let snap = std::fs::read_dir(&snaps)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (the hub cache is part of the shared data)",
                snaps.display()
            )
        })
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("tokenizer.model").is_file() && p.join("tokenizer.json").is_file())
        .expect("a Mistral-7B snapshot with tokenizer.model and tokenizer.json");
    let spm = SentencePieceModel::from_bytes(&std::fs::read(snap.join("tokenizer.model")).unwrap())
        .unwrap();
    let hf =
        tokenizers::from_json(&tokenizers::canonicalize_file(snap.join("tokenizer.json")).unwrap())
            .unwrap();
    let as_text = EncodeOptions {
        encode_special_tokens: true,
        ..EncodeOptions::no_specials()
    };
    let mut mismatches = Vec::new();
    let keys = corpus_keys();
    for key in &keys {
        let text = String::from_utf8(read_input(key)).unwrap();
        let ours = spm.encode(&text);
        let theirs: Vec<u32> = hf.encode(text.as_str(), &as_text).wait().unwrap()[0]
            .ids()
            .iter()
            .map(|t| t.id())
            .collect();
        if ours != theirs {
            let at = ours
                .iter()
                .zip(&theirs)
                .position(|(a, b)| a != b)
                .unwrap_or(ours.len().min(theirs.len()));
            mismatches.push(format!(
                "{key}: {} vs {} ids, first difference at {at}",
                ours.len(),
                theirs.len()
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} files differ:\n{}",
        mismatches.len(),
        keys.len(),
        mismatches.join("\n")
    );
}
