//! Token budgets against brute force: `prefix_within`, `suffix_within`,
//! `split` and `TokenCounter` on every shared tokenizer, on short slices of
//! the adversarial and corpus files, the `bpe` README's pathological inputs
//! (tokens that neither start nor end on a char boundary) and long strings
//! with no whitespace. Brute force encodes every prefix (suffix) that ends
//! (starts) on a char boundary.

use crate::common;

use common::{HUB_MODELS, adversarial_files, corpus_files, tokenizer};
use router_tokenizer::{ErrorKind, Side, Tokenizer};

const TIKTOKEN: &[&str] = &[
    "o200k_base",
    "cl100k_base",
    "p50k_base",
    "r50k_base",
    "o200k_harmony",
    "fixtures/tiktoken/llama3-tokenizer.model",
];

const SPM: &[&str] = &[
    "fixtures/sentencepiece/mistral-tokenizer.model.v1",
    "fixtures/sentencepiece/mistral_instruct_tokenizer_240323.model.v3",
    "fixtures/sentencepiece/mistral_instruct_tokenizer_241114.model.v7",
    "fixtures/sentencepiece/spm-test_model.model",
    "fixtures/sentencepiece/spm-test_ja_model.model",
];

/// One GGUF vocabulary per engine path: SPM merge, byte-level BPE on the HF
/// engine (native and fancy-regex profiles), WordPiece.
const GGUF: &[&str] = &[
    "fixtures/gguf/ggml-vocab-llama-spm.gguf",
    "fixtures/gguf/ggml-vocab-gpt-2.gguf",
    "fixtures/gguf/ggml-vocab-deepseek-coder.gguf",
    "fixtures/gguf/ggml-vocab-bert-bge.gguf",
];

fn all_tokenizers() -> Vec<&'static str> {
    HUB_MODELS
        .iter()
        .chain(TIKTOKEN)
        .chain(SPM)
        .chain(GGUF)
        .copied()
        .collect()
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A slice of about `bytes` bytes at a random char boundary.
fn slice<'a>(text: &'a str, bytes: usize, rng: &mut Rng) -> &'a str {
    if text.len() <= bytes {
        return text;
    }
    let mut a = rng.below(text.len() - bytes);
    while !text.is_char_boundary(a) {
        a -= 1;
    }
    let mut b = (a + bytes).min(text.len());
    while !text.is_char_boundary(b) {
        b -= 1;
    }
    &text[a..b]
}

fn boundaries(text: &str) -> Vec<usize> {
    text.char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect()
}

/// Counts of every prefix and every suffix on a char boundary.
struct Brute {
    cuts: Vec<usize>,
    prefix: Vec<usize>,
    suffix: Vec<usize>,
}

impl Brute {
    fn new(tok: &Tokenizer, text: &str, add: bool) -> Self {
        let cuts = boundaries(text);
        let count = |t: &str| {
            tok.encode_with(t, &crate::common::sequential(add))
                .unwrap()
                .len()
        };
        let prefix = cuts.iter().map(|&p| count(&text[..p])).collect();
        let suffix = cuts.iter().map(|&q| count(&text[q..])).collect();
        Self {
            cuts,
            prefix,
            suffix,
        }
    }

    /// Longest prefix within `n` (0 when none).
    fn prefix_within(&self, n: usize) -> usize {
        (0..self.cuts.len())
            .rev()
            .find(|&i| self.prefix[i] <= n)
            .map_or(0, |i| self.cuts[i])
    }

    /// Start of the longest suffix within `n` (the end when none).
    fn suffix_within(&self, n: usize) -> usize {
        (0..self.cuts.len())
            .find(|&i| self.suffix[i] <= n)
            .map_or(*self.cuts.last().unwrap(), |i| self.cuts[i])
    }
}

