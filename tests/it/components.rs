//! Models and components the shared hub files do not cover, against the
//! reference (Python `tokenizers` 0.23.3; goldens and the tokenizers they
//! were trained as in `tests/golden/components/`, written by the script
//! beside them):
//!
//! - small tokenizers trained on the shared corpus: BPE with an
//!   `end_of_word_suffix` (CLIP's and openai-gpt's shape, DESIGN.md invariant
//!   `crate-steps-equal-reference`), BPE with a `continuing_subword_prefix`, WordLevel, Unigram,
//!   WordPiece, byte-fallback BPE with a Llama-2 decoder chain, RoBERTa-style
//!   byte-level BPE whose `ByteLevel` pre-tokenizer has `add_prefix_space`
//!   (invariant `crate-steps-equal-reference`), Metaspace BPE: ids without and with special tokens,
//!   whole,
//!   with offsets and in parallel chunks, and decodes with and without
//!   skipping specials;
//! - shared files with added tokens carrying `lstrip`, `rstrip`,
//!   `single_word` and `normalized` flags (invariant `crate-steps-equal-reference`), among texts
//!   that put
//!   them beside whitespace, word chars, each other and Unicode 17 letters.

use crate::common;

use common::*;
use router_tokenizer::Tokenizer;

fn golden_file() -> serde_json::Value {
    golden("components/components.json")
}

fn trained_path(rel: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/components")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn trained_tokenizers_encode_and_decode_as_the_reference() {
    let golden = golden_file();
    let trained = golden["trained"].as_object().unwrap();
    assert_eq!(trained.len(), 8);
    let texts = golden["texts"].as_array().unwrap();
    for (name, want) in trained {
        let tok = offline_options()
            .load(&trained_path(want["file"].as_str().unwrap()))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_matches_golden(&tok, name, &golden, want);
        for (i, text) in texts.iter().enumerate() {
            let text = text.as_str().unwrap();
            let special = golden_ids(&want["special"][i]);
            assert_eq!(
                tok.encode(text, true).unwrap().ids(),
                special,
                "{name} {text:?} with special tokens"
            );
            let ids = golden_ids(&want["texts"][i]);
            for (key, skip) in [("decode", false), ("decode_skip", true)] {
                assert_eq!(
                    tok.decode(&ids, skip).unwrap(),
                    want[key][i].as_str().unwrap(),
                    "{name} {key} of {text:?}"
                );
            }
        }
    }
}

/// `base`'s `tokenizer.json` with `entries` appended to its added tokens.
fn patched(
    base: &str,
    entries: &serde_json::Value,
    dir: &std::path::Path,
    name: &str,
) -> Tokenizer {
    let mut json = base_json(base);
    let list = json["added_tokens"].as_array_mut().unwrap();
    list.extend(entries.as_array().unwrap().iter().cloned());
    load_json_in(&json, dir, name)
}

fn base_json(model: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(snapshot_file(model, "tokenizer.json")).unwrap()).unwrap()
}

