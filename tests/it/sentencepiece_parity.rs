//! Parity with Google's sentencepiece (goldens from
//! tests/golden/sentencepiece/make_spm_golden.py): every fixture model ×
//! every corpus file and adversarial file, encode ids and decode text, plus
//! full id lists for short hostile strings and decode-only id sequences.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::spm_common;

use router_tokenizer::sentencepiece::SentencePieceModel;
use spm_common::*;

fn load(name: &str) -> SentencePieceModel {
    SentencePieceModel::from_bytes(&model_bytes(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn corpus_and_adversarial_parity() {
    let g = golden();
    let files: Vec<(String, String)> = g["files"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v["sha256"].as_str().unwrap().to_owned()))
        .collect();
    // Read inputs once and check they are the bytes the goldens were made from.
    let inputs: Vec<(String, String)> = files
        .iter()
        .map(|(k, sha)| {
            let data = read_input(k);
            assert_eq!(
                &sha256_hex(&data),
                sha,
                "{k} differs from the file the goldens were made from"
            );
            (k.clone(), String::from_utf8(data).unwrap())
        })
        .collect();
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for name in MODELS {
        let model = load(name);
        let exp = &g["models"][name];
        assert_eq!(
            sha256_hex(&model_bytes(name)),
            exp["sha256"].as_str().unwrap(),
            "{name} changed"
        );
        let results: Vec<(String, bool, bool)> = std::thread::scope(|s| {
            let chunks: Vec<_> = inputs.chunks(inputs.len().div_ceil(2)).collect();
            let handles: Vec<_> = chunks
                .into_iter()
                .map(|chunk| {
                    let model = &model;
                    s.spawn(move || {
                        chunk
                            .iter()
                            .map(|(key, text)| {
                                let e = &exp["files"][key.as_str()];
                                let ids = model.encode(text);
                                let enc_ok = ids.len() as u64 == e["n_ids"].as_u64().unwrap()
                                    && ids_sha256(&ids) == e["ids_sha256"].as_str().unwrap();
                                let dec = model.decode(&ids, true).unwrap();
                                let dec_ok = sha256_hex(dec.as_bytes())
                                    == e["decode_sha256"].as_str().unwrap();
                                (key.clone(), enc_ok, dec_ok)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let enc = results.iter().filter(|r| r.1).count();
        let dec = results.iter().filter(|r| r.2).count();
        report.push(format!(
            "{name}: encode {enc}/{n} decode {dec}/{n}",
            n = results.len()
        ));
        for (k, e, d) in results {
            if !e || !d {
                failures.push(format!("{name} {k}: encode_ok={e} decode_ok={d}"));
            }
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        failures.is_empty(),
        "parity failures:\n{}",
        failures.join("\n")
    );
}

#[test]
fn short_strings_parity() {
    let g = golden();
    let mut failures = Vec::new();
    for name in MODELS {
        let model = load(name);
        for case in g["models"][name]["short"].as_array().unwrap() {
            let text = case["text"].as_str().unwrap();
            let want: Vec<u32> = case["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as u32)
                .collect();
            let got = model.encode(text);
            if got != want {
                failures.push(format!("{name} encode {text:?}: got {got:?} want {want:?}"));
            }
            let dec = model.decode(&want, true).unwrap();
            if dec != case["decode"].as_str().unwrap() {
                failures.push(format!(
                    "{name} decode {text:?}: got {dec:?} want {:?}",
                    case["decode"]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn decode_sequences_parity() {
    let g = golden();
    let mut failures = Vec::new();
    for name in MODELS {
        let model = load(name);
        for case in g["models"][name]["decode"].as_array().unwrap() {
            let ids: Vec<u32> = case["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as u32)
                .collect();
            let got = model.decode(&ids, true).unwrap();
            if got != case["text"].as_str().unwrap() {
                failures.push(format!(
                    "{name} {ids:?}: got {got:?} want {:?}",
                    case["text"]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn special_ids_match() {
    let g = golden();
    for name in MODELS {
        let model = load(name);
        let e = &g["models"][name];
        let opt = |v: &serde_json::Value| {
            let x = v.as_i64().unwrap();
            (x >= 0).then_some(x as u32)
        };
        assert_eq!(
            model.vocab_size() as u64,
            e["vocab_size"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(model.bos_id(), opt(&e["bos_id"]), "{name} bos");
        assert_eq!(model.eos_id(), opt(&e["eos_id"]), "{name} eos");
        assert_eq!(model.unk_id(), opt(&e["unk_id"]), "{name} unk");
        assert_eq!(model.pad_id(), opt(&e["pad_id"]), "{name} pad");
        assert!(model.decode(&[model.vocab_size() as u32], true).is_err());
    }
}
