//! Letters, marks and digits new in Unicode 17 (DESIGN.md invariant
//! `unicode-classes-are-reference`):
//! `tokenizers` 1.0's pre-tokenizer classes them by Unicode 17, Python
//! `tokenizers` 0.23.3 (the reference) by Unicode 16, where they are
//! unassigned. The ids must be the reference's: the goldens
//! (`tests/golden/unicode17/`, written by the script beside them) hold its
//! ids for probes that put each new code point after letters, digits,
//! spaces, newlines, punctuation and contractions, and for 8 KiB of prose
//! with one every 97 chars, encoded whole, with offsets, and in forced
//! parallel chunks; seven models, among them Command-R (`Digits` and a
//! splitting `ByteLevel`, invariant `unicode-classes-are-reference`) and Mistral-Nemo. And marks
//! new since
//! Unicode 9.0 under a lone NFC normalizer (invariant `unicode-classes-are-reference`).

use crate::common;

use common::*;

/// Every model of the golden file `rel` (there are `count`) encodes its texts as the reference.
fn assert_models_match(rel: &str, count: usize) {
    let golden = golden(rel);
    let models = golden["models"].as_object().unwrap();
    assert_eq!(models.len(), count, "{rel}");
    for (model, want) in models {
        assert_matches_golden(&tokenizer(model), model, &golden, want);
    }
}

#[test]
fn unicode17_code_points_take_the_reference_classes() {
    assert_models_match("unicode17/unicode17.json", 7);
}

/// Marks assigned after Unicode 9.0 in the text of a tokenizer whose only
/// normalizer is NFC (invariant `unicode-classes-are-reference`): the reference composes with
/// Unicode 9.0
/// tables, where they have class 0 and stay in place, so its ids follow
/// (`tests/golden/unicode17/nfc_marks.json`, written by the script beside
/// it). With Unicode 17's composition, Command-R differed on 393 of 800
/// random mark runs.
#[test]
fn marks_new_since_unicode_9_compose_as_the_reference() {
    assert_models_match("unicode17/nfc_marks.json", 2);
}

/// Other normalizers whose output depends on the Unicode version (NFD, NFKC,
/// NFKD, sequences with them, `BertNormalizer`), on Qwen3's `tokenizer.json`
/// with its normalizer replaced: the reference runs them with Unicode 9.0
/// tables and `unicode_categories` 0.1.1 (invariant `unicode-classes-are-reference`), `tokenizers`
/// 1.0 with
/// Unicode 17. Goldens: `variants` of `nfc_marks.json`.
#[test]
fn unicode_version_dependent_normalizers_follow_the_reference() {
    let golden = golden("unicode17/nfc_marks.json");
    let variants = golden["variants"].as_object().unwrap();
    assert_eq!(variants.len(), 8);
    let base: serde_json::Value = serde_json::from_slice(
        &std::fs::read(snapshot_file("Qwen/Qwen3-8B", "tokenizer.json")).unwrap(),
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("rtok-normalizers-{}", std::process::id()));
    for (name, want) in variants {
        let mut json = base.clone();
        json["normalizer"] = want["normalizer"].clone();
        let tok = load_json_in(&json, &dir, name);
        assert_matches_golden(&tok, name, &golden, want);
    }
    std::fs::remove_dir_all(&dir).ok();
}
