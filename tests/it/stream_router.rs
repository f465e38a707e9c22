//! Streaming as an inference engine drives it (issue 13, issue 11 items 6–7):
//! min_tokens, byte-fallback runs, unknown ids, speculative batches, EOS and
//! stop reasons, complexity; and cases ported from vLLM's `tests/detokenizer/`,
//! smg's stop decoder tests and `tokenizers`' `DecodeStream` tests, with the
//! tokenizers in `../shared` standing in for the ones they name.

use crate::common;

use common::*;
use proptest::prelude::*;
use router_tokenizer::{
    BatchOutput, DecodeStream, MatchedStop, Output, Sequence, StopConfig, StopSequenceDecoder,
    Tokenizer,
};
use std::time::Instant;

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// One id per character, like vLLM's `chr(id)` dummy detokenizer: each char
/// of `text` encoded on its own (o200k has every ASCII char as one token).
fn char_ids(tok: &Tokenizer, text: &str) -> Vec<u32> {
    text.chars()
        .map(|c| {
            let ids = tok.encode(&c.to_string(), false).unwrap().into_ids();
            assert_eq!(ids.len(), 1, "{c:?}");
            ids[0]
        })
        .collect()
}

/// Runs the stop decoder; returns (text, matched stop).
fn run(
    tok: &Tokenizer,
    prompt: &[u32],
    ids: &[u32],
    config: StopConfig,
) -> (String, Option<MatchedStop>) {
    let mut d = StopSequenceDecoder::new(tok, prompt, config).unwrap();
    let mut out = String::new();
    for &id in ids {
        let o = d.process_token(id).unwrap();
        out.push_str(o.text().unwrap_or(""));
        if o.is_stopped() {
            return (out, d.matched_stop().cloned());
        }
    }
    out.push_str(d.flush().unwrap().text().unwrap_or(""));
    (out, d.matched_stop().cloned())
}

/// Issue 13, bug 1: text held during the `min_tokens` window never becomes a
/// stop later; a stop that starts inside the window and ends after it counts.
#[test]
fn min_tokens_window_text_is_not_a_stop_later() {
    let tok = tokenizer("o200k_base");
    let id = |t: &str| tok.token_to_id(t).unwrap();
    let (ab, x, b, c) = (id("ab"), id("x"), id("b"), id("c"));
    let config = |hidden: &[&str], visible: &[&str]| StopConfig {
        stop_strings: strings(hidden),
        visible_stop_strings: strings(visible),
        min_tokens: 1,
        ..StopConfig::default()
    };
    // vLLM: "abx", no stop.
    assert_eq!(
        run(&tok, &[], &[ab, x], config(&["abc", "b"], &[])),
        ("abx".into(), None)
    );
    // Visible variant: the later "b" is a stop, the early one is not. vLLM: "abxb".
    let (text, stop) = run(&tok, &[], &[ab, x, b], config(&["abc"], &["b"]));
    assert_eq!(text, "abxb");
    assert!(matches!(
        stop,
        Some(MatchedStop::String {
            index: 0,
            visible: true,
            ..
        })
    ));
    // Starts inside the window, ends after it: a stop.
    let (text, stop) = run(&tok, &[], &[ab, c], config(&["abc"], &[]));
    assert_eq!(text, "");
    assert!(matches!(
        stop,
        Some(MatchedStop::String {
            index: 0,
            visible: false,
            ..
        })
    ));
}

/// vLLM `tests/detokenizer/test_min_tokens.py` (opt-125m there, Llama-3 here):
/// prompt "Hello, my name", generated " is Lee, and I'm a student in the college of engineering".
#[test]
fn vllm_min_tokens_with_stop() {
    let tok = tokenizer("meta-llama/Meta-Llama-3-8B-Instruct");
    let prompt = tok.encode("Hello, my name", false).unwrap().into_ids();
    let all = tok
        .encode(
            "Hello, my name is Lee, and I'm a student in the college of engineering",
            false,
        )
        .unwrap()
        .into_ids();
    assert!(all.starts_with(&prompt));
    let generated = &all[prompt.len()..];
    for (min_tokens, stop, truth) in [
        (
            0,
            None,
            " is Lee, and I'm a student in the college of engineering",
        ),
        (0, Some("e"), " is L"),
        (5, Some("e"), " is Lee, and I'm a stud"),
    ] {
        let config = StopConfig {
            stop_strings: stop.map(|s| vec![s.to_owned()]).unwrap_or_default(),
            min_tokens,
            ..StopConfig::default()
        };
        assert_eq!(
            run(&tok, &prompt, generated, config).0,
            truth,
            "{min_tokens} {stop:?}"
        );
    }
}

/// vLLM `test_stop_string_while_stop_token_terminates`: "abcdeZ" in one batch,
/// Z the EOS, stop string "cd": the string fires first, at index 3.
#[test]
fn vllm_stop_string_before_eos_in_one_batch() {
    let tok = tokenizer("o200k_base");
    let ids = char_ids(&tok, "abcdeZ");
    for visible in [false, true] {
        let (hidden_s, visible_s) = if visible {
            (vec![], strings(&["cd"]))
        } else {
            (strings(&["cd"]), vec![])
        };
        let mut d = StopSequenceDecoder::new(
            &tok,
            &[],
            StopConfig {
                stop_strings: hidden_s,
                visible_stop_strings: visible_s,
                eos_token_ids: Some(vec![ids[5]]),
                ..StopConfig::default()
            },
        )
        .unwrap();
        let BatchOutput { output, stopped_at } = d.process_tokens(&ids).unwrap();
        let want = if visible { "abcd" } else { "ab" };
        assert_eq!(
            (output, stopped_at),
            (Output::StoppedWithText(want.into()), Some(3))
        );
        assert!(matches!(d.matched_stop(), Some(MatchedStop::String { .. })));
    }
}

