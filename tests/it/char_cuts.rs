//! CJK pre-tokens cut where no merge joins across (DESIGN.md invariant `cut-where-no-entry-joins`),
//! against the same files loaded without the cuts: ids and offsets, special
//! tokens parsed and as plain text, on every corpus and adversarial file,
//! on the four Llama-3 entries the merges do not rebuild (which must stay
//! whole, `ignore_merges`), on kana and CJK punctuation mixtures, and on
//! LoPT encodes, for every shared byte-level `tokenizer.json`. The tiktoken
//! encodings' engine takes the same cuts; `tests/it/tiktoken_fast.rs` checks it
//! against `tiktoken-rs`. Text encoded again is cut the same way, checked
//! here on repeated and changed text.

use crate::common;

use common::*;
use proptest::prelude::*;
use router_tokenizer::__testing::FastRoute;
use router_tokenizer::Tokenizer;

const MODELS: [&str; 8] = [
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct",
    "Qwen/Qwen3-8B",
    "deepseek-ai/DeepSeek-V3",
    "openai/gpt-oss-20b",
    "CohereForAI/c4ai-command-r-plus",
    "Xenova/gpt-3.5-turbo",
    "mistralai/Mistral-Nemo-Instruct-2407",
];
/// `(model, policy, cut, uncut)`, loaded once for the tests that run
/// together ([`Lease`]: 4 GB, not to be kept under the other modules' tests).
fn pairs() -> std::sync::Arc<Vec<(&'static str, String, Tokenizer, Tokenizer)>> {
    static PAIRS: Lease<Vec<(&'static str, String, Tokenizer, Tokenizer)>> = Lease::new();
    PAIRS.get(|| route_pairs(&MODELS, FastRoute::CharCuts))
}

/// Cut and uncut give the same ids and offsets on `text`, every pair.
fn all_agree(text: &str) {
    for (model, what, on, off) in pairs().iter() {
        assert_same_encodes(model, &format!("{text:?} {what}"), on, off, text);
    }
}

/// Every byte-level BPE here has entries that join CJK chars; the
/// SentencePiece conversions, Gemma-3 and WordPiece never take the cuts.
#[test]
fn byte_level_bpes_take_it() {
    for model in MODELS {
        assert!(route_applies(model, FastRoute::CharCuts), "{model}");
    }
    for model in [
        "mistralai/Mistral-7B-v0.1",
        "google/gemma-3-4b-it",
        "sentence-transformers/all-MiniLM-L6-v2",
    ] {
        assert!(!route_applies(model, FastRoute::CharCuts), "{model}");
    }
}

#[test]
fn every_file_gives_the_same_ids_and_offsets() {
    for (model, what, on, off) in pairs().iter() {
        assert_same_on_all_inputs(model, what, on, off);
    }
}

/// The first MiB of each Chinese corpus file, not just the first 256 KiB:
/// two novels and a news translation, each clause a pre-token the cuts take
/// apart.
#[test]
fn a_mib_of_each_chinese_file() {
    let dir = shared_dir().join("corpus/zh");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{}", dir.display());
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let text = prefix(&text, 1 << 20);
        for (model, what, on, off) in pairs().iter() {
            let what = format!("{} {what}", path.display());
            assert_same_encodes(model, &what, on, off, text);
        }
    }
}

/// Llama-3's entries that start with a CJK char and that its merges do not
/// rebuild (`ignore_merges` takes them whole): a cut that left one alone
/// would give its id where the whole pre-token's merges give others.
#[test]
fn entries_the_merges_do_not_rebuild() {
    let words = ["中文字幕", "しない", "ーカー", "ーション"];
    let mut texts = Vec::new();
    for w in words {
        for (before, after) in [
            ("", ""),
            ("看", "的"),
            ("我们的", "电影"),
            ("，", "。"),
            ("a", "b"),
            ("「", "」"),
            (" ", " "),
            ("中", "中"),
        ] {
            texts.push(format!("{before}{w}{after}"));
            texts.push(format!("{before}{w}{w}{after}"));
        }
    }
    for t in &texts {
        all_agree(t);
    }
}

