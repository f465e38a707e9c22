//! Streaming detokenization: the invariants `stream-equals-decode` and `stop-first-completion` of
//! DESIGN.md, checked on every
//! shared tokenizer, and the stop decoder against a cut-at-first-stop reference.

use crate::common;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestRng};
use router_tokenizer::{
    DecodeStream, ErrorKind, MatchedStop, Output, Sequence, StopConfig, StopReason,
    StopSequenceDecoder, Tokenizer, UnknownIds,
};
use std::sync::LazyLock;

const STREAM_SOURCES: &[&str] = &[
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "Qwen/Qwen3-8B",
    "google/gemma-3-4b-it",
    "mistralai/Mistral-7B-v0.1",
    "sentence-transformers/all-MiniLM-L6-v2",
    "deepseek-ai/DeepSeek-V3",
    "openai/gpt-oss-20b",
    "CohereForAI/c4ai-command-r-plus",
    "mistralai/Mistral-Nemo-Instruct-2407",
    "meta-llama/Llama-3.2-1B-Instruct",
    "Xenova/gpt-3.5-turbo",
    "o200k_base",
    "cl100k_base",
    "fixtures/sentencepiece/mistral-tokenizer.model.v1",
    // The windowed path (no shared tokenizer uses it any more).
    common::WINDOWED_MISTRAL,
    // GGUF vocabularies without llama.cpp's clean_spaces (DESIGN invariant `stream-equals-decode`).
    "fixtures/gguf/ggml-vocab-llama-spm.gguf",
    "fixtures/gguf/ggml-vocab-deepseek-coder.gguf",
    // A `t5` (UGM) vocabulary with a charsmap (tests/golden/gguf/make_t5_gguf.py).
    "tests/golden/gguf/t5/t5-test-ja.gguf",
];

/// The byte a `<0xNN>` byte-fallback piece stands for.
fn byte_of(tok: &Tokenizer, id: u32) -> Option<u8> {
    let t = tok.id_to_token(id)?;
    let hex = t.strip_prefix("<0x")?.strip_suffix('>')?;
    (hex.len() == 2).then(|| u8::from_str_radix(hex, 16).ok())?
}

/// Whether every run of byte-fallback pieces in `ids` is valid UTF-8, with the
/// special tokens between pieces read both as ending a run and as not: the
/// side of invariant `stream-equals-decode` on which a stream equals `decode(all)` exactly.
fn byte_runs_valid(tok: &Tokenizer, ids: &[u32]) -> bool {
    [true, false].into_iter().all(|specials_split| {
        let mut run = Vec::new();
        for &id in ids.iter().chain(&[u32::MAX]) {
            match byte_of(tok, id) {
                Some(b) => run.push(b),
                None if !specials_split && tok.is_special_id(id) => {}
                None => {
                    if std::str::from_utf8(&run).is_err() {
                        return false;
                    }
                    run.clear();
                }
            }
        }
        true
    })
}

/// A mixed text: prose, CJK, emoji, code, special tokens.
static TEXT: LazyLock<String> = LazyLock::new(|| {
    let mut t = String::new();
    for (key, path) in all_inputs() {
        if [
            "en-prose/botchan.txt",
            "zh/hongloumeng.txt",
            "multilingual/emoji-zwj-sequences.txt",
            "code/rust.txt",
            "adversarial/special-tokens.txt",
            "multilingual/ntrex-hin.txt",
        ]
        .contains(&key.as_str())
        {
            let s = std::fs::read_to_string(path).unwrap();
            let mut end = 20_000.min(s.len());
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            t.push_str(&s[..end]);
        }
    }
    t
});

fn slice(start: usize, len: usize) -> &'static str {
    let t = TEXT.as_str();
    let mut s = start % t.len();
    while !t.is_char_boundary(s) {
        s -= 1;
    }
    let mut e = (s + len).min(t.len());
    while !t.is_char_boundary(e) {
        e -= 1;
    }
    &t[s..e]
}

