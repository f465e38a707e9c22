//! GGUF ids against golden ids made by llama.cpp itself
//! (`tests/golden/gguf/make_gguf_corpus_golden.py`: `llama_tokenize(vocab,
//! text, add_special = false, parse_special = true)` on a vocab-only load)
//! over slices of every shared corpus file, every adversarial file and
//! llama.cpp's vector texts, for the 12 shared `.gguf` files and the three
//! `t5` files of `tests/golden/gguf/t5/` (`make_t5_gguf.py`).
//!
//! Per input file, 16 slices of about 2 KB at evenly spaced offsets: the
//! first slice's ids are compared in full, every slice's id count and
//! sha256 prefix; the vector texts in full. Decode of every id list (with
//! and without special tokens) is compared with llama.cpp's
//! `llama_detokenize` by sha256 prefix.
//!
//! Whole files (`tests/golden/gguf/full/`, `make_gguf_corpus_golden.py
//! --full`): every corpus and adversarial file encoded in one call, compared
//! by id count and the sha256 of the ids and of both decodes. In CI each
//! vocabulary takes its own share of the 48 files (file `i` goes to the
//! vocabulary at position `i % 15`), so every file is checked whole by one
//! vocabulary, plus the pairs that once differed; `RTOK_GGUF_FULL=1` checks
//! every file with every vocabulary.

use crate::common;

use std::path::PathBuf;

use router_tokenizer::sentencepiece::SentencePieceModel;
use router_tokenizer::{LoadOptions, SpecialTokenPolicy, Tokenizer};
use serde_json::Value;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/gguf")
}

fn vocab_path(vocab: &str) -> PathBuf {
    if vocab.starts_with("t5-") {
        golden_dir().join("t5").join(vocab)
    } else {
        common::shared_dir().join("fixtures/gguf").join(vocab)
    }
}

pub fn load(path: &std::path::Path) -> Tokenizer {
    LoadOptions::default()
        .with_special_tokens(SpecialTokenPolicy::Parse)
        .with_bypass_registry(true)
        .load(path.to_str().unwrap())
        .unwrap()
}

fn vector_texts() -> Vec<String> {
    let inp = std::fs::read_to_string(
        common::shared_dir().join("fixtures/gguf/ggml-vocab-llama-spm.gguf.inp"),
    )
    .unwrap();
    let mut texts: Vec<String> = inp
        .split("\n__ggml_vocab_test__\n")
        .map(str::to_owned)
        .collect();
    assert_eq!(texts.pop().as_deref(), Some(""));
    texts
}

