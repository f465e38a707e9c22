//! The interim engines (DESIGN.md invariant `interim-equals-built`), which encode while a
//! load's model is still being built, against the built model: ids
//! and offsets, special tokens parsed and as plain text, on every corpus and
//! adversarial file, on Unicode 17 and BERT punctuation probes, hostile mixtures, and LoPT
//! encodes, for every shared `tokenizer.json` but the SentencePiece
//! conversion (byte-level and byte-fallback BPEs, WordPiece). The route holds
//! the model build back, so every encode here runs on the interim engine
//! (each comparison checks it still does).

use crate::common;

use common::*;
use proptest::prelude::*;
use router_tokenizer::__testing::FastRoute;
use router_tokenizer::{SpecialTokenPolicy, Tokenizer};

const MODELS: [&str; 10] = [
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct",
    "Qwen/Qwen3-8B",
    "deepseek-ai/DeepSeek-V3",
    "openai/gpt-oss-20b",
    "CohereForAI/c4ai-command-r-plus",
    "Xenova/gpt-3.5-turbo",
    "mistralai/Mistral-Nemo-Instruct-2407",
    "google/gemma-3-4b-it",
    "sentence-transformers/all-MiniLM-L6-v2",
];
const POLICIES: [SpecialTokenPolicy; 2] =
    [SpecialTokenPolicy::Parse, SpecialTokenPolicy::PlainText];

/// (interim, built) for `MODELS[model]` under `POLICIES[policy]`, held
/// while this test runs ([`Lease`]: 8 GB in all, not to be kept under the
/// other modules' tests).
fn pair(model: usize, policy: usize) -> (Tokenizer, Tokenizer) {
    static PAIRS: [[Lease<(Tokenizer, Tokenizer)>; 2]; MODELS.len()] =
        [const { [const { Lease::new() }; 2] }; MODELS.len()];
    let pair = PAIRS[model][policy]
        .get(|| route_pair(MODELS[model], POLICIES[policy], FastRoute::Interim));
    (pair.0.clone(), pair.1.clone())
}

/// Every model and policy: `(model, what, interim, built)`.
fn pairs() -> Vec<(&'static str, String, Tokenizer, Tokenizer)> {
    let mut out = Vec::new();
    for (m, model) in MODELS.iter().enumerate() {
        for (p, policy) in POLICIES.iter().enumerate() {
            let (on, off) = pair(m, p);
            out.push((*model, format!("{policy:?}"), on, off));
        }
    }
    out
}

/// Which shared files take it: every one but the SentencePiece conversion
/// (its own route, invariant `background-build-invisible`).
#[test]
fn all_but_the_sentencepiece_route_take_it() {
    for model in MODELS {
        assert!(route_applies(model, FastRoute::Interim), "{model}");
    }
    assert!(
        !route_applies("mistralai/Mistral-7B-v0.1", FastRoute::Interim),
        "Mistral-7B"
    );
}

#[test]
fn every_file_gives_the_same_ids_and_offsets() {
    for (model, what, on, off) in &pairs() {
        assert_same_on_all_inputs(model, what, on, off);
        assert!(route_still_interim(on), "{model}: the model was built");
    }
}

/// The Unicode 17 and BERT punctuation probes of `tests/golden/` (the
/// crate-side splits of invariant `unicode-classes-are-reference` feed the interim engine its
/// spans too).
#[test]
fn divergent_class_probes() {
    let goldens = [
        golden("unicode17/unicode17.json"),
        golden("bert_punctuation/bert_punctuation.json"),
    ];
    let mut texts: Vec<&str> = Vec::new();
    for json in &goldens {
        texts.extend(
            json["texts"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|t| t.as_str()),
        );
        texts.push(json["long"].as_str().unwrap());
    }
    assert!(texts.len() > 800, "probe texts in tests/golden");
    for (model, what, on, off) in &pairs() {
        for t in &texts {
            assert_same_encodes(model, &format!("{t:?} {what}"), on, off, t);
        }
    }
}