/// Runs a stream over `generated` after `prompt`; returns the pieces and the flush.
fn stream(tok: &Tokenizer, prompt: &[u32], generated: &[u32], skip: bool) -> Vec<String> {
    let mut s = DecodeStream::new(tok, prompt, skip);
    let mut pieces = Vec::new();
    for &id in generated {
        if let Some(p) = s.step(id).unwrap() {
            pieces.push(p);
        }
        // Memory is bounded by the pending window, not by the tokens so far.
        assert!(
            s.tokens().len() <= 64,
            "window grew to {}",
            s.tokens().len()
        );
    }
    pieces.extend(s.flush().unwrap());
    pieces
}

/// Rule 1: joined pieces == decode(prompt + generated) minus decode(prompt), when the
/// prompt decodes to a prefix of the whole (it does for prompts encoded from text).
fn check_stream(
    tok: &Tokenizer,
    prompt: &[u32],
    generated: &[u32],
    skip: bool,
) -> Result<(), TestCaseError> {
    let all: Vec<u32> = prompt.iter().chain(generated).copied().collect();
    let full = tok.decode(&all, skip).unwrap();
    let pre = tok.decode(prompt, skip).unwrap();
    prop_assume!(full.starts_with(&pre));
    let pieces = stream(tok, prompt, generated, skip);
    let joined: String = pieces.concat();
    if !byte_runs_valid(tok, &all) {
        // Invariant `stream-equals-decode` (its stated exception): only the invalid bytes of a run become U+FFFD, where
        // `decode` may turn the whole run into U+FFFD.
        let n = |s: &str| s.matches('\u{FFFD}').count();
        prop_assert!(
            n(&joined) <= n(&full[pre.len()..]),
            "{} {:?} {:?}",
            tok.source(),
            joined,
            &full[pre.len()..]
        );
        return Ok(());
    }
    prop_assert_eq!(
        &joined,
        &full[pre.len()..],
        "{} prompt {:?} generated {:?}",
        tok.source(),
        prompt,
        generated
    );
    if !full.contains('\u{FFFD}') {
        for p in &pieces {
            prop_assert!(!p.contains('\u{FFFD}'), "{}: piece {:?}", tok.source(), p);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::proptest_cases(512), ..ProptestConfig::default() })]

    #[test]
    fn stream_equals_decode_on_corpus_ids(start in 0usize..1_000_000, plen in 0usize..200, glen in 1usize..400, skip in any::<bool>()) {
        let prompt_text = slice(start, plen);
        let gen_text = slice(start + plen, glen);
        for source in STREAM_SOURCES {
            let tok = tokenizer(source);
            let prompt = tok.encode(prompt_text, false).unwrap().into_ids();
            let generated = tok.encode(gen_text, false).unwrap().into_ids();
            check_stream(&tok, &prompt, &generated, skip)?;
        }
    }

    #[test]
    fn stream_equals_decode_on_random_ids(start in 0usize..1_000_000, plen in 0usize..60, ids in proptest::collection::vec(any::<u32>(), 1..64), skip in any::<bool>()) {
        for source in STREAM_SOURCES {
            let tok = tokenizer(source);
            let prompt = tok.encode(slice(start, plen), false).unwrap().into_ids();
            let n = tok.vocab_size() as u32;
            let generated: Vec<u32> = ids.iter().map(|i| i % n).filter(|&i| tok.id_to_token(i).is_some()).collect();
            check_stream(&tok, &prompt, &generated, skip)?;
        }
    }
}