fn ids_of(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

/// sha256 prefixes of `decode(ids, false)` and `decode(ids, true)`, as the
/// goldens keep llama.cpp's `llama_detokenize(remove_special = false,
/// unparse_special = true)` and `(true, false)`.
fn decode_hashes(tok: &Tokenizer, ids: &[u32]) -> [String; 2] {
    use sha2::{Digest, Sha256};
    [false, true].map(|skip| {
        let text = tok.decode(ids, skip).unwrap();
        let h = Sha256::digest(text.as_bytes());
        h.iter().take(8).map(|b| format!("{b:02x}")).collect()
    })
}

fn check(name: &str) {
    let golden: Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir().join(format!("corpus/{name}.json"))).unwrap(),
    )
    .unwrap();
    let vocab = golden["vocab"].as_str().unwrap();
    let tok = load(&vocab_path(vocab));
    let inputs: std::collections::HashMap<String, PathBuf> =
        common::all_inputs().into_iter().collect();
    let files = golden["files"].as_object().unwrap();
    assert_eq!(
        files.len(),
        inputs.len(),
        "{name}: one entry per input file"
    );
    let (mut texts, mut tokens, mut failed) = (0usize, 0usize, Vec::new());
    for (key, slices) in files {
        let data = std::fs::read(&inputs[key]).unwrap();
        for s in slices.as_array().unwrap() {
            let off = s[0].as_u64().unwrap() as usize;
            let len = s[1].as_u64().unwrap() as usize;
            let count = s[2].as_u64().unwrap() as usize;
            let hash = s[3].as_str().unwrap();
            let text = std::str::from_utf8(&data[off..off + len]).unwrap();
            let got = tok.encode(text, false).unwrap();
            let got = got.ids();
            texts += 1;
            tokens += count;
            let full_ok = s[4].is_null() || ids_of(&s[4]) == got;
            let decoded = decode_hashes(&tok, got);
            if decoded != [s[5][0].as_str().unwrap(), s[5][1].as_str().unwrap()] {
                failed.push(format!(
                    "{key} @{off}+{len}: decode differs from llama_detokenize"
                ));
            }
            if got.len() != count || &common::ids_sha256(got)[..16] != hash || !full_ok {
                let first = if s[4].is_null() {
                    String::new()
                } else {
                    let want = ids_of(&s[4]);
                    let i = want.iter().zip(got).take_while(|(a, b)| a == b).count();
                    format!(
                        ", first difference at id {i}: got {:?} want {:?}",
                        &got[i..(i + 8).min(got.len())],
                        &want[i..(i + 8).min(want.len())]
                    )
                };
                failed.push(format!(
                    "{key} @{off}+{len}: {} ids, want {count}{first}",
                    got.len()
                ));
            }
        }
    }
    let vectors = golden["vectors"].as_array().unwrap();
    let decodes = golden["vector_decodes"].as_array().unwrap();
    for ((text, want), dec) in vector_texts().iter().zip(vectors).zip(decodes) {
        let want = ids_of(want);
        let got = tok.encode(text, false).unwrap();
        if decode_hashes(&tok, got.ids()) != [dec[0].as_str().unwrap(), dec[1].as_str().unwrap()] {
            failed.push(format!(
                "vector {text:?}: decode differs from llama_detokenize"
            ));
        }
        texts += 1;
        tokens += want.len();
        if got.ids() != want.as_slice() {
            failed.push(format!(
                "vector {text:?}: got {:?} want {want:?}",
                got.ids()
            ));
        }
    }
    assert!(texts > 700, "{name}: {texts} texts");
    assert!(
        failed.is_empty(),
        "{name}: {} of {texts} texts differ from llama.cpp\n{}",
        failed.len(),
        failed.join("\n")
    );
    eprintln!("{name}: {texts} texts, {tokens} ids match llama.cpp");
}

/// sha256 hex of `decode(ids, false)` and `decode(ids, true)`.
fn full_decode_hashes(tok: &Tokenizer, ids: &[u32]) -> [String; 2] {
    [false, true].map(|skip| common::sha256(tok.decode(ids, skip).unwrap().as_bytes()))
}

/// Where a whole-file difference shows in the sampled goldens: the first
/// sampled slice of `key` whose ids differ, if any.
fn first_differing_slice(tok: &Tokenizer, name: &str, key: &str, data: &str) -> String {
    let golden: Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir().join(format!("corpus/{name}.json"))).unwrap(),
    )
    .unwrap();
    for s in golden["files"][key].as_array().into_iter().flatten() {
        let off = s[0].as_u64().unwrap() as usize;
        let len = s[1].as_u64().unwrap() as usize;
        let ids = tok.encode(&data[off..off + len], false).unwrap();
        if ids.len() as u64 != s[2].as_u64().unwrap()
            || common::ids_sha256(ids.ids())[..16] != *s[3].as_str().unwrap()
        {
            return format!("first differing sampled slice: @{off}+{len}");
        }
    }
    "no sampled slice differs: the difference lies between the slices".to_owned()
}