#[test]
fn flagged_added_tokens_match_as_the_reference() {
    let golden = golden_file();
    let patches = golden["patched"].as_object().unwrap();
    assert_eq!(patches.len(), 10);
    let texts = golden["flag_texts"].as_array().unwrap();
    let long = golden["long"].as_str().unwrap();
    let dir = std::env::temp_dir().join(format!("rtok-components-{}", std::process::id()));
    for (name, want) in patches {
        let tok = patched(
            want["base"].as_str().unwrap(),
            &want["added_tokens"],
            &dir,
            name,
        );
        for (text, ids) in texts.iter().zip(want["texts"].as_array().unwrap()) {
            let text = text.as_str().unwrap();
            if ids.is_null() {
                // The reference panics on this one; any answer but a panic.
                let _ = tok.encode_with(text, &crate::common::sequential(false));
                continue;
            }
            assert_text_ids(&tok, name, text, &golden_ids(ids));
        }
        assert_long_ids(&tok, name, long, &golden_ids(&want["long"]));
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `add_prefix_space` on a `ByteLevel` pre-tokenizer that runs after
/// another one puts the space in front of each of that one's pre-tokens,
/// which the crate does not follow: the load says so (invariant `crate-steps-equal-reference`).
#[test]
fn a_prefix_space_after_other_pre_tokenizers_is_refused_by_name() {
    let mut json = base_json("meta-llama/Meta-Llama-3-8B-Instruct");
    let members = json["pre_tokenizer"]["pretokenizers"]
        .as_array_mut()
        .unwrap();
    assert_eq!(members.len(), 2);
    members[1]["add_prefix_space"] = serde_json::Value::Bool(true);
    let dir = std::env::temp_dir().join(format!("rtok-prefix-space-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let Err(err) = offline_options().load(path.to_str().unwrap()) else {
        panic!("a ByteLevel prefix space after a Split was loaded");
    };
    let message = err.to_string();
    assert!(message.contains("add_prefix_space"), "{message}");
    assert!(message.contains("tokenizer.json"), "{message}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Pre-tokenizer shapes on Llama-3's vocabulary (invariant `crate-steps-equal-reference`): every
/// `Split`
/// behavior, inverted or not, on a regex `tokenizers` 1.0 has no engine for
/// (the crate's steps split every text) and on a string; `Punctuation`
/// with each behavior (the crate's steps split texts holding punctuation the
/// engines class differently); `CharDelimiterSplit`, `WhitespaceSplit`,
/// `Digits` on runs; BLOOM's regex.
#[test]
fn pre_tokenizer_shapes_split_as_the_reference() {
    let golden = golden_file();
    let shapes = golden["pre_tokenizers"].as_object().unwrap();
    assert_eq!(shapes.len(), 29);
    let texts = golden["pre_texts"].as_array().unwrap();
    let long = golden["long"].as_str().unwrap();
    let base = base_json("meta-llama/Meta-Llama-3-8B-Instruct");
    let dir = std::env::temp_dir().join(format!("rtok-pre-tokenizers-{}", std::process::id()));
    for (name, want) in shapes {
        let mut json = base.clone();
        json["pre_tokenizer"] = want["pre_tokenizer"].clone();
        let tok = load_json_in(&json, &dir, name);
        for (text, ids) in texts.iter().zip(want["texts"].as_array().unwrap()) {
            assert_text_ids(&tok, name, text.as_str().unwrap(), &golden_ids(ids));
        }
        // Parallel chunks give the sequential ids (whatever family the
        // shape allows).
        let ids = tok
            .encode_with(long, &crate::common::sequential(false))
            .unwrap()
            .ids()
            .to_vec();
        assert_long_ids(&tok, name, long, &ids);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A stream over each trained tokenizer's ids (after no prompt, and after
/// the first third as the prompt) joins to the decode of all of them minus
/// the prompt's, where the prompt's decode is a prefix of the whole (it is
/// for ids encoded from text): suffix, prefix, Metaspace, WordPiece and
/// byte-fallback decoders alike.
#[test]
fn streams_over_trained_tokenizers_join_to_the_decode() {
    let golden = golden_file();
    let (mut checked, mut skipped) = (0, 0);
    for (name, want) in golden["trained"].as_object().unwrap() {
        let tok = offline_options()
            .load(&trained_path(want["file"].as_str().unwrap()))
            .unwrap();
        for ids in want["texts"].as_array().unwrap() {
            let ids = golden_ids(ids);
            for skip in [false, true] {
                for cut in [0, ids.len() / 3] {
                    let (prompt, generated) = ids.split_at(cut);
                    let full = tok.decode(&ids, skip).unwrap();
                    let pre = tok.decode(prompt, skip).unwrap();
                    let Some(rest) = full.strip_prefix(pre.as_str()) else {
                        skipped += 1;
                        continue;
                    };
                    checked += 1;
                    let mut stream = router_tokenizer::DecodeStream::new(&tok, prompt, skip);
                    let mut joined = String::new();
                    for &id in generated {
                        joined.extend(stream.step(id).unwrap());
                    }
                    joined.extend(stream.flush().unwrap());
                    assert_eq!(joined, rest, "{name} {ids:?} skip={skip} cut={cut}");
                }
            }
        }
    }
    // Most prompts decode to a prefix of the whole.
    assert!(
        checked > 4 * skipped,
        "{checked} checked, {skipped} skipped"
    );
}

/// `tokenizers` 0.x's own cases for flagged added tokens
/// (`tokenizer/added_vocabulary.rs`: `options_use_cases`,
/// `test_single_word_is_correct`, `test_single_word_is_unicode_correct`,
/// `test_lstrip_unicode_space`, `test_encode_special_tokens`), through a
/// `tokenizer.json` with their `Lowercase` normalizer and a WordLevel model
/// that knows only `[UNK]`: each split the reference leaves to the model is
/// one `[UNK]` (id 0), each extracted token its id.
#[test]
fn the_references_added_vocabulary_cases() {
    use router_tokenizer::SpecialTokenPolicy::{Parse, PlainText};
    // (content, lstrip, rstrip, single_word, special); ids from 1 in order.
    type Added<'a> = &'a [(&'a str, bool, bool, bool, bool)];
    let load = |added: Added<'_>, policy, name: &str| {
        let tokens: Vec<serde_json::Value> = added
            .iter()
            .enumerate()
            .map(|(i, &(content, lstrip, rstrip, single_word, special))| {
                serde_json::json!({"id": i + 1, "content": content, "lstrip": lstrip,
                    "rstrip": rstrip, "single_word": single_word,
                    "normalized": !special, "special": special})
            })
            .collect();
        let json = serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": tokens,
            "normalizer": {"type": "Lowercase"}, "pre_tokenizer": null,
            "post_processor": null, "decoder": null,
            "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
        });
        let dir = std::env::temp_dir().join(format!("rtok-added-cases-{}", std::process::id()));
        let options = offline_options().with_special_tokens(policy);
        load_json_with(&json, &dir, name, options)
    };
    let mask = |special| ("<mask>", true, true, true, special);
    let special_mask = [
        mask(true),
        ("ask>", false, false, false, false),
        ("<pad>", false, false, false, true),
    ];
    let special_text = "Hi <mask> there\t<mask>\t<mask>\u{2000} <pad> <mask><pad><pad>";
    let cases: [(&str, Added<'_>, _, &str, &[u32]); 6] = [
        (
            "options_use_cases",
            &[
                ("my", true, true, false, false),
                ("name", false, false, false, false),
                ("ony", false, false, true, false),
                ("[CLS]", false, false, false, true),
                ("[SEP]", false, false, false, true),
            ],
            Parse,
            "[CLS] My name is Anthony [SEP]",
            &[4, 1, 2, 0, 5],
        ),
        (
            "single_word_is_correct",
            &[("<mask>", false, false, true, false)],
            Parse,
            "<mask> My name <mask> A<mask> <mask>ony <mask>",
            &[1, 0, 1, 0, 1],
        ),
        (
            "single_word_is_unicode_correct",
            &[("<mask>", false, false, true, false)],
            Parse,
            "<mask>, <mask>- \u{25cc}\u{330}<mask>",
            &[1, 0, 1, 0],
        ),
        (
            "lstrip_unicode_space",
            &[mask(false)],
            Parse,
            "Hi <mask> there\t<mask>\t<mask>\u{2000}",
            &[0, 1, 0, 1, 1],
        ),
        (
            "encode_special_tokens",
            &special_mask,
            PlainText,
            special_text,
            &[0, 2, 0, 2, 0, 2, 0, 2, 0],
        ),
        (
            "encode_special_tokens_off",
            &special_mask,
            Parse,
            special_text,
            &[0, 1, 0, 1, 1, 3, 1, 3, 3],
        ),
    ];
    for (name, added, policy, text, want) in cases {
        let tok = load(added, policy, name);
        assert_eq!(
            tok.encode_with(text, &crate::common::sequential(false))
                .unwrap()
                .ids(),
            want,
            "{name}"
        );
    }
}
