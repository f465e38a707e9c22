//! Render time of precompiled chat templates: a 4-message conversation and a 20-message
//! conversation with tools (the `bench_4` and `bench_20_tools` cases of
//! `tests/golden/chat/conversations.json`), for every shared model whose template renders them.
//!
//! Needs the shared Hugging Face cache (`$RTOK_SHARED_DIR/hf-cache`, default `../shared`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;

mod common;

use common::snapshot;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value as Json;

use router_tokenizer::chat::{ChatRequest, FixedNow, Message, load_chat_template};

const MODELS: [&str; 4] = [
    "meta-llama/Llama-3.2-1B-Instruct",
    "Qwen/Qwen3-8B",
    "openai/gpt-oss-20b",
    "meta-llama/Meta-Llama-3-8B-Instruct",
];

fn request(case: &Json, now: FixedNow) -> ChatRequest {
    let messages: Vec<Message> = serde_json::from_value(case["messages"].clone()).unwrap();
    let mut r = ChatRequest::new(messages);
    r.tools = case.get("tools").and_then(|t| t.as_array().cloned());
    r.add_generation_prompt = case["add_generation_prompt"].as_bool().unwrap_or(false);
    r.fixed_now = Some(now);
    r
}

fn bench(c: &mut Criterion) {
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
    let four = request(&case("bench_4"), now);
    let twenty = request(&case("bench_20_tools"), now);
    assert_eq!(four.messages.len(), 4);
    assert_eq!(twenty.messages.len(), 20);

    let mut group = c.benchmark_group("chat_template");
    for model in MODELS {
        let dir = snapshot(model);
        let cfg_path = dir.join("tokenizer_config.json");
        let cfg: Json = serde_json::from_str(&std::fs::read_to_string(cfg_path).unwrap()).unwrap();
        let template = load_chat_template(&dir, None, Some(&cfg)).unwrap();
        let short = model.rsplit('/').next().unwrap();
        template.render(&four).unwrap();
        group.bench_function(format!("{short}/4_messages"), |b| {
            b.iter(|| template.render(black_box(&four)).unwrap())
        });
        template.render(&twenty).unwrap();
        group.bench_function(format!("{short}/20_messages_tools"), |b| {
            b.iter(|| template.render(black_box(&twenty)).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