/// vLLM `tests/detokenizer/test_check_stop_strings.py`, with the text
/// appended in one step (a speculative batch): the earliest completing stop
/// wins regardless of list order; hidden stops cut before, visible after.
#[test]
fn vllm_check_stop_strings_cases() {
    let tok = tokenizer("o200k_base");
    let batch = |before: &str, step: &str, hidden: &[&str], visible: &[&str]| {
        let mut d = StopSequenceDecoder::new(
            &tok,
            &[],
            StopConfig {
                stop_strings: strings(hidden),
                visible_stop_strings: strings(visible),
                ..StopConfig::default()
            },
        )
        .unwrap();
        let mut text = String::new();
        if !before.is_empty() {
            let out = d.process_tokens(&char_ids(&tok, before)).unwrap();
            text.push_str(out.output.text().unwrap_or(""));
        }
        let out = d.process_tokens(&char_ids(&tok, step)).unwrap();
        text.push_str(out.output.text().unwrap_or(""));
        (text, d.matched_stop().cloned(), out.stopped_at)
    };
    let string_stop = |m: Option<MatchedStop>| match m {
        Some(MatchedStop::String { text, .. }) => Some(text),
        _ => None,
    };
    for stops in [["a", "is"], ["is", "a"]] {
        let (text, m, at) = batch(" The user", " is a", &stops, &[]);
        assert_eq!((text.as_str(), at), (" The user ", Some(2)));
        assert_eq!(string_stop(m).as_deref(), Some("is"));
        let (text, m, _) = batch(" The user", " is a", &[], &stops);
        assert_eq!(text, " The user is");
        assert_eq!(string_stop(m).as_deref(), Some("is"));
    }
    // Completion position, not start position.
    let (text, m, _) = batch("", "abc", &["abc", "b"], &[]);
    assert_eq!((text.as_str(), string_stop(m).as_deref()), ("a", Some("b")));
    // One stop in the window; at the very end, visible keeps everything.
    let (text, _, _) = batch("hello world", ".", &["."], &[]);
    assert_eq!(text, "hello world");
    let (text, _, _) = batch("hello world", ".", &[], &["."]);
    assert_eq!(text, "hello world.");
    // No match.
    let (text, m, at) = batch("", "hello", &["zzz"], &[]);
    assert_eq!((text.as_str(), m, at), ("hello", None, None));
    // Ties at the same end: vLLM takes list order (["b", "ab"] -> "b"); this
    // crate takes the longest in either order (deliberate, DESIGN.md invariant
    // `stop-first-completion`).
    for stops in [["ab", "b"], ["b", "ab"]] {
        let (text, m, _) = batch("", "ab", &stops, &[]);
        assert_eq!((text.as_str(), string_stop(m).as_deref()), ("", Some("ab")));
    }
}

/// vLLM `test_stop_string_holdback_*`: only a suffix that may start a stop is
/// held; text is emitted once and never retracted.
#[test]
fn vllm_stop_string_holdback() {
    let tok = tokenizer("o200k_base");
    let config = || StopConfig {
        stop_strings: strings(&["STOP"]),
        ..StopConfig::default()
    };
    let mut d = StopSequenceDecoder::new(&tok, &[], config()).unwrap();
    let feed = |d: &mut StopSequenceDecoder, s: &str| d.process_tokens(&char_ids(&tok, s)).unwrap();
    assert_eq!(feed(&mut d, "hello ").output, Output::Text("hello ".into()));
    assert_eq!(feed(&mut d, "worldST").output, Output::Text("world".into()));
    assert_eq!(d.jailed(), "ST");
    assert_eq!(feed(&mut d, "AY").output, Output::Text("STAY".into()));
    assert_eq!(d.jailed(), "");
    // Delta mode never retracts.
    let mut d = StopSequenceDecoder::new(&tok, &[], config()).unwrap();
    assert_eq!(feed(&mut d, "abcST").output, Output::Text("abc".into()));
    assert_eq!(feed(&mut d, "xy").output, Output::Text("STxy".into()));
    let out = feed(&mut d, "STOP");
    assert_eq!((out.output, out.stopped_at), (Output::Stopped, Some(3)));
    assert_eq!(d.flush().unwrap(), Output::Stopped);
}

