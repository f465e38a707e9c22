//! The async calls keep a tokio runtime responsive: while large prompts
//! encode, a heartbeat task on the same two workers is not held up, where
//! encoding inline would hold a worker for the whole encode.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "it/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use router_tokenizer::chat::{ChatRequest, Message};
use router_tokenizer::{EncodeChatOptions, OFFLOAD_MIN_BYTES, Tokenizer};

/// Distinct ~200 KB texts (text seen once: no cache answers them).
fn texts(n: usize) -> Vec<String> {
    let all: String = common::all_inputs()
        .iter()
        .filter_map(|(_, p)| std::fs::read_to_string(p).ok())
        .collect();
    (0..n)
        .map(|i| common::char_slice(&all, i * 200_000, 200_000).to_owned())
        .collect()
}

/// The worst lateness of a 1 ms heartbeat while `work` runs on the runtime.
async fn worst_lateness<F>(work: F) -> Duration
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let beat = tokio::spawn(async move {
        let mut worst = Duration::ZERO;
        while !flag.load(Ordering::Relaxed) {
            let at = Instant::now();
            tokio::time::sleep(Duration::from_millis(1)).await;
            worst = worst.max(at.elapsed().saturating_sub(Duration::from_millis(1)));
        }
        worst
    });
    // Let the heartbeat start before the work does.
    tokio::time::sleep(Duration::from_millis(5)).await;
    work.await;
    stop.store(true, Ordering::Relaxed);
    beat.await.unwrap()
}

async fn encode_all(tok: Tokenizer, texts: Vec<String>, offload: bool) {
    let mut tasks = tokio::task::JoinSet::new();
    for text in texts {
        let tok = tok.clone();
        tasks.spawn(async move {
            let ids = if offload {
                tok.encode_async(&text, false).await.unwrap()
            } else {
                tok.encode(&text, false).unwrap()
            };
            assert!(!ids.is_empty());
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}

#[test]
fn a_heartbeat_is_not_held_up_while_large_prompts_encode() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tok = common::tokenizer("meta-llama/Llama-3.2-1B-Instruct")
        .with_prompt_cache(router_tokenizer::PromptCacheOptions::off());
    rt.block_on(async { tok.warm_up_async().await });
    let texts = texts(8);
    assert!(texts.iter().all(|t| t.len() >= OFFLOAD_MIN_BYTES));
    let (inline, offloaded) = rt.block_on(async {
        let inline = worst_lateness(encode_all(tok.clone(), texts[..4].to_vec(), false)).await;
        let offloaded = worst_lateness(encode_all(tok.clone(), texts[4..].to_vec(), true)).await;
        (inline, offloaded)
    });
    eprintln!("worst heartbeat lateness: inline {inline:?}, offloaded {offloaded:?}");
    assert!(
        offloaded < Duration::from_millis(40) && offloaded < inline,
        "inline {inline:?}, offloaded {offloaded:?}"
    );
}

#[test]
fn encode_chat_async_and_warm_up_give_the_same_ids() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tok = common::tokenizer("Qwen/Qwen3-8B");
    let long = texts(1).remove(0);
    for content in ["Hi <think> there", long.as_str()] {
        let mut request = ChatRequest::new(vec![Message::new("user", content)]);
        request.add_generation_prompt = true;
        let options = EncodeChatOptions::default();
        let want = tok.encode_chat(&request, &options).unwrap();
        let got = rt.block_on(async {
            tok.warm_up_async().await;
            tok.encode_chat_async(&request, &options).await.unwrap()
        });
        assert_eq!(got, want);
        let text = rt.block_on(async { tok.encode_async(content, false).await.unwrap() });
        assert_eq!(text.ids(), tok.encode(content, false).unwrap().ids());
    }
}