/// Words at WordPiece's 100-char limit and past it, words with a piece no
/// entry starts, long runs of one byte (a BPE's merge queue at depth), and
/// every byte-fallback shape.
#[test]
fn word_edges() {
    let mut texts: Vec<String> = Vec::new();
    for n in [1, 2, 99, 100, 101, 257, 5000] {
        texts.push("a".repeat(n));
        texts.push("ab".repeat(n.div_ceil(2)));
        texts.push(format!("x{}y", "é".repeat(n)));
        texts.push(" ".repeat(n));
        texts.push("中".repeat(n));
    }
    texts.push("x\u{1F980}y \u{E000}\u{10FFFF} \u{0}\u{7F} ##a ## a##b".to_owned());
    for (model, what, on, off) in &pairs() {
        for t in &texts {
            assert_same_encodes(model, &format!("{:?} {what}", prefix(t, 40)), on, off, t);
        }
    }
}

/// Long texts take the parallel path (LoPT), whose chunks run on the
/// interim engine on every pool thread.
#[test]
fn parallel_encodes_match() {
    let mixed: String = corpus_files()
        .iter()
        .map(|(_, p)| prefix(&std::fs::read_to_string(p).unwrap(), 96 << 10).to_owned())
        .collect();
    for (model, what, on, off) in &pairs() {
        let a = on.encode(&mixed, false).unwrap();
        let b = off.encode(&mixed, false).unwrap();
        assert!(
            a.ids() == b.ids(),
            "{model} {what}: first difference at {}",
            first_difference(a.ids(), b.ids())
        );
        assert!(route_still_interim(on), "{model}: the model was built");
    }
}

/// Whether `tokenizer` still encodes on the interim engine.
fn route_still_interim(tokenizer: &Tokenizer) -> bool {
    router_tokenizer::__testing::interim_active(tokenizer)
}

const ALPHABET: [&str; 18] = [
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    "a",
    "Z",
    "'s",
    "'LL",
    "1",
    "123",
    "中",
    "🦀",
    "é",
    "\u{301}",
    "\u{10FFFF}",
    "<|begin_of_text|>",
    "<|endoftext|>",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]

    #[test]
    fn random_mixtures_match(picks in prop::collection::vec(0..ALPHABET.len(), 0..120)) {
        let text: String = picks.iter().map(|&i| ALPHABET[i]).collect();
        for (model, what, on, off) in &pairs() {
            assert_same_encodes(model, &format!("{text:?} {what}"), on, off, &text);
        }
    }

    #[test]
    fn random_bytes_as_text_match(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        for (model, what, on, off) in &pairs() {
            assert_same_encodes(model, &format!("{text:?} {what}"), on, off, &text);
        }
    }
}

/// How many of [`MODELS`] are byte-level BPEs (the first ones), whose
/// words run on the crate's engine (`backend::bpe`) and, with that route
/// off, on the interim engine and then `tokenizers`' model (both the
/// reference's merge loop).
const BYTE_LEVEL: usize = 8;

/// (engine, model) for `MODELS[model]` (one of the first [`BYTE_LEVEL`]),
/// special tokens as plain text
/// (the model step is the same under both policies).
fn engine_pair(model: usize) -> (Tokenizer, Tokenizer) {
    static PAIRS: [Lease<(Tokenizer, Tokenizer)>; BYTE_LEVEL] =
        [const { Lease::new() }; BYTE_LEVEL];
    let pair = PAIRS[model].get(|| {
        route_pair(
            MODELS[model],
            SpecialTokenPolicy::PlainText,
            FastRoute::ByteBpe,
        )
    });
    (pair.0.clone(), pair.1.clone())
}

/// More hostile pieces than [`ALPHABET`]: digits of other scripts, title
/// case, modifier letters, odd spaces, a joiner, Unicode 16 and 17 letters
/// (Ol Onal, Sidetic), a replacement char, a ligature.
const HOSTILE: [&str; 12] = [
    "٣",
    "𝟘",
    "ǅ",
    "ʰ",
    "\u{a0}",
    "\u{3000}",
    "\u{85}",
    "\u{200d}",
    "\u{1e5d0}",
    "\u{10940}",
    "\u{fffd}",
    "ﷺ",
];

