//! The L0 prompt cache: ids with the cache on equal ids with it off, on every
//! corpus and adversarial input, through multi-turn chat sequences, with
//! cache sizes down to ones that evict on every insert, and from 64 threads
//! sharing one handle.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::common;

use proptest::prelude::*;
use router_tokenizer::chat::{ChatRequest, Message};
use router_tokenizer::{EncodeChatOptions, PromptCacheOptions, Tokenizer};

const MODELS: &[&str] = common::CACHE_MODELS;

fn off(tok: &Tokenizer) -> Tokenizer {
    let t = tok.with_prompt_cache(PromptCacheOptions::off());
    assert_eq!(t.prompt_cache_options(), &PromptCacheOptions::off());
    t
}

/// Slices of every input: whole small files, heads and middles of big ones.
fn texts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, path) in common::all_inputs() {
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        for (start, len) in [(0, 300), (0, 4096), (text.len() / 2, 2048), (0, 16384)] {
            let mut s = start.min(text.len());
            while !text.is_char_boundary(s) {
                s -= 1;
            }
            let mut e = (s + len).min(text.len());
            while !text.is_char_boundary(e) {
                e -= 1;
            }
            out.push((format!("{name}[{s}..{e}]"), text[s..e].to_owned()));
        }
    }
    out
}

#[test]
fn cache_on_equals_cache_off_on_every_input() {
    let texts = texts();
    assert!(texts.len() >= 40, "{} texts", texts.len());
    for model in MODELS {
        let tok = common::tokenizer(model);
        let reference = off(&tok);
        let want: Vec<Vec<u32>> = texts
            .iter()
            .map(|(_, t)| reference.encode(t, false).unwrap().into_ids())
            .collect();
        for options in [
            PromptCacheOptions::default(),
            PromptCacheOptions::l0(4096, 1),
            PromptCacheOptions::l0(1, 0),
        ] {
            let recorder = metrics_util::debugging::DebuggingRecorder::new();
            let snapshotter = recorder.snapshotter();
            let cached =
                metrics::with_local_recorder(&recorder, || tok.with_prompt_cache(options.clone()));
            assert!(!cached.same_handle(&reference));
            // Three times: two misses (stored on the second), then hits
            // (or misses again where the cache evicted the text).
            for round in 0..3 {
                for ((name, text), want) in texts.iter().zip(&want) {
                    let got = cached.encode(text, false).unwrap();
                    assert_eq!(
                        got.ids(),
                        &want[..],
                        "{model} {options:?} round {round}: {name}"
                    );
                }
            }
            let hits = snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .find(|(k, _, _, _)| k.key().name() == "rtok_cache_hits_total")
                .map(|(_, _, _, v)| v);
            let hits = match hits {
                Some(metrics_util::debugging::DebugValue::Counter(n)) => n,
                other => panic!("{other:?}"),
            };
            // The default cache holds every text; a 1-byte one evicts each
            // entry at its next maintenance (moka may still answer in between).
            match options.l0_bytes {
                1 => {}
                b if b > 1 << 20 => assert!(hits as usize >= texts.len() / 2, "{model}: {hits}"),
                _ => assert!(hits > 0, "{model}"),
            }
            let text = &texts[1].1;
            assert_eq!(
                cached.encode(text, true).unwrap(),
                reference.encode(text, true).unwrap(),
                "{model}: add_special_tokens is part of the key"
            );
        }
    }
}