/// Whole-file ids and decodes against llama.cpp for the files `pick` keeps.
fn check_full(name: &str, pick: impl Fn(usize) -> bool) {
    let golden: Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir().join(format!("full/{name}.json"))).unwrap(),
    )
    .unwrap();
    let tok = load(&vocab_path(golden["vocab"].as_str().unwrap()));
    let files = golden["files"].as_object().unwrap();
    let inputs = common::all_inputs();
    assert_eq!(
        files.len(),
        inputs.len(),
        "{name}: one entry per input file"
    );
    let (mut bytes, mut tokens, mut failed) = (0usize, 0usize, Vec::new());
    for (i, (key, path)) in inputs.iter().enumerate() {
        if !pick(i) {
            continue;
        }
        let want = &files[key];
        let data = std::fs::read_to_string(path).unwrap();
        assert_eq!(
            data.len() as u64,
            want[0].as_u64().unwrap(),
            "{key}: input changed"
        );
        let ids = tok.encode(&data, false).unwrap();
        let ids = ids.ids();
        bytes += data.len();
        tokens += ids.len();
        if ids.len() as u64 != want[1].as_u64().unwrap()
            || common::ids_sha256(ids) != want[2].as_str().unwrap()
        {
            failed.push(format!(
                "{key}: {} ids, want {} (or their sha256 differs); {}",
                ids.len(),
                want[1],
                first_differing_slice(&tok, name, key, &data)
            ));
        } else if full_decode_hashes(&tok, ids)
            != [want[3][0].as_str().unwrap(), want[3][1].as_str().unwrap()]
        {
            failed.push(format!("{key}: decode differs from llama_detokenize"));
        }
    }
    assert!(
        failed.is_empty(),
        "{name}: whole files differ from llama.cpp\n{}",
        failed.join("\n")
    );
    eprintln!("{name}: {bytes} bytes of whole files, {tokens} ids match llama.cpp");
}

/// The 15 vocabularies, in the order that shares the files out in CI.
const VOCABS: [&str; 15] = [
    "ggml-vocab-baichuan",
    "ggml-vocab-bert-bge",
    "ggml-vocab-deepseek-coder",
    "ggml-vocab-deepseek-llm",
    "ggml-vocab-falcon",
    "ggml-vocab-gpt-2",
    "ggml-vocab-gpt-neox",
    "ggml-vocab-llama-spm",
    "ggml-vocab-mpt",
    "ggml-vocab-phi-3",
    "ggml-vocab-refact",
    "ggml-vocab-starcoder",
    "t5-test",
    "t5-test-ja",
    "t5-test-identity",
];

/// Whole files that once differed, checked in CI beside the share: bert-bge
/// split no word at VT, FF and NEL (`adversarial/unicode-edge.txt`);
/// deepseek-llm matched wide whitespace with its CJK range
/// (`adversarial/ws-mixed.txt`).
const REGRESSIONS: [(&str, &str); 2] = [
    ("ggml-vocab-bert-bge", "adversarial/unicode-edge.txt"),
    ("ggml-vocab-deepseek-llm", "adversarial/ws-mixed.txt"),
];

fn check_full_share(name: &str) {
    let all = std::env::var_os("RTOK_GGUF_FULL").is_some_and(|v| v == "1");
    let v = VOCABS.iter().position(|n| *n == name).unwrap();
    let keys: Vec<String> = common::all_inputs().into_iter().map(|(k, _)| k).collect();
    check_full(name, |i| {
        all || i % VOCABS.len() == v || REGRESSIONS.contains(&(name, keys[i].as_str()))
    });
}

