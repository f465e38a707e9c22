//! The tiktoken backend on the byte-level engine (DESIGN.md invariants `last-merge-lemma`,
//! `native-pieces-equal-regex`, `unicode-classes-are-reference` and `background-build-invisible`)
//! against `tiktoken-rs`' `CoreBPE`, the regex reference, in the same run:
//! every built-in encoding and the Llama-3 rank file, on slices of every
//! corpus and adversarial file, on random texts over hostile alphabets, and
//! on long single pieces (where merge order matters most). The Python
//! tiktoken goldens of `tests/it/parity.rs` cover the whole files.

use crate::common;

use proptest::prelude::*;
use router_tokenizer::{LoadOptions, ParallelOptions, Tokenizer};
use std::collections::HashSet;
use std::sync::LazyLock;
use tiktoken_rs::CoreBPE;

const LLAMA3_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

fn load(source: &str) -> Tokenizer {
    let tok = LoadOptions::default()
        .with_parallel(ParallelOptions::never())
        .with_bypass_registry(true)
        .load(source)
        .unwrap();
    // The engine under test: without it encodes take the regex path.
    tok.warm_up();
    tok
}

fn llama3_path() -> String {
    common::shared_dir()
        .join("fixtures/tiktoken/llama3-tokenizer.model")
        .display()
        .to_string()
}

/// The Llama-3 rank file as a `CoreBPE` with Meta's pattern.
fn llama3_core() -> CoreBPE {
    use base64::Engine as _;
    let text = std::fs::read_to_string(llama3_path()).unwrap();
    let mut ranks = rustc_hash::FxHashMap::default();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let (tok, rank) = line.split_once(' ').unwrap();
        let tok = base64::engine::general_purpose::STANDARD
            .decode(tok)
            .unwrap();
        ranks.insert(tok, rank.parse::<u32>().unwrap());
    }
    CoreBPE::new(ranks, Default::default(), LLAMA3_PATTERN).unwrap()
}

struct Pair {
    name: &'static str,
    ours: Tokenizer,
    reference: CoreBPE,
}

static PAIRS: LazyLock<Vec<Pair>> = LazyLock::new(|| {
    let mut pairs = vec![
        ("r50k_base", tiktoken_rs::r50k_base().unwrap()),
        ("p50k_base", tiktoken_rs::p50k_base().unwrap()),
        ("cl100k_base", tiktoken_rs::cl100k_base().unwrap()),
        ("o200k_base", tiktoken_rs::o200k_base().unwrap()),
    ]
    .into_iter()
    .map(|(name, reference)| Pair {
        name,
        ours: load(name),
        reference,
    })
    .collect::<Vec<_>>();
    pairs.push(Pair {
        name: "llama3",
        ours: load(&llama3_path()),
        reference: llama3_core(),
    });
    pairs
});

fn reference_ids(core: &CoreBPE, text: &str) -> Vec<u32> {
    core.encode(text, &HashSet::new()).unwrap().0
}

fn check(pair: &Pair, text: &str) -> Result<(), String> {
    // No input here holds special-token text (`<|`), so the reference is
    // `CoreBPE::encode` with no allowed specials.
    let ours = pair.ours.encode(text, false).map_err(|e| e.to_string())?;
    let want = reference_ids(&pair.reference, text);
    if ours.ids() != want.as_slice() {
        let at = ours
            .ids()
            .iter()
            .zip(&want)
            .position(|(a, b)| a != b)
            .unwrap_or(want.len().min(ours.len()));
        return Err(format!(
            "{}: ids differ at {at} on {:?}",
            pair.name,
            text.chars().take(80).collect::<String>()
        ));
    }
    Ok(())
}

