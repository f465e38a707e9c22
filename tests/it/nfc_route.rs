//! The NFC shortcut (DESIGN.md invariant `crate-steps-equal-reference`): a `tokenizer.json` whose
//! only
//! normalizer is NFC (Qwen2/3, Command-R) encodes on the chunk walk with
//! the crate's NFC (its quick check from a table), at every length. Ids and
//! offsets must be those of the same file loaded with the shortcut off (the
//! `tokenizers` pipeline's own encode and normalizer), on every corpus and
//! adversarial file, on texts NFC changes (placed so they land inside and
//! beside the pieces the walk normalizes), and on random mixtures of the
//! characters the shortcut accepts and those it must leave to NFC.

use crate::common;

use common::*;
use proptest::prelude::*;
use router_tokenizer::__testing::{FastRoute, hf_json_route};
use router_tokenizer::{SpecialTokenPolicy, Tokenizer};

const MODELS: [&str; 2] = ["Qwen/Qwen3-8B", "CohereForAI/c4ai-command-r-plus"];

/// (shortcut on, shortcut off) for `model`, after checking the shortcut
/// applies to the first and not to the second.
fn pair(model: &str) -> (Tokenizer, Tokenizer) {
    let path = snapshot_file(model, "tokenizer.json");
    let (on, applies) =
        hf_json_route(&path, SpecialTokenPolicy::Parse, FastRoute::Nfc, true).unwrap();
    assert!(applies, "{model}: the shortcut must apply");
    let (off, applies) =
        hf_json_route(&path, SpecialTokenPolicy::Parse, FastRoute::Nfc, false).unwrap();
    assert!(!applies, "{model}: switched off");
    (on, off)
}

/// Every corpus and adversarial file: a 3 KiB prefix and 256 KiB, ids and
/// offsets.
#[test]
fn every_file_gives_the_same_ids_and_offsets() {
    for model in MODELS {
        let (on, off) = pair(model);
        for (name, path) in all_inputs() {
            let text = std::fs::read_to_string(&path).unwrap();
            for max in [3 << 10, 256 << 10] {
                assert_same_encodes(model, &name, &on, &off, prefix(&text, max));
            }
        }
    }
}

/// Texts NFC changes or must look at: combining marks (composed, reordered,
/// blocked), Hangul jamo after a syllable, kana voiced marks, singleton
/// decompositions, compatibility ideographs, astral and Unicode 17 letters.
const NFC_SENSITIVE: [&str; 16] = [
    "e\u{301}",
    "A\u{30A}",
    "\u{212B}",
    "a\u{301}\u{316}",
    "a\u{316}\u{301}",
    "\u{1100}\u{1161}\u{11A8}",
    "\u{AC00}\u{11A8}",
    "\u{304B}\u{3099}",
    "\u{30AB}\u{309A}",
    "\u{2000}\u{2001}",
    "\u{F900}\u{2F800}",
    "\u{344}\u{340}",
    "\u{E9}\u{301}",
    "\u{FB2C}",
    "\u{10940}\u{11DB0}\u{31350}",
    "\u{1F600}\u{200D}\u{1F469}",
];

/// Each sensitive text alone, and at the start, in the middle and at the
/// end of a segment padded with ASCII, CJK and kana (all quick-check
/// *Yes*), and beside a special token (another segment).
#[test]
fn nfc_sensitive_text_is_normalized_where_it_sits() {
    for model in MODELS {
        let (on, off) = pair(model);
        let pad = "The quick fox 狐狸 かな ".repeat(200);
        for s in NFC_SENSITIVE {
            for text in [
                s.to_owned(),
                format!("x{s}y"),
                format!("{s}{pad}"),
                format!("{pad}{s}{pad}"),
                format!("{pad}{s}"),
                format!("{pad}{s}<|endoftext|>{s}{pad}"),
                format!("{pad}{s}<BOS_TOKEN>{s}"),
            ] {
                assert_same_encodes(model, &format!("{s:?}"), &on, &off, &text);
            }
        }
        // The shortcut handle does apply NFC where it must: a decomposed
        // letter encodes as the composed one.
        let composed = format!("{pad}caf\u{E9}{pad}");
        let decomposed = format!("{pad}cafe\u{301}{pad}");
        assert_eq!(
            on.encode_with(&composed, &crate::common::sequential(false))
                .unwrap()
                .ids(),
            on.encode_with(&decomposed, &crate::common::sequential(false))
                .unwrap()
                .ids(),
            "{model}: NFC applied on the shortcut path"
        );
    }
}

/// Characters the shortcut accepts and characters it leaves to NFC.
const ALPHABET: [&str; 18] = [
    "a", " ", "\n", "Z", "1", "'", "é", "Å", "中", "か", "가", "，", "\u{301}", "\u{316}",
    "\u{3099}", "\u{11A8}", "\u{212B}", "😀",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]

    #[test]
    fn random_mixtures_match(
        picks in prop::collection::vec(0..ALPHABET.len(), 1..400),
        pad in 1300usize..1500,
    ) {
        let body: String = picks.iter().map(|&i| ALPHABET[i]).collect();
        let text = format!("{}{body}{}", "ab c ".repeat(pad), " x".repeat(pad));
        for model in MODELS {
            let (on, off) = pair_cached(model);
            let a = on.encode_with(&text, &crate::common::sequential(false)).unwrap();
            let b = off.encode_with(&text, &crate::common::sequential(false)).unwrap();
            prop_assert_eq!(a.ids(), b.ids(), "{}", model);
        }
    }
}

/// One pair per model for the whole proptest.
fn pair_cached(model: &str) -> &'static (Tokenizer, Tokenizer) {
    use std::sync::OnceLock;
    static PAIRS: [OnceLock<(Tokenizer, Tokenizer)>; 2] = [OnceLock::new(), OnceLock::new()];
    let i = MODELS.iter().position(|m| *m == model).unwrap();
    PAIRS[i].get_or_init(|| pair(model))
}
