//! The L1 prefix cache: ids with it on equal ids with it off, on every corpus
//! and adversarial input fed as growing prompts (appending, editing the end,
//! regenerating), through multi-turn chat sequences, with block and cache
//! sizes down to ones that evict on every insert, with random edits
//! (proptest), and from 64 threads sharing one handle.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::common;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use proptest::prelude::*;
use router_tokenizer::chat::{ChatRequest, Message};
use router_tokenizer::{EncodeChatOptions, ParallelOptions, PromptCacheOptions, Tokenizer};

/// The cache models plus Mistral-7B's whole-text BPE, in `tokenizer.json`
/// and as a SentencePiece `.model`.
fn models() -> Vec<&'static str> {
    let mut m = common::CACHE_MODELS.to_vec();
    m.extend([
        "mistralai/Mistral-7B-v0.1",
        "fixtures/sentencepiece/mistral-tokenizer.model.v1",
    ]);
    m
}

fn off(tok: &Tokenizer) -> Tokenizer {
    tok.with_prompt_cache(PromptCacheOptions::off())
}

/// The counters of one snapshot (taking a snapshot resets them), summed
/// over label sets with the given `cache` label.
struct Counters(Vec<(String, u64)>);

impl Counters {
    fn take(snapshotter: &Snapshotter, cache: &str) -> Self {
        let mut out = Vec::new();
        for (k, _, _, v) in snapshotter.snapshot().into_vec() {
            if let DebugValue::Counter(n) = v
                && k.key().labels().any(|l| l.value() == cache)
            {
                out.push((k.key().name().to_owned(), n));
            }
        }
        Self(out)
    }

    fn get(&self, name: &str) -> u64 {
        self.0
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v)
            .sum()
    }
}