/// Issue 13, bug 3: streams skip ids outside the vocabulary by default (as
/// vLLM renders them as ""), fail under `UnknownIds::Error`; `decode` stays strict.
#[test]
fn unknown_ids_are_skipped_or_errors() {
    for source in STREAM_SOURCES {
        let tok = tokenizer(source);
        let ids = tok.encode("Hello there", false).unwrap().into_ids();
        let padded = tok.vocab_size() as u32 + 3;
        let mut s = DecodeStream::new(&tok, &[], false);
        let mut text = String::new();
        for &id in &[ids[0], padded, u32::MAX] {
            text.push_str(&s.step(id).unwrap().unwrap_or_default());
        }
        for &id in &ids[1..] {
            text.push_str(&s.step(id).unwrap().unwrap_or_default());
        }
        text.push_str(&s.flush().unwrap().unwrap_or_default());
        assert_eq!(text, tok.decode(&ids, false).unwrap(), "{source}");
        assert!(tok.decode(&[padded], false).is_err(), "{source}");
        let mut s = DecodeStream::new(&tok, &[], false).with_unknown_ids(UnknownIds::Error);
        assert!(s.step(u32::MAX).is_err(), "{source}");
        let mut d = StopSequenceDecoder::new(
            &tok,
            &[],
            StopConfig {
                unknown_ids: UnknownIds::Error,
                ..StopConfig::default()
            },
        )
        .unwrap();
        assert!(
            d.process_token(u32::MAX).is_err(),
            "{source}: decode errors must propagate, not be held"
        );
        let mut d = StopSequenceDecoder::new(&tok, &[], StopConfig::default()).unwrap();
        assert_eq!(d.process_token(padded).unwrap(), Output::Held, "{source}");
    }
}

