//! Parity on model variants (see make_spm_golden.py): fixture models with
//! protobuf fields appended, and four tiny trained models. Covers settings
//! the fixtures do not use, and models sentencepiece refuses to load.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::spm_common;

use std::path::Path;

use router_tokenizer::sentencepiece::SentencePieceModel;
use spm_common::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn prefix(data: &[u8], n: usize) -> &[u8] {
    if data.len() <= n {
        return data;
    }
    let mut n = n;
    while n > 0 && (data[n] & 0xC0) == 0x80 {
        n -= 1;
    }
    &data[..n]
}

#[test]
fn variants_parity() {
    let g = golden();
    let short: Vec<String> = g["models"][MODELS[0]]["short"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_owned())
        .collect();
    let limit = g["variant_prefix_bytes"].as_u64().unwrap() as usize;
    let inputs: Vec<(String, String)> = g["files"]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| {
            (
                k.clone(),
                String::from_utf8(prefix(&read_input(k), limit).to_vec()).unwrap(),
            )
        })
        .collect();
    let golden_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/sentencepiece");
    let mut failures = Vec::new();
    let mut report = Vec::new();
    for v in g["variants"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        let base = v["base"].as_str().unwrap();
        let mut bytes = if base.starts_with("variants/") {
            std::fs::read(golden_dir.join(base)).unwrap()
        } else {
            model_bytes(base)
        };
        bytes.extend(hex(v["patch_hex"].as_str().unwrap()));
        let loaded = SentencePieceModel::from_bytes(&bytes);
        if let Some(err) = v.get("load_error") {
            match loaded {
                Err(e) => report.push(format!(
                    "{name}: rejected as expected ({e}; sentencepiece: {err})"
                )),
                Ok(_) => failures.push(format!("{name}: loaded, sentencepiece refused it: {err}")),
            }
            continue;
        }
        let model = match loaded {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{name}: failed to load: {e}"));
                continue;
            }
        };
        for (case, text) in v["short"].as_array().unwrap().iter().zip(&short) {
            let want: Vec<u32> = case["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as u32)
                .collect();
            for pass in 0..2 {
                let got = model.encode(text);
                if got != want {
                    failures.push(format!(
                        "{name} pass {pass} encode {text:?}: got {got:?} want {want:?}"
                    ));
                }
            }
            let dec = model.decode(&want, true).unwrap();
            if dec != case["decode"].as_str().unwrap() {
                failures.push(format!(
                    "{name} decode {text:?}: got {dec:?} want {:?}",
                    case["decode"]
                ));
            }
        }
        let (mut enc_ok, mut dec_ok) = (0, 0);
        for (key, text) in &inputs {
            let e = &v["files"][key.as_str()];
            let ids = model.encode(text);
            let ids2 = model.encode(text);
            let mut offs = Vec::new();
            let mut ids3 = Vec::new();
            model.encode_with_offsets(text, &mut ids3, &mut offs);
            let ok = ids.len() as u64 == e["n_ids"].as_u64().unwrap()
                && ids_sha256(&ids) == e["ids_sha256"].as_str().unwrap()
                && ids2 == ids
                && ids3 == ids;
            enc_ok += usize::from(ok);
            if !ok {
                failures.push(format!("{name} {key}: encode differs"));
            }
            let dec = model.decode(&ids, true).unwrap();
            let dok = sha256_hex(dec.as_bytes()) == e["decode_sha256"].as_str().unwrap();
            dec_ok += usize::from(dok);
            if !dok {
                failures.push(format!("{name} {key}: decode differs"));
            }
        }
        report.push(format!(
            "{name}: encode {enc_ok}/{n} decode {dec_ok}/{n}",
            n = inputs.len()
        ));
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
}