/// Stops complete where they first complete in the text, whatever the step
/// size (as vLLM's `check_stop_strings` now does; older vLLM checked in list
/// order). Deliberate difference: among stops that end at the same byte,
/// vLLM takes the first in list order, this crate the longest, so the result
/// does not depend on how the client ordered its list (DESIGN.md invariant
/// `stop-first-completion`).
#[test]
fn stop_ties_and_order_differ_from_vllm_on_purpose() {
    let tok = tokenizer("o200k_base");
    let ids = char_ids(&tok, "xabcd");
    for batch in [1, 5] {
        let mut d = StopSequenceDecoder::new(
            &tok,
            &[],
            StopConfig {
                stop_strings: strings(&["abcd", "bc"]),
                ..StopConfig::default()
            },
        )
        .unwrap();
        let mut text = String::new();
        for chunk in ids.chunks(batch) {
            let out = d.process_tokens(chunk).unwrap();
            text.push_str(out.output.text().unwrap_or(""));
        }
        assert_eq!(text, "xa", "batch {batch}");
    }
    // Same end: the longest wins ("cd" and "bcd" both end at d).
    let (text, stop) = run(
        &tok,
        &[],
        &ids,
        StopConfig {
            stop_strings: strings(&["cd", "bcd"]),
            ..StopConfig::default()
        },
    );
    assert_eq!(text, "xa");
    assert_eq!(
        stop,
        Some(MatchedStop::String {
            index: 1,
            text: "bcd".into(),
            visible: false
        })
    );
}

/// Issue 13, item 5: EOS from the tokenizer by default, hidden, reported as
/// `Eos`; `ignore_eos` generates past it; explicit stop tokens win over EOS.
#[test]
fn eos_and_stop_reasons() {
    let tok = tokenizer("meta-llama/Meta-Llama-3-8B-Instruct");
    let eos = tok.eos_token_ids().to_vec();
    assert!(!eos.is_empty());
    let mut ids = tok.encode("The answer is 42", false).unwrap().into_ids();
    ids.push(eos[0]);
    ids.extend(tok.encode(" and more", false).unwrap().ids());
    let (text, stop) = run(&tok, &[], &ids, StopConfig::default());
    assert_eq!(
        (text.as_str(), stop),
        ("The answer is 42", Some(MatchedStop::Eos { id: eos[0] }))
    );
    let (text, stop) = run(
        &tok,
        &[],
        &ids,
        StopConfig {
            ignore_eos: true,
            ..StopConfig::default()
        },
    );
    assert_eq!(text, tok.decode(&ids, false).unwrap());
    assert_eq!(stop, None);
    let (_, stop) = run(
        &tok,
        &[],
        &ids,
        StopConfig {
            stop_token_ids: vec![eos[0]],
            ..StopConfig::default()
        },
    );
    assert_eq!(
        stop,
        Some(MatchedStop::Token {
            id: eos[0],
            visible: false
        })
    );
    // An explicit EOS set replaces the tokenizer's.
    let (text, _) = run(
        &tok,
        &[],
        &ids,
        StopConfig {
            eos_token_ids: Some(vec![]),
            ..StopConfig::default()
        },
    );
    assert_eq!(text, tok.decode(&ids, false).unwrap());
    // min_tokens holds EOS too.
    let (_, stop) = run(
        &tok,
        &[],
        &ids,
        StopConfig {
            min_tokens: ids.len(),
            ..StopConfig::default()
        },
    );
    assert_eq!(stop, None);
}

/// Stops given as id sequences: matched across steps, text emitted (visible).
#[test]
fn stop_token_sequences() {
    let tok = tokenizer("o200k_base");
    let ids = char_ids(&tok, "a<b<c>d");
    let seq = char_ids(&tok, "<c>");
    let (text, stop) = run(
        &tok,
        &[],
        &ids,
        StopConfig {
            stop_token_sequences: vec![seq],
            ..StopConfig::default()
        },
    );
    assert_eq!(
        (text.as_str(), stop),
        ("a<b<c>", Some(MatchedStop::TokenSequence { index: 0 }))
    );
    assert!(
        StopSequenceDecoder::new(
            &tok,
            &[],
            StopConfig {
                stop_token_sequences: vec![vec![]],
                ..StopConfig::default()
            }
        )
        .is_err()
    );
}

/// Issue 13, bug 2: on Mistral-7B (json and `.model`) and Gemma-3, each
/// emoji spelled with byte pieces is emitted at the step of its last byte.
#[test]
fn byte_fallback_characters_are_emitted_when_complete() {
    for source in [
        "mistralai/Mistral-7B-v0.1",
        "fixtures/sentencepiece/mistral-tokenizer.model.v1",
        "google/gemma-3-4b-it",
        WINDOWED_MISTRAL,
    ] {
        let tok = tokenizer(source);
        let ids = tok.encode("I like 🤪😵👻 a lot", false).unwrap().into_ids();
        let mut s = DecodeStream::new(&tok, &[], false);
        let mut text = String::new();
        let mut held_in_a_row = 0;
        let mut longest_hold = 0;
        for &id in &ids {
            match s.step(id).unwrap() {
                Some(t) => {
                    assert!(!t.contains('\u{FFFD}'), "{source}: {t:?}");
                    text.push_str(&t);
                    held_in_a_row = 0;
                }
                None => held_in_a_row += 1,
            }
            longest_hold = longest_hold.max(held_in_a_row);
        }
        assert_eq!(s.flush().unwrap(), None, "{source}");
        assert_eq!(text, tok.decode(&ids, false).unwrap(), "{source}");
        assert!(
            longest_hold <= 3,
            "{source}: held {longest_hold} steps in a row ({ids:?})"
        );
    }
}