/// Every operation against brute force on one short text.
fn check(source: &str, tok: &Tokenizer, text: &str, rng: &mut Rng) {
    for add in [false, true] {
        let brute = Brute::new(tok, text, add);
        let total = *brute.prefix.last().unwrap();
        assert_eq!(
            tok.count(text, add).unwrap(),
            total,
            "{source} count {text:?}"
        );
        let mut budgets: Vec<usize> = (0..=total.min(6)).collect();
        budgets.extend([
            total / 3,
            total / 2,
            total.saturating_sub(1),
            total,
            total + 1,
        ]);
        budgets.push(rng.below(total + 2));
        budgets.sort_unstable();
        budgets.dedup();
        for &n in &budgets {
            let got = tok.prefix_within(text, n, add).unwrap();
            assert_eq!(
                got.len(),
                brute.prefix_within(n),
                "{source} prefix_within(n={n}, add={add}) of {text:?}"
            );
            let got = tok.suffix_within(text, n, add).unwrap();
            assert_eq!(
                text.len() - got.len(),
                brute.suffix_within(n),
                "{source} suffix_within(n={n}, add={add}) of {text:?}"
            );
            assert_eq!(
                tok.truncate(text, n, Side::Right, add).unwrap(),
                &text[..brute.prefix_within(n)]
            );
            assert_eq!(
                tok.truncate(text, n, Side::Left, add).unwrap(),
                &text[brute.suffix_within(n)..]
            );
        }
        // Split: each chunk is the longest prefix of the rest within n.
        let n = 1 + rng.below(total.max(1) / 2 + 3);
        check_split(source, tok, text, n, add, true);
        // TokenCounter over random pieces.
        let mut counter = tok.token_counter(add);
        let cuts = boundaries(text);
        let mut at = 0;
        while at < text.len() {
            let next =
                cuts[(cuts.partition_point(|&c| c <= at) + rng.below(6)).min(cuts.len() - 1)];
            counter.push(&text[at..next]).unwrap();
            at = next;
            let want = brute.prefix[cuts.binary_search(&at).unwrap()];
            assert_eq!(
                counter.count().unwrap(),
                want,
                "{source} TokenCounter after {:?} (add={add})",
                &text[..at]
            );
        }
    }
}

/// Chunks cover the text; each re-encodes to its reported count, at most
/// `n`; with `exact`, each is the brute-force longest prefix of the rest,
/// else adding the next char exceeds `n`.
fn check_split(source: &str, tok: &Tokenizer, text: &str, n: usize, add: bool, exact: bool) {
    let mut at = 0;
    for chunk in tok.split(text, n, add) {
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => {
                assert!(
                    matches!(e.kind(), ErrorKind::BudgetTooSmall { .. }),
                    "{source}: {e}"
                );
                let rest = &text[at..];
                let first = rest.chars().next().unwrap().len_utf8();
                assert!(tok.count(&rest[..first], add).unwrap() > n, "{source}: {e}");
                return;
            }
        };
        assert_eq!(chunk.start, at, "{source}: gap");
        assert!(chunk.end > chunk.start);
        let piece = &text[chunk.start..chunk.end];
        let count = tok.count(piece, add).unwrap();
        assert_eq!(count, chunk.tokens, "{source}: chunk count {piece:?}");
        assert!(count <= n, "{source}: chunk over budget {piece:?}");
        let rest = &text[at..];
        if exact {
            let brute = Brute::new(tok, rest, add);
            assert_eq!(
                chunk.end - at,
                brute.prefix_within(n),
                "{source} split n={n} {rest:?}"
            );
        } else if let Some(c) = text[chunk.end..].chars().next() {
            let longer = &text[chunk.start..chunk.end + c.len_utf8()];
            assert!(
                tok.count(longer, add).unwrap() > n,
                "{source}: chunk could grow {longer:?}"
            );
        }
        at = chunk.end;
    }
    assert_eq!(at, text.len(), "{source}: chunks stop early");
}

fn read(path: &std::path::Path) -> String {
    String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned()
}

#[test]
fn short_slices_against_brute_force() {
    let adversarial: Vec<String> = adversarial_files().iter().map(|(_, p)| read(p)).collect();
    let corpus: Vec<String> = corpus_files().iter().map(|(_, p)| read(p)).collect();
    for (k, source) in all_tokenizers().into_iter().enumerate() {
        let tok = tokenizer(source);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (k as u64 + 1));
        for _ in 0..3 {
            let text = &adversarial[rng.below(adversarial.len())];
            let s = slice(text, 24 + rng.below(40), &mut rng).to_owned();
            check(source, &tok, &s, &mut rng);
        }
        for _ in 0..3 {
            let text = &corpus[rng.below(corpus.len())];
            let s = slice(text, 40 + rng.below(100), &mut rng).to_owned();
            check(source, &tok, &s, &mut rng);
        }
    }
}

