//! Text seen once (issue #43): 8 KiB pieces of real text, each encoded
//! exactly once, after a warm-up on other pieces of the same kinds, single
//! thread, for Llama-3, Qwen3, o200k_base, cl100k_base and Mistral-7B's
//! `.model`, with `tiktoken-rs` beside the crate on the two tiktoken
//! encodings (in the same group, so their ratio comes from one run).
//!
//! The crate encodes under `Parallelism::Sequential`, which never consults the
//! handle's L0/L1 prompt caches (and `common::load` turns them off as well),
//! so the only caches left are inside the backend: the word caches, which
//! the warm-up fills.
//!
//! **No piece repeats**, however many iterations criterion asks for. Each
//! group draws from a `Supply`: consecutive 8 KiB windows of the kind's
//! text (its files in name order), the first ones for the warm-up, the rest
//! for the timed iterations, one window each; at the end of the text the
//! next pass starts over with every line behind a marker of the pass
//! (`2\t`, `3\t`, …, as `tools/common/fresh.rs` does), so every line
//! group is new again while the words stay those the caches know (the
//! marker adds about two tokens a line). The first pass holds 226 timed
//! pieces of English, 514 of code and 620 of Chinese (39 of math, whose
//! whole text is 590 KB); criterion's warm-up and ten samples take some
//! thousands, so most groups run several passes.
//! `mixed` takes the six kinds' pieces in turn (one thread's caches then
//! hold six kinds of words at once).
//!
//! The time of an iteration is the encode call alone (`iter_custom`; cutting
//! the next piece is outside it). The Python peers, ids checked against
//! the references and every other tokenizer are in `scripts/bench_peers.py`,
//! whose default protocol this is.

mod common;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use router_tokenizer::Tokenizer;
use std::hint::black_box;
use std::time::{Duration, Instant};

const PIECE: usize = 8 << 10;
/// Pieces of each kind encoded before timing (other text than any timed piece).
const WARM_PIECES: usize = 32;
const KINDS: [&str; 6] = [
    "en-prose",
    "zh",
    "code",
    "multilingual",
    "structured",
    "math",
];

/// Never-repeated pieces of one or more corpus kinds (taken in turn).
struct Supply {
    kinds: Vec<Kind>,
    turn: usize,
}

struct Kind {
    corpus: String,
    text: String,
    at: usize,
    pass: usize,
}

impl Supply {
    fn new(categories: &[&str]) -> Self {
        let kinds = categories
            .iter()
            .map(|c| {
                let corpus = common::kind_text(c);
                Kind {
                    text: corpus.clone(),
                    corpus,
                    at: 0,
                    pass: 1,
                }
            })
            .collect();
        Self { kinds, turn: 0 }
    }

    /// The next piece: `PIECE` bytes cut back to a char boundary, never
    /// returned before.
    fn next(&mut self) -> String {
        let n = self.kinds.len();
        let kind = &mut self.kinds[self.turn % n];
        self.turn += 1;
        if kind.at + PIECE > kind.text.len() {
            kind.at = 0;
            kind.pass += 1;
            let marker = format!("{}\t", kind.pass);
            kind.text = kind
                .corpus
                .split_inclusive('\n')
                .flat_map(|line| [marker.as_str(), line])
                .collect();
        }
        let start = kind.at;
        let mut end = start + PIECE;
        while !kind.text.is_char_boundary(end) {
            end -= 1;
        }
        kind.at = end;
        kind.text[start..end].to_owned()
    }
}

/// Times `encode` on `iters` fresh pieces, each once.
fn once<R>(supply: &mut Supply, iters: u64, mut encode: impl FnMut(&str) -> R) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let piece = supply.next();
        let start = Instant::now();
        black_box(encode(black_box(&piece)));
        total += start.elapsed();
    }
    total
}

/// A supply for `category` (`mixed`: the six kinds in turn) with its first
/// `WARM_PIECES` pieces (per kind) given to `warm`.
fn warmed_supply(category: &str, mut warm: impl FnMut(&str)) -> Supply {
    let kinds: Vec<&str> = if category == "mixed" {
        KINDS.to_vec()
    } else {
        vec![category]
    };
    let mut supply = Supply::new(&kinds);
    for _ in 0..WARM_PIECES * kinds.len() {
        warm(&supply.next());
    }
    supply
}

fn seen_once(c: &mut Criterion) {
    let shared = common::shared();
    let mistral = shared
        .join("fixtures/sentencepiece/mistral-tokenizer.model.v1")
        .display()
        .to_string();
    let tokenizers: [(&str, String); 5] = [
        ("llama3", "meta-llama/Meta-Llama-3-8B-Instruct".into()),
        ("qwen3", "Qwen/Qwen3-8B".into()),
        ("o200k_base", "o200k_base".into()),
        ("cl100k_base", "cl100k_base".into()),
        ("mistral-7b-model", mistral),
    ];
    for (name, source) in &tokenizers {
        let tok: Tokenizer = common::load(source);
        tok.warm_up();
        let peer = match *name {
            "o200k_base" => Some(tiktoken_rs::o200k_base().unwrap()),
            "cl100k_base" => Some(tiktoken_rs::cl100k_base().unwrap()),
            _ => None,
        };
        for category in ["en-prose", "code", "zh", "mixed"] {
            let mut g = c.benchmark_group(format!("seen_once/{name}/{category}"));
            g.throughput(Throughput::Bytes(PIECE as u64))
                .sampling_mode(SamplingMode::Flat)
                .sample_size(10)
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(2));
            let mut supply = warmed_supply(category, |p| {
                let ids = tok.encode_with(p, &common::sequential()).unwrap();
                if let Some(peer) = &peer {
                    // Outside the timing: the ids are tiktoken's.
                    assert_eq!(ids.ids(), peer.encode_ordinary(p).as_slice(), "{name}");
                }
            });
            g.bench_function("router-tokenizer", |b| {
                b.iter_custom(|iters| {
                    once(&mut supply, iters, |p| {
                        tok.encode_with(p, &common::sequential()).unwrap()
                    })
                })
            });
            if let Some(peer) = &peer {
                // A supply of its own, cut the same way (it has no cache to warm).
                let mut supply = warmed_supply(category, |_| {});
                g.bench_function("tiktoken-rs", |b| {
                    b.iter_custom(|iters| once(&mut supply, iters, |p| peer.encode_ordinary(p)))
                });
            }
            g.finish();
        }
    }
}

criterion_group!(benches, seen_once);
criterion_main!(benches);
