//! Differential tests against the Python reference implementations.
//!
//! `tests/golden/encode.json` holds, for every shared tokenizer and every corpus
//! and adversarial file, the sha256 of the ids Python `tokenizers` / `tiktoken`
//! produce (made by `tests/golden/make_encode_golden.py`). Each test collects
//! every mismatch before failing, so one run shows the whole picture.

use crate::common;

use common::*;
use serde_json::Value;
use std::sync::LazyLock;

static GOLDEN: LazyLock<Value> = LazyLock::new(|| {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/encode.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!("{path}: {e}; regenerate with tests/golden/make_encode_golden.py")
    });
    serde_json::from_str(&text).unwrap()
});

/// tiktoken goldens → the source our loader takes for them.
const TIKTOKEN: &[(&str, &str)] = &[
    ("r50k_base", "r50k_base"),
    ("p50k_base", "p50k_base"),
    ("p50k_edit", "p50k_edit"),
    ("cl100k_base", "cl100k_base"),
    ("o200k_base", "o200k_base"),
    ("o200k_harmony", "o200k_harmony"),
    // The rank file inside the Meta-Llama-3 snapshot: its specials come from the
    // snapshot's tokenizer_config.json one level up, as the goldens' do.
    (
        "llama3",
        "hf-cache/hub/models--meta-llama--Meta-Llama-3-8B-Instruct/snapshots/bdafbf46f0e1dfaf32a169aaf2711c1bdfddf412/original/tokenizer.model",
    ),
];

/// Checks one tokenizer against one golden section; returns mismatch lines.
fn check(
    tok: &router_tokenizer::Tokenizer,
    golden: &Value,
    with_special: Option<&str>,
) -> Vec<String> {
    let mut bad = Vec::new();
    let inputs = &GOLDEN["inputs"];
    for (key, path) in all_inputs() {
        let Some(entry) = golden.get(&key) else {
            bad.push(format!("{key}: no golden entry"));
            continue;
        };
        let bytes = std::fs::read(&path).unwrap();
        if let Some(want) = inputs[&key]["sha256"].as_str() {
            assert_eq!(
                sha256(&bytes),
                want,
                "{key}: input differs from the one the goldens were made from"
            );
        }
        let text = String::from_utf8(bytes).unwrap();
        let plain = &entry["plain"];
        if plain.get("skipped").is_some() {
            continue;
        }
        let ids = tok
            .encode(&text, false)
            .unwrap_or_else(|e| panic!("{key}: {e}"));
        let got = ids_sha256(ids.ids());
        if Some(got.as_str()) != plain["sha256"].as_str() {
            bad.push(format!(
                "{key}: plain ids differ ({} ids, reference {})",
                ids.len(),
                plain["n"]
            ));
            continue;
        }
        if let Some(want) = plain["decode_sha256"].as_str() {
            let text = tok.decode(ids.ids(), false).unwrap();
            if sha256(text.as_bytes()) != want {
                bad.push(format!("{key}: decode differs"));
            }
        }
        if let Some(want) = plain["decode_skip_sha256"].as_str() {
            let text = tok.decode(ids.ids(), true).unwrap();
            if sha256(text.as_bytes()) != want {
                bad.push(format!("{key}: decode(skip_special_tokens) differs"));
            }
        }
        if let Some(section) = with_special {
            let Some(want) = entry[section]["sha256"].as_str() else {
                continue;
            };
            let ids = tok.encode(&text, true).unwrap();
            if ids_sha256(ids.ids()) != want {
                bad.push(format!("{key}: {section} ids differ"));
            }
        }
    }
    bad
}

fn report(name: &str, bad: Vec<String>) {
    assert!(
        bad.is_empty(),
        "{name}: {} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Tokenizers whose transformers class rebuilds the template from
/// `add_bos_token`/`add_eos_token`, so `add_special_tokens` follows
/// transformers rather than the file's post-processor.
const TRANSFORMERS_TEMPLATE: &[&str] =
    &["deepseek-ai/DeepSeek-V3", "CohereForAI/c4ai-command-r-plus"];

macro_rules! hub_parity {
    ($($test:ident => $model:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            let tok = tokenizer($model);
            let golden = &GOLDEN["hf"][$model];
            assert!(golden.is_object(), "no goldens for {}", $model);
            let section = (!TRANSFORMERS_TEMPLATE.contains(&$model)).then_some("with_special");
            report($model, check(&tok, golden, section));
        }
    )*};
}

hub_parity! {
    parity_llama3 => "meta-llama/Meta-Llama-3-8B-Instruct",
    parity_llama32 => "meta-llama/Llama-3.2-1B-Instruct",
    parity_mistral7b => "mistralai/Mistral-7B-v0.1",
    parity_mistral_nemo => "mistralai/Mistral-Nemo-Instruct-2407",
    parity_qwen3 => "Qwen/Qwen3-8B",
    parity_deepseek_v3 => "deepseek-ai/DeepSeek-V3",
    parity_gemma3 => "google/gemma-3-4b-it",
    parity_gpt_oss => "openai/gpt-oss-20b",
    parity_command_r_plus => "CohereForAI/c4ai-command-r-plus",
    parity_gpt35 => "Xenova/gpt-3.5-turbo",
    parity_minilm => "sentence-transformers/all-MiniLM-L6-v2",
}

#[test]
fn parity_tiktoken() {
    let mut bad = Vec::new();
    for (name, source) in TIKTOKEN {
        let golden = &GOLDEN["tiktoken"][*name];
        if !golden.is_object() {
            bad.push(format!("{name}: no goldens"));
            continue;
        }
        let source = if source.contains('/') {
            shared_dir().join(source).to_string_lossy().into_owned()
        } else {
            (*source).to_owned()
        };
        let tok = tokenizer(&source);
        // The byte-level engine builds in the background; test it, not the regex path.
        tok.warm_up();
        bad.extend(
            check(&tok, golden, None)
                .into_iter()
                .map(|l| format!("{name}: {l}")),
        );
    }
    report("tiktoken", bad);
}

fn load_as(name: &str) -> String {
    TIKTOKEN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| {
            if s.contains('/') {
                shared_dir().join(s).to_string_lossy().into_owned()
            } else {
                (*s).to_owned()
            }
        })
        .unwrap_or_else(|| name.to_owned())
}