#[test]
fn multi_turn_chat_sequences_are_lossless() {
    let corpus: Vec<String> = common::corpus_files()
        .iter()
        .filter_map(|(_, p)| std::fs::read_to_string(p).ok())
        .flat_map(|t| {
            t.lines()
                .filter(|l| l.len() > 20)
                .take(8)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(corpus.len() >= 30);
    for model in ["Qwen/Qwen3-8B", "meta-llama/Llama-3.2-1B-Instruct"] {
        let tok = common::tokenizer(model);
        let reference = off(&tok);
        for options in [
            PromptCacheOptions::l0(8192, 1),
            PromptCacheOptions::l0(1 << 20, 1),
        ] {
            let cached = tok.with_prompt_cache(options);
            let mut messages = Vec::new();
            for (k, line) in corpus.iter().take(24).enumerate() {
                let role = if k % 2 == 0 { "user" } else { "assistant" };
                messages.push(Message::new(role, line.clone()));
                let mut request = ChatRequest::new(messages.clone());
                request.add_generation_prompt = role == "user";
                let want = reference
                    .encode_chat(&request, &EncodeChatOptions::default())
                    .unwrap();
                // The turn, a regeneration (same prompt), and an edit of the last turn.
                for _ in 0..2 {
                    let got = cached
                        .encode_chat(&request, &EncodeChatOptions::default())
                        .unwrap();
                    assert_eq!(got.ids, want.ids, "{model} turn {k}");
                }
                let mut edited = request.clone();
                if let Some(last) = edited.messages.last_mut() {
                    *last = Message::new(role, format!("{line} (edited)"));
                }
                assert_eq!(
                    cached
                        .encode_chat(&edited, &EncodeChatOptions::default())
                        .unwrap()
                        .ids,
                    reference
                        .encode_chat(&edited, &EncodeChatOptions::default())
                        .unwrap()
                        .ids,
                    "{model} turn {k} edited"
                );
            }
        }
    }
}

/// Loads with equal options share one handle, so a router that loads per
/// request does not build a fresh L0 cache (and lose its hits) every time;
/// loads that differ only in cache options still parse once.
#[test]
fn loads_with_equal_cache_options_share_the_handle_and_its_cache() {
    let small = PromptCacheOptions::l0(1 << 20, 64);
    let options = common::offline_options().with_prompt_cache(small.clone());
    let a = options.load("Qwen/Qwen3-8B").unwrap();
    let b = options.load("Qwen/Qwen3-8B").unwrap();
    assert!(a.same_handle(&b));
    assert_eq!(a.prompt_cache_options(), &small);
    let uncached = common::offline_options().load("Qwen/Qwen3-8B").unwrap();
    assert!(!uncached.same_handle(&a));
    assert_eq!(uncached.prompt_cache_options(), &PromptCacheOptions::off());
    let text = "a prompt long enough for the L0 cache, ".repeat(4);
    assert_eq!(
        a.encode(&text, false).unwrap().ids(),
        uncached.encode(&text, false).unwrap().ids()
    );
}

#[test]
fn sixty_four_threads_share_one_handle() {
    let texts: Vec<String> = texts().into_iter().map(|(_, t)| t).take(48).collect();
    for model in ["meta-llama/Llama-3.2-1B-Instruct", "o200k_base"] {
        let tok = common::tokenizer(model);
        let reference = off(&tok);
        let want: Vec<Vec<u32>> = texts
            .iter()
            .map(|t| reference.encode(t, false).unwrap().into_ids())
            .collect();
        for options in [
            PromptCacheOptions::l0(16 << 10, 1),
            PromptCacheOptions::default(),
        ] {
            let shared = tok.with_prompt_cache(options);
            std::thread::scope(|s| {
                for thread in 0..64usize {
                    let (shared, texts, want) = (shared.clone(), &texts, &want);
                    s.spawn(move || {
                        for round in 0..3 {
                            for i in 0..texts.len() {
                                let j = (i * 7 + thread * 13 + round) % texts.len();
                                let got = shared.encode(&texts[j], false).unwrap();
                                assert_eq!(got.ids(), &want[j][..], "{model} thread {thread}");
                            }
                        }
                    });
                }
            });
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::proptest_cases(24)))]

    /// Random cache sizes (tiny ones evict on nearly every insert) and random
    /// sequences of texts with repeats: always the uncached ids.
    #[test]
    fn random_sizes_and_sequences(
        size in prop_oneof![1u64..512, 512u64..65536],
        min in 0usize..64,
        picks in proptest::collection::vec((0usize..12, any::<bool>()), 1..60),
        pool in proptest::collection::vec("[a-z <|>_\\n é中]{0,200}", 12),
    ) {
        let tok = common::tokenizer("Qwen/Qwen3-8B");
        let reference = off(&tok);
        let cached = tok.with_prompt_cache(PromptCacheOptions::l0(size, min));
        for (i, add) in picks {
            let text = format!("{}<|im_end|>{}", pool[i], pool[(i + 1) % 12]);
            let text = if i % 3 == 0 { pool[i].clone() } else { text };
            prop_assert_eq!(
                cached.encode(&text, add).unwrap(),
                reference.encode(&text, add).unwrap()
            );
        }
    }
}
