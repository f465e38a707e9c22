//! Gemma-3's space handling on the crate's routes: pieces that skip a
//! pre-tokenizer that cannot split (DESIGN.md invariant `crate-steps-equal-reference`), the lone
//! `Replace(" " → "▁")` normalizer run by the crate (invariant `crate-steps-equal-reference`), and
//! those
//! pieces cut where no vocabulary entry joins two chars, remembered whole
//! when seen again (invariant `cut-where-no-entry-joins`). Gemma-3
//! replaces every `" "` by `"▁"` and then splits on `" "`, which it can no
//! longer find. The file loaded with each route must encode as the same
//! file with that route off: ids and offsets, special tokens parsed and as
//! plain text, on every corpus and adversarial file, on space-heavy texts,
//! and on random mixtures. Files of other shapes keep `tokenizers`' steps.

use crate::common;

use common::*;
use proptest::prelude::*;
use router_tokenizer::__testing::FastRoute;
use router_tokenizer::{SpecialTokenPolicy, Tokenizer};

const GEMMA: &str = "google/gemma-3-4b-it";
const ROUTES: [FastRoute; 3] = [
    FastRoute::WholePieces,
    FastRoute::LoneReplace,
    FastRoute::JoinCuts,
];
const POLICIES: [SpecialTokenPolicy; 2] =
    [SpecialTokenPolicy::Parse, SpecialTokenPolicy::PlainText];

/// (route on, route off) for Gemma-3 under `policy`, held while this test
/// runs ([`Lease`]: not to be kept under the other modules' tests).
fn pair(route: usize, policy: usize) -> (Tokenizer, Tokenizer) {
    static PAIRS: [[Lease<(Tokenizer, Tokenizer)>; 2]; 3] =
        [const { [const { Lease::new() }; 2] }; 3];
    let pair = PAIRS[route][policy].get(|| route_pair(GEMMA, POLICIES[policy], ROUTES[route]));
    (pair.0.clone(), pair.1.clone())
}

/// Every route and policy: `(what, on, off)`.
fn pairs() -> Vec<(String, Tokenizer, Tokenizer)> {
    let mut out = Vec::new();
    for (r, route) in ROUTES.iter().enumerate() {
        for (p, policy) in POLICIES.iter().enumerate() {
            let (on, off) = pair(r, p);
            out.push((format!("{route:?} {policy:?}"), on, off));
        }
    }
    out
}

/// Which shared files take them: Gemma-3 only (Mistral-7B also replaces
/// spaces, after a `Prepend`, and has no `Split`).
#[test]
fn only_gemma_takes_them() {
    for (model, takes) in [
        (GEMMA, true),
        ("mistralai/Mistral-7B-v0.1", false),
        ("mistralai/Mistral-Nemo-Instruct-2407", false),
        ("meta-llama/Meta-Llama-3-8B-Instruct", false),
        ("Qwen/Qwen3-8B", false),
        ("CohereForAI/c4ai-command-r-plus", false),
        ("sentence-transformers/all-MiniLM-L6-v2", false),
        ("deepseek-ai/DeepSeek-V3", false),
        ("openai/gpt-oss-20b", false),
    ] {
        // `tests/it/join_cuts.rs` says which files take the cuts.
        for route in &ROUTES[..2] {
            assert_eq!(route_applies(model, *route), takes, "{model} {route:?}");
        }
    }
}

#[test]
fn every_file_gives_the_same_ids_and_offsets() {
    for (what, on, off) in &pairs() {
        assert_same_on_all_inputs(GEMMA, what, on, off);
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
    // Punctuation, CJK and scripts whose pairs some entry joins, byte
    // fallback chars and chars past the BMP beside spaces.
    texts.push("a.b,c;d:e!f?g(h)i[j]k{l}m\"n'o-p_q=r+s*t/u\\v|w<x>y~z`".to_owned());
    texts.push("中文字幕的研究，日本語のテキスト。한국어 텍스트 ไทย ภาษา".to_owned());
    texts.push("\u{e000}\u{10ffff} 😀 a😀b \u{1F600}\u{2581}x \u{fffd} \u{0}".to_owned());
    texts.push("<0x41> <0x41>\u{2581}>\u{2581}> a>\u{2581}b".to_owned());
    texts.push(" \t \n \r\n \u{a0} \u{3000} ".to_owned());
    for (what, on, off) in &pairs() {
        for t in &texts {
            assert_same_encodes(GEMMA, &format!("{t:?} {what}"), on, off, t);
        }
    }
}

const ALPHABET: [&str; 20] = [
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
    ".",
    ">",
    "ing",
    "文字",
    "\u{e000}",
    "é",
    "the",
    "<0x0A>",
];

/// Each route's pair on a thread of its own (invariant `cut-where-no-entry-joins`'s memo is per
/// thread
/// and its rate starts low): corpus lines five times, then a changed copy,
/// then alternating; every encode against the load without the route.
#[test]
fn repeated_and_changed_text_matches() {
    let (text, changed) = line_repeats(8 << 10);
    let pairs = pairs();
    std::thread::scope(|scope| {
        for (what, on, off) in &pairs {
            let (text, changed) = (&text, &changed);
            scope.spawn(move || assert_memo_rounds(what, on, off, text, changed));
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(64)))]

    #[test]
    fn random_mixtures_match(picks in prop::collection::vec(0..ALPHABET.len(), 0..200)) {
        let text: String = picks.iter().map(|&i| ALPHABET[i]).collect();
        for (what, on, off) in &pairs() {
            assert_same_encodes(GEMMA, &format!("{text:?} {what}"), on, off, &text);
        }
    }
}
