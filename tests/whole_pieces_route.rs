//! Pieces that skip the pre-tokenizer (DESIGN.md claim 338): Gemma-3
//! replaces every `" "` by `"▁"` and then splits on `" "`, which it can no
//! longer find, so each piece is one pre-token. The file loaded with the
//! shortcut must encode as the same file calling `tokenizers`'
//! pre-tokenizer: ids and offsets, special tokens parsed and as plain
//! text, on every corpus and adversarial file, on space-heavy texts, and
//! on random mixtures. Files whose pre-tokenizer can still split keep it.

mod common;

use common::*;
use proptest::prelude::*;
use router_tokenizer::__testing::FastRoute;
use router_tokenizer::{SpecialTokenPolicy, Tokenizer};
use std::sync::OnceLock;

const GEMMA: &str = "google/gemma-3-4b-it";
const POLICIES: [SpecialTokenPolicy; 2] =
    [SpecialTokenPolicy::Parse, SpecialTokenPolicy::PlainText];

/// (shortcut, `tokenizers`' pre-tokenizer) for Gemma-3 under `policy`.
fn pair(policy: usize) -> &'static (Tokenizer, Tokenizer) {
    static PAIRS: [OnceLock<(Tokenizer, Tokenizer)>; 2] = [OnceLock::new(), OnceLock::new()];
    PAIRS[policy].get_or_init(|| route_pair(GEMMA, POLICIES[policy], FastRoute::WholePieces))
}

/// Which shared files take it: only a split on a char the normalizer
/// removed everywhere.
#[test]
fn only_a_split_on_a_replaced_char_takes_it() {
    for (model, takes) in [
        (GEMMA, true),
        ("mistralai/Mistral-7B-v0.1", false),
        ("mistralai/Mistral-Nemo-Instruct-2407", false),
        ("meta-llama/Meta-Llama-3-8B-Instruct", false),
        ("Qwen/Qwen3-8B", false),
        ("CohereForAI/c4ai-command-r-plus", false),
        ("sentence-transformers/all-MiniLM-L6-v2", false),
    ] {
        assert_eq!(
            route_applies(model, FastRoute::WholePieces),
            takes,
            "{model}"
        );
    }
}

#[test]
fn every_file_gives_the_same_ids_and_offsets() {
    for (p, policy) in POLICIES.iter().enumerate() {
        let (on, off) = pair(p);
        assert_same_on_all_inputs(GEMMA, &format!("{policy:?}"), on, off);
    }
}

/// Spaces alone, in runs, at both ends, beside `▁`, tabs, newlines and
/// special tokens; no space at all.
#[test]
fn space_heavy_texts() {
    let mut texts: Vec<String> = Vec::new();
    for n in [1, 2, 3, 31, 32, 33, 100] {
        let run = " ".repeat(n);
        texts.push(run.clone());
        texts.push(format!("a{run}b"));
        texts.push(format!("{run}x{run}"));
        texts.push(format!("\u{2581}{run}\u{2581}"));
        texts.push(format!("def f():\n{run}return{run}1\n"));
        texts.push(format!("<start_of_turn>{run}user{run}<end_of_turn>"));
    }
    texts.push("nospacesatall中文".to_owned());
    texts.push(" \t \n \r\n \u{a0} \u{3000} ".to_owned());
    for (p, policy) in POLICIES.iter().enumerate() {
        let (on, off) = pair(p);
        for t in &texts {
            assert_same_encodes(GEMMA, &format!("{t:?} {policy:?}"), on, off, t);
        }
    }
}

const ALPHABET: [&str; 12] = [
    " ",
    "  ",
    "\u{2581}",
    "\n",
    "\t",
    "a",
    "Z",
    "1",
    "中",
    "🦀",
    "<start_of_turn>",
    "<mask>",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(64)))]

    #[test]
    fn random_mixtures_match(picks in prop::collection::vec(0..ALPHABET.len(), 0..200)) {
        let text: String = picks.iter().map(|&i| ALPHABET[i]).collect();
        for p in 0..POLICIES.len() {
            let (on, off) = pair(p);
            let a = on.encode_with_offsets_sequential(&text, true).unwrap();
            let b = off.encode_with_offsets_sequential(&text, true).unwrap();
            prop_assert_eq!(a.ids(), b.ids(), "{:?}", text);
            prop_assert_eq!(a.offsets(), b.offsets(), "{:?}", text);
            let a = on.encode_sequential(&text, false).unwrap();
            let b = off.encode_sequential(&text, false).unwrap();
            prop_assert_eq!(a.ids(), b.ids(), "{:?}", text);
        }
    }
}