/// Issue 13, bug 2, the price: a run that is not valid UTF-8 renders each
/// invalid sequence as one U+FFFD (as `String::from_utf8_lossy`), where
/// `tokenizers` turns every piece of the run into U+FFFD.
#[test]
fn invalid_byte_runs_replace_only_the_invalid_bytes() {
    for source in ["mistralai/Mistral-7B-v0.1", "google/gemma-3-4b-it"] {
        let tok = tokenizer(source);
        let byte = |b: u8| tok.token_to_id(&format!("<0x{b:02X}>")).unwrap();
        let a = tok.token_to_id("a").unwrap();
        for (ids, bytes) in [
            (vec![a, byte(0x00), byte(0x98), a], &b"a\x00\x98a"[..]),
            (vec![a, byte(0xE6), byte(0x97), a], b"a\xE6\x97a"),
            (
                vec![a, byte(0xE6), byte(0x97), byte(0xA5), byte(0xFF), a],
                b"a\xE6\x97\xA5\xFFa",
            ),
        ] {
            let mut s = DecodeStream::new(&tok, &[], false);
            let mut got = s.step_many(&ids).unwrap().unwrap_or_default();
            got.push_str(&s.flush().unwrap().unwrap_or_default());
            assert_eq!(got, String::from_utf8_lossy(bytes), "{source} {ids:?}");
            let decoded = tok.decode(&ids, false).unwrap();
            assert!(decoded.matches('\u{FFFD}').count() >= got.matches('\u{FFFD}').count());
        }
    }
}

