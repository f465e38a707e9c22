//! The tiktoken backend's tests: the chunk encoder's windows, the rank path
//! against `tiktoken-rs`, and the byte-level engine on every built-in encoding.

use super::chunk::ChunkState;
use super::encodings::BuiltinEncoding;
use super::rank_path::PIECE_MEMO_MIN_BYTES;
use super::*;
use crate::test_support::shared_dir;

/// Every corpus file's first 16 KiB, a special token spliced in near
/// both ends and in the middle.
fn corpus_texts() -> Vec<(String, String)> {
    let root = shared_dir().join("corpus");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e} (set RTOK_SHARED_DIR)", root.display()))
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).into_iter().flatten())
        .map(|f| f.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let full = std::fs::read_to_string(path).unwrap();
            let cut = |mut i: usize| {
                i = i.min(full.len());
                while !full.is_char_boundary(i) {
                    i -= 1;
                }
                i
            };
            let e = cut(16 << 10);
            let (a, b) = (cut(7), cut(e / 2));
            let c = cut(e.saturating_sub(20)).max(b);
            let text = [
                &full[..a],
                "<|endoftext|>",
                &full[a..b],
                "<|endoftext|>",
                &full[b..c],
                "<|endoftext|>",
                &full[c..e],
            ]
            .concat();
            (path.display().to_string(), text)
        })
        .collect()
}

/// The windowed chunk encode against the every-span one: same ids, the
/// windows' spans are the true ones and cover what `ChunkRequest` asks
/// for, and the boundaries are true ones holding every one the merge
/// reads (inside the windows, and the first and last just outside).
#[test]
fn chunk_windows_match_the_full_spans() {
    let texts = corpus_texts();
    assert!(texts.len() > 20, "{} corpus files", texts.len());
    for enc in [BuiltinEncoding::O200kBase, BuiltinEncoding::Cl100kBase] {
        let backend = TiktokenBackend::new(enc.spec().unwrap(), SpecialTokenPolicy::Parse).unwrap();
        backend.warm_up();
        for (name, text) in &texts {
            let n = text.len();
            // Spans from the sequential offsets path; boundaries from a
            // chunk encode with every span on.
            let seq = backend.encode_offsets_with(text, false, true).unwrap();
            let spans = seq.offsets().unwrap().to_vec();
            let full = backend
                .encode_chunk_impl(text, &ChunkRequest::new(0, 0, true))
                .unwrap();
            assert_eq!(full.ids, seq.ids(), "{name}");
            let all = &full.boundaries;
            for (head, tail) in [(0, 0), (1, 3000), (1500, 1500), (n / 2, n / 2 + 9), (n, n)] {
                let what = format!("{} {name} head {head} tail {tail}", enc.name());
                let w = backend
                    .encode_chunk_impl(text, &ChunkRequest::new(head, tail, false))
                    .unwrap();
                assert!(w.is_consistent(n), "{what}");
                assert_eq!(w.ids, full.ids, "{what}");
                assert_eq!(w.head[..], spans[..w.head.len()], "{what}");
                assert_eq!(w.tail[..], spans[w.tail_first..], "{what}");
                let tail_from = n.saturating_sub(tail);
                assert!(
                    spans[w.head.len()..].iter().all(|&(s, _)| s >= head),
                    "{what}: head window short"
                );
                assert!(
                    spans[..w.tail_first].iter().all(|&(_, e)| e <= tail_from),
                    "{what}: tail window short"
                );
                assert!(
                    w.boundaries.iter().all(|b| all.binary_search(b).is_ok()),
                    "{what}"
                );
                // (The first chunk asks for no head window, the last for no tail.)
                let after_head = all.iter().find(|&&b| b >= head).filter(|_| head > 0);
                let before_tail = all
                    .iter()
                    .rev()
                    .find(|&&b| b <= tail_from)
                    .filter(|_| tail > 0);
                for b in all
                    .iter()
                    .filter(|&&b| b <= head || b >= tail_from)
                    .chain(after_head)
                    .chain(before_tail)
                {
                    assert!(
                        w.boundaries.binary_search(b).is_ok(),
                        "{what}: boundary {b}"
                    );
                }
            }
        }
    }
}