/// The reference: the text cut at the first stop to complete (earliest end,
/// then earliest start), hidden or visible.
fn cut_at_first_stop(text: &str, hidden: &[String], visible: &[String]) -> (String, bool) {
    let mut best: Option<(usize, usize, bool)> = None;
    for (stops, vis) in [(hidden, false), (visible, true)] {
        for s in stops {
            let mut from = 0;
            while let Some(i) = text[from..].find(s.as_str()) {
                let (st, en) = (from + i, from + i + s.len());
                if best.is_none_or(|(bs, be, _)| (en, st) < (be, bs)) {
                    best = Some((st, en, vis));
                }
                from += i + text[from + i..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    match best {
        Some((s, _, false)) => (text[..s].to_owned(), true),
        Some((_, e, true)) => (text[..e].to_owned(), true),
        None => (text.to_owned(), false),
    }
}

fn run_stop(
    tok: &Tokenizer,
    ids: &[u32],
    config: StopConfig,
) -> (String, bool, Option<MatchedStop>) {
    let mut d = StopSequenceDecoder::new(tok, &[], config).unwrap();
    let mut out = String::new();
    let mut stopped = false;
    for &id in ids {
        match d.process_token(id).unwrap() {
            Output::Text(t) => out.push_str(&t),
            Output::Held => {}
            Output::Stopped => stopped = true,
            Output::StoppedWithText(t) => {
                out.push_str(&t);
                stopped = true;
            }
        }
        if stopped {
            assert_eq!(
                d.process_token(id).unwrap(),
                Output::Stopped,
                "output after a stop is nothing"
            );
            break;
        }
    }
    if !stopped {
        match d.flush().unwrap() {
            Output::Text(t) => out.push_str(&t),
            Output::StoppedWithText(t) => {
                out.push_str(&t);
                stopped = true;
            }
            Output::Stopped => stopped = true,
            Output::Held => {}
        }
    }
    (out, stopped, d.matched_stop().cloned())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::proptest_cases(512), ..ProptestConfig::default() })]

    /// Stop strings cut from the decoded text at random byte positions (so they
    /// span tokens and start inside multi-byte characters' tokens).
    #[test]
    fn stop_strings_cut_at_the_first_stop(start in 0usize..1_000_000, len in 1usize..300,
            picks in proptest::collection::vec((0usize..300, 1usize..12, any::<bool>()), 1..6)) {
        for source in ["o200k_base", "meta-llama/Meta-Llama-3-8B-Instruct", "Qwen/Qwen3-8B", "google/gemma-3-4b-it"] {
            let tok = tokenizer(source);
            let ids = tok.encode(slice(start, len), false).unwrap().into_ids();
            let text = tok.decode(&ids, false).unwrap();
            prop_assume!(!text.is_empty());
            let (mut hidden, mut visible) = (Vec::new(), Vec::new());
            for (at, n, vis) in &picks {
                let mut s = at % text.len();
                while !text.is_char_boundary(s) { s -= 1; }
                let mut e = (s + n).min(text.len());
                while !text.is_char_boundary(e) { e += 1; }
                if e > s {
                    if *vis { visible.push(text[s..e].to_owned()) } else { hidden.push(text[s..e].to_owned()) }
                }
            }
            let (want, want_stop) = cut_at_first_stop(&text, &hidden, &visible);
            let (got, stopped, _) = run_stop(&tok, &ids, StopConfig {
                stop_strings: hidden.clone(),
                visible_stop_strings: visible.clone(),
                ignore_eos: true,
                ..StopConfig::default()
            });
            prop_assert_eq!(&got, &want, "{} hidden {:?} visible {:?}", source, hidden, visible);
            prop_assert_eq!(stopped, want_stop);
        }
    }
}

#[test]
fn stop_table() {
    let tok = tokenizer("o200k_base");
    let ids = |t: &str| tok.encode(t, false).unwrap().into_ids();
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    struct Case {
        name: &'static str,
        text: &'static str,
        config: StopConfig,
        want: &'static str,
        stopped: bool,
    }
    let eot = tok.token_to_id("<|endoftext|>").unwrap();
    let cases = [
        Case {
            name: "overlapping stops: first to complete wins",
            text: "say abcd now",
            config: StopConfig {
                stop_strings: s(&["abcd", "bc"]),
                ..Default::default()
            },
            want: "say a",
            stopped: true,
        },
        Case {
            name: "a stop that is a prefix of another",
            text: "x END_TURN y",
            config: StopConfig {
                stop_strings: s(&["END_TURN", "END"]),
                ..Default::default()
            },
            want: "x ",
            stopped: true,
        },
        Case {
            name: "visible stop keeps its text",
            text: "answer: 42. More",
            config: StopConfig {
                visible_stop_strings: s(&["42."]),
                ..Default::default()
            },
            want: "answer: 42.",
            stopped: true,
        },
        Case {
            name: "stop at the very first token",
            text: "Hello world",
            config: StopConfig {
                stop_strings: s(&["Hello"]),
                ..Default::default()
            },
            want: "",
            stopped: true,
        },
        Case {
            name: "min_tokens delays stops",
            text: "Hello Hello world",
            config: StopConfig {
                stop_strings: s(&["Hello"]),
                min_tokens: 1,
                ..Default::default()
            },
            want: "Hello ",
            stopped: true,
        },
        Case {
            name: "no stop",
            text: "plain text",
            config: StopConfig {
                stop_strings: s(&["zzz"]),
                ..Default::default()
            },
            want: "plain text",
            stopped: false,
        },
        Case {
            name: "jailed prefix released at flush",
            text: "the end is nea",
            config: StopConfig {
                stop_strings: s(&["near!"]),
                ..Default::default()
            },
            want: "the end is nea",
            stopped: false,
        },
        Case {
            name: "stop inside a multi-byte character run",
            text: "日本語のテキスト",
            config: StopConfig {
                stop_strings: s(&["のテ"]),
                ..Default::default()
            },
            want: "日本語",
            stopped: true,
        },
    ];
    for c in cases {
        let (got, stopped, _) = run_stop(&tok, &ids(c.text), c.config);
        assert_eq!((got.as_str(), stopped), (c.want, c.stopped), "{}", c.name);
    }
    // A stop token with jailed text pending: the jail is released, the token hidden.
    let mut input = ids("wait for <fin");
    input.push(eot);
    let (got, stopped, matched) = run_stop(
        &tok,
        &input,
        StopConfig {
            stop_strings: s(&["<finish>"]),
            stop_token_ids: vec![eot],
            ..Default::default()
        },
    );
    assert_eq!((got.as_str(), stopped), ("wait for <fin", true));
    assert_eq!(
        matched,
        Some(MatchedStop::Token {
            id: eot,
            visible: false
        })
    );
    // Visible stop token: its text is emitted.
    let mut input = ids("done");
    input.push(eot);
    let (got, _, _) = run_stop(
        &tok,
        &input,
        StopConfig {
            visible_stop_token_ids: vec![eot],
            ..Default::default()
        },
    );
    assert_eq!(got, "done<|endoftext|>");
    // Which string matched, with its index.
    let (_, _, matched) = run_stop(
        &tok,
        &ids("a b c"),
        StopConfig {
            stop_strings: s(&["x", "b"]),
            ..Default::default()
        },
    );
    assert_eq!(
        matched,
        Some(MatchedStop::String {
            index: 1,
            text: "b".into(),
            visible: false
        })
    );
    // The jail holds only a proper prefix of a stop, nothing before it.
    let mut d = StopSequenceDecoder::new(
        &tok,
        &[],
        StopConfig {
            stop_strings: s(&["</answer>"]),
            ..Default::default()
        },
    )
    .unwrap();
    let mut released = String::new();
    for id in ids("final </ans") {
        if let Output::Text(t) = d.process_token(id).unwrap() {
            released.push_str(&t);
        }
    }
    assert_eq!((released.as_str(), d.jailed()), ("final ", "</ans"));
    d.reset();
    assert_eq!(d.jailed(), "");
    assert!(d.matched_stop().is_none());
}

#[test]
fn sequence_mixes_text_and_tokens() {
    for source in [
        "o200k_base",
        "google/gemma-3-4b-it",
        "sentence-transformers/all-MiniLM-L6-v2",
    ] {
        let tok = tokenizer(source);
        let mut seq = Sequence::new(&tok, false);
        seq.append_text("Hello there, ").unwrap();
        for id in tok.encode("général 😀 ", false).unwrap().into_ids() {
            seq.append_token(id).unwrap();
        }
        seq.append_text("the end").unwrap();
        let full = tok.decode(seq.token_ids(), false).unwrap();
        assert_eq!(seq.full_text().unwrap(), full, "{source}");
        assert!(full.starts_with(seq.text()), "{source}");
    }
}

#[test]
fn public_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<DecodeStream>();
    check::<Sequence>();
    check::<StopSequenceDecoder>();
    check::<StopConfig>();
    check::<Output>();
    check::<router_tokenizer::Tokenizer>();
    check::<router_tokenizer::Encoding>();
    check::<router_tokenizer::Error>();
    check::<router_tokenizer::LoadOptions>();
}