/// Best of three wall times of `f(n)`.
fn best_time(f: &dyn Fn(usize), n: usize) -> f64 {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            f(n);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Asserts `f(4n)` costs less than 10× `f(n)`: linear gives ~4 (more where
/// the larger input leaves a cache level), quadratic ~16. A ratio over 10 is
/// measured again, up to three times: on a shared machine one preempted
/// run of a few milliseconds can pass for it (CI saw 10.2 once on a linear
/// stream), while a quadratic cost fails every time.
fn assert_linear(what: &str, n: usize, f: &dyn Fn(usize)) {
    f(n); // warm up
    let mut ratios = Vec::new();
    for _ in 0..3 {
        let t1 = best_time(f, n);
        let t4 = best_time(f, 4 * n);
        let ratio = t4 / t1;
        eprintln!("{what}: {t1:.4}s at n={n}, {t4:.4}s at 4n: ratio {ratio:.2}");
        if ratio < 10.0 {
            return;
        }
        ratios.push(ratio);
    }
    panic!("{what}: 4x input took {ratios:.1?}x the time, three times");
}

/// Issue 11, item 7: a token that decodes to U+FFFD, repeated, streams in
/// O(1) per step and is emitted as it goes.
#[test]
fn u_fffd_tokens_stream_in_linear_time() {
    for (source, id) in [
        ("mistralai/Mistral-7B-v0.1", 29137u32),
        ("google/gemma-3-4b-it", 38914),
        // The windowed path: at most 16 ids wait (DESIGN.md invariant `stream-linear`).
        (WINDOWED_MISTRAL, 29137),
    ] {
        let tok = tokenizer(source);
        let f = |n: usize| {
            let mut s = DecodeStream::new(&tok, &[], false);
            let mut emitted = 0;
            for _ in 0..n {
                emitted += s.step(id).unwrap().map_or(0, |t| t.len());
            }
            let rest = s.flush().unwrap().map_or(0, |t| t.len());
            assert!(
                rest <= emitted / 100 + 3,
                "{source}: {rest} bytes held until flush"
            );
        };
        assert_linear(&format!("{source} id {id}"), 20_000, &f);
    }
}

/// Issue 11, item 6: a long stop string costs O(its length) to build, and a
/// text that keeps matching a long prefix of it O(1) per byte; the jail never
/// exceeds the longest stop.
#[test]
fn long_stop_strings_are_linear() {
    let tok = tokenizer("o200k_base");
    let a = tok.token_to_id("a").unwrap();
    let f = |n: usize| {
        let stop = format!("{}b", "a".repeat(n));
        let mut d = StopSequenceDecoder::new(
            &tok,
            &[],
            StopConfig {
                stop_strings: vec![stop],
                ..StopConfig::default()
            },
        )
        .unwrap();
        for _ in 0..2 * n {
            d.process_token(a).unwrap();
            assert!(d.jailed().len() <= n);
        }
        assert_eq!(d.jailed().len(), n);
    };
    assert_linear("stop string of n+1 bytes, 2n tokens", 40_000, &f);
}

/// `tokenizers`' `test_decode_stream*` cases, re-implemented on shared
/// tokenizers: words come out one step each; a character split over byte
/// pieces is held, then emitted whole; a prompt gives the first word its space.
#[test]
fn tokenizers_decode_stream_cases() {
    // Metaspace-style (albert there, Gemma-3 here): "This is an example".
    let tok = tokenizer("google/gemma-3-4b-it");
    let ids = tok.encode("This is an example", false).unwrap().into_ids();
    let mut s = DecodeStream::new(&tok, &[], false);
    let steps: Vec<Option<String>> = ids.iter().map(|&id| s.step(id).unwrap()).collect();
    assert_eq!(
        steps,
        ["This", " is", " an", " example"]
            .map(|w| Some(w.to_owned()))
            .to_vec()
    );
    // Byte fallback ("<0xE5><0x8F><0xA9>" = 叩): None, None, Some.
    for source in ["mistralai/Mistral-7B-v0.1", "google/gemma-3-4b-it"] {
        let tok = tokenizer(source);
        let byte = |b: u8| tok.token_to_id(&format!("<0x{b:02X}>")).unwrap();
        let mut s = DecodeStream::new(&tok, &[], false);
        assert_eq!(s.step(byte(0xE5)).unwrap(), None);
        assert_eq!(s.step(byte(0x8F)).unwrap(), None);
        assert_eq!(
            s.step(byte(0xA9)).unwrap().as_deref(),
            Some("叩"),
            "{source}"
        );
    }
    // Strip rule: the first word has no space, a word after a prompt does.
    let tok = tokenizer("mistralai/Mistral-7B-v0.1");
    let hey = tok.encode("Hey friend", false).unwrap().into_ids();
    let mut s = DecodeStream::new(&tok, &[], false);
    assert_eq!(s.step(hey[0]).unwrap().as_deref(), Some("Hey"));
    let mut s = DecodeStream::new(&tok, &hey, false);
    assert_eq!(s.step(hey[1]).unwrap().as_deref(), Some(" friend"));
    // WordPiece (bert there, MiniLM here): `##` joins, others get a space.
    let tok = tokenizer("sentence-transformers/all-MiniLM-L6-v2");
    let ids = tok
        .encode("unaffable tokenization", false)
        .unwrap()
        .into_ids();
    let mut s = DecodeStream::new(&tok, &[], false);
    let text: String = ids.iter().filter_map(|&id| s.step(id).unwrap()).collect();
    assert_eq!(text, "unaffable tokenization");
}

/// Every id of the byte-table tokenizers streams as `decode` renders it, at
/// the start of a text and after another token (checks the load-time tables).
#[test]
fn byte_tables_agree_with_decode_for_every_id() {
    for source in [
        "mistralai/Mistral-7B-v0.1",
        "google/gemma-3-4b-it",
        "sentence-transformers/all-MiniLM-L6-v2",
        "fixtures/sentencepiece/mistral-tokenizer.model.v1",
        "fixtures/sentencepiece/mistral_instruct_tokenizer_240323.model.v3",
    ] {
        let tok = tokenizer(source);
        let anchor = tok.encode("the", false).unwrap().into_ids();
        let pre = tok.decode(&anchor, false).unwrap();
        // Every id on small vocabularies, a stride on Gemma-3's 262k.
        let step = (tok.vocab_size() / 40_000).max(1);
        let mut checked = 0;
        for id in (0..tok.vocab_size() as u32).step_by(step) {
            let Ok(alone) = tok.decode(&[id], false) else {
                continue;
            };
            if alone.contains('\u{FFFD}') {
                continue; // a lone byte piece: an invalid run (invariant `stream-equals-decode`)
            }
            let stream = |prompt: &[u32]| {
                let mut s = DecodeStream::new(&tok, prompt, false);
                let mut t = s.step(id).unwrap().unwrap_or_default();
                t.push_str(&s.flush().unwrap().unwrap_or_default());
                t
            };
            assert_eq!(stream(&[]), alone, "{source} id {id} first");
            let mut both = anchor.clone();
            both.push(id);
            let full = tok.decode(&both, false).unwrap();
            if let Some(want) = full.strip_prefix(pre.as_str()) {
                assert_eq!(stream(&anchor), want, "{source} id {id} after {anchor:?}");
            }
            checked += 1;
        }
        assert!(checked > 20_000, "{source}: {checked}");
    }
}

/// smg's sequence tests: `Sequence` keeps text and ids in step, and `clear`
/// starts over.
#[test]
fn sequence_clear_and_debug() {
    let tok = tokenizer("Qwen/Qwen3-8B");
    let mut seq = Sequence::new(&tok, false);
    seq.append_text("Hello, world").unwrap();
    assert_eq!(seq.text(), "Hello, world");
    assert!(format!("{seq:?}").contains("Sequence"));
    seq.clear();
    assert!(seq.is_empty());
    assert_eq!(seq.text(), "");
    seq.append_text("again").unwrap();
    assert_eq!(seq.full_text().unwrap(), "again");
    let d = StopSequenceDecoder::new(&tok, &[], StopConfig::default()).unwrap();
    assert!(format!("{d:?}").contains("StopSequenceDecoder"));
    assert!(format!("{:?}", DecodeStream::new(&tok, &[], false)).contains("DecodeStream"));
}

const BATCH_SOURCES: &[&str] = &[
    "o200k_base",
    "google/gemma-3-4b-it",
    "mistralai/Mistral-7B-v0.1",
    "sentence-transformers/all-MiniLM-L6-v2",
];

fn corpus_ids(tok: &Tokenizer, start: usize, len: usize) -> Vec<u32> {
    static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let mut t = String::new();
        for (key, path) in all_inputs() {
            if [
                "en-prose/botchan.txt",
                "zh/hongloumeng.txt",
                "multilingual/emoji-zwj-sequences.txt",
            ]
            .contains(&key.as_str())
            {
                let s = std::fs::read_to_string(path).unwrap();
                t.extend(s.chars().take(5_000));
            }
        }
        t
    });
    let chars: Vec<char> = TEXT.chars().collect();
    let s = start % chars.len();
    let text: String = chars[s..(s + len).min(chars.len())].iter().collect();
    tok.encode(&text, false).unwrap().into_ids()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::proptest_cases(24), ..ProptestConfig::default() })]

    /// `step_many` == repeated `step`; `process_tokens` == repeated
    /// `process_token`, with the stop index of the batch.
    #[test]
    fn batches_equal_single_steps(start in 0usize..100_000, len in 1usize..200,
            cuts in proptest::collection::vec(1usize..6, 1..64), stop_at in 0usize..400, stop_len in 1usize..8) {
        for source in BATCH_SOURCES {
            let tok = tokenizer(source);
            let ids = corpus_ids(&tok, start, len);
            let text = tok.decode(&ids, false).unwrap();
            let mut singles = DecodeStream::new(&tok, &[], false);
            let mut batches = singles.clone();
            let one: String = ids.iter().filter_map(|&id| singles.step(id).unwrap()).collect();
            let mut many = String::new();
            let mut rest = &ids[..];
            for &c in cuts.iter().cycle() {
                if rest.is_empty() { break; }
                let (b, r) = rest.split_at(c.min(rest.len()));
                many.push_str(&batches.step_many(b).unwrap().unwrap_or_default());
                rest = r;
            }
            prop_assert_eq!(&one, &many, "{}", source);
            // A stop string cut from the text.
            let mut s = stop_at % text.len().max(1);
            while !text.is_char_boundary(s) { s -= 1; }
            let mut e = (s + stop_len).min(text.len());
            while !text.is_char_boundary(e) { e += 1; }
            let config = StopConfig { stop_strings: vec![text[s..e].to_owned()].into_iter().filter(|x| !x.is_empty()).collect(), ignore_eos: true, ..StopConfig::default() };
            let mut single = StopSequenceDecoder::new(&tok, &[], config.clone()).unwrap();
            let mut out_one = String::new();
            let mut stop_index = None;
            for (i, &id) in ids.iter().enumerate() {
                let o = single.process_token(id).unwrap();
                out_one.push_str(o.text().unwrap_or(""));
                if o.is_stopped() { stop_index = Some(i); break; }
            }
            let mut batched = StopSequenceDecoder::new(&tok, &[], config).unwrap();
            let mut out_many = String::new();
            let mut at = 0;
            let mut batch_stop = None;
            for &c in cuts.iter().cycle() {
                if at >= ids.len() { break; }
                let end = (at + c).min(ids.len());
                let r = batched.process_tokens(&ids[at..end]).unwrap();
                out_many.push_str(r.output.text().unwrap_or(""));
                if let Some(i) = r.stopped_at { batch_stop = Some(at + i); break; }
                prop_assert!(!r.output.is_stopped());
                at = end;
            }
            prop_assert_eq!(&out_one, &out_many, "{}", source);
            prop_assert_eq!(stop_index, batch_stop, "{}", source);
            prop_assert_eq!(single.matched_stop(), batched.matched_stop());
        }
    }
}