/// Piece `i` of [`ALPHABET`] then [`HOSTILE`].
fn piece(i: usize) -> &'static str {
    ALPHABET
        .get(i)
        .copied()
        .unwrap_or_else(|| HOSTILE[(i - ALPHABET.len()) % HOSTILE.len()])
}

/// Every byte-level file takes the engine; no other does.
#[test]
fn byte_level_files_take_the_engine() {
    for model in &MODELS[..BYTE_LEVEL] {
        assert!(route_applies(model, FastRoute::ByteBpe), "{model}");
    }
    for model in MODELS[BYTE_LEVEL..]
        .iter()
        .chain(&["mistralai/Mistral-7B-v0.1"])
    {
        assert!(!route_applies(model, FastRoute::ByteBpe), "{model}");
    }
}

#[test]
fn the_byte_level_engine_gives_the_models_ids_on_every_file() {
    for (m, model) in MODELS[..BYTE_LEVEL].iter().enumerate() {
        let (on, off) = &engine_pair(m);
        assert_same_on_all_inputs(model, "engine", on, off);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]

    /// Hostile mixtures (Unicode 17 letters, marks, digits of every script,
    /// whitespace runs) and long runs of one class: the engine's linear and
    /// heap merges, its caches and probe, against the model.
    #[test]
    fn the_byte_level_engine_matches_on_random_text(
        picks in prop::collection::vec(0..ALPHABET.len() + HOSTILE.len(), 0..120),
        run in 0usize..200,
    ) {
        let mut text: String = picks.iter().map(|&i| piece(i)).collect();
        text.push_str(&piece(run % (ALPHABET.len() + HOSTILE.len())).repeat(run));
        for (m, model) in MODELS[..BYTE_LEVEL].iter().enumerate() {
            let (on, off) = &engine_pair(m);
            assert_same_encodes(model, &format!("{text:?}"), on, off, &text);
        }
    }
}

/// A byte-level file on the crate's engine never builds `tokenizers`'
/// model (`Pipe::forgo`): after `warm_up`, which would wait for a build,
/// encodes still run on the stand-in pipeline, with the built model's ids
/// and text. The model is built where the file's padding is kept, since
/// those encodes go through `tokenizers`' whole pipeline.
#[test]
fn byte_level_files_never_build_the_model() {
    let text = "Hello, world!  It's 2024:\n\tfoo_bar(x) → 中文字幕 🦀 <|endoftext|>";
    for (m, model) in MODELS[..BYTE_LEVEL].iter().enumerate() {
        let plain = tokenizer(model);
        plain.warm_up();
        assert!(route_still_interim(&plain), "{model}: the model was built");
        let (_, built) = pair(m, 0);
        for add in [false, true] {
            let ids = plain
                .encode_with(text, &crate::common::sequential(add))
                .unwrap();
            assert_eq!(
                ids.ids(),
                built
                    .encode_with(text, &crate::common::sequential(add))
                    .unwrap()
                    .ids(),
                "{model}"
            );
            assert_eq!(
                plain.decode(ids.ids(), false).unwrap(),
                built.decode(ids.ids(), false).unwrap(),
                "{model}"
            );
        }
    }
    let path = snapshot_file(MODELS[0], "tokenizer.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    json["padding"] = serde_json::json!({
        "strategy": {"Fixed": 16}, "direction": "Right", "pad_to_multiple_of": null,
        "pad_id": 0, "pad_type_id": 0, "pad_token": "!"
    });
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("interim_padding");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tokenizer.json"), json.to_string()).unwrap();
    let kept = offline_options()
        .with_keep_padding_and_truncation(true)
        .load(dir.to_str().unwrap())
        .unwrap();
    let ids = kept.encode("Hello, world!", false).unwrap();
    assert_eq!(ids.len(), 16);
    assert_eq!(&ids.ids()[..4], &[9906, 11, 1917, 0]);
    kept.warm_up();
    assert!(
        !route_still_interim(&kept),
        "padding kept: the model is built"
    );
}
