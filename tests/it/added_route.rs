//! Added tokens matched on the crate's automaton (DESIGN.md invariant
//! `crate-steps-equal-reference`):
//! Gemma-3 (6,415 added tokens: `<unusedN>`, HTML tags, runs of `\n`, `\t`
//! and `▁`) must encode as the same file loaded with `tokenizers`' own
//! matcher, ids and offsets, special tokens parsed and as plain text, on
//! every corpus and adversarial file, on runs and overlaps of the added
//! tokens, and on random mixtures. Files whose added tokens do not start
//! with whitespace keep `tokenizers`' matcher.

use crate::common;

use common::*;
use proptest::prelude::*;
use router_tokenizer::__testing::FastRoute;
use router_tokenizer::{SpecialTokenPolicy, Tokenizer};

const MODELS: [&str; 1] = ["google/gemma-3-4b-it"];
const POLICIES: [SpecialTokenPolicy; 2] =
    [SpecialTokenPolicy::Parse, SpecialTokenPolicy::PlainText];

/// One pair per model and policy, held while this test runs ([`Lease`]:
/// not to be kept under the other modules' tests).
fn pairs(model: usize, policy: usize) -> (Tokenizer, Tokenizer) {
    static PAIRS: [[Lease<(Tokenizer, Tokenizer)>; 2]; 1] = [[const { Lease::new() }; 2]];
    let pair = PAIRS[model][policy]
        .get(|| route_pair(MODELS[model], POLICIES[policy], FastRoute::AddedAutomaton));
    (pair.0.clone(), pair.1.clone())
}

/// Which shared files take the automaton.
#[test]
fn only_whitespace_led_added_tokens_take_it() {
    for (model, takes) in [
        ("google/gemma-3-4b-it", true),
        ("mistralai/Mistral-Nemo-Instruct-2407", false),
        ("meta-llama/Meta-Llama-3-8B-Instruct", false),
        ("Qwen/Qwen3-8B", false),
    ] {
        let applies = route_applies(model, FastRoute::AddedAutomaton);
        assert_eq!(applies, takes, "{model}");
    }
}

#[test]
fn every_file_gives_the_same_ids_and_offsets() {
    for (m, model) in MODELS.iter().enumerate() {
        for (p, policy) in POLICIES.iter().enumerate() {
            let (on, off) = &pairs(m, p);
            assert_same_on_all_inputs(model, &format!("{policy:?}"), on, off);
        }
    }
}

/// Runs longer and shorter than the longest added run, tokens back to
/// back and overlapping, partial tokens, special tokens (skipped as plain
/// text), at the start, the end and mid-text.
#[test]
fn runs_overlaps_and_partial_tokens() {
    let mut texts: Vec<String> = Vec::new();
    for n in [1, 2, 30, 31, 32, 33, 62, 64, 100] {
        for unit in ["\n", "\t", "\u{2581}", " ", "\r\n", "\n\t"] {
            let run = unit.repeat(n);
            texts.push(run.clone());
            texts.push(format!("a{run}b"));
            texts.push(format!("def f():{run}return 1{run}"));
        }
    }
    for t in [
        "<unused0><unused1><unused12>",
        "<unused1<unused12>>",
        "<unused99999>",
        "<mask>[multimodal]<start_of_turn>user\nhi<end_of_turn>\n",
        "<start_of_turn<start_of_turn>>",
        "[INST] hi [/INST]</s><s>[TOOL_CALLS][AVAILABLE_TOOLS]",
        "<table><tr><td>x</td></tr></table>",
        "<<<<>>>>[[[[]]]]",
        "<",
        "[",
        "\u{2581}<unused3>\u{2581}\n<mask>\t",
    ] {
        texts.push(t.to_owned());
        texts.push(format!("{t}{t}"));
        texts.push(format!("lead {t} trail"));
    }
    for (m, model) in MODELS.iter().enumerate() {
        for (p, policy) in POLICIES.iter().enumerate() {
            let (on, off) = &pairs(m, p);
            for t in &texts {
                assert_same_encodes(model, &format!("{t:?} {policy:?}"), on, off, t);
            }
        }
    }
}

const ALPHABET: [&str; 16] = [
    "\n",
    "\t",
    "\u{2581}",
    " ",
    "<",
    ">",
    "unused",
    "1",
    "2",
    "[",
    "]",
    "a",
    "中",
    "<start_of_turn>",
    "<mask>",
    "[INST]",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(64)))]

    #[test]
    fn random_mixtures_match(picks in prop::collection::vec(0..ALPHABET.len(), 0..200)) {
        let text: String = picks.iter().map(|&i| ALPHABET[i]).collect();
        for (m, model) in MODELS.iter().enumerate() {
            for (p, policy) in POLICIES.iter().enumerate() {
                let (on, off) = &pairs(m, p);
                assert_same_encodes(model, &format!("{text:?} {policy:?}"), on, off, &text);
            }
        }
    }
}