/// Issue 13, item 6: logprobs text. Whole characters show as text; a partial
/// character shows as OpenAI's `bytes:\xNN…`; the raw bytes come with it;
/// asking never changes what the stream emits; unknown ids follow the policy.
#[test]
fn token_text_for_logprobs() {
    // o200k: 𝔘 is split over tokens; each shows its bytes.
    let tok = tokenizer("o200k_base");
    let ids = tok.encode("Fraktur 𝔘𝔫", false).unwrap().into_ids();
    let texts = tok.token_texts(&ids).unwrap();
    let mut all = Vec::new();
    for t in &texts {
        all.extend_from_slice(&t.bytes);
        match std::str::from_utf8(&t.bytes) {
            Ok(s) => assert_eq!(t.text, s),
            Err(_) => {
                let want: String = t.bytes.iter().map(|b| format!("\\x{b:02x}")).collect();
                assert_eq!(t.text, format!("bytes:{want}"));
            }
        }
    }
    assert_eq!(all, "Fraktur 𝔘𝔫".as_bytes());
    assert!(
        texts.iter().any(|t| t.text.starts_with("bytes:\\xf0")),
        "{texts:?}"
    );
    // Byte-fallback pieces and Metaspace `▁` (Mistral-7B, json and .model).
    for source in [
        "mistralai/Mistral-7B-v0.1",
        "fixtures/sentencepiece/mistral-tokenizer.model.v1",
    ] {
        let tok = tokenizer(source);
        let e6 = tok.token_to_id("<0xE6>").unwrap();
        let t = tok.token_text(e6).unwrap();
        assert_eq!(
            (t.text.as_str(), t.bytes.as_slice()),
            ("bytes:\\xe6", &[0xE6u8][..])
        );
        let hello = tok.token_to_id("▁the").unwrap();
        assert_eq!(tok.token_text(hello).unwrap().text, " the", "{source}");
        assert!(tok.token_text(u32::MAX).is_err());
        // A stream asked for top-k texts between steps emits the same text.
        let ids = tok
            .encode("I like 🤪 a lot, 日本", false)
            .unwrap()
            .into_ids();
        let mut plain = DecodeStream::new(&tok, &[], false);
        let mut asked = plain.clone();
        let mut a = String::new();
        let mut b = String::new();
        for &id in &ids {
            a.push_str(&plain.step(id).unwrap().unwrap_or_default());
            let top = asked.token_texts(&[id, e6, hello, u32::MAX]).unwrap();
            assert_eq!(top[3].text, "", "unknown ids are skipped by default");
            b.push_str(&asked.step(id).unwrap().unwrap_or_default());
        }
        assert_eq!(a, b, "{source}");
        let strict = DecodeStream::new(&tok, &[], false)
            .with_unknown_ids(router_tokenizer::UnknownIds::Error);
        assert!(strict.token_text(u32::MAX).is_err());
    }
}

