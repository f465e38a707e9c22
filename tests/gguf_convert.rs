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

mod common;

use std::path::{Path, PathBuf};

use router_tokenizer::{LoadOptions, Tokenizer};
use serde_json::Value;
use unicode_normalization::UnicodeNormalization as _;

/// Bytes of one GGUF value.
enum V {
    Str(String),
    U32(u32),
    Strs(Vec<String>),
    I32s(Vec<i32>),
    F32s(Vec<f32>),
}

fn gstr(b: &mut Vec<u8>, s: &str) {
    b.extend((s.len() as u64).to_le_bytes());
    b.extend(s.as_bytes());
}

fn write_gguf(path: &Path, kvs: &[(&str, V)]) {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.extend((kvs.len() as u64).to_le_bytes());
    for (k, v) in kvs {
        gstr(&mut b, k);
        match v {
            V::Str(s) => {
                b.extend(8u32.to_le_bytes());
                gstr(&mut b, s);
            }
            V::U32(x) => {
                b.extend(4u32.to_le_bytes());
                b.extend(x.to_le_bytes());
            }
            V::Strs(items) => {
                b.extend(9u32.to_le_bytes());
                b.extend(8u32.to_le_bytes());
                b.extend((items.len() as u64).to_le_bytes());
                for s in items {
                    gstr(&mut b, s);
                }
            }
            V::I32s(items) => {
                b.extend(9u32.to_le_bytes());
                b.extend(5u32.to_le_bytes());
                b.extend((items.len() as u64).to_le_bytes());
                for x in items {
                    b.extend(x.to_le_bytes());
                }
            }
            V::F32s(items) => {
                b.extend(9u32.to_le_bytes());
                b.extend(6u32.to_le_bytes());
                b.extend((items.len() as u64).to_le_bytes());
                for x in items {
                    b.extend(x.to_le_bytes());
                }
            }
        }
    }
    std::fs::write(path, b).unwrap();
}

/// A vocab-only GGUF from a `tokenizer.json`, as convert_hf_to_gguf.py does
/// (`get_vocab_base` for BPE, `BertModel.set_vocab` for WordPiece).
fn convert(model: &str, pre: &str, out: &Path) {
    let snap = common::shared_dir()
        .join("hf-cache/hub")
        .join(format!("models--{}", model.replace('/', "--")));
    let commit = std::fs::read_to_string(snap.join("refs/main")).unwrap();
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(
            snap.join("snapshots")
                .join(commit.trim())
                .join("tokenizer.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let m = &json["model"];
    let mut by_id: Vec<Option<(String, i32)>> = Vec::new();
    let mut put = |id: usize, t: String, ty: i32| {
        if by_id.len() <= id {
            by_id.resize(id + 1, None);
        }
        by_id[id] = Some((t, ty));
    };
    let wordpiece = m["type"] == "WordPiece";
    for (t, id) in m["vocab"].as_object().unwrap() {
        let t = if wordpiece {
            // BERT: word-initial pieces get the phantom space, `##` goes.
            match t.strip_prefix("##") {
                Some(rest) => rest.to_owned(),
                None => format!("\u{2581}{t}"),
            }
        } else {
            t.clone()
        };
        put(id.as_u64().unwrap() as usize, t, 1);
    }
    for a in json["added_tokens"].as_array().unwrap() {
        let special = a["special"].as_bool().unwrap_or(false);
        put(
            a["id"].as_u64().unwrap() as usize,
            a["content"].as_str().unwrap().to_owned(),
            if special { 3 } else { 4 },
        );
    }
    let (tokens, types): (Vec<String>, Vec<i32>) = by_id
        .into_iter()
        .enumerate()
        .map(|(i, t)| t.unwrap_or((format!("[PAD{i}]"), 5)))
        .unzip();
    let n = tokens.len();
    let mut kvs = vec![
        (
            "tokenizer.ggml.model",
            V::Str(if wordpiece { "bert" } else { "gpt2" }.into()),
        ),
        ("tokenizer.ggml.pre", V::Str(pre.into())),
        ("tokenizer.ggml.tokens", V::Strs(tokens)),
        ("tokenizer.ggml.token_type", V::I32s(types)),
    ];
    if wordpiece {
        kvs.push(("tokenizer.ggml.scores", V::F32s(vec![0.0; n])));
        for (key, text) in [
            ("tokenizer.ggml.unknown_token_id", "[UNK]"),
            ("tokenizer.ggml.seperator_token_id", "[SEP]"),
            ("tokenizer.ggml.bos_token_id", "[CLS]"),
            ("tokenizer.ggml.padding_token_id", "[PAD]"),
        ] {
            kvs.push((key, V::U32(m["vocab"][text].as_u64().unwrap() as u32)));
        }
    } else {
        let merges = m["merges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| match x {
                Value::String(s) => s.clone(),
                Value::Array(p) => format!("{} {}", p[0].as_str().unwrap(), p[1].as_str().unwrap()),
                _ => panic!("merge"),
            })
            .collect();
        kvs.push(("tokenizer.ggml.merges", V::Strs(merges)));
    }
    write_gguf(out, &kvs);
}

fn load(path: &Path) -> Tokenizer {
    LoadOptions {
        bypass_registry: true,
        ..common::offline_options()
    }
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
        let a = gguf.encode_sequential(&text, false).unwrap();
        let b = json.encode_sequential(&text, false).unwrap();
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
/// first jamo, `é` to `e`), keeps combining marks that stand alone, and has
/// no 100-character word limit.
fn llama_wpm_departs(text: &str) -> bool {
    use unicode_normalization::char::{decompose_canonical, is_combining_mark};
    let remapped = text.chars().any(|c| {
        let mut n = 0;
        decompose_canonical(c, |_| n += 1);
        n > 1 || is_combining_mark(c)
    });
    remapped || text.split_whitespace().any(|w| w.chars().count() > 100)
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
