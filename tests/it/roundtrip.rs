//! Vocabulary round trips, lossless decode, and offset invariants on every shared tokenizer.

use crate::common;

use common::*;
use proptest::prelude::*;

/// Tokenizers whose decode gives back the input exactly (byte-level BPE and tiktoken).
/// Not here: MiniLM (lowercases), Mistral-7B/Gemma (SentencePiece-style decoders
/// strip or re-space), which the reference libraries do not round-trip either.
const LOSSLESS: &[&str] = &[
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct",
    "mistralai/Mistral-Nemo-Instruct-2407",
    "deepseek-ai/DeepSeek-V3",
    "openai/gpt-oss-20b",
    "Xenova/gpt-3.5-turbo",
    "cl100k_base",
    "o200k_base",
    "r50k_base",
];

#[test]
fn token_id_round_trip_over_the_whole_vocab() {
    let mut sources: Vec<&str> = HUB_MODELS.to_vec();
    sources.extend([
        "r50k_base",
        "p50k_base",
        "cl100k_base",
        "o200k_base",
        "o200k_harmony",
    ]);
    for source in sources {
        let tok = tokenizer(source);
        let mut holes = 0;
        for id in 0..tok.vocab_size() as u32 {
            match tok.id_to_token(id) {
                Some(t) => assert_eq!(
                    tok.token_to_id(&t),
                    Some(id),
                    "{source}: id {id} token {t:?}"
                ),
                None => holes += 1,
            }
        }
        assert!(holes < tok.vocab_size() / 100, "{source}: {holes} holes");
        assert_eq!(tok.id_to_token(tok.vocab_size() as u32), None);
        let err = tok
            .decode(&[tok.vocab_size() as u32 + 7], false)
            .unwrap_err();
        assert!(
            matches!(
                err.kind(),
                router_tokenizer::ErrorKind::UnknownTokenId { .. }
            ),
            "{source}"
        );
    }
}

/// Offsets: ids equal the fast path's; spans are in bounds, on char
/// boundaries, never go backwards, and (for lossless tokenizers) tile the input.
#[test]
fn offsets_agree_with_encode_on_the_corpus() {
    let mut sources: Vec<&str> = HUB_MODELS.to_vec();
    sources.extend(["cl100k_base", "o200k_base"]);
    let inputs: Vec<(String, String)> = all_inputs()
        .into_iter()
        .map(|(k, p)| {
            let text = std::fs::read_to_string(p).unwrap();
            // A 64 KiB slice of each file keeps this test quick in the debug profile.
            let mut end = text.len().min(1 << 16);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            (k, text[..end].to_owned())
        })
        .collect();
    for source in sources {
        let tok = tokenizer(source);
        let tiles = LOSSLESS.contains(&source);
        for (key, text) in &inputs {
            for add_special in [false, true] {
                let fast = tok.encode(text, add_special).unwrap();
                let slow = tok
                    .encode_with(text, &crate::common::offsets(add_special))
                    .unwrap();
                assert_eq!(
                    fast.ids(),
                    slow.ids(),
                    "{source} {key}: ids differ between paths"
                );
                let offsets = slow.offsets().unwrap();
                let mut last_start = 0;
                for (i, &(s, e)) in offsets.iter().enumerate() {
                    assert!(
                        s <= e && e <= text.len(),
                        "{source} {key}: span {i} {s}..{e}"
                    );
                    assert!(s >= last_start, "{source} {key}: span {i} goes backwards");
                    last_start = s;
                }
                if tiles && !add_special {
                    let mut pos = 0;
                    for &(s, e) in offsets {
                        assert_eq!(s, pos, "{source} {key}: gap or overlap at {pos}");
                        pos = e;
                    }
                    assert_eq!(
                        pos,
                        text.len(),
                        "{source} {key}: spans do not cover the input"
                    );
                }
            }
        }
    }
}

#[test]
fn decode_encode_is_identity_where_lossless() {
    for source in LOSSLESS {
        let tok = tokenizer(source);
        for (key, path) in all_inputs() {
            let text = std::fs::read_to_string(path).unwrap();
            let ids = tok.encode(&text, false).unwrap();
            assert!(
                tok.decode(ids.ids(), false).unwrap() == text,
                "{source} {key}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::proptest_cases(256), ..ProptestConfig::default() })]

    #[test]
    fn any_utf8_round_trips(text in "\\PC{0,64}|[\\s\\p{N}\\p{M}\u{1F600}-\u{1F64F}<|>]{0,64}") {
        for source in LOSSLESS {
            let tok = tokenizer(source);
            let ids = tok.encode(&text, false).unwrap();
            prop_assert_eq!(tok.decode(ids.ids(), false).unwrap(), text.clone(), "{}", source);
            let with = tok.encode_with(&text, &crate::common::offsets(false)).unwrap();
            prop_assert_eq!(with.ids(), ids.ids());
        }
    }
}