/// 32 KiB slices (start, middle, end) of every corpus and adversarial file.
#[test]
fn corpus_slices_match_tiktoken_rs() {
    let mut bad = Vec::new();
    for (key, path) in common::all_inputs() {
        let text = std::fs::read_to_string(&path).unwrap();
        let cut = |from: usize, len: usize| -> &str {
            let mut s = from.min(text.len());
            while !text.is_char_boundary(s) {
                s -= 1;
            }
            let mut e = (s + len).min(text.len());
            while !text.is_char_boundary(e) {
                e -= 1;
            }
            &text[s..e]
        };
        let n = text.len();
        for slice in [
            cut(0, 32 << 10),
            cut(n / 2, 32 << 10),
            cut(n.saturating_sub(32 << 10), 32 << 10),
        ] {
            // Special-token text would be split out by our Parse policy.
            if slice.contains("<|") {
                continue;
            }
            for pair in PAIRS.iter() {
                if let Err(e) = check(pair, slice) {
                    bad.push(format!("{key}: {e}"));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Long single pieces: runs of letters from a small alphabet, where many
/// tokens can be split several ways and merge order decides the ids.
#[test]
fn long_pieces_match_tiktoken_rs() {
    let words = [
        "a".repeat(500),
        "ab".repeat(300),
        "aba".repeat(200),
        "aab".repeat(200),
        "abcabcab".repeat(80),
        "lalalalala".repeat(60),
        "ssssssssssss".repeat(40),
        "00000000000".repeat(40),
        "!!!!??!!".repeat(70),
        "ــــــــ".repeat(60),
        "你你你好好".repeat(50),
        "\u{e9}\u{e8}\u{ea}".repeat(100),
        "ȦȦȧȧ".repeat(90),
        " \u{3000} \u{a0}".repeat(100),
    ];
    let mut bad = Vec::new();
    for w in &words {
        for pair in PAIRS.iter() {
            if let Err(e) = check(pair, w) {
                bad.push(e);
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Letters, marks and digits new in Unicode 16 (the engine's grammar and
/// the reference's regex both know them) and Unicode 17 (only the grammar
/// does: such segments take the regex path, invariant `unicode-classes-are-reference`), inside
/// text.
#[test]
fn new_unicode_letters_match_tiktoken_rs() {
    let texts = [
        "Garay \u{10D4A}\u{10D4B}\u{10D60} Todhri \u{105C0}\u{105C1} Kirat Rai \u{16D43}\u{16D44}",
        "Sunuwar \u{11BC0}\u{11BC1} Ol Onal \u{1E5D0}\u{1E5D1} digits \u{16D70}\u{16D71} x\u{1C89}y A\u{A7CB}b",
        "Sidetic \u{10940}\u{10941} Tolong Siki \u{11DB0}\u{11DB1} Beria Erfe \u{16EA0} Tai Yo \u{1E6C0}",
        "CJK J \u{323B0}\u{323B1} a\u{A7CE}b ab\u{1ACF}cd \u{88F}x",
    ];
    let mut bad = Vec::new();
    for t in texts {
        for pair in PAIRS.iter() {
            if let Err(e) = check(pair, t) {
                bad.push(e);
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::proptest_cases(256)))]
    #[test]
    fn random_texts_match_tiktoken_rs(
        parts in proptest::collection::vec(
            prop_oneof![
                Just(" "), Just("  "), Just("\t"), Just("\n"), Just("\r\n"), Just("\u{a0}"), Just("\u{3000}"),
                Just("a"), Just("b"), Just("ab"), Just("The"), Just("HELLO"), Just("ing"), Just("'s"), Just("'LL"),
                Just("1"), Just("2024"), Just("."), Just("/"), Just("!!"), Just("é"), Just("e\u{301}"),
                Just("中"), Just("文字"), Just("ا"), Just("👍"), Just("\u{200d}"), Just("ǅ"), Just("ʰ"),
                Just("\u{b}"), Just("\u{85}"), Just("\u{1}"), Just("Ⅻ"), Just("½"),
            ],
            0..64,
        ),
        which in 0usize..5,
    ) {
        let text: String = parts.concat();
        let pair = &PAIRS[which];
        prop_assert_eq!(check(pair, &text), Ok(()));
    }

    #[test]
    fn random_unicode_matches_tiktoken_rs(text in "\\PC{0,48}", which in 0usize..5) {
        prop_assert_eq!(check(&PAIRS[which], &text), Ok(()));
    }

    /// Runs of U+3000..U+9FFF, which the engine cuts where no merge joins
    /// across (DESIGN.md invariant `cut-where-no-entry-joins`), beside kana and CJK punctuation.
    #[test]
    fn random_cjk_runs_match_tiktoken_rs(
        chars in proptest::collection::vec(
            prop_oneof![
                0x3000u32..0xA000,
                0x4E00u32..0x4F00,
                Just(0x3002), Just(0xFF0C), Just(0x30FC), Just(0x3057), Just(0x0020), Just(0x0061),
            ],
            0..96,
        ),
        which in 0usize..5,
    ) {
        let text: String = chars.iter().filter_map(|&c| char::from_u32(c)).collect();
        prop_assert_eq!(check(&PAIRS[which], &text), Ok(()));
    }
}

/// Chinese text encoded again and again, then changed in one char of nine
/// so warm and new clauses alternate (the word caches answer what they
/// hold and the cuts of invariant `cut-where-no-entry-joins` cut the rest). A fresh thread per
/// encoding, so each cache starts empty.
#[test]
fn repeated_chinese_matches_tiktoken_rs() {
    let (text, changed) = common::chinese_repeats(16 << 10);
    check_memo_rounds(&text, &changed);
}

/// [`common::memo_rounds`] of `text` and `changed`, each encoding on a
/// fresh thread (so each memo starts empty), against `tiktoken-rs`.
fn check_memo_rounds(text: &str, changed: &str) {
    std::thread::scope(|scope| {
        for pair in PAIRS.iter() {
            scope.spawn(move || {
                for (round, t) in common::memo_rounds(text, changed).enumerate() {
                    assert_eq!(check(pair, t), Ok(()), "round {round}");
                }
            });
        }
    });
}

/// Lines seen again and changed, on every encoding and the rank file,
/// against `tiktoken-rs`.
#[test]
fn repeated_lines_match_tiktoken_rs() {
    let (text, changed) = common::line_repeats(8 << 10);
    // No special-token text (the rank file's load parses Llama-3's).
    let changed = changed.replace("<|eot_id|>", "<eot_id>");
    check_memo_rounds(&text, &changed);
}

/// Offsets tile the input and the parallel encoder gives the sequential ids.
#[test]
fn offsets_and_parallel_agree() {
    let text =
        std::fs::read_to_string(common::shared_dir().join("corpus/en-prose/tinyshakespeare.txt"))
            .unwrap();
    let text = &text[..600_000];
    for name in ["cl100k_base", "o200k_base"] {
        let seq = load(name);
        let par = LoadOptions::default()
            .with_parallel(ParallelOptions::always_with_chunk_bytes(64 << 10))
            .with_bypass_registry(true)
            .load(name)
            .unwrap();
        par.warm_up();
        let a = seq
            .encode_with(text, &crate::common::offsets(false))
            .unwrap();
        let b = par.encode(text, false).unwrap();
        assert_eq!(a.ids(), b.ids(), "{name}");
        let offsets = a.offsets().unwrap();
        let mut pos = 0;
        for &(s, e) in offsets {
            assert_eq!(s, pos, "{name}");
            pos = e;
        }
        assert_eq!(pos, text.len(), "{name}");
    }
}
