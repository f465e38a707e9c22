//! Line groups seen again answered from a per-thread memo (DESIGN.md claim
//! 357), against the same files loaded without it: text encoded again,
//! changed where the cut rules bite, and alternating, with special tokens
//! parsed and as plain text, for every shared `tokenizer.json` whose
//! pre-tokenizer (or `\n` added token, claim 360) admits the cut. `tests/it/tiktoken_fast.rs` checks the
//! tiktoken encodings against `tiktoken-rs` the same way.

use crate::common;

use common::*;
use router_tokenizer::__testing::FastRoute;

const ADMITTED: [&str; 8] = [
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct",
    "Qwen/Qwen3-8B",
    "deepseek-ai/DeepSeek-V3",
    "openai/gpt-oss-20b",
    "Xenova/gpt-3.5-turbo",
    "mistralai/Mistral-Nemo-Instruct-2407",
    // By its `\n` added token, which ends every segment (claim 360).
    "google/gemma-3-4b-it",
];

/// The GPT-2 regex (Command-R+'s `ByteLevel` with `use_regex`) ends a
/// whitespace run before its newline only when a non-space follows, so a
/// line's pre-tokens depend on the next line: refused. So are the files
/// whose pre-tokenizer is not a regex split at all, unless a `\n` added
/// token ends every segment (Gemma-3).
#[test]
fn the_pre_tokenizer_decides() {
    for model in ADMITTED {
        assert!(route_applies(model, FastRoute::LineMemo), "{model}");
    }
    for model in [
        "CohereForAI/c4ai-command-r-plus",
        "mistralai/Mistral-7B-v0.1",
        "sentence-transformers/all-MiniLM-L6-v2",
    ] {
        assert!(!route_applies(model, FastRoute::LineMemo), "{model}");
    }
}

/// Each pair on a thread of its own (the memo is per thread, its rate
/// starts low): the text five times, the changed text three times, then
/// alternating; every encode against the load without the memo.
#[test]
fn repeated_and_changed_text_matches_the_load_without_it() {
    let (text, changed) = line_repeats(12 << 10);
    let pairs = route_pairs(&ADMITTED, FastRoute::LineMemo);
    std::thread::scope(|scope| {
        for (model, what, on, off) in &pairs {
            let (text, changed) = (&text, &changed);
            scope.spawn(move || {
                assert_memo_rounds(&format!("{model} {what}"), on, off, text, changed)
            });
        }
    });
}

/// SentencePiece BPE on the native engine (claim 359): three `.model` files
/// and Mistral-7B's `tokenizer.json` on its route. The reference is each
/// text encoded once on a thread of its own, where no memo has seen it (so
/// none answers); then, on one thread per tokenizer, the text five times,
/// the changed copy, and alternating must give those ids every round, and
/// so must the text behind a new first line (its first group, which carries
/// the dummy prefix where it starts the text, is now inside it).
#[test]
fn sentencepiece_lines_seen_again_match_a_fresh_encode() {
    const SOURCES: [&str; 4] = [
        "fixtures/sentencepiece/mistral-tokenizer.model.v1",
        "fixtures/sentencepiece/mistral_instruct_tokenizer_240323.model.v3",
        "fixtures/sentencepiece/mistral_instruct_tokenizer_241114.model.v7",
        "mistralai/Mistral-7B-v0.1",
    ];
    let (text, changed) = line_repeats(8 << 10);
    std::thread::scope(|scope| {
        for source in SOURCES {
            let (text, changed) = (&text, &changed);
            scope.spawn(move || {
                let tok = tokenizer(source);
                let fresh = |t: &str| {
                    std::thread::scope(|s| {
                        s.spawn(|| {
                            tok.encode_with(t, &crate::common::sequential(false))
                                .unwrap()
                                .ids()
                                .to_vec()
                        })
                        .join()
                        .unwrap()
                    })
                };
                // One line longer than a group: the text's first group is the
                // second one here.
                let shifted = format!("{}\n{text}", "A new first line. ".repeat(12));
                let (want_text, want_changed) = (fresh(text), fresh(changed));
                let want_shifted = fresh(&shifted);
                let rounds = memo_rounds(text, changed).chain([&shifted[..]; 3]);
                for (round, t) in rounds.enumerate() {
                    let want = match t {
                        t if t == text => &want_text,
                        t if t == changed => &want_changed,
                        _ => &want_shifted,
                    };
                    let got = tok
                        .encode_with(t, &crate::common::sequential(false))
                        .unwrap();
                    assert!(
                        got.ids() == &want[..],
                        "{source} round {round}: first difference at {}",
                        first_difference(got.ids(), want)
                    );
                }
            });
        }
    });
}
