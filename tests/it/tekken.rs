//! Mistral's `tekken.json` against mistral-common's `Tekkenizer`
//! (`tests/golden/tekken/`, made by the script beside it): ids and decodes
//! on every corpus and adversarial file, sequentially and in parallel
//! (LoPT), streams, special tokens and decodes of hand-picked ids.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::common;

use router_tokenizer::{DecodeStream, Format, ParallelMode, ParallelOptions, Tokenizer};

fn golden() -> serde_json::Value {
    common::golden("tekken/expected.json")
}

fn load(name: &str) -> Tokenizer {
    common::tokenizer(&format!("fixtures/mistral/{name}"))
}

#[test]
fn tekken_files_load_as_mistral_common_reads_them() {
    for (name, want) in golden()["files"].as_object().unwrap() {
        let tok = load(name);
        assert_eq!(tok.format(), Format::Tekken, "{name}");
        assert_eq!(tok.vocab_size() as u64, want["n_words"].as_u64().unwrap());
        assert_eq!(tok.tekken_version(), want["version"].as_str());
        for (id, text) in want["specials"].as_array().unwrap().iter().enumerate() {
            let id = id as u32;
            assert!(tok.is_special_id(id), "{name} {id}");
            assert_eq!(tok.decode(&[id], false).unwrap(), text.as_str().unwrap());
            assert_eq!(tok.decode(&[id], true).unwrap(), "");
        }
        assert_eq!(tok.special_tokens().bos.as_ref().unwrap().id, 1);
        assert_eq!(tok.eos_token_ids(), &[2]);
        for case in want["short"].as_array().unwrap() {
            let text = case["text"].as_str().unwrap();
            let ids = common::golden_ids(&case["ids"]);
            assert_eq!(
                tok.encode(text, true).unwrap().ids(),
                &ids[..],
                "{name} {text:?}"
            );
            // Typed special-token text is text, as in the Tekkenizer.
            assert_eq!(tok.count(text, false).unwrap(), ids.len() - 1);
        }
        for case in want["sequences"].as_array().unwrap() {
            let ids = common::golden_ids(&case["ids"]);
            assert_eq!(
                tok.decode(&ids, true).unwrap(),
                case["ignore"].as_str().unwrap(),
                "{name} {ids:?}"
            );
            assert_eq!(
                tok.decode(&ids, false).unwrap(),
                case["keep"].as_str().unwrap(),
                "{name} {ids:?}"
            );
        }
    }
}

#[test]
fn tekken_encodes_every_input_as_mistral_common() {
    for (name, want) in golden()["files"].as_object().unwrap() {
        let tok = load(name);
        let parallel = tok.with_parallel(ParallelOptions {
            mode: ParallelMode::Always,
            ..ParallelOptions::default()
        });
        let inputs = want["inputs"].as_object().unwrap();
        let mut checked = 0;
        for (key, path) in common::all_inputs() {
            let Some(w) = inputs.get(&key) else { continue };
            let text = std::fs::read_to_string(&path).unwrap();
            let ids = tok
                .encode_with(&text, &crate::common::sequential(false))
                .unwrap()
                .into_ids();
            assert_eq!(
                ids.len() as u64,
                w["n"].as_u64().unwrap(),
                "{name} {key}: count"
            );
            assert_eq!(
                common::ids_sha256(&ids),
                w["sha256"].as_str().unwrap(),
                "{name} {key}"
            );
            let decoded = tok.decode(&ids, false).unwrap();
            assert_eq!(
                common::sha256(decoded.as_bytes()),
                w["decode_sha256"].as_str().unwrap(),
                "{name} {key}: decode"
            );
            let lopt = parallel.encode(&text, false).unwrap();
            assert_eq!(lopt.ids(), &ids[..], "{name} {key}: parallel");
            checked += 1;
        }
        assert_eq!(checked, inputs.len(), "{name}: inputs");
        assert!(checked >= 40);
    }
}

#[test]
fn tekken_streams_join_to_the_decode() {
    let tok = load("tekken_240718.json");
    for (_, path) in common::all_inputs().into_iter().take(12) {
        let text = common::prefix(&std::fs::read_to_string(&path).unwrap(), 16 << 10).to_owned();
        let ids = tok.encode(&text, true).unwrap().into_ids();
        for skip in [true, false] {
            let mut stream = DecodeStream::new(&tok, &[], skip);
            let mut out = String::new();
            for &id in &ids {
                if let Some(piece) = stream.step(id).unwrap() {
                    out.push_str(&piece);
                }
            }
            if let Some(rest) = stream.flush().unwrap() {
                out.push_str(&rest);
            }
            assert_eq!(out, tok.decode(&ids, skip).unwrap());
        }
    }
}

#[test]
fn a_folder_with_both_files_loads_tekken_unless_told_otherwise() {
    let dir = std::env::temp_dir().join(format!("rtok-tekken-pick-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let nemo = common::snapshot_file("mistralai/Mistral-Nemo-Instruct-2407", "tokenizer.json");
    std::fs::copy(&nemo, dir.join("tokenizer.json")).unwrap();
    std::fs::copy(
        common::shared_dir().join("fixtures/mistral/tekken_240718.json"),
        dir.join("tekken.json"),
    )
    .unwrap();
    let load = |prefer_tokenizer_json| {
        common::offline_options()
            .with_prefer_tokenizer_json(prefer_tokenizer_json)
            .with_bypass_registry(true)
            .load(dir.to_str().unwrap())
            .unwrap()
    };
    let (tekken, json) = (load(false), load(true));
    assert_eq!(tekken.format(), Format::Tekken);
    assert_eq!(json.format(), Format::HfJson);
    // Nemo's tokenizer.json is the same vocabulary: plain text encodes alike.
    let text = std::fs::read_to_string(common::all_inputs()[0].1.clone()).unwrap();
    assert_eq!(
        tekken.encode(&text, true).unwrap().ids(),
        json.encode(&text, true).unwrap().ids()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