fn char_floor(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A slice of up to `len` bytes of every input file, from its middle for
/// big files (so a cut lands in real text, not a header).
fn inputs(len: usize) -> Vec<(String, String)> {
    common::all_inputs()
        .into_iter()
        .map(|(name, path)| {
            let bytes = std::fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let s = char_floor(&text, (text.len() / 3).min(text.len().saturating_sub(len)));
            let e = char_floor(&text, s + len);
            (name, text[s..e].to_owned())
        })
        .filter(|(_, t)| t.len() >= 512)
        .collect()
}

/// The prompts of one "conversation" over `text`: growing prefixes, a
/// regeneration (the same prompt again), an edit of the end, and a prompt
/// that is a strict prefix of a cached one.
fn sequence(text: &str) -> Vec<String> {
    let n = text.len();
    let at = |f: usize| char_floor(text, n * f / 100);
    let mut out: Vec<String> = [30, 55, 56, 80, 100]
        .iter()
        .map(|&f| text[..at(f)].to_owned())
        .collect();
    out.push(text.to_owned());
    out.push(format!(
        "{} (edited) {}",
        &text[..at(90)],
        &text[at(20)..at(25)]
    ));
    out.push(text[..at(95)].to_owned());
    out
}

fn l1(bytes: u64, block: usize) -> PromptCacheOptions {
    PromptCacheOptions::l1(bytes, 0, block)
}

#[test]
fn l1_on_equals_off_on_every_input() {
    let texts = inputs(12 << 10);
    assert!(texts.len() >= 20, "{} texts", texts.len());
    for model in models() {
        let tok = common::tokenizer(model);
        let reference = off(&tok);
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let cached =
            metrics::with_local_recorder(&recorder, || tok.with_prompt_cache(l1(1 << 24, 256)));
        let mut prompts = 0u64;
        for (name, text) in &texts {
            for (k, prompt) in sequence(text).iter().enumerate() {
                let add = k % 3 == 0;
                let want = reference.encode(prompt, add).unwrap();
                let got = cached.encode(prompt, add).unwrap();
                assert_eq!(
                    got.ids(),
                    want.ids(),
                    "{model} {name} prompt {k} ({} bytes)",
                    prompt.len()
                );
                prompts += 1;
            }
        }
        let c = Counters::take(&snapshotter, "l1");
        let hits = c.get("rtok_cache_hits_total");
        let misses = c.get("rtok_cache_misses_total");
        let reused = c.get("rtok_cache_bytes_reused_total");
        let fallbacks = c.get("rtok_cache_l1_fallbacks_total");
        let reencoded = c.get("rtok_cache_l1_tokens_reencoded_total");
        eprintln!(
            "{model}: {prompts} prompts, {hits} hits, {misses} misses ({fallbacks} fallbacks), \
             {reused} bytes reused, {reencoded} tokens re-encoded"
        );
        assert_eq!(hits + misses, prompts, "{model}");
        // Every prompt but the first of each text extends or edits a cached
        // one; most must be answered from the cache.
        assert!(
            hits * 10 >= prompts * 6,
            "{model}: {hits} hits of {prompts}"
        );
        assert!(reused > 0 && reencoded > 0, "{model}");
    }
}

#[test]
fn tiny_and_odd_caches_are_lossless() {
    let texts: Vec<(String, String)> = inputs(6 << 10).into_iter().step_by(3).collect();
    for model in ["meta-llama/Llama-3.2-1B-Instruct", "google/gemma-3-4b-it"] {
        let tok = common::tokenizer(model);
        let reference = off(&tok);
        for options in [
            l1(1, 64),
            l1(3000, 64),
            l1(40 << 10, 100),
            l1(1 << 20, 4096),
            // L0 and L1 together, small enough to evict.
            {
                let mut o = l1(64 << 10, 128);
                o.l0_bytes = 8 << 10;
                o.l0_min_bytes = 0;
                o
            },
        ] {
            let cached = tok.with_prompt_cache(options.clone());
            for (name, text) in &texts {
                for (k, prompt) in sequence(text).iter().enumerate() {
                    assert_eq!(
                        cached.encode(prompt, false).unwrap().ids(),
                        reference.encode(prompt, false).unwrap().ids(),
                        "{model} {options:?} {name} prompt {k}"
                    );
                }
            }
        }
    }
}

/// A text long enough to be split in parallel after the seed: the seeded
/// merge then has several fresh chunks.
#[test]
fn seeded_merges_with_parallel_rest_are_lossless() {
    let text = std::fs::read_to_string(common::shared_dir().join("corpus/code/rust.txt")).unwrap();
    let text = &text[..char_floor(&text, 96 << 10)];
    for model in [
        "meta-llama/Llama-3.2-1B-Instruct",
        "mistralai/Mistral-7B-v0.1",
    ] {
        let tok = common::tokenizer(model);
        let reference = off(&tok);
        let cached = tok
            .with_prompt_cache(l1(1 << 24, 1024))
            .with_parallel(ParallelOptions::always_with_chunk_bytes(16 << 10));
        for prompt in [
            &text[..char_floor(text, 8 << 10)],
            text,
            &text[..char_floor(text, 60 << 10)],
        ] {
            assert_eq!(
                cached.encode(prompt, true).unwrap().ids(),
                reference.encode(prompt, true).unwrap().ids(),
                "{model} {} bytes",
                prompt.len()
            );
        }
    }
}

fn corpus_paragraphs() -> Vec<String> {
    common::corpus_files()
        .iter()
        .filter_map(|(_, p)| std::fs::read_to_string(p).ok())
        .flat_map(|t| {
            let lines: Vec<&str> = t.lines().filter(|l| l.len() > 20).take(60).collect();
            lines.chunks(6).map(|c| c.join("\n")).collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn multi_turn_chat_sequences_are_lossless() {
    let corpus = corpus_paragraphs();
    assert!(corpus.len() >= 40);
    for model in [
        "meta-llama/Llama-3.2-1B-Instruct",
        "Qwen/Qwen3-8B",
        "google/gemma-3-4b-it",
        "mistralai/Mistral-Nemo-Instruct-2407",
    ] {
        let tok = common::tokenizer(model);
        let reference = off(&tok);
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let cached = metrics::with_local_recorder(&recorder, || {
            let mut o = PromptCacheOptions::default().with_l1(PromptCacheOptions::L1_BYTES);
            o.l1_min_bytes = 1024;
            o.l1_block_bytes = 256;
            tok.with_prompt_cache(o)
        });
        let options = EncodeChatOptions::default();
        let mut messages = Vec::new();
        for (k, paragraph) in corpus.iter().step_by(3).take(16).enumerate() {
            let role = if k % 2 == 0 { "user" } else { "assistant" };
            messages.push(Message::new(role, paragraph.clone()));
            let mut request = ChatRequest::new(messages.clone());
            request.add_generation_prompt = role == "user";
            let want = reference.encode_chat(&request, &options).unwrap();
            // The turn, then a regeneration (the same prompt).
            for _ in 0..2 {
                let got = cached.encode_chat(&request, &options).unwrap();
                assert_eq!(got.ids, want.ids, "{model} turn {k}");
            }
            // An edit of the last turn.
            let mut edited = request.clone();
            if let Some(last) = edited.messages.last_mut() {
                *last = Message::new(
                    role,
                    format!("{} (edited)", &paragraph[..paragraph.len() / 2]),
                );
            }
            assert_eq!(
                cached.encode_chat(&edited, &options).unwrap().ids,
                reference.encode_chat(&edited, &options).unwrap().ids,
                "{model} turn {k} edited"
            );
        }
        let hits = Counters::take(&snapshotter, "l1").get("rtok_cache_hits_total");
        assert!(hits >= 8, "{model}: {hits} L1 hits");
    }
}

/// Entries share their prefixes with the entries they extend (invariants
/// `cache-transparent` and `caches-bounded`): long chains of turns (past the depth at which a chain is
/// stored whole again), edits in the middle of a chain that then grow a
/// branch, revisits of old turns, and two conversations interleaved in
/// caches from 1 byte to 16 MiB, so parents and children are evicted in
/// every order while their chains stay reachable. Ids always equal a plain
/// encode's, and most turns of the big caches are hits.
#[test]
fn chains_of_shared_entries_are_lossless() {
    let corpus = corpus_paragraphs();
    let turns: Vec<&String> = corpus.iter().filter(|p| p.len() >= 200).collect();
    assert!(turns.len() >= 60, "{} paragraphs", turns.len());
    for model in ["meta-llama/Llama-3.2-1B-Instruct", "o200k_base"] {
        let tok = common::tokenizer(model);
        let reference = off(&tok);
        for bytes in [1u64, 24 << 10, 160 << 10, 16 << 20] {
            let recorder = DebuggingRecorder::new();
            let snapshotter = recorder.snapshotter();
            let cached =
                metrics::with_local_recorder(&recorder, || tok.with_prompt_cache(l1(bytes, 128)));
            let check = |prompt: &str, what: &str| {
                assert_eq!(
                    cached.encode(prompt, false).unwrap().ids(),
                    reference.encode(prompt, false).unwrap().ids(),
                    "{model} {bytes} B cache: {what} ({} bytes)",
                    prompt.len()
                );
            };
            // Two conversations of 40 turns, interleaved.
            let (mut a, mut b) = (String::new(), String::new());
            let mut a_turns = Vec::new();
            for k in 0..40 {
                a.push_str(&format!("\n[user {k}] {}", turns[k]));
                a_turns.push(a.clone());
                check(&a, &format!("A turn {k}"));
                b.push_str(&format!("\n[assistant {k}] {}", turns[k + 20]));
                check(&b, &format!("B turn {k}"));
            }
            // An edit in the middle of A (a word of turn 12 changed), then
            // a branch growing from it.
            let mid = char_floor(&a, a_turns[12].len() - turns[12].len() / 2);
            let mut branch = format!("{} (edited) {}", &a[..mid], &a[mid..]);
            check(&branch, "A edited at turn 12");
            for (k, turn) in turns.iter().enumerate().take(46).skip(40) {
                branch.push_str(&format!("\n[user {k}] {turn}"));
                check(&branch, &format!("branch turn {k}"));
            }
            // Old turns again, the whole of A again, and A's end edited.
            for k in [3, 25, 39, 7] {
                check(&a_turns[k], &format!("A turn {k} again"));
            }
            check(&a, "A again");
            let end = char_floor(&a, a.len() - 40);
            let next = end + a[end..].chars().next().map_or(0, char::len_utf8);
            check(&format!("{}!{}", &a[..end], &a[next..]), "A's end edited");
            let hits = Counters::take(&snapshotter, "l1").get("rtok_cache_hits_total");
            if bytes >= 16 << 20 {
                assert!(hits >= 60, "{model}: {hits} hits");
            }
        }
    }
}

/// A prompt whose bytes differ from a cached one's only before the last
/// block they share (the same length, so the probe's key and the block it
/// hashes match): the comparison that runs beside the encode sees the
/// difference, the speculative encode is dropped, and the ids are a plain
/// encode's. Differences at byte 0, mid-text and just before the probed
/// block, on one and two threads.
#[test]
fn a_difference_before_the_probed_block_is_seen() {
    let text = std::fs::read_to_string(common::shared_dir().join("corpus/code/rust.txt")).unwrap();
    let text = &text[..char_floor(&text, 20 << 10)];
    let block = 512;
    let pools: Vec<std::sync::Arc<rayon::ThreadPool>> = [1, 2]
        .iter()
        .map(|&n| {
            std::sync::Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .unwrap(),
            )
        })
        .collect();
    for model in ["meta-llama/Llama-3.2-1B-Instruct", "o200k_base"] {
        let tok = common::tokenizer(model);
        let reference = off(&tok);
        for pool in &pools {
            let recorder = DebuggingRecorder::new();
            let snapshotter = recorder.snapshotter();
            let cached = metrics::with_local_recorder(&recorder, || {
                tok.with_prompt_cache(l1(1 << 24, block))
                    .with_parallel(ParallelOptions {
                        pool: Some(std::sync::Arc::clone(pool)),
                        ..ParallelOptions::default()
                    })
            });
            let probed = text.len() / block * block - block;
            let mut prompts = 0;
            for at in [0, text.len() / 2, probed - 1] {
                let at = char_floor(text, at);
                let c = text[at..].chars().next().unwrap();
                // An ASCII letter or digit becomes another of the same
                // class; anything else becomes a space or an `x`.
                let swap = match c {
                    'a'..='y' | 'A'..='Y' | '0'..='8' => char::from(c as u8 + 1),
                    ' ' => 'x',
                    _ => ' ',
                };
                let swapped: String = swap.to_string().repeat(c.len_utf8());
                let edited = format!("{}{swapped}{}", &text[..at], &text[at + c.len_utf8()..]);
                assert_eq!(edited.len(), text.len());
                for prompt in [text.to_owned(), format!("{edited} and more"), edited] {
                    assert_eq!(
                        cached.encode(&prompt, false).unwrap().ids(),
                        reference.encode(&prompt, false).unwrap().ids(),
                        "{model}, {} threads, byte {at} changed",
                        pool.current_num_threads()
                    );
                    prompts += 1;
                }
            }
            let c = Counters::take(&snapshotter, "l1");
            let (hits, misses) = (
                c.get("rtok_cache_hits_total"),
                c.get("rtok_cache_misses_total"),
            );
            assert_eq!(hits + misses, prompts, "{model}: one count per prompt");
        }
    }
}

/// Families that cannot be cut bypass L1 (and still encode right).
#[test]
fn sequential_families_bypass_l1() {
    let tok = common::tokenizer("fixtures/sentencepiece/spm-test_model.model");
    assert!(!tok.split_family().is_parallel());
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let cached = metrics::with_local_recorder(&recorder, || tok.with_prompt_cache(l1(1 << 20, 64)));
    let text = inputs(4096).remove(0).1;
    for prompt in sequence(&text) {
        assert_eq!(
            cached.encode(&prompt, false).unwrap(),
            tok.encode(&prompt, false).unwrap()
        );
    }
    let c = Counters::take(&snapshotter, "l1");
    assert_eq!(
        c.get("rtok_cache_hits_total") + c.get("rtok_cache_misses_total"),
        0
    );
}

#[test]
fn sixty_four_threads_share_one_handle() {
    let texts: Vec<String> = inputs(8 << 10)
        .into_iter()
        .map(|(_, t)| t)
        .take(16)
        .collect();
    for model in ["meta-llama/Llama-3.2-1B-Instruct", "o200k_base"] {
        let tok = common::tokenizer(model);
        let reference = off(&tok);
        let prompts: Vec<Vec<String>> = texts.iter().map(|t| sequence(t)).collect();
        let want: Vec<Vec<Vec<u32>>> = prompts
            .iter()
            .map(|seq| {
                seq.iter()
                    .map(|p| reference.encode(p, false).unwrap().into_ids())
                    .collect()
            })
            .collect();
        for options in [l1(64 << 10, 256), l1(1 << 24, 256)] {
            let shared = tok.with_prompt_cache(options);
            std::thread::scope(|s| {
                for thread in 0..64usize {
                    let (shared, prompts, want) = (shared.clone(), &prompts, &want);
                    s.spawn(move || {
                        // Four threads walk each conversation, out of step.
                        let c = thread % prompts.len();
                        for k in 0..prompts[c].len() {
                            let k = (k + thread / prompts.len()) % prompts[c].len();
                            let got = shared.encode(&prompts[c][k], false).unwrap();
                            assert_eq!(got.ids(), &want[c][k][..], "{model} thread {thread}");
                        }
                    });
                }
            });
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::proptest_cases(16)))]

    /// Random block and cache sizes, random cut points and edits of a corpus
    /// text: always the uncached ids.
    #[test]
    fn random_edits_and_sizes(
        file in 0usize..64,
        start in 0usize..1_000_000,
        block in 64usize..2048,
        size in prop_oneof![1u64..4096, 4096u64..(4 << 20)],
        steps in proptest::collection::vec((0usize..100, 0u8..4, "[a-z <|>_\\n é中]{0,40}"), 1..8),
        model in 0usize..3,
    ) {
        let model = ["Qwen/Qwen3-8B", "o200k_base", "sentence-transformers/all-MiniLM-L6-v2"][model];
        let tok = common::tokenizer(model);
        let reference = off(&tok);
        let cached = tok.with_prompt_cache(l1(size, block));
        let files = common::all_inputs();
        let bytes = std::fs::read(&files[file % files.len()].1).unwrap();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let s = char_floor(&text, start % text.len().max(1));
        let base = &text[s..char_floor(&text, s + (6 << 10))];
        let mut prompt = base[..char_floor(base, base.len() / 3)].to_owned();
        for (at, op, insert) in steps {
            match op {
                // Append more of the base text (a new turn).
                0 | 1 => {
                    let from = char_floor(base, prompt.len().min(base.len()));
                    let to = char_floor(base, from + base.len() * at / 400 + 1);
                    prompt.push_str(&base[from..to.max(from)]);
                    prompt.push_str(&insert);
                }
                // Edit the end: cut back and write something else.
                2 => {
                    let keep = char_floor(&prompt, prompt.len() * (100 - at / 4) / 100);
                    prompt.truncate(keep);
                    prompt.push_str(&insert);
                }
                // Regenerate: the same prompt again.
                _ => {}
            }
            prop_assert_eq!(
                cached.encode(&prompt, at % 2 == 0).unwrap().into_ids(),
                reference.encode(&prompt, at % 2 == 0).unwrap().into_ids(),
                "{} block {} size {}", model, block, size
            );
        }
    }
}