/// vLLM's `spaces_between_special_tokens` as `transformers`' slow tokenizers
/// apply it: the ids are cut at special tokens, each part decoded on its own,
/// and the parts joined with one space. (vLLM cuts at every added token; this
/// crate cuts at special ones, which is the same set on these vocabularies'
/// generated text: a deliberate, documented difference, DESIGN.md invariant
/// `stream-equals-decode`.)
fn spaced_reference(tok: &Tokenizer, ids: &[u32], skip: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Vec<u32> = Vec::new();
    for &id in ids {
        if tok.is_special_id(id) {
            if skip {
                continue;
            }
            if !run.is_empty() {
                parts.push(tok.decode(&run, false).unwrap());
                run.clear();
            }
            parts.push(tok.decode(&[id], false).unwrap());
        } else {
            run.push(id);
        }
    }
    if !run.is_empty() {
        parts.push(tok.decode(&run, false).unwrap());
    }
    parts.retain(|p| !p.is_empty());
    parts.join(" ")
}

/// Issue 13, item 7.
#[test]
fn spaces_between_special_tokens() {
    for source in ["meta-llama/Meta-Llama-3-8B-Instruct", "Qwen/Qwen3-8B"] {
        let tok = tokenizer(source);
        let text = "<|im_start|>user\nHi there<|im_end|><|im_end|>ok<|eot_id|>";
        let ids = tok.encode(text, false).unwrap().into_ids();
        assert!(ids.iter().any(|&id| tok.is_special_id(id)), "{source}");
        for skip in [false, true] {
            let mut s = DecodeStream::new(&tok, &[], skip).with_spaces_between_special_tokens(true);
            let mut got = s.step_many(&ids).unwrap().unwrap_or_default();
            got.push_str(&s.flush().unwrap().unwrap_or_default());
            assert_eq!(
                got,
                spaced_reference(&tok, &ids, skip),
                "{source} skip={skip}"
            );
            // Off (the default): exactly `decode`.
            let mut s = DecodeStream::new(&tok, &[], skip);
            let mut got = s.step_many(&ids).unwrap().unwrap_or_default();
            got.push_str(&s.flush().unwrap().unwrap_or_default());
            assert_eq!(got, tok.decode(&ids, skip).unwrap());
        }
        // Through the stop decoder.
        let (out, _) = run(
            &tok,
            &[],
            &ids,
            StopConfig {
                spaces_between_special_tokens: true,
                ignore_eos: true,
                ..StopConfig::default()
            },
        );
        assert_eq!(out, spaced_reference(&tok, &ids, false), "{source}");
    }
}

/// The byte-fallback invariant (DESIGN.md invariant `stream-equals-decode`) on both sides,
/// generated:
/// byte pieces that spell characters, lone bytes, ordinary tokens and BOS.
/// Returns the ids, the same ids with every invalid lone byte replaced by
/// `<0x01>`, and the replaced bytes in order.
fn byte_run_case(tok: &Tokenizer, parts: &[(u8, u32)]) -> (Vec<u32>, Vec<u32>, Vec<u8>) {
    let chars: Vec<char> = "澌痴菱𝔘😀é€ꙮ𓀀\r".chars().collect();
    let byte = |b: u8| tok.token_to_id(&format!("<0x{b:02X}>")).unwrap();
    let word = tok.encode(" word", false).unwrap().into_ids();
    let (mut ids, mut placeholders, mut replaced) = (Vec::new(), Vec::new(), Vec::new());
    for &(kind, x) in parts {
        match kind % 4 {
            0 => ids.extend(&word),
            1 => {
                let mut buf = [0u8; 4];
                let c = chars[x as usize % chars.len()];
                ids.extend(c.encode_utf8(&mut buf).bytes().map(byte));
            }
            2 => {
                // Never 0x01, the placeholder.
                let b = (x % 256) as u8 | 2;
                ids.push(byte(b));
                if b >= 0x80 {
                    placeholders.push(ids.len() - 1);
                    replaced.push(b);
                }
            }
            _ => ids.push(tok.special_tokens().bos.as_ref().map_or(word[0], |t| t.id)),
        }
    }
    let mut valid_ids = ids.clone();
    for &i in &placeholders {
        valid_ids[i] = byte(0x01);
    }
    (ids, valid_ids, replaced)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::proptest_cases(32), ..ProptestConfig::default() })]

    /// Valid runs: stream == decode(all) minus decode(prompt), at any split.
    /// Invalid bytes: the stream is the lossy UTF-8 reading of the bytes
    /// `decode` would give had they been valid (only they become U+FFFD).
    #[test]
    fn byte_run_invariant(parts in proptest::collection::vec((0u8..4, 0u32..512), 1..24), split in 0usize..64) {
        for source in ["mistralai/Mistral-7B-v0.1", "google/gemma-3-4b-it", "fixtures/sentencepiece/mistral-tokenizer.model.v1", "fixtures/gguf/ggml-vocab-llama-spm.gguf", WINDOWED_MISTRAL] {
            let tok = tokenizer(source);
            let (ids, valid_ids, replaced) = byte_run_case(&tok, &parts);
            let stream = |prompt: &[u32], generated: &[u32]| {
                let mut s = DecodeStream::new(&tok, prompt, false);
                let mut got = s.step_many(generated).unwrap().unwrap_or_default();
                got.push_str(&s.flush().unwrap().unwrap_or_default());
                got
            };
            if replaced.is_empty() {
                let split = split % (ids.len() + 1);
                let (prompt, generated) = ids.split_at(split);
                let full = tok.decode(&ids, false).unwrap();
                let pre = tok.decode(prompt, false).unwrap();
                let want = full.strip_prefix(pre.as_str());
                if want.is_none() {
                    continue; // the prompt's own text changes: no exact answer
                }
                let got = stream(prompt, generated);
                prop_assert_eq!(Some(got.as_str()), want, "{} {:?}", source, ids);
            } else if source != WINDOWED_MISTRAL {
                // (b) is a claim about the byte styles only: a windowed
                // `tokenizers` decoder re-renders the whole invalid run.
                let mut bytes = tok.decode(&valid_ids, false).unwrap().into_bytes();
                let mut subs = replaced.iter();
                for b in &mut bytes {
                    if *b == 0x01 {
                        *b = *subs.next().unwrap();
                    }
                }
                prop_assert_eq!(stream(&[], &ids), String::from_utf8_lossy(&bytes).into_owned(), "{} {:?}", source, ids);
            }
        }
    }
}

