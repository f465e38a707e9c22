//! The SentencePiece backend through `create_tokenizer`: Mistral-7B's
//! `tokenizer.model` and `tokenizer.json` give the same ids.

use crate::common;

use common::*;
use router_tokenizer::{Format, SpecialTokenPolicy};

fn mistral_model_path() -> String {
    let folder = shared_dir().join("hf-cache/hub/models--mistralai--Mistral-7B-v0.1");
    let commit = std::fs::read_to_string(folder.join("refs/main")).unwrap();
    folder
        .join("snapshots")
        .join(commit.trim())
        .join("tokenizer.model")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn model_and_json_agree_on_every_input() {
    let json = tokenizer("mistralai/Mistral-7B-v0.1");
    let model = tokenizer(&mistral_model_path());
    assert_eq!(json.format(), Format::HfJson);
    assert_eq!(model.format(), Format::SentencePiece);
    assert_eq!(model.special_tokens().bos.as_ref().map(|t| t.id), Some(1));
    assert_eq!(model.eos_token_ids(), &[2]);
    let mut bad = Vec::new();
    for (key, path) in all_inputs() {
        let text = std::fs::read_to_string(path).unwrap();
        for add_special in [false, true] {
            let a = json.encode(&text, add_special).unwrap();
            let b = model.encode(&text, add_special).unwrap();
            if a.ids() != b.ids() {
                bad.push(format!(
                    "{key} (add_special_tokens={add_special}): {} vs {} ids",
                    a.len(),
                    b.len()
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn specials_as_text_is_plain_sentencepiece() {
    let path = mistral_model_path();
    let plain = offline_options()
        .with_special_tokens(SpecialTokenPolicy::PlainText)
        .load(&path)
        .unwrap();
    let parsed = tokenizer(&path);
    let text = "a<s>b</s>";
    assert!(parsed.encode(text, false).unwrap().ids().contains(&1));
    assert!(!plain.encode(text, false).unwrap().ids().contains(&1));
}

#[test]
fn offsets_tile_the_input_through_the_facade() {
    let tok = tokenizer(&mistral_model_path());
    for (key, path) in all_inputs().into_iter().take(12) {
        let text = std::fs::read_to_string(path).unwrap();
        let enc = tok
            .encode_with(&text, &crate::common::offsets(false))
            .unwrap();
        assert_eq!(enc.ids(), tok.encode(&text, false).unwrap().ids(), "{key}");
        let mut pos = 0;
        for &(s, e) in enc.offsets().unwrap() {
            assert_eq!(s, pos, "{key}: gap at {pos}");
            pos = e;
        }
        assert_eq!(pos, text.len(), "{key}");
    }
}
