//! `tokenizer.json` files whose BPE model has an empty vocabulary (only
//! added tokens: `Tokenizer(BPE())` saved by Python `tokenizers`) against the
//! reference (`tokenizers` 0.23.3; the files and `expected.json` in
//! `tests/golden/empty_vocab/`, written by the script beside them): they
//! load, their added tokens encode and decode, and text the model is handed
//! gives nothing, or the reference's error where the model names an
//! `unk_token` (it is in no model vocabulary). Each file is loaded as the
//! crate loads it, with the assembled pipeline and read whole by `tokenizers`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::common;

use common::*;
use router_tokenizer::{SpecialTokenPolicy, Tokenizer};
use std::path::PathBuf;

fn file(rel: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/empty_vocab")
        .join(rel)
}

/// The crate's answer against the reference's: the same ids (and offsets
/// and decodes), or an error where the reference failed.
fn check(tok: &Tokenizer, what: &str, text: &str, want: &serde_json::Value, special: bool) {
    let got = tok.encode_with(text, &crate::common::sequential(special));
    if let Some(error) = want.get("error") {
        let err = got.expect_err(&format!("{what} {text:?}: the reference fails"));
        assert!(
            err.to_string().contains(error.as_str().unwrap()),
            "{what} {text:?}: {err}"
        );
        return;
    }
    let ids = golden_ids(&want["ids"]);
    let got = got.unwrap_or_else(|e| panic!("{what} {text:?}: {e}"));
    assert_eq!(got.ids(), ids, "{what} {text:?} (special: {special})");
    if special {
        return;
    }
    let with = tok
        .encode_with(text, &crate::common::sequential_offsets(false))
        .unwrap_or_else(|e| panic!("{what} {text:?} with offsets: {e}"));
    assert_eq!(with.ids(), ids, "{what} {text:?} with offsets");
    let offsets: Vec<(usize, usize)> = want["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let (a, b) = (p[0].as_u64().unwrap(), p[1].as_u64().unwrap());
            (a as usize, b as usize)
        })
        .collect();
    assert_eq!(with.offsets().unwrap(), offsets, "{what} {text:?} offsets");
    for (key, skip) in [("decode", false), ("decode_skip", true)] {
        assert_eq!(
            tok.decode(&ids, skip).unwrap(),
            want[key].as_str().unwrap(),
            "{what} {key} of {text:?}"
        );
    }
}

#[test]
fn bpe_of_added_tokens_only_encodes_and_decodes_as_the_reference() {
    let golden = golden("empty_vocab/expected.json");
    let texts = golden["texts"].as_array().unwrap();
    let files = golden["files"].as_object().unwrap();
    assert_eq!(files.len(), 9);
    for (name, want) in files {
        let path = file(want["file"].as_str().unwrap());
        let loads = [
            ("default", offline_options().load(path.to_str().unwrap())),
            (
                "assembled",
                router_tokenizer::__testing::hf_json_assembled(
                    &path,
                    SpecialTokenPolicy::Parse,
                    true,
                )
                .map(|(t, _)| t),
            ),
            (
                "read whole",
                router_tokenizer::__testing::hf_json_assembled(
                    &path,
                    SpecialTokenPolicy::Parse,
                    false,
                )
                .map(|(t, _)| t),
            ),
        ];
        for (how, tok) in loads {
            let what = format!("{name} ({how})");
            let tok = tok.unwrap_or_else(|e| panic!("{what}: {e}"));
            let size = want["vocab_size"].as_u64().unwrap() as u32;
            assert_eq!(tok.vocab_size() as u32, size, "{what}");
            for (i, text) in texts.iter().enumerate() {
                let text = text.as_str().unwrap();
                check(&tok, &what, text, &want["plain"][i], false);
                check(&tok, &what, text, &want["special"][i], true);
            }
            let every: Vec<u32> = (0..size).collect();
            for (key, skip) in [("decode_all", false), ("decode_all_skip", true)] {
                assert_eq!(
                    tok.decode(&every, skip).unwrap(),
                    want[key].as_str().unwrap(),
                    "{what} {key}"
                );
            }
            let plain_text = router_tokenizer::__testing::hf_json_assembled(
                &path,
                SpecialTokenPolicy::PlainText,
                how != "read whole",
            )
            .unwrap()
            .0;
            for (i, text) in texts.iter().enumerate() {
                let text = text.as_str().unwrap();
                let what = format!("{what}, special tokens as text");
                check(&plain_text, &what, text, &want["as_text"][i], false);
            }
            // No stand-in id is ever an answer.
            assert!(tok.decode(&[size], false).is_err(), "{what}");
            assert_eq!(tok.token_to_id("\u{10FFFF}"), None, "{what}");
        }
    }
}

/// A WordPiece or WordLevel model with an empty vocabulary is still refused
/// (`tokenizers` 1.0 panics building its store), with a typed error.
#[test]
fn other_models_with_an_empty_vocabulary_are_refused() {
    let dir = std::env::temp_dir().join(format!("rtok-empty-vocab-{}", std::process::id()));
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file("plain.json")).unwrap()).unwrap();
    json["model"] = serde_json::json!({"type": "WordLevel", "vocab": {}, "unk_token": "<unk>"});
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("wordlevel.json");
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let err = offline_options().load(path.to_str().unwrap()).unwrap_err();
    assert!(err.to_string().contains("empty vocabulary"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