/// Text encoded again and again, then changed in one char of nine, so
/// cached words and new clauses, cut, alternate; the unrebuilt entries
/// (which must stay whole) are repeated too. Each pair runs on a fresh
/// thread, so its caches start empty.
#[test]
fn repeated_text_keeps_its_ids() {
    let (text, changed) = chinese_repeats(24 << 10);
    let entries = "中文字幕。しない、ーカー「ーション」中文字幕中文字幕的ーションーション";
    let pairs = pairs();
    std::thread::scope(|scope| {
        for (model, what, on, off) in pairs.iter() {
            let (text, changed) = (&text, &changed);
            scope.spawn(move || {
                for (round, t) in memo_rounds(text, changed).enumerate() {
                    let what = format!("{what}, round {round}");
                    assert_same_encodes(model, &what, on, off, t);
                }
                let b = off
                    .encode_with(entries, &crate::common::sequential(false))
                    .unwrap();
                for round in 0..200 {
                    let a = on
                        .encode_with(entries, &crate::common::sequential(false))
                        .unwrap();
                    assert_eq!(a.ids(), b.ids(), "{model} {what}: entries, round {round}");
                }
            });
        }
    });
}

/// A few Chinese lines among many English ones, encoded again and again
/// on a fresh thread: the plain pre-tokens between the Chinese lines are
/// passed on in runs (invariant `cut-where-no-entry-joins`) while the Chinese clauses are cut.
#[test]
fn sparse_chinese_encoded_again_matches() {
    let (mut en, mut zh) = (String::new(), String::new());
    for (key, path) in corpus_files() {
        let text = std::fs::read_to_string(path).unwrap();
        if key.starts_with("en") && en.is_empty() {
            en = prefix(&text, 24 << 10).to_owned();
        } else if key.starts_with("zh/") && zh.is_empty() {
            zh = prefix(&text, 6 << 10).to_owned();
        }
    }
    let mut zh_lines = zh.lines().filter(|l| !l.is_empty()).cycle();
    let mut text = String::new();
    for (n, line) in en.lines().enumerate() {
        text.push_str(line);
        text.push('\n');
        if n % 9 == 8 {
            text.push_str(zh_lines.next().unwrap_or("中文"));
            text.push('\n');
        }
    }
    let pairs = pairs();
    std::thread::scope(|scope| {
        for (model, what, on, off) in pairs.iter() {
            let text = &text;
            scope.spawn(move || {
                for round in 0..6 {
                    let what = format!("{what}, round {round}");
                    assert_same_encodes(model, &what, on, off, text);
                }
            });
        }
    });
}

/// Long texts take the parallel path (LoPT): the cuts run in each chunk.
#[test]
fn parallel_encodes_match() {
    let dir = shared_dir().join("corpus/zh");
    let mut text = String::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let t = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        text.push_str(prefix(&t, 400 << 10));
    }
    for (model, what, on, off) in pairs().iter() {
        let a = on.encode(&text, false).unwrap();
        let b = off.encode(&text, false).unwrap();
        assert!(
            a.ids() == b.ids(),
            "{model} {what}: first difference at {}",
            first_difference(a.ids(), b.ids())
        );
    }
}

/// Common ideographs, kana, the chars of the unrebuilt entries, CJK and
/// full-width punctuation, and what a pre-token may hold beside them.
const ALPHABET: [&str; 32] = [
    "的",
    "是",
    "中",
    "文",
    "字",
    "幕",
    "国",
    "人",
    "们",
    "说",
    "天",
    "一",
    "し",
    "な",
    "い",
    "ー",
    "カ",
    "シ",
    "ョ",
    "ン",
    "の",
    "ア",
    "，",
    "。",
    "「",
    "」",
    "、",
    "a",
    " ",
    "1",
    "\n",
    "<|endoftext|>",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(64)))]

    #[test]
    fn random_cjk_mixtures_match(picks in prop::collection::vec(0..ALPHABET.len(), 0..160)) {
        let text: String = picks.iter().map(|&i| ALPHABET[i]).collect();
        all_agree(&text);
    }

    /// Any char of U+3000..U+9FFF (the range the cuts consider), joined
    /// with the alphabet.
    #[test]
    fn random_range_chars_match(
        chars in prop::collection::vec(0x3000u32..0xA000, 0..80),
        picks in prop::collection::vec(0..ALPHABET.len(), 0..40),
    ) {
        let mut text: String = chars.iter().filter_map(|&c| char::from_u32(c)).collect();
        text.extend(picks.iter().map(|&i| ALPHABET[i]));
        all_agree(&text);
    }
}
