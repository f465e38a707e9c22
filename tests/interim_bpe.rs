//! The interim byte-level BPE (DESIGN.md claims 340–343), which encodes
//! while a load's model is still being built, against the built model: ids
//! and offsets, special tokens parsed and as plain text, on every corpus and
//! adversarial file, on Unicode 17 probes, hostile mixtures, and LoPT
//! encodes, for every shared byte-level or byte-fallback BPE `tokenizer.json`. The route holds
//! the model build back, so every encode here runs on the interim engine
//! (each comparison checks it still does).

mod common;

use common::*;
use proptest::prelude::*;
use router_tokenizer::__testing::FastRoute;
use router_tokenizer::{SpecialTokenPolicy, Tokenizer};
use std::sync::OnceLock;

const MODELS: [&str; 9] = [
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct",
    "Qwen/Qwen3-8B",
    "deepseek-ai/DeepSeek-V3",
    "openai/gpt-oss-20b",
    "CohereForAI/c4ai-command-r-plus",
    "Xenova/gpt-3.5-turbo",
    "mistralai/Mistral-Nemo-Instruct-2407",
    "google/gemma-3-4b-it",
];
const POLICIES: [SpecialTokenPolicy; 2] =
    [SpecialTokenPolicy::Parse, SpecialTokenPolicy::PlainText];

/// (interim, built) for `MODELS[model]` under `POLICIES[policy]`.
fn pair(model: usize, policy: usize) -> &'static (Tokenizer, Tokenizer) {
    static PAIRS: [[OnceLock<(Tokenizer, Tokenizer)>; 2]; MODELS.len()] =
        [const { [const { OnceLock::new() }; 2] }; MODELS.len()];
    PAIRS[model][policy]
        .get_or_init(|| route_pair(MODELS[model], POLICIES[policy], FastRoute::InterimBpe))
}

/// Every model and policy: `(model, what, interim, built)`.
fn pairs() -> Vec<(&'static str, String, &'static Tokenizer, &'static Tokenizer)> {
    let mut out = Vec::new();
    for (m, model) in MODELS.iter().enumerate() {
        for (p, policy) in POLICIES.iter().enumerate() {
            let (on, off) = pair(m, p);
            out.push((*model, format!("{policy:?}"), on, off));
        }
    }
    out
}

/// Which shared files take it: the byte-level BPEs and Gemma-3's
/// byte-fallback BPE; not a SentencePiece conversion (its own route) or
/// WordPiece.
#[test]
fn only_byte_level_bpes_take_it() {
    for model in MODELS {
        assert!(route_applies(model, FastRoute::InterimBpe), "{model}");
    }
    for model in [
        "mistralai/Mistral-7B-v0.1",
        "sentence-transformers/all-MiniLM-L6-v2",
    ] {
        assert!(!route_applies(model, FastRoute::InterimBpe), "{model}");
    }
}

#[test]
fn every_file_gives_the_same_ids_and_offsets() {
    for (model, what, on, off) in pairs() {
        assert_same_on_all_inputs(model, &what, on, off);
        assert!(route_still_interim(on), "{model}: the model was built");
    }
}

/// The Unicode 17 probes of `tests/golden/unicode17` (the regex route of
/// claim 325 feeds the interim engine its spans too).
#[test]
fn unicode17_probes() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/unicode17/unicode17.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut texts: Vec<&str> = json["texts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    texts.push(json["long"].as_str().unwrap());
    assert!(texts.len() > 100, "probe texts in {}", path.display());
    for (model, what, on, off) in pairs() {
        for t in &texts {
            assert_same_encodes(model, &format!("{t:?} {what}"), on, off, t);
        }
    }
}

/// Long texts take the parallel path (LoPT), whose chunks run on the
/// interim engine on every pool thread.
#[test]
fn parallel_encodes_match() {
    let mixed: String = corpus_files()
        .iter()
        .map(|(_, p)| prefix(&std::fs::read_to_string(p).unwrap(), 96 << 10).to_owned())
        .collect();
    for (model, what, on, off) in pairs() {
        let a = on.encode(&mixed, false).unwrap();
        let b = off.encode(&mixed, false).unwrap();
        assert!(
            a.ids() == b.ids(),
            "{model} {what}: first difference at {}",
            first_difference(a.ids(), b.ids())
        );
        assert!(route_still_interim(on), "{model}: the model was built");
    }
}

/// Whether `tokenizer` still encodes on the interim engine.
fn route_still_interim(tokenizer: &Tokenizer) -> bool {
    router_tokenizer::__testing::interim_active(tokenizer)
}

const ALPHABET: [&str; 18] = [
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    "a",
    "Z",
    "'s",
    "'LL",
    "1",
    "123",
    "中",
    "🦀",
    "é",
    "\u{301}",
    "\u{10FFFF}",
    "<|begin_of_text|>",
    "<|endoftext|>",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]

    #[test]
    fn random_mixtures_match(picks in prop::collection::vec(0..ALPHABET.len(), 0..120)) {
        let text: String = picks.iter().map(|&i| ALPHABET[i]).collect();
        for (model, what, on, off) in pairs() {
            assert_same_encodes(model, &format!("{text:?} {what}"), on, off, &text);
        }
    }

    #[test]
    fn random_bytes_as_text_match(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        for (model, what, on, off) in pairs() {
            assert_same_encodes(model, &format!("{text:?} {what}"), on, off, &text);
        }
    }
}