/// Found by CI: the context window began inside the prompt's byte run
/// (`<0xBE><0x8C>` of a 澌), so `tokenizers` rendered the run, and the
/// generated `<0x0D>` with it, as U+FFFD.
#[test]
fn stream_after_a_prompt_ending_in_a_byte_run() {
    let tok = tokenizer("google/gemma-3-4b-it");
    let prompt = tok.encode("菱花空对雪澌澌", false).unwrap().into_ids();
    assert!(
        prompt.ends_with(&[468, 428, 378, 468, 428, 378]),
        "{prompt:?}"
    );
    let cr = tok.token_to_id("<0x0D>").unwrap();
    check_stream(&tok, &prompt, &[cr], false).unwrap();
    assert_eq!(stream(&tok, &prompt, &[cr], false).concat(), "\r");
}

/// Windowed tokenizers whose decoders reassemble byte-fallback runs: the
/// `tokenizers` ones (a run with one invalid byte renders as U+FFFD
/// throughout) and the native SentencePiece ones (U+FFFD per invalid byte).
const BYTE_RUN_SOURCES: &[&str] = &[
    "google/gemma-3-4b-it",
    "mistralai/Mistral-7B-v0.1",
    "fixtures/sentencepiece/mistral-tokenizer.model.v1",
    "fixtures/sentencepiece/mistral_instruct_tokenizer_240323.model.v3",
    "fixtures/gguf/ggml-vocab-llama-spm.gguf",
    common::WINDOWED_MISTRAL,
];