/// Inputs where tokens neither start nor end on a char boundary, runs that
/// merge differently by length, and special-token text.
const PATHOLOGICAL: &[&str] = &[
    "🙂🙃🙂🙃🙂🙃🙂🙃",
    "\u{1F1FA}\u{1F1F8}\u{1F1EC}\u{1F1E7}\u{1F1EB}\u{1F1F7}",
    "ⓐⓑⓒⓓⓔⓕⓖⓗⓘⓙ",
    "쀀쀁쀂쀃쀄쀅쀆",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝔱𝔢𝔵𝔱",
    "e\u{301}e\u{301}e\u{301} e\u{301}",
    "1１2２3３4４5５6６",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "                    x                    ",
    "\n\n\n \n \n\t\t x  \r\n",
    "<|endoftext|>hello <s> world</s><|im_start|> x",
    "abababababababababababcbc",
    "!!!!!!!!!!!!!!!??????????............",
];

#[test]
fn pathological_inputs_against_brute_force() {
    for (k, source) in all_tokenizers().into_iter().enumerate() {
        let tok = tokenizer(source);
        let mut rng = Rng(0xD1B5_4A32_D192_ED03 ^ (k as u64 + 7));
        for text in PATHOLOGICAL {
            check(source, &tok, text, &mut rng);
        }
    }
}

/// Long strings with no whitespace: one stretch, searched by re-encoding.
#[test]
fn long_strings_without_whitespace() {
    let inputs = [
        "abcdefghij".repeat(30),
        "1234567890".repeat(30),
        "漢字仮名交じり文".repeat(30),
        "🙂👍🏽".repeat(40),
        "x=f(y);".repeat(40),
    ];
    for source in [
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "Qwen/Qwen3-8B",
        "mistralai/Mistral-7B-v0.1",
        "o200k_base",
        "fixtures/sentencepiece/mistral-tokenizer.model.v1",
        "fixtures/sentencepiece/spm-test_model.model",
    ] {
        let tok = tokenizer(source);
        for text in &inputs {
            let brute = Brute::new(&tok, text, false);
            let total = *brute.prefix.last().unwrap();
            for n in [1, total / 4, total / 2, total - 1] {
                let got = tok.prefix_within(text, n, false).unwrap();
                assert_eq!(got.len(), brute.prefix_within(n), "{source} n={n}");
                let got = tok.suffix_within(text, n, false).unwrap();
                assert_eq!(
                    text.len() - got.len(),
                    brute.suffix_within(n),
                    "{source} n={n}"
                );
            }
        }
    }
}

/// Longer corpus slices: chunks fit and cannot grow by one char; the
/// counter matches a full count at every step.
#[test]
fn corpus_split_and_counter() {
    let corpus: Vec<(String, String)> = corpus_files()
        .iter()
        .map(|(k, p)| (k.clone(), read(p)))
        .collect();
    for (k, source) in all_tokenizers().into_iter().enumerate() {
        let tok = tokenizer(source);
        let mut rng = Rng(0xA076_1D64_78BD_642F ^ (k as u64 + 3));
        let (name, text) = &corpus[rng.below(corpus.len())];
        let text = slice(text, 3000, &mut rng);
        let n = 16 + rng.below(64);
        check_split(&format!("{source} {name}"), &tok, text, n, false, false);
        let mut counter = tok.token_counter(true);
        let mut at = 0;
        while at < text.len() {
            let mut next = (at + 1 + rng.below(300)).min(text.len());
            while !text.is_char_boundary(next) {
                next += 1;
            }
            counter.push(&text[at..next]).unwrap();
            at = next;
            if rng.below(4) == 0 || at == text.len() {
                assert_eq!(
                    counter.count().unwrap(),
                    tok.count(&text[..at], true).unwrap(),
                    "{source} {name} counter at {at}"
                );
            }
        }
    }
}

