//! The request path: `encode_chat` against `apply_chat_template` + `encode`
//! (caches off), L0 hit latency for 2 KB and 64 KB prompts against a full
//! encode, and the L0 cost on a 30-character encode (default: short texts
//! bypass the cache; `forced`: every text goes through it, a miss each time),
//! and the L1 prefix cache on a 30-turn conversation growing to ~128K
//! tokens: the last turn's encode with L1 (turn 29's prompt cached) against
//! a full encode (the default parallel path), for Llama-3, Qwen3 and o200k;
//! and what L1 costs a prompt it cannot help (`l1_miss`).
//!
//! Needs the shared Hugging Face cache (`$RTOK_SHARED_DIR/hf-cache`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::cell::Cell;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

mod common;

use common::{load, prose};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::Value as Json;

use router_tokenizer::chat::{ChatRequest, FixedNow, Message};
use router_tokenizer::{ChatSpecialTokens, EncodeChatOptions, PromptCacheOptions};

fn request(case: &Json, now: FixedNow) -> ChatRequest {
    let messages: Vec<Message> = serde_json::from_value(case["messages"].clone()).unwrap();
    let mut r = ChatRequest::new(messages);
    r.tools = case.get("tools").and_then(|t| t.as_array().cloned());
    r.add_generation_prompt = case["add_generation_prompt"].as_bool().unwrap_or(false);
    r.fixed_now = Some(now);
    r
}