/// Rule 1 across byte-fallback runs, at every prompt/generation split of
/// sequences built to straddle them: valid and invalid runs, runs cut by
/// specials, runs that begin in the prompt. Seeded, so a failure reproduces.
#[test]
fn stream_across_byte_fallback_runs() {
    let mut rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut below = |n: usize| rng.next_u32() as usize % n;
    // Characters most of these vocabularies spell with byte pieces.
    let rare: Vec<char> = "澌痴菱𝔘𝔫😀👩‍💻\r\u{0}é€ꙮ𓀀".chars().collect();
    for source in BYTE_RUN_SOURCES {
        let tok = tokenizer(source);
        let byte_ids: Vec<u32> = (0..=255u8)
            .map(|b| {
                tok.token_to_id(&format!("<0x{b:02X}>"))
                    .unwrap_or_else(|| panic!("{source}: no <0x{b:02X}> piece"))
            })
            .collect();
        let specials: Vec<u32> = tok
            .special_tokens()
            .named()
            .map(|(_, t)| t.id)
            .chain(tok.special_tokens().additional.iter().map(|t| t.id))
            .collect();
        assert!(!specials.is_empty(), "{source}: no special tokens");
        let (mut checked, mut runs) = (0usize, 0usize);
        for _ in 0..160 {
            let mut ids: Vec<u32> = Vec::new();
            for _ in 0..1 + below(10) {
                match below(6) {
                    0 => ids.extend(
                        tok.encode(slice(below(1_000_000), 1 + below(24)), false)
                            .unwrap()
                            .ids(),
                    ),
                    1 | 2 => {
                        let mut buf = [0u8; 4];
                        for &b in rare[below(rare.len())].encode_utf8(&mut buf).as_bytes() {
                            ids.push(byte_ids[usize::from(b)]);
                        }
                    }
                    3 => ids.extend((0..1 + below(3)).map(|_| byte_ids[below(128)])),
                    _ => ids.push(specials[below(specials.len())]),
                }
            }
            runs += ids
                .windows(2)
                .filter(|w| byte_ids.contains(&w[0]) && byte_ids.contains(&w[1]))
                .count();
            if !byte_runs_valid(&tok, &ids) {
                continue; // invariant `stream-equals-decode`: exact only for valid runs (tested below)
            }
            for skip in [false, true] {
                let full = tok.decode(&ids, skip).unwrap();
                for split in 0..ids.len() {
                    let (prompt, generated) = ids.split_at(split);
                    let pre = tok.decode(prompt, skip).unwrap();
                    let Some(want) = full.strip_prefix(pre.as_str()) else {
                        continue; // the prompt's own text changes: no exact answer
                    };
                    let got: String = stream(&tok, prompt, generated, skip).concat();
                    assert_eq!(
                        got, want,
                        "{source} skip={skip} prompt {prompt:?} generated {generated:?}"
                    );
                    // The stop decoder starts from the same prompt context, and
                    // `reset` returns to it.
                    let config = StopConfig {
                        skip_special_tokens: skip,
                        ignore_eos: true,
                        ..StopConfig::default()
                    };
                    let mut d = StopSequenceDecoder::new(&tok, prompt, config).unwrap();
                    for round in 0..2 {
                        let mut text = String::new();
                        for &id in generated {
                            if let Output::Text(t) = d.process_token(id).unwrap() {
                                text.push_str(&t);
                            }
                        }
                        if let Output::Text(t) = d.flush().unwrap() {
                            text.push_str(&t);
                        }
                        assert_eq!(
                            text, want,
                            "{source} stop decoder, round {round}, prompt {prompt:?} generated {generated:?}"
                        );
                        d.reset();
                    }
                    checked += 1;
                }
            }
        }
        eprintln!("{source}: {checked} splits checked, {runs} byte-piece pairs");
        assert!(
            checked > 1_000 && runs > 300,
            "{source}: too few cases ({checked}, {runs})"
        );
    }
}