#[test]
fn context_length_from_configs_and_check_budget() {
    let cases = [
        ("Qwen/Qwen3-8B", Some(131072)),
        ("openai/gpt-oss-20b", Some(131072)),
        ("sentence-transformers/all-MiniLM-L6-v2", Some(512)),
        ("google/gemma-3-4b-it", Some(32768)),
        ("Xenova/gpt-3.5-turbo", Some(4096)),
        ("mistralai/Mistral-7B-v0.1", None),
        ("o200k_base", None),
        // GGUF: `{general.architecture}.context_length`.
        ("fixtures/gguf/ggml-vocab-llama-spm.gguf", Some(4096)),
        ("fixtures/gguf/ggml-vocab-bert-bge.gguf", Some(512)),
        ("fixtures/gguf/ggml-vocab-starcoder.gguf", Some(16384)),
    ];
    for (source, want) in cases {
        assert_eq!(tokenizer(source).context_length(), want, "{source}");
    }
    let tok = tokenizer("sentence-transformers/all-MiniLM-L6-v2");
    tok.check_budget(500, 12).unwrap();
    let err = tok.check_budget(500, 13).unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::ContextLengthExceeded {
            prompt_tokens: 500,
            max_tokens: 13,
            context_length: 512
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains("500") && msg.contains("13") && msg.contains("512"),
        "{msg}"
    );
    assert!(tok.check_budget(usize::MAX, 1).is_err());
    // No known limit: an explicit error (the server's, 500), never a silent
    // pass; the loader hook sets one.
    let o200k = tokenizer("o200k_base");
    let err = o200k.check_budget(usize::MAX, usize::MAX).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ContextLengthUnknown { model } if model == "o200k_base"),
        "{err:?}"
    );
    assert_eq!(err.http_status(), 500);
    assert_eq!(tok.check_budget(500, 13).unwrap_err().http_status(), 400);
    let limited = o200k.with_context_length(8);
    assert_eq!(limited.context_length(), Some(8));
    assert!(limited.check_budget(5, 4).is_err());
    assert_eq!(o200k.context_length(), None);
}

/// Issue 41 item 5: Meta-Llama-3-8B's configs name no context length, and
/// `check_budget(10M, 10M)` used to be `Ok`.
#[test]
fn an_unknown_context_length_is_not_a_pass() {
    let tok = tokenizer("meta-llama/Meta-Llama-3-8B-Instruct");
    if tok.context_length().is_none() {
        let err = tok.check_budget(10_000_000, 10_000_000).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::ContextLengthUnknown { .. }),
            "{err:?}"
        );
        assert!(err.is_server_error());
    } else {
        assert!(tok.check_budget(10_000_000, 10_000_000).is_err());
    }
}

#[test]
fn split_reports_budgets_too_small() {
    let tok = tokenizer("o200k_base");
    let wide = ["𝔘", "쀀", "\u{1F9EC}", "ⓐ"]
        .into_iter()
        .find(|c| tok.count(c, false).unwrap() > 1)
        .unwrap();
    let text = format!("ab{wide}");
    let chunks: Vec<_> = tok.split(&text, 1, false).collect();
    assert_eq!(chunks.len(), 2);
    assert!(matches!(
        chunks[1].as_ref().unwrap_err().kind(),
        ErrorKind::BudgetTooSmall {
            max_tokens: 1,
            at: 2
        }
    ));
    let tok = tokenizer("meta-llama/Llama-3.2-1B-Instruct");
    // BOS alone uses the whole budget.
    let first = tok.split("hello", 1, true).next().unwrap();
    assert!(matches!(
        first.unwrap_err().kind(),
        ErrorKind::BudgetTooSmall {
            max_tokens: 1,
            at: 0
        }
    ));
    assert_eq!(tok.split("", 4, false).count(), 0);
}

/// `rtok truncate` prints the kept text exactly; `rtok split --json` prints
/// byte ranges and counts that re-encode.
#[test]
fn cli_truncate_and_split() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let run = |args: &[&str], stdin: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rtok"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let text = "Hello, world! How are you today? 🙂🙂 fine.\n";
    let tok = tokenizer("o200k_base");
    for n in [0, 3, 7, 100] {
        let n_arg = n.to_string();
        let right = run(&["truncate", "--max-tokens", &n_arg], text);
        assert_eq!(right, tok.prefix_within(text, n, false).unwrap());
        let left = run(
            &["truncate", "--max-tokens", &n_arg, "--side", "left"],
            text,
        );
        assert_eq!(left, tok.suffix_within(text, n, false).unwrap());
    }
    let out = run(&["split", "--tokens", "4", "--json"], text);
    let chunks: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    let mut at = 0;
    for c in &chunks {
        let (s, e, t) = (
            c["start"].as_u64().unwrap() as usize,
            c["end"].as_u64().unwrap() as usize,
            c["tokens"].as_u64().unwrap() as usize,
        );
        assert_eq!(s, at);
        assert!(t <= 4);
        assert_eq!(tok.count(&text[s..e], false).unwrap(), t);
        at = e;
    }
    assert_eq!(at, text.len());
}
