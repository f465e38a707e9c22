//! A character BPE's segments cut where no vocabulary entry joins two chars
//! (DESIGN.md invariant `cut-where-no-entry-joins`) on the file shaped like a SentencePiece
//! conversion, Mistral-7B's `tokenizer.json`, run off its SentencePiece
//! route (as a file with padding kept, or with added tokens the route
//! refuses, is): against the same load without the cuts, on every corpus
//! and adversarial file, on text seen again, and on random mixtures.
//! `tests/it/space_routes.rs` runs the same checks on Gemma-3.

use crate::common;

use common::*;
use proptest::prelude::*;
use router_tokenizer::__testing::FastRoute;
use router_tokenizer::{SpecialTokenPolicy, Tokenizer};
use std::sync::OnceLock;

const MISTRAL: &str = "mistralai/Mistral-7B-v0.1";

/// (cuts on, cuts off) for Mistral-7B, special tokens parsed.
fn pair() -> &'static (Tokenizer, Tokenizer) {
    static PAIR: OnceLock<(Tokenizer, Tokenizer)> = OnceLock::new();
    PAIR.get_or_init(|| route_pair(MISTRAL, SpecialTokenPolicy::Parse, FastRoute::JoinCuts))
}

/// The character BPEs whose segments are one word: Gemma-3 (whole
/// pieces) and Mistral-7B (no pre-tokenizer), of every shared file.
#[test]
fn which_files_take_the_cuts() {
    const TAKE: [&str; 2] = ["google/gemma-3-4b-it", MISTRAL];
    for model in HUB_MODELS {
        let takes = TAKE.contains(model);
        assert_eq!(route_applies(model, FastRoute::JoinCuts), takes, "{model}");
    }
}

#[test]
fn every_file_gives_the_same_ids_and_offsets() {
    let (on, off) = pair();
    assert_same_on_all_inputs(MISTRAL, "join cuts", on, off);
}

#[test]
fn repeated_and_changed_text_matches() {
    let (on, off) = pair();
    let (text, changed) = line_repeats(8 << 10);
    std::thread::scope(|scope| {
        scope.spawn(|| assert_memo_rounds("join cuts", on, off, &text, &changed));
    });
}

const ALPHABET: [&str; 16] = [
    " ", "\u{2581}", "\n", "\t", "a", "the", "ing", ".", ",", "中", "文字", "🦀", "<s>", "</s>",
    "<0x0A>", "é",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(64)))]

    #[test]
    fn random_mixtures_match(picks in prop::collection::vec(0..ALPHABET.len(), 0..200)) {
        let text: String = picks.iter().map(|&i| ALPHABET[i]).collect();
        let (on, off) = pair();
        assert_same_encodes(MISTRAL, &format!("{text:?}"), on, off, &text);
    }
}