/// Issue 41 item 5: the library maps a stop to OpenAI's `finish_reason` and
/// vLLM's `stop_reason` (only the CLI did).
#[test]
fn matched_stops_map_to_finish_and_stop_reasons() {
    let tok = tokenizer("o200k_base");
    let ids = tok.encode("Hello ### world", false).unwrap().into_ids();
    let mut d = StopSequenceDecoder::new(
        &tok,
        &[],
        StopConfig {
            stop_strings: vec!["###".into()],
            ..StopConfig::default()
        },
    )
    .unwrap();
    for &id in &ids {
        if d.process_token(id).unwrap().is_stopped() {
            break;
        }
    }
    let stop = d.matched_stop().unwrap();
    assert_eq!(stop.finish_reason(), "stop");
    assert_eq!(stop.stop_reason(), Some(StopReason::String("###")));
    let eos = MatchedStop::Eos { id: 199_999 };
    assert_eq!((eos.finish_reason(), eos.stop_reason()), ("stop", None));
    let token = MatchedStop::Token {
        id: 7,
        visible: false,
    };
    assert_eq!(token.stop_reason(), Some(StopReason::Token(7)));
    assert_eq!(MatchedStop::finish_reason_of(None), "length");
    assert_eq!(MatchedStop::finish_reason_of(Some(&eos)), "stop");
}

/// Issue 41 item 1: an empty stop string is the request's fault (400), not
/// `Config` like a bad load option.
#[test]
fn an_empty_stop_string_is_a_request_error() {
    let tok = tokenizer("o200k_base");
    for config in [
        StopConfig {
            stop_strings: vec![String::new()],
            ..StopConfig::default()
        },
        StopConfig {
            stop_token_sequences: vec![vec![]],
            ..StopConfig::default()
        },
    ] {
        let err = StopSequenceDecoder::new(&tok, &[], config).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::InvalidRequest { .. }),
            "{err:?}"
        );
        assert_eq!(err.http_status(), 400);
        assert!(err.is_client_error());
    }
}

/// The result types serialize as a router's responses need them (feature
/// `serde`, on by default).
#[cfg(feature = "serde")]
#[test]
fn result_types_serialize() {
    let tok = tokenizer("o200k_base");
    let enc = tok
        .encode_with("Hi", &crate::common::offsets(false))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&enc).unwrap(),
        serde_json::json!({"ids": enc.ids(), "offsets": [[0, 2]]})
    );
    let plain = tok.encode("Hi", false).unwrap();
    assert_eq!(
        serde_json::to_value(&plain).unwrap(),
        serde_json::json!({"ids": plain.ids()})
    );
    let stop = MatchedStop::String {
        index: 0,
        text: "###".into(),
        visible: false,
    };
    assert_eq!(
        serde_json::to_value(&stop).unwrap(),
        serde_json::json!({"type": "string", "index": 0, "text": "###", "visible": false})
    );
    assert_eq!(
        serde_json::to_value(stop.stop_reason()).unwrap(),
        serde_json::json!("###")
    );
    assert_eq!(
        serde_json::to_value(Output::Text("a".into())).unwrap(),
        serde_json::json!({"kind": "text", "text": "a"})
    );
    assert_eq!(
        serde_json::to_value(Output::Held).unwrap(),
        serde_json::json!({"kind": "held"})
    );
    let d = StopSequenceDecoder::new(&tok, &[], StopConfig::default()).unwrap();
    let shown = d.token_text(plain.ids()[0]).unwrap();
    let v = serde_json::to_value(&shown).unwrap();
    assert_eq!(v["text"], "Hi");
}
