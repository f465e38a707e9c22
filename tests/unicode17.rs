//! Letters, marks and digits new in Unicode 17 (DESIGN.md claims 325, 337):
//! `tokenizers` 1.0's pre-tokenizer classes them by Unicode 17, Python
//! `tokenizers` 0.23.3 (the reference) by Unicode 16, where they are
//! unassigned. The ids must be the reference's: the goldens
//! (`tests/golden/unicode17/`, written by the script beside them) hold its
//! ids for probes that put each new code point after letters, digits,
//! spaces, newlines, punctuation and contractions, and for 8 KiB of prose
//! with one every 97 chars, encoded whole, with offsets, and in forced
//! parallel chunks; seven models, among them Command-R (`Digits` and a
//! splitting `ByteLevel`, claim 337) and Mistral-Nemo.

mod common;

use common::*;

#[test]
fn unicode17_code_points_take_the_reference_classes() {
    let golden = golden("unicode17/unicode17.json");
    let models = golden["models"].as_object().unwrap();
    assert_eq!(models.len(), 7);
    for (model, want) in models {
        assert_matches_golden(&tokenizer(model), model, &golden, want);
    }
}
