//! GGUF files made from the shared Hugging Face tokenizers the way llama.cpp's
//! `convert_hf_to_gguf.py --vocab-only` writes them (tokens with NORMAL /
//! CONTROL / USER_DEFINED types, merges as "a b", the `pre` name it assigns),
//! written here by a small GGUF writer, then loaded by the GGUF backend and
//! compared with the same model's `tokenizer.json` through this crate on a
//! sample of the corpus (16 KB of each file) and every adversarial file.
//!
//! Where llama.cpp and `tokenizer.json` differ by design, the test names the
//! difference instead of hiding it:
//! - Qwen3's `tokenizer.json` NFC-normalizes; llama.cpp does not. Inputs that
//!   are not NFC may differ (listed, and checked to be exactly those).
//! - MiniLM (`bert`): llama.cpp's WPM maps each code point to the first code
//!   point of its NFD and keeps lone combining marks, where BertNormalizer
//!   strips accents; it has no 100-character word limit. Inputs with such
//!   characters or words may differ (checked to be only those).

use crate::common;
use crate::gguf_writer;

use std::path::{Path, PathBuf};

use router_tokenizer::Tokenizer;
use unicode_normalization::UnicodeNormalization as _;

/// A vocab-only GGUF from a shared model's `tokenizer.json`.
fn convert(model: &str, pre: &str, out: &Path) {
    let snap = common::shared_dir()
        .join("hf-cache/hub")
        .join(format!("models--{}", model.replace('/', "--")));
    let commit = std::fs::read_to_string(snap.join("refs/main")).unwrap();
    let json = snap
        .join("snapshots")
        .join(commit.trim())
        .join("tokenizer.json");
    gguf_writer::convert(&json, pre, out);
}

fn load(path: &Path) -> Tokenizer {
    common::offline_options()
        .with_bypass_registry(true)
        .load(path.to_str().unwrap())
        .unwrap()
}

/// The first 16 KB of every corpus file (at a char boundary) and every adversarial file.
fn inputs() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (key, path) in common::all_inputs() {
        let Ok(mut text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if !key.starts_with("adversarial/") {
            let mut e = text.len().min(16 << 10);
            while !text.is_char_boundary(e) {
                e -= 1;
            }
            text.truncate(e);
        }
        out.push((key, text));
    }
    out
}

fn compare(model: &str, pre: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gguf-convert");
    std::fs::create_dir_all(&dir).unwrap();
    let file: PathBuf = dir.join(format!("{}.gguf", model.replace('/', "--")));
    convert(model, pre, &file);
    let gguf = load(&file);
    let json = common::tokenizer(model);
    let mut differ = Vec::new();
    for (key, text) in inputs() {
        let a = gguf
            .encode_with(&text, &crate::common::sequential(false))
            .unwrap();
        let b = json
            .encode_with(&text, &crate::common::sequential(false))
            .unwrap();
        if a.ids() != b.ids() {
            differ.push(key);
        }
    }
    differ
}

#[test]
fn llama3_gguf_matches_tokenizer_json() {
    let differ = compare("meta-llama/Llama-3.2-1B-Instruct", "llama-bpe");
    assert!(differ.is_empty(), "{differ:?}");
}

#[test]
fn deepseek_v3_gguf_matches_tokenizer_json() {
    let differ = compare("deepseek-ai/DeepSeek-V3", "deepseek-v3");
    assert!(differ.is_empty(), "{differ:?}");
}

/// Where llama.cpp's WPM departs from BertNormalizer + WordPiece: it maps a
/// code point to the first code point of its NFD (Hangul syllables to their
/// first jamo, `é` to `e`), keeps combining marks that stand alone, splits
/// words at VT, FF and NEL (BertNormalizer deletes them as controls), and
/// has no 100-character word limit.
fn llama_wpm_departs(text: &str) -> bool {
    use unicode_normalization::char::{decompose_canonical, is_combining_mark};
    let remapped = text.chars().any(|c| {
        let mut n = 0;
        decompose_canonical(c, |_| n += 1);
        n > 1 || is_combining_mark(c)
    });
    let control_space = text.contains(['\u{0B}', '\u{0C}', '\u{85}']);
    remapped || control_space || text.split_whitespace().any(|w| w.chars().count() > 100)
}

#[test]
fn minilm_gguf_differs_only_where_llama_wpm_does() {
    let differ = compare("sentence-transformers/all-MiniLM-L6-v2", "jina-v1-en");
    eprintln!("MiniLM GGUF vs tokenizer.json differ on: {differ:?}");
    let texts: std::collections::HashMap<String, String> = inputs().into_iter().collect();
    for key in &differ {
        assert!(
            llama_wpm_departs(&texts[key]),
            "{key} differs without a decomposable character, a lone mark or a long word"
        );
    }
    // English prose has none of those, and must match.
    assert!(
        !differ.iter().any(|k| k.starts_with("en-prose/")),
        "{differ:?}"
    );
}

#[test]
fn qwen3_gguf_differs_only_on_non_nfc_text() {
    let differ = compare("Qwen/Qwen3-8B", "qwen2");
    eprintln!("Qwen3 GGUF vs tokenizer.json differ on (non-NFC inputs): {differ:?}");
    let texts: std::collections::HashMap<String, String> = inputs().into_iter().collect();
    for key in &differ {
        let t = &texts[key];
        assert!(
            t.nfc().collect::<String>() != *t,
            "{key} is NFC yet differs"
        );
    }
}

/// A Qwen3 GGUF with the model's chat template: its USER_DEFINED `<think>`,
/// `<tool_call>` (written by the template) and `<|fim_prefix|>` (a marker's
/// shape) typed by a user stay text, with the ids the `tokenizer.json` gives.
#[test]
fn typed_user_defined_markers_stay_text_in_a_gguf() {
    let model = "Qwen/Qwen3-8B";
    let json_path = common::snapshot_file(model, "tokenizer.json");
    let config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::snapshot_file(model, "tokenizer_config.json")).unwrap(),
    )
    .unwrap();
    let template = config["chat_template"].as_str().unwrap().to_owned();
    let (mut kvs, _) = gguf_writer::convert_kvs(&json_path, "qwen2");
    kvs.push(("tokenizer.chat_template", gguf_writer::V::Str(template)));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gguf-convert");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("qwen3-with-template.gguf");
    gguf_writer::write_gguf(&file, &kvs, &[]);
    let gguf = load(&file);
    let json = common::tokenizer(model);
    let markers = |tok: &Tokenizer| -> Vec<u32> {
        tok.control_markers()
            .unwrap()
            .iter()
            .map(|t| t.id)
            .collect()
    };
    let think = json.token_to_id("<think>").unwrap();
    assert!(markers(&gguf).contains(&think));
    assert_eq!(markers(&gguf), markers(&json));
    let content = "a<think>b</think> <tool_call>{}</tool_call><|fim_prefix|>x";
    let request =
        router_tokenizer::chat::ChatRequest::new(vec![router_tokenizer::chat::Message::new(
            "user", content,
        )]);
    let plain = router_tokenizer::EncodeChatOptions::default();
    let a = gguf.encode_chat(&request, &plain).unwrap();
    let b = json.encode_chat(&request, &plain).unwrap();
    assert_eq!(a.ids, b.ids);
    assert!(!a.ids.contains(&think));
    assert_eq!(a.special_texts_as_text, 5);
}