fn bench_encode_chat(c: &mut Criterion) {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/chat/conversations.json");
    let conv: Json = serde_json::from_str(&std::fs::read_to_string(golden).unwrap()).unwrap();
    let now = FixedNow::parse(conv["fixed_now"].as_str().unwrap()).unwrap();
    let case = |id: &str| {
        conv["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .cloned()
            .unwrap()
    };
    let mut group = c.benchmark_group("encode_chat");
    for model in ["meta-llama/Llama-3.2-1B-Instruct", "Qwen/Qwen3-8B"] {
        let tok = load(model).with_prompt_cache(PromptCacheOptions::off());
        let short = model.rsplit('/').next().unwrap();
        for id in ["bench_4", "bench_20_tools"] {
            let r = request(&case(id), now);
            let text = tok.apply_chat_template(&r).unwrap();
            let want = tok.encode(&text, false).unwrap().into_ids();
            for policy in [ChatSpecialTokens::PlainText, ChatSpecialTokens::Parse] {
                let o = EncodeChatOptions::default().with_special_tokens(policy);
                assert_eq!(tok.encode_chat(&r, &o).unwrap().ids, want);
            }
            group.bench_function(format!("{short}/{id}/render+encode"), |b| {
                b.iter(|| {
                    let text = tok.apply_chat_template(black_box(&r)).unwrap();
                    tok.encode(&text, false).unwrap()
                })
            });
            for (name, policy) in [
                ("encode_chat_plain", ChatSpecialTokens::PlainText),
                ("encode_chat_parse", ChatSpecialTokens::Parse),
            ] {
                let o = EncodeChatOptions::default().with_special_tokens(policy);
                group.bench_function(format!("{short}/{id}/{name}"), |b| {
                    b.iter(|| tok.encode_chat(black_box(&r), &o).unwrap())
                });
            }
        }
    }
    group.finish();
}

fn bench_l0(c: &mut Criterion) {
    let base = load("meta-llama/Llama-3.2-1B-Instruct");
    let off = base.with_prompt_cache(PromptCacheOptions::off());
    let on = base.with_prompt_cache(PromptCacheOptions::default());
    let mut group = c.benchmark_group("l0");
    for (name, n) in [("2KB", 2048), ("64KB", 65536)] {
        let text = prose(n);
        assert_eq!(
            on.encode(&text, false).unwrap(),
            off.encode(&text, false).unwrap()
        );
        group.bench_function(format!("{name}/encode_off"), |b| {
            b.iter(|| off.encode(black_box(&text), false).unwrap())
        });
        group.bench_function(format!("{name}/hit"), |b| {
            b.iter(|| on.encode(black_box(&text), false).unwrap())
        });
    }
    // Misses: a different slice each call, cache off against every text
    // through the cache (a miss and an insert each time).
    let pool = prose(1 << 20);
    let forced = base.with_prompt_cache(PromptCacheOptions::l0(32 << 20, 0));
    for (name, n) in [("2KB", 2048usize), ("16KB", 16384)] {
        for (mode, tok) in [("miss_off", &off), ("miss_on", &forced)] {
            let next = Cell::new(0usize);
            group.bench_function(format!("{name}/{mode}"), |b| {
                b.iter(|| {
                    let mut s = next.get();
                    next.set((s + 7) % (pool.len() - n - 8));
                    while !pool.is_char_boundary(s) {
                        s += 1;
                    }
                    let mut e = s + n;
                    while !pool.is_char_boundary(e) {
                        e += 1;
                    }
                    tok.encode(black_box(&pool[s..e]), false).unwrap()
                })
            });
        }
    }
    // 30-char encodes, a different slice each call (no memo answers).
    let starts: Vec<usize> = (0..pool.len() - 64)
        .filter(|&i| pool.is_char_boundary(i) && pool.is_char_boundary(i + 30))
        .collect();
    for (name, tok) in [("off", &off), ("default", &on), ("forced_miss", &forced)] {
        let next = Cell::new(0usize);
        group.bench_function(format!("30chars/{name}"), |b| {
            b.iter(|| {
                let i = next.get();
                next.set((i + 1) % starts.len());
                let s = starts[i];
                tok.encode(black_box(&pool[s..s + 30]), false).unwrap()
            })
        });
    }
    group.finish();
}

/// The prompts of a 30-turn conversation: user turns of English prose and
/// assistant turns of Rust code, ~17.5 KB each, with plain-text headers;
/// prompt `k` is turns `0..=k` joined.
fn conversation() -> Vec<String> {
    let code = std::fs::read_to_string(common::shared().join("corpus/code/rust.txt")).unwrap();
    let text = prose(1 << 20);
    let slice = |t: &str, at: usize| {
        let mut s = at;
        while !t.is_char_boundary(s) {
            s += 1;
        }
        let mut e = (s + 17_500).min(t.len());
        while !t.is_char_boundary(e) {
            e -= 1;
        }
        t[s..e].to_owned()
    };
    let mut prompt = String::new();
    (0..30)
        .map(|k| {
            let (role, body) = if k % 2 == 0 {
                ("user", slice(&text, k * 17_500))
            } else {
                ("assistant", slice(&code, k * 17_500))
            };
            prompt.push_str(&format!("\n### {role} (turn {k})\n{body}"));
            prompt.clone()
        })
        .collect()
}

/// Median of `runs` timings of `f` (which times itself, so its setup is
/// left out).
fn median(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    let mut t: Vec<Duration> = (0..runs).map(|_| f()).collect();
    t.sort();
    t[runs / 2]
}

/// Turn `k`'s prompt with its last turn's header made unique by `i`, so a
/// bench iteration never repeats a stored prompt (the text after the
/// header is the same turn).
fn variant(prompts: &[String], k: usize, i: usize) -> String {
    let prev = &prompts[k - 1];
    let turn = &prompts[k][prev.len()..];
    format!("{prev}\n### take {i}{turn}")
}

fn bench_l1(c: &mut Criterion) {
    let prompts = conversation();
    let mut group = c.benchmark_group("l1");
    for model in [
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "Qwen/Qwen3-8B",
        "o200k_base",
    ] {
        let base = load(model);
        base.warm_up();
        let off = base.with_prompt_cache(PromptCacheOptions::off());
        let l1 = || base.with_prompt_cache(PromptCacheOptions::l1(64 << 20, 8 << 10, 1 << 10));
        let short = model.rsplit('/').next().unwrap();
        // Ids identical on every turn through one cache (outside the timing).
        let cached = l1();
        for (k, p) in prompts.iter().enumerate() {
            let want = off.encode(p, false).unwrap();
            assert_eq!(cached.encode(p, false).unwrap(), want, "{model} turn {k}");
        }
        // Per-turn times, median of 5: a full encode, and L1 on a fresh
        // cache that holds the previous turn's prompt.
        for k in (4..prompts.len()).step_by(5) {
            let p = &prompts[k];
            let full = median(5, || {
                let start = Instant::now();
                black_box(off.encode(p, false).unwrap());
                start.elapsed()
            });
            let warm = median(5, || {
                let fresh = l1();
                fresh.encode(&prompts[k - 1], false).unwrap();
                let start = Instant::now();
                black_box(fresh.encode(p, false).unwrap());
                start.elapsed()
            });
            let tokens = off.encode(p, false).unwrap().len();
            eprintln!(
                "l1/{short} turn {}: {} bytes, {tokens} tokens, full {full:?}, l1 {warm:?}, {:.1}x",
                k + 1,
                p.len(),
                full.as_secs_f64() / warm.as_secs_f64()
            );
        }
        // The last turn, timed by criterion: every iteration encodes turn
        // 30's prompt with a unique header, so it extends turn 29's prompt
        // (cached) and never repeats a stored one.
        let last = prompts.len() - 1;
        let cached = l1();
        cached.encode(&prompts[last - 1], false).unwrap();
        for i in 0..3 {
            let v = variant(&prompts, last, i);
            assert_eq!(
                cached.encode(&v, false).unwrap(),
                off.encode(&v, false).unwrap(),
                "{model}"
            );
        }
        let next = Cell::new(1000usize);
        let fresh = || {
            let i = next.get();
            next.set(i + 1);
            variant(&prompts, last, i)
        };
        group.bench_function(format!("{short}/last_turn/full"), |b| {
            b.iter_batched(
                fresh,
                |v| off.encode(black_box(&v), false).unwrap(),
                BatchSize::LargeInput,
            )
        });
        group.bench_function(format!("{short}/last_turn/l1"), |b| {
            b.iter_batched(
                fresh,
                |v| cached.encode(black_box(&v), false).unwrap(),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

/// What L1 costs a prompt it cannot help (a miss, stored): L1 on against
/// off, Llama-3. A unique number in front of each slice: no prompt is ever
/// a prefix of another.
fn bench_l1_miss(c: &mut Criterion) {
    let base = load("meta-llama/Meta-Llama-3-8B-Instruct");
    let off = base.with_prompt_cache(PromptCacheOptions::off());
    let on = base.with_prompt_cache(PromptCacheOptions::l1(64 << 20, 8 << 10, 1 << 10));
    let pool = prose(1 << 20);
    let mut group = c.benchmark_group("l1_miss");
    for (name, n) in [("16KB", 16usize << 10), ("64KB", 64 << 10)] {
        for (mode, tok) in [("off", &off), ("on", &on)] {
            let next = Cell::new(0usize);
            let text = || {
                let i = next.get();
                next.set(i + 1);
                let mut s = (i * 4099) % (pool.len() - n - 8);
                while !pool.is_char_boundary(s) {
                    s += 1;
                }
                let mut e = s + n;
                while !pool.is_char_boundary(e) {
                    e += 1;
                }
                format!("{i:08} {}", &pool[s..e])
            };
            group.bench_function(format!("{name}/{mode}"), |b| {
                b.iter_batched(
                    text,
                    |t| tok.encode(black_box(&t), false).unwrap(),
                    BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(
    benches,
    bench_encode_chat,
    bench_l0,
    bench_l1,
    bench_l1_miss
);
criterion_main!(benches);