macro_rules! vocab_tests {
    ($($test:ident => $name:literal,)*) => {
        $(#[test] fn $test() { check($name); })*
        /// Whole files (see the module comment).
        mod whole_file {
            $(#[test] fn $test() { super::check_full_share($name); })*
        }
    };
}

vocab_tests! {
    baichuan => "ggml-vocab-baichuan",
    bert_bge => "ggml-vocab-bert-bge",
    deepseek_coder => "ggml-vocab-deepseek-coder",
    deepseek_llm => "ggml-vocab-deepseek-llm",
    falcon => "ggml-vocab-falcon",
    gpt_2 => "ggml-vocab-gpt-2",
    gpt_neox => "ggml-vocab-gpt-neox",
    llama_spm => "ggml-vocab-llama-spm",
    mpt => "ggml-vocab-mpt",
    phi_3 => "ggml-vocab-phi-3",
    refact => "ggml-vocab-refact",
    starcoder => "ggml-vocab-starcoder",
    t5_test => "t5-test",
    t5_test_ja => "t5-test-ja",
    t5_test_identity => "t5-test-identity",
}

/// The `t5` GGUFs against the SentencePiece models they were made from, on
/// the crate's SentencePiece backend (id for id with sentencepiece 0.2.3,
/// `tests/it/sentencepiece_parity.rs`). llama.cpp's UGM and sentencepiece differ
/// only where a special token splits the text (llama.cpp normalizes each
/// fragment on its own), on whitespace-only text, and on ties: segmentations
/// of equal total score (`-` `--` `--` vs `--` `--` `-`) that sentencepiece's
/// f32 sums and llama.cpp's f64 comparisons of f32 sums break differently.
/// Every other difference fails the test.
fn check_t5_against_sentencepiece(gguf: &str, model: PathBuf) {
    let scores = SentencePieceModel::from_bytes(&std::fs::read(&model).unwrap()).unwrap();
    let total = |ids: &[u32]| -> f64 {
        ids.iter()
            .map(|&id| f64::from(scores.score(id).unwrap_or(0.0)))
            .sum()
    };
    let t5 = load(&golden_dir().join("t5").join(gguf));
    let spm = LoadOptions::default()
        .with_special_tokens(SpecialTokenPolicy::PlainText)
        .with_bypass_registry(true)
        .load(model.to_str().unwrap())
        .unwrap();
    let (mut same, mut differ) = (0usize, Vec::new());
    let mut texts: Vec<(String, String)> = vector_texts()
        .into_iter()
        .map(|t| ("vector".to_owned(), t))
        .collect();
    for (key, path) in common::all_inputs() {
        let data = std::fs::read_to_string(path).unwrap();
        let mut e = data.len().min(8 << 10);
        while !data.is_char_boundary(e) {
            e -= 1;
        }
        texts.push((key, data[..e].to_owned()));
    }
    for (key, text) in &texts {
        let a = t5.encode(text, false).unwrap();
        let b = spm.encode(text, false).unwrap();
        if a.ids() == b.ids() {
            same += 1;
        } else {
            differ.push(key.clone());
            let special = ["<unk>", "<s>", "</s>", "<extra_id_"]
                .iter()
                .any(|s| text.contains(s));
            let i = common::first_difference(a.ids(), b.ids());
            let tie = a.len() == b.len() && (total(a.ids()) - total(b.ids())).abs() < 1e-3;
            assert!(
                special || tie || text.trim().is_empty(),
                "{gguf} {key} differs from sentencepiece without special-token text at id {i}: {:?} vs {:?}",
                &a.ids()[i.saturating_sub(3)..(i + 5).min(a.len())],
                &b.ids()[i.saturating_sub(3)..(i + 5).min(b.len())],
            );
        }
        // Without unknown or control ids, llama.cpp's detokenize and
        // sentencepiece's decode give the same text.
        if !a.ids().iter().any(|&id| t5.is_special_id(id)) {
            assert_eq!(
                t5.decode(a.ids(), true).unwrap(),
                spm.decode(a.ids(), true).unwrap(),
                "{gguf} {key}: decode"
            );
        }
    }
    eprintln!(
        "{gguf}: {same} of {} texts as sentencepiece; differ: {differ:?}",
        texts.len()
    );
    assert!(same * 10 > texts.len() * 9, "{gguf}: {differ:?}");
}

#[test]
fn t5_gguf_against_sentencepiece() {
    let dir = common::shared_dir().join("fixtures/sentencepiece");
    check_t5_against_sentencepiece("t5-test.gguf", dir.join("spm-test_model.model"));
    check_t5_against_sentencepiece("t5-test-ja.gguf", dir.join("spm-test_ja_model.model"));
    check_t5_against_sentencepiece(
        "t5-test-identity.gguf",
        golden_dir().join("t5/t5-test-identity.model"),
    );
}
