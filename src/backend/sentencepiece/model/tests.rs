use super::super::bpe::BpeScratch;
use super::{Engine, IdSink, SentencePieceModel};
use crate::test_support::{shared_dir, spm_fixture};
use proptest::prelude::*;

#[test]
fn model_is_send_and_sync() {
    fn check<T: Send + Sync + 'static>() {}
    check::<SentencePieceModel>();
}

/// Mistral's v1 (no user-defined pieces) and v3 (20 user-defined, 750
/// control pieces) BPE models: both take the raw fast path.
fn bpe_models() -> Vec<SentencePieceModel> {
    [
        "mistral-tokenizer.model.v1",
        "mistral_instruct_tokenizer_240323.model.v3",
    ]
    .iter()
    .map(|name| {
        let data = spm_fixture(name);
        let m = SentencePieceModel::from_bytes(&data).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(m.raw_engine().is_some(), "{name} should take the raw path");
        m
    })
    .collect()
}

/// sentencepiece's own algorithm: normalize, then one heap over the
/// whole text (no safe-boundary cuts, no memo, no short-segment scan,
/// no one-character shortcut).
fn reference(m: &SentencePieceModel, text: &str) -> Vec<u32> {
    let Engine::Bpe(b) = &m.engine else {
        panic!("not a BPE model")
    };
    let mut normalized = Vec::new();
    m.normalizer
        .normalize(text.as_bytes(), &mut normalized, None, Some(&m.matcher));
    let mut ids = Vec::new();
    let mut sink = IdSink {
        model: m,
        ids: &mut ids,
        is_prev_unk: false,
    };
    b.encode_global(
        &m.vocab,
        &m.matcher,
        &normalized,
        &mut BpeScratch::default(),
        &mut sink,
    );
    ids
}

/// Hostile pieces: space runs (U+2581 U+2581 merges), the literal space
/// mark, user-defined and control surfaces, characters outside the
/// vocabulary (byte fallback), astral and combining characters, CJK.
const ALPHABET: &[&str] = &[
    " ",
    "  ",
    "    ",
    "\u{2581}",
    "\n",
    "\t",
    "a",
    "e",
    "t",
    "h",
    "in",
    "the",
    "ing",
    "er",
    "0",
    "12",
    ".",
    "(",
    ")",
    "_",
    "->",
    "{",
    "'",
    "\"",
    "中",
    "文",
    "的",
    "。",
    "日本",
    "ü",
    "é",
    "\u{301}",
    "𝔸",
    "😀",
    "\u{0}",
    "\u{FFFD}",
    "<s>",
    "[INST]",
    "[/INST]",
    "[TOOL_CALLS]",
    "<unk>",
    "ꙮ",
    "ᚠ",
    "\u{10FFFF}",
];

fn hostile() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(ALPHABET), 0..160).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]
    /// The fast paths (raw chunks, safe-boundary segments, the memo in
    /// both tiers, the short-segment scan, one-character segments) give
    /// sentencepiece's ids on hostile text, whatever the memo holds:
    /// each text is encoded cold or warm depending on earlier cases,
    /// then again (a hit), and the memo is shared across cases.
    #[test]
    fn fast_paths_match_whole_text_heap(texts in prop::collection::vec(hostile(), 1..4)) {
        thread_local! {
            static MODELS: Vec<SentencePieceModel> = bpe_models();
        }
        MODELS.with(|models| {
            for m in models {
                for t in texts.iter().chain(texts.iter()) {
                    prop_assert_eq!(m.encode(t), reference(m, t), "{:?}", t);
                }
            }
            Ok(())
        })?;
    }
}

/// More CJK and Hangul, so that runs of [`ALPHABET`]'s pieces with no
/// space make chunks far longer than a segment key (invariant `cache-transparent`).
const MORE_CJK: &[&str] = &["了", "，", "語", "한", "국", "红", "楼", "梦"];

