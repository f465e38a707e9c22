//! Differential tests against the Python reference implementations.
//!
//! `tests/golden/encode.json` holds, for every shared tokenizer and every corpus
//! and adversarial file, the sha256 of the ids Python `tokenizers` / `tiktoken`
//! produce (made by `tests/golden/make_encode_golden.py`). Each test collects
//! every mismatch before failing, so one run shows the whole picture.

mod common;

use common::*;
use serde_json::Value;
use std::sync::LazyLock;

static GOLDEN: LazyLock<Value> = LazyLock::new(|| {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/encode.json");
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}; regenerate with tests/golden/make_encode_golden.py"));
    serde_json::from_str(&text).unwrap()
});

/// tiktoken goldens → the source our loader takes for them.
const TIKTOKEN: &[(&str, &str)] = &[
    ("r50k_base", "r50k_base"),
    ("p50k_base", "p50k_base"),
    ("cl100k_base", "cl100k_base"),
    ("o200k_base", "o200k_base"),
    ("o200k_harmony", "o200k_harmony"),
    ("llama3", "fixtures/tiktoken/llama3-tokenizer.model"),
];

/// Checks one tokenizer against one golden section; returns mismatch lines.
fn check(tok: &router_tokenizer::Tokenizer, golden: &Value, with_special: Option<&str>) -> Vec<String> {
    let mut bad = Vec::new();
    let inputs = &GOLDEN["inputs"];
    for (key, path) in all_inputs() {
        let Some(entry) = golden.get(&key) else {
            bad.push(format!("{key}: no golden entry"));
            continue;
        };
        let bytes = std::fs::read(&path).unwrap();
        if let Some(want) = inputs[&key]["sha256"].as_str() {
            assert_eq!(sha256(&bytes), want, "{key}: input differs from the one the goldens were made from");
        }
        let text = String::from_utf8(bytes).unwrap();
        let plain = &entry["plain"];
        if plain.get("skipped").is_some() {
            continue;
        }
        let ids = tok.encode(&text, false).unwrap_or_else(|e| panic!("{key}: {e}"));
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
            let Some(want) = entry[section]["sha256"].as_str() else { continue };
            let ids = tok.encode(&text, true).unwrap();
            if ids_sha256(ids.ids()) != want {
                bad.push(format!("{key}: {section} ids differ"));
            }
        }
    }
    bad
}

fn report(name: &str, bad: Vec<String>) {
    assert!(bad.is_empty(), "{name}: {} mismatches:\n{}", bad.len(), bad.join("\n"));
}

/// Tokenizers whose transformers class rebuilds the template from
/// `add_bos_token`/`add_eos_token`, so `add_special_tokens` follows
/// transformers rather than the file's post-processor.
const TRANSFORMERS_TEMPLATE: &[&str] = &["deepseek-ai/DeepSeek-V3", "CohereForAI/c4ai-command-r-plus"];

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
        let source = if source.starts_with("fixtures/") {
            shared_dir().join(source).to_string_lossy().into_owned()
        } else {
            (*source).to_owned()
        };
        let tok = tokenizer(&source);
        bad.extend(check(&tok, golden, None).into_iter().map(|l| format!("{name}: {l}")));
    }
    report("tiktoken", bad);
}

/// Short hostile strings with full id lists, so a failure shows the diff.
#[test]
fn parity_small_strings() {
    let small = GOLDEN["small"].as_object().expect("golden `small` section");
    let mut bad = Vec::new();
    let texts: Vec<String> = small["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    for (source, per_text) in small["ids"].as_object().unwrap() {
        let load_as = TIKTOKEN
            .iter()
            .find(|(n, _)| n == source)
            .map(|(_, s)| {
                if s.starts_with("fixtures/") {
                    shared_dir().join(s).to_string_lossy().into_owned()
                } else {
                    (*s).to_owned()
                }
            })
            .unwrap_or_else(|| source.clone());
        let tok = tokenizer(&load_as);
        for (text, want) in texts.iter().zip(per_text.as_array().unwrap()) {
            let want: Vec<u32> = serde_json::from_value(want["plain"].clone()).unwrap();
            let got = tok.encode(text, false).unwrap();
            if got.ids() != want {
                bad.push(format!("{source} {text:?}:\n  got  {:?}\n  want {want:?}", got.ids()));
            }
            if !TRANSFORMERS_TEMPLATE.contains(&source.as_str())
                && let Some(w) = want_with_special(&want_obj(per_text, text, &texts))
            {
                let got = tok.encode(text, true).unwrap();
                if got.ids() != w {
                    bad.push(format!("{source} {text:?} (add_special_tokens):\n  got  {:?}\n  want {w:?}", got.ids()));
                }
            }
        }
    }
    report("small strings", bad);
}

fn want_obj<'a>(per_text: &'a Value, text: &str, texts: &[String]) -> &'a Value {
    let i = texts.iter().position(|t| t == text).unwrap();
    &per_text[i]
}

fn want_with_special(v: &Value) -> Option<Vec<u32>> {
    serde_json::from_value(v.get("with_special")?.clone()).ok()
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
