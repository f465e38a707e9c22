//! Punctuation new since Unicode 10 in a BERT tokenizer (DESIGN.md invariant
//! `unicode-classes-are-reference`): `tokenizers` 1.0's `BertPreTokenizer` isolates it, Python
//! `tokenizers` 0.23.3 (the reference, with `unicode_categories`' older
//! tables) keeps it inside a word, which then often becomes one `[UNK]`.
//! The ids must be the reference's: the goldens
//! (`tests/golden/bert_punctuation/`, written by the script beside them)
//! hold its ids for probes that put each such code point between letters,
//! digits, spaces, punctuation and CJK, and for 8 KiB of prose with one
//! every 89 chars, encoded whole, with offsets, in forced parallel chunks
//! and on the interim WordPiece (the model build held back).

use crate::common;

use common::*;
use router_tokenizer::__testing::FastRoute;
use router_tokenizer::SpecialTokenPolicy;

#[test]
fn bert_punctuation_takes_the_reference_classes() {
    let golden = golden("bert_punctuation/bert_punctuation.json");
    assert!(golden["texts"].as_array().unwrap().len() > 600);
    let models = golden["models"].as_object().unwrap();
    assert!(!models.is_empty());
    for (model, want) in models {
        let built = tokenizer(model);
        let (interim, _) = route_pair(model, SpecialTokenPolicy::Parse, FastRoute::Interim);
        assert_matches_golden(&built, &format!("{model} built"), &golden, want);
        assert_matches_golden(&interim, &format!("{model} interim"), &golden, want);
        assert!(router_tokenizer::__testing::interim_active(&interim));
    }
}