/// Runs of pieces with no space (CJK, mixed scripts, characters only
/// byte fallback encodes, combining and astral characters, the literal
/// space mark, user-defined and control surfaces; up to about 300
/// bytes each) joined by space runs.
fn long_runs() -> impl Strategy<Value = String> {
    let pieces: Vec<&str> = ALPHABET
        .iter()
        .chain(MORE_CJK)
        .copied()
        .filter(|p| !p.contains(' '))
        .collect();
    let run = prop::collection::vec(prop::sample::select(pieces), 0..90).prop_map(|v| v.concat());
    let gap = prop::sample::select(&[" ", "  ", "\n ", " \u{2581}", "   "][..]);
    prop::collection::vec((run, gap), 1..6)
        .prop_map(|v| v.into_iter().map(|(r, g)| format!("{r}{g}")).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The memo of whole long chunks, the space scan and the memo
    /// probes give sentencepiece's ids (invariants `cache-transparent` and
    /// `sentencepiece-fast-paths-exact`): each text cold
    /// or warm (the memo is shared across cases), again (long chunks
    /// now hit), shifted by one to three characters (other chunk
    /// alignments, a new first chunk), and with offsets (the batch of a
    /// long hit goes through the offset sink).
    #[test]
    fn long_chunk_memo_matches_whole_text_heap(text in long_runs(), shift in 1usize..4) {
        thread_local! {
            static MODELS: Vec<SentencePieceModel> = bpe_models();
        }
        let shifted = &text[text.char_indices().nth(shift).map_or(text.len(), |(i, _)| i)..];
        MODELS.with(|models| {
            for m in models {
                let want = reference(m, &text);
                prop_assert_eq!(&m.encode(&text), &want, "{:?}", text);
                prop_assert_eq!(&m.encode(&text), &want, "{:?} (warm)", text);
                prop_assert_eq!(m.encode(shifted), reference(m, shifted), "{:?}", shifted);
                let mut ids = Vec::new();
                let mut spans = Vec::new();
                m.encode_with_offsets(&text, &mut ids, &mut spans);
                prop_assert_eq!(&ids, &want, "{:?} (offsets)", text);
                let mut at = 0;
                for &(s, e) in &spans {
                    prop_assert!(s == at && e >= s, "{:?}: spans {:?}", text, spans);
                    at = e;
                }
                prop_assert!(spans.is_empty() || at == text.len());
            }
            Ok(())
        })?;
    }
}

/// Words that recur as a chunk of their own (` the`), inside longer
/// chunks (` the,`, ` the\u{2581}ab`), after a literal space mark, at
/// the start (the dummy prefix) and after runs of spaces.
fn recurring_words() -> impl Strategy<Value = String> {
    let word = prop::sample::select(
        &[
            "the", "ab", "ing", "er", "in", "中文", "é", "12", "e\u{301}",
        ][..],
    );
    let before = prop::sample::select(&["", " ", " ", "  ", "\u{2581}", "\n", " \u{2581}"][..]);
    let after = prop::sample::select(&["", "", ",", ".", ")", "'s", "\u{2581}", "\n"][..]);
    prop::collection::vec((before, word, after), 1..40).prop_map(|v| {
        v.into_iter()
            .map(|(b, w, a)| format!("{b}{w}{a}"))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    /// The segments of every chunk are memoized, a segment that starts
    /// with U+2581 under its raw key (`' '` + the rest, invariant `cache-transparent`), so
    /// a chunk is answered whole, by its segments or by merging,
    /// depending on what came before: sentencepiece's ids each time,
    /// cold or warm (the memo is shared across cases), again, and
    /// through `encode` with its whole-input memo.
    #[test]
    fn segment_memo_matches_whole_text_heap(texts in prop::collection::vec(recurring_words(), 1..5)) {
        thread_local! {
            static MODELS: Vec<SentencePieceModel> = bpe_models();
        }
        MODELS.with(|models| {
            for m in models {
                for t in texts.iter().chain(texts.iter().rev()) {
                    let want = reference(m, t);
                    prop_assert_eq!(&m.encode(t), &want, "{:?}", t);
                    prop_assert_eq!(&m.encode(t), &want, "{:?} (encode)", t);
                }
            }
            Ok(())
        })?;
    }
}

/// Slices of every corpus category (long chunks, the heap path for
/// segments over 64 symbols, a memo far past its first growth), twice.
#[test]
fn corpus_slices_match_whole_text_heap() {
    let models = bpe_models();
    let corpus = shared_dir().join("corpus");
    let mut dirs: Vec<_> = std::fs::read_dir(&corpus)
        .unwrap_or_else(|e| panic!("{}: {e}", corpus.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty());
    for dir in dirs {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        for f in files.iter().take(2) {
            let Ok(text) = std::fs::read_to_string(f) else {
                continue;
            };
            // 24 KiB from the start, cut on a character boundary.
            let mut end = text.len().min(24 << 10);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let t = &text[..end];
            for m in &models {
                let want = reference(m, t);
                assert_eq!(m.encode(t), want, "{}", f.display());
                assert_eq!(m.encode(t), want, "{} (memo warm)", f.display());
            }
        }
    }
}
