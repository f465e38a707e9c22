//! The assembled BPE pipeline (DESIGN.md invariant `assembled-equals-from-json`): which shared
//! `tokenizer.json` files take it, and that it gives the ids and text of
//! `tokenizers`' own whole-file read on every corpus and adversarial file
//! (first 64 KiB of each), with special tokens parsed and as plain text,
//! and on hostile texts. Python `tokenizers` goldens for the loaded files
//! (which take this route) are checked by `tests/it/parity.rs`.

use crate::common;

use common::*;
use proptest::prelude::*;
use router_tokenizer::__testing::hf_json_assembled;
use router_tokenizer::{SpecialTokenPolicy, Tokenizer};

const SLICE: usize = 64 << 10;

/// (assembled, whole) for `model`, after checking which route it took.
fn pair(model: &str, policy: SpecialTokenPolicy, expect_assembled: bool) -> (Tokenizer, Tokenizer) {
    let path = snapshot_file(model, "tokenizer.json");
    let (assembled, took) = hf_json_assembled(&path, policy, true).unwrap();
    assert_eq!(took, expect_assembled, "{model}: assembled route taken");
    let (whole, took) = hf_json_assembled(&path, policy, false).unwrap();
    assert!(!took, "{model}: the whole read must not assemble");
    (assembled, whole)
}

fn assert_same(model: &str, what: &str, a: &Tokenizer, b: &Tokenizer, text: &str) {
    for add in [false, true] {
        let x = a
            .encode_with(text, &crate::common::sequential(add))
            .unwrap();
        let y = b
            .encode_with(text, &crate::common::sequential(add))
            .unwrap();
        if x.ids() != y.ids() {
            let at = first_difference(x.ids(), y.ids());
            panic!(
                "{model} {what} add_special_tokens={add}: {} vs {} ids, first difference at {at}",
                x.len(),
                y.len()
            );
        }
        assert_eq!(
            a.decode(x.ids(), false).unwrap(),
            b.decode(y.ids(), false).unwrap(),
            "{model} {what}: decode"
        );
    }
}

/// `plain`: also compare with special-token text encoded as plain text (an
/// encode option on the same build, so checked on a few models only).
fn check_model(model: &str, plain: bool) {
    let (parse_a, parse_w) = pair(model, SpecialTokenPolicy::Parse, true);
    let plain = plain.then(|| pair(model, SpecialTokenPolicy::PlainText, true));
    for (name, path) in all_inputs() {
        let text = std::fs::read_to_string(&path).unwrap();
        let text = prefix(&text, SLICE);
        assert_same(model, &name, &parse_a, &parse_w, text);
        if let Some((plain_a, plain_w)) = plain.as_ref().filter(|_| name.contains("special")) {
            assert_same(model, &name, plain_a, plain_w, text);
        }
    }
    // Hostile: the model's special-token text, byte-fallback pieces and
    // whitespace runs around words, under both policies.
    let mut specials: Vec<String> = parse_a
        .special_tokens()
        .additional
        .iter()
        .map(|t| t.content.clone())
        .take(8)
        .collect();
    specials.extend(["<0x0A>".into(), "\u{2581}".into(), "  \n\t".into()]);
    let config = ProptestConfig::with_cases(proptest_cases(32));
    proptest!(config, |(parts in prop::collection::vec(
        prop_oneof![
            prop::sample::select(specials.clone()),
            "[a-z \\n\\t\u{00e9}\u{4e2d}\u{1f600}]{0,12}",
            any::<String>(),
        ],
        0..12,
    ))| {
        let text: String = parts.concat();
        assert_same(model, "proptest", &parse_a, &parse_w, &text);
        if let Some((plain_a, plain_w)) = &plain {
            assert_same(model, "proptest", plain_a, plain_w, &text);
        }
    });
}

macro_rules! per_model {
    ($($name:ident: $model:expr, $plain:expr;)*) => {$(
        #[test]
        fn $name() {
            check_model($model, $plain);
        }
    )*};
}

per_model! {
    llama3: "meta-llama/Meta-Llama-3-8B-Instruct", true;
    llama32: "meta-llama/Llama-3.2-1B-Instruct", false;
    mistral7b: "mistralai/Mistral-7B-v0.1", true;
    mistral_nemo: "mistralai/Mistral-Nemo-Instruct-2407", false;
    qwen3: "Qwen/Qwen3-8B", true;
    deepseek_v3: "deepseek-ai/DeepSeek-V3", false;
    gemma3: "google/gemma-3-4b-it", true;
    gpt_oss: "openai/gpt-oss-20b", false;
    command_r_plus: "CohereForAI/c4ai-command-r-plus", false;
    gpt35: "Xenova/gpt-3.5-turbo", false;
}

/// WordPiece is not a BPE: it is read whole.
#[test]
fn wordpiece_is_read_whole() {
    let path = snapshot_file("sentence-transformers/all-MiniLM-L6-v2", "tokenizer.json");
    let (_, took) = hf_json_assembled(&path, SpecialTokenPolicy::Parse, true).unwrap();
    assert!(!took);
}

/// A legacy (version 1.0) file whose merges are `"a b"` strings, and one
/// whose merge is not two tokens: the first assembles with the ids of the
/// whole read; the second is refused by both.
#[test]
fn legacy_merge_strings_are_split_as_tokenizers_upgrades_them() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hf_assemble_legacy");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tokenizer.json");
    let doc = |merges: &str| {
        format!(
            r#"{{"version":"1.0","added_tokens":[],"normalizer":null,"pre_tokenizer":{{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}},"post_processor":null,"decoder":{{"type":"ByteLevel"}},"model":{{"type":"BPE","vocab":{vocab},"merges":[{merges}]}}}}"#,
            vocab = byte_vocab(&["ab", "abc"]),
        )
    };
    std::fs::write(&path, doc(r#""a b","ab c""#)).unwrap();
    let (a, took) = hf_json_assembled(&path, SpecialTokenPolicy::Parse, true).unwrap();
    assert!(took);
    let (w, _) = hf_json_assembled(&path, SpecialTokenPolicy::Parse, false).unwrap();
    for text in ["abc", "ab abc cab", "xyz abcabc"] {
        assert_same("legacy", text, &a, &w, text);
    }
    assert_eq!(
        a.encode_with("abc", &crate::common::sequential(false))
            .unwrap()
            .len(),
        1
    );
    std::fs::write(&path, doc(r#""a b c""#)).unwrap();
    for assemble in [true, false] {
        let Err(err) = hf_json_assembled(&path, SpecialTokenPolicy::Parse, assemble) else {
            panic!("a three-part merge must be refused (assemble: {assemble})");
        };
        assert!(err.to_string().contains("tokenizer.json"), "{err}");
    }
}

/// A byte-level vocabulary: the 256 byte atoms, then `extra`.
fn byte_vocab(extra: &[&str]) -> String {
    let mut entries: Vec<String> = (0..=255u8)
        .map(|b| {
            let c = byte_char(b);
            let token = serde_json::to_string(&c.to_string()).unwrap();
            format!("{token}:{b}")
        })
        .collect();
    for (i, t) in extra.iter().enumerate() {
        entries.push(format!("{:?}:{}", t, 256 + i));
    }
    format!("{{{}}}", entries.join(","))
}

/// GPT-2's byte-level alphabet.
fn byte_char(b: u8) -> char {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if printable(b) {
        return char::from(b);
    }
    let n = (0..b).filter(|&x| !printable(x)).count() as u32;
    char::from_u32(256 + n).unwrap()
}
