//! llama.cpp's own tokenizer test vectors (`models/ggml-vocab-*.gguf.inp/.out`
//! at c392e509) for every shared vocabulary that has both the `.gguf` and
//! the vectors: 46/46 each, with `add_special = false`.

use crate::common;

use std::path::PathBuf;

use router_tokenizer::{LoadOptions, SpecialTokenPolicy};

const SEPARATOR: &str = "\n__ggml_vocab_test__\n";

fn gguf_dir() -> PathBuf {
    common::shared_dir().join("fixtures/gguf")
}

/// The pairs of one vocabulary: input text, expected ids.
fn vectors(name: &str) -> Vec<(String, Vec<u32>)> {
    let dir = gguf_dir();
    let inp = std::fs::read_to_string(dir.join(format!("ggml-vocab-{name}.gguf.inp"))).unwrap();
    let out = std::fs::read_to_string(dir.join(format!("ggml-vocab-{name}.gguf.out"))).unwrap();
    let mut texts: Vec<&str> = inp.split(SEPARATOR).collect();
    assert_eq!(
        texts.pop(),
        Some(""),
        "{name}: .inp ends with the separator"
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(texts.len(), lines.len(), "{name}: .inp/.out pair up");
    texts
        .into_iter()
        .zip(lines)
        .map(|(t, l)| {
            let ids = l
                .split_whitespace()
                .map(|x| x.parse::<u32>().unwrap())
                .collect();
            (t.to_owned(), ids)
        })
        .collect()
}

fn check(name: &str) {
    let path = gguf_dir().join(format!("ggml-vocab-{name}.gguf"));
    // llama.cpp's test runs with parse_special = false.
    let tok = LoadOptions::default()
        .with_special_tokens(SpecialTokenPolicy::PlainText)
        .with_bypass_registry(true)
        .load(path.to_str().unwrap())
        .unwrap();
    let cases = vectors(name);
    assert_eq!(cases.len(), 46, "{name}");
    let mut failed = Vec::new();
    for (text, want) in &cases {
        let got = tok.encode(text, false).unwrap();
        if got.ids() != want.as_slice() {
            failed.push(format!("{text:?}: got {:?} want {want:?}", got.ids()));
        }
        let with = tok
            .encode_with(text, &crate::common::offsets(false))
            .unwrap();
        assert_eq!(with.ids(), got.ids(), "{name} offsets path {text:?}");
    }
    assert!(
        failed.is_empty(),
        "{name}: {}/46 pass\n{}",
        46 - failed.len(),
        failed.join("\n")
    );
}

macro_rules! vocab_tests {
    ($($test:ident => $name:literal,)*) => {
        $(#[test] fn $test() { check($name); })*
    };
}

vocab_tests! {
    llama_spm => "llama-spm",
    phi_3 => "phi-3",
    gpt_2 => "gpt-2",
    falcon => "falcon",
    mpt => "mpt",
    starcoder => "starcoder",
    refact => "refact",
    deepseek_coder => "deepseek-coder",
    deepseek_llm => "deepseek-llm",
    bert_bge => "bert-bge",
}