/// smg's `stop.rs` decoder tests (a mock tokenizer there, Llama-3 here):
/// stop tokens, visible stops, a stop string across tokens with text before
/// it, no repeated output, multi-byte stops, reset and flush.
#[test]
fn smg_stop_decoder_cases() {
    let tok = tokenizer("meta-llama/Meta-Llama-3-8B-Instruct");
    let piece = |s: &str| {
        let ids = tok.encode(s, false).unwrap().into_ids();
        assert_eq!(ids.len(), 1, "{s:?}");
        ids[0]
    };
    let (hello, world, test) = (piece("Hello"), piece(" world"), piece("test"));
    let eot = tok.token_to_id("<|eot_id|>").unwrap();
    let decoder = |config: StopConfig| StopSequenceDecoder::new(&tok, &[], config).unwrap();
    // A stop token, then every later token is `Stopped`.
    let mut d = decoder(StopConfig {
        stop_token_ids: vec![eot],
        ..StopConfig::default()
    });
    assert_eq!(
        d.process_token(hello).unwrap(),
        Output::Text("Hello".into())
    );
    assert_eq!(d.process_token(eot).unwrap(), Output::Stopped);
    assert_eq!(d.process_token(world).unwrap(), Output::Stopped);
    // Reset: generation starts over.
    d.reset();
    assert_eq!(
        d.process_token(world).unwrap(),
        Output::Text(" world".into())
    );
    // A visible stop token is emitted with the stop.
    let mut d = decoder(StopConfig {
        visible_stop_token_ids: vec![eot],
        ..StopConfig::default()
    });
    assert_eq!(
        d.process_token(eot).unwrap(),
        Output::StoppedWithText("<|eot_id|>".into())
    );
    // Incremental output never repeats earlier text.
    let mut d = decoder(StopConfig::default());
    let outs: Vec<String> = [hello, world, test]
        .iter()
        .map(|&id| d.process_token(id).unwrap().text().unwrap().to_owned())
        .collect();
    assert_eq!(outs, ["Hello", " world", "test"]);
    // A stop string across two tokens, hidden and visible.
    for visible in [false, true] {
        let stops = strings(&["Hello world"]);
        let mut d = decoder(StopConfig {
            stop_strings: if visible { vec![] } else { stops.clone() },
            visible_stop_strings: if visible { stops } else { vec![] },
            ..StopConfig::default()
        });
        assert_eq!(d.process_token(hello).unwrap(), Output::Held);
        let want = if visible {
            Output::StoppedWithText("Hello world".into())
        } else {
            Output::Stopped
        };
        assert_eq!(d.process_token(world).unwrap(), want);
        assert_eq!(d.process_token(test).unwrap(), Output::Stopped);
    }
    // Text before the partial match goes out at once.
    let mut d = decoder(StopConfig {
        stop_strings: strings(&["Hello world"]),
        ..StopConfig::default()
    });
    let space_hello = piece(" Hello");
    assert_eq!(d.process_token(test).unwrap(), Output::Text("test".into()));
    assert_eq!(
        d.process_token(space_hello).unwrap(),
        Output::Text(" ".into())
    );
    assert_eq!(d.jailed(), "Hello");
    assert_eq!(d.process_token(world).unwrap(), Output::Stopped);
    // A multi-byte stop never splits a character.
    let ids = tok.encode("2 × 3 = 6", false).unwrap().into_ids();
    let (text, stop) = run(
        &tok,
        &[],
        &ids,
        StopConfig {
            stop_strings: strings(&[" ×"]),
            ..StopConfig::default()
        },
    );
    assert_eq!(text, "2");
    assert!(matches!(stop, Some(MatchedStop::String { index: 0, .. })));
    // Flush releases a partial match.
    let mut d = decoder(StopConfig {
        stop_strings: strings(&["Hello world"]),
        ..StopConfig::default()
    });
    assert_eq!(d.process_token(hello).unwrap(), Output::Held);
    assert_eq!(d.flush().unwrap(), Output::Text("Hello".into()));
}