fn plain_text_tokenizer(source: &str) -> router_tokenizer::Tokenizer {
    offline_options()
        .with_special_tokens(router_tokenizer::SpecialTokenPolicy::PlainText)
        .load(source)
        .unwrap()
}

/// Short hostile strings with full id lists, so a failure shows the diff.
#[test]
fn parity_small_strings() {
    let small = GOLDEN["small"].as_array().expect("golden `small` section");
    let mut bad = Vec::new();
    let mut plain_text = std::collections::HashMap::new();
    for case in small {
        let text = case["text"].as_str().unwrap();
        for (section, with_special_ok) in [("hf", true), ("tiktoken", false)] {
            for (name, want) in case[section].as_object().unwrap() {
                let source = load_as(name);
                let tok = tokenizer(&source);
                // The byte-level engine builds in the background; test it, not the regex path.
                tok.warm_up();
                let ids = |v: &Value| -> Vec<u32> { serde_json::from_value(v.clone()).unwrap() };
                let got = tok.encode(text, false).unwrap();
                if got.ids() != ids(&want["plain"]) {
                    bad.push(format!(
                        "{name} {text:?}:\n  got  {:?}\n  want {:?}",
                        got.ids(),
                        ids(&want["plain"])
                    ));
                }
                if with_special_ok && !TRANSFORMERS_TEMPLATE.contains(&name.as_str()) {
                    let got = tok.encode(text, true).unwrap();
                    if got.ids() != ids(&want["with_special"]) {
                        bad.push(format!(
                            "{name} {text:?} (add_special_tokens):\n  got  {:?}\n  want {:?}",
                            got.ids(),
                            ids(&want["with_special"])
                        ));
                    }
                }
                if want.get("specials_as_text").is_some() {
                    let pt = plain_text
                        .entry(source.clone())
                        .or_insert_with(|| plain_text_tokenizer(&source));
                    let got = pt.encode(text, false).unwrap();
                    if got.ids() != ids(&want["specials_as_text"]) {
                        bad.push(format!(
                            "{name} {text:?} (specials as text):\n  got  {:?}\n  want {:?}",
                            got.ids(),
                            ids(&want["specials_as_text"])
                        ));
                    }
                }
            }
        }
    }
    report("small strings", bad);
}

/// The plain-text special-token policy against `encode_special_tokens = True` /
/// `encode_ordinary`, on the files the goldens cover.
#[test]
fn parity_specials_as_text() {
    let keys: Vec<String> =
        serde_json::from_value(GOLDEN["meta"]["specials_as_text_keys"].clone()).unwrap();
    let inputs: Vec<(String, String)> = all_inputs()
        .into_iter()
        .filter(|(k, _)| keys.contains(k))
        .map(|(k, p)| (k, std::fs::read_to_string(p).unwrap()))
        .collect();
    assert_eq!(inputs.len(), keys.len());
    let mut bad = Vec::new();
    for section in ["hf", "tiktoken"] {
        for (name, per_file) in GOLDEN[section].as_object().unwrap() {
            let tok = plain_text_tokenizer(&load_as(name));
            for (key, text) in &inputs {
                let want = per_file[key]["specials_as_text"]["sha256"]
                    .as_str()
                    .unwrap();
                if ids_sha256(tok.encode(text, false).unwrap().ids()) != want {
                    bad.push(format!("{name} {key}: specials-as-text ids differ"));
                }
            }
        }
    }
    report("specials as text", bad);
}

/// With `add_special_tokens`, classes that transformers rebuilds get
/// `[bos] + ids (+ [eos])` from `add_bos_token`/`add_eos_token`.
#[test]
fn transformers_templates_add_bos() {
    for model in TRANSFORMERS_TEMPLATE {
        let tok = tokenizer(model);
        let plain = tok.encode("Hello world", false).unwrap();
        let with = tok.encode("Hello world", true).unwrap();
        let bos = tok.special_tokens().bos.as_ref().unwrap().id;
        assert_eq!(with.ids()[0], bos, "{model}");
        assert_eq!(&with.ids()[1..], plain.ids(), "{model}");
    }
}