/// The rank path (what encodes take until the engine is built) cuts on
/// the native grammar where it applies (invariant `native-pieces-equal-regex`): its ids equal
/// `tiktoken-rs`' on corpus slices and hostile strings for every
/// built-in encoding, and equal its own on the regex's pieces.
#[test]
fn rank_path_on_native_pieces_matches_tiktoken_rs() {
    // Whole slices (up to 16 KiB, so the piece memo of invariant `cache-transparent` is on).
    let mut texts: Vec<String> = corpus_texts().into_iter().map(|(_, t)| t).collect();
    assert!(texts.iter().any(|t| t.len() >= PIECE_MEMO_MIN_BYTES));
    texts.extend(
        [
            "Hello, world!  It's 2024:\n\tfoo_bar(x) → 中文 \n ",
            "   \n\n  \r\n\t  ",
            "I'VE we'll they'd 12345678 3.14159 ---=== ...",
            "a\u{10940}b \u{1F600}\u{1F3FD} e\u{301} \u{0915}\u{094D}\u{0937}",
            "trailing spaces   ",
            "x\n\n\n   ",
        ]
        .map(str::to_owned),
    );
    for enc in BuiltinEncoding::ALL {
        let core = enc.core().unwrap();
        let mut backend =
            TiktokenBackend::new(enc.spec().unwrap(), SpecialTokenPolicy::Parse).unwrap();
        assert!(backend.native.is_some(), "{}", enc.name());
        for text in &texts {
            let mut native = ChunkState::ids_only(Vec::new());
            backend.regex_ordinary(text, 0, &mut native).unwrap();
            assert_eq!(
                native.ids,
                core.encode_ordinary(text),
                "{}: {text:?}",
                enc.name()
            );
            let grammar = backend.native.take();
            let mut regex = ChunkState::ids_only(Vec::new());
            backend.regex_ordinary(text, 0, &mut regex).unwrap();
            backend.native = grammar;
            assert_eq!(native.ids, regex.ids, "{}: {text:?}", enc.name());
        }
    }
}

#[test]
fn every_builtin_encoding_gets_the_engine() {
    for enc in BuiltinEncoding::ALL {
        let backend = TiktokenBackend::new(enc.spec().unwrap(), SpecialTokenPolicy::Parse).unwrap();
        backend.warm_up();
        let engine = backend.engine(0);
        assert!(engine.is_some(), "{}", enc.name());
        // The engine takes ordinary text and gives the regex path's ids;
        // a Unicode 17 letter sends the segment back to the regex path.
        let text = "Hello, world!  It's 2024:\n\tfoo_bar(x) → 中文 \n ";
        let mut fast_ids = Vec::new();
        assert_eq!(
            engine.map(|e| e.encode(text, &mut fast_ids)),
            Some(Ok(true))
        );
        let mut st = ChunkState::ids_only(Vec::new());
        backend.regex_ordinary(text, 0, &mut st).unwrap();
        assert_eq!(fast_ids, st.ids, "{}", enc.name());
        let mut ids = Vec::new();
        assert_eq!(
            engine.map(|e| e.encode("a \u{10940} b", &mut ids)),
            Some(Ok(false))
        );
        assert!(ids.is_empty());
    }
    // A small vocabulary builds it at once; a pattern without a grammar never.
    let ranks: FxHashMap<Vec<u8>, u32> = (0..=255u8)
        .map(|b| (vec![b], u32::from(b)))
        .chain([(b"ab".to_vec(), 256)])
        .collect();
    let spec = |pattern: &'static str| TiktokenSpec {
        ranks: ranks.clone(),
        specials: Vec::new(),
        pattern: pattern.into(),
        roles: SpecialRoles::default(),
        add_bos: None,
        runs_apart: false,
    };
    let small =
        TiktokenBackend::new(spec(encodings::O200K_PATTERN), SpecialTokenPolicy::Parse).unwrap();
    assert!(small.engine(0).is_some());
    let other = TiktokenBackend::new(spec(r"\S+|\s+"), SpecialTokenPolicy::Parse).unwrap();
    other.warm_up();
    assert!(other.engine(0).is_none());
    assert_eq!(other.encode("ab ab", false).unwrap().ids(), &[256, 32, 256]);
}

/// A `tekken.json` brings its own pattern, the one the native grammar calls
/// Tekken (`load::tekken` checks the shared files carry it): it gets the
/// engine, whose ids on every corpus text are the regex path's, the one
/// mistral-common's `Tekkenizer` runs (here over o200k's ranks).
#[test]
fn the_tekken_pattern_gets_the_engine() {
    let spec = TiktokenSpec {
        pattern: encodings::TEKKEN_PATTERN.into(),
        ..BuiltinEncoding::O200kBase.spec().unwrap()
    };
    let backend = TiktokenBackend::new(spec, SpecialTokenPolicy::Parse).unwrap();
    backend.warm_up();
    let engine = backend.engine(0).expect("an engine for Tekken's pattern");
    let mut checked = 0;
    for (file, text) in &corpus_texts() {
        let text = text.replace("<|endoftext|>", "");
        let mut fast_ids = Vec::new();
        if engine.encode(&text, &mut fast_ids) != Ok(true) {
            continue;
        }
        let mut st = ChunkState::ids_only(Vec::new());
        backend.regex_ordinary(&text, 0, &mut st).unwrap();
        assert!(fast_ids == st.ids, "{file}");
        checked += 1;
    }
    assert!(checked > 20, "{checked} texts on the engine");
}
