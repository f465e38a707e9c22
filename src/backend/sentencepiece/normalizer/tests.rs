use super::*;
use crate::backend::sentencepiece::proto::parse_model;
use crate::test_support::spm_fixture;

/// The normalizer specs of the shared models with a charsmap.
fn charsmap_specs() -> Vec<(&'static str, NormalizerSpec)> {
    ["spm-test_model.model", "spm-test_ja_model.model"]
        .into_iter()
        .map(|name| {
            let data = spm_fixture(name);
            (name, parse_model(&data).expect(name).normalizer_spec)
        })
        .collect()
}

/// A three-byte char the table leaves as it is has no match at it,
/// whatever follows (nothing, another char, a combining mark, the bytes
/// that continue some key), and the table keeps most of CJK but not the
/// chars NFKC rewrites (invariant `sentencepiece-fast-paths-exact`).
#[test]
fn identity3_chars_have_no_match() {
    for (name, spec) in charsmap_specs() {
        let cm = CharsMap::from_blob(&spec.precompiled_charsmap, "normalizer_spec").expect(name);
        let tails: Vec<Vec<u8>> = [
            "", "x", " ", "\u{301}", "\u{3099}", "\u{ff9e}", "\u{4e00}", "\u{0}",
        ]
        .iter()
        .map(|t| t.as_bytes().to_vec())
        .chain((0x80..=0xBFu8).map(|b| vec![b]))
        .collect();
        let mut kept = 0;
        for c in (0x800..=0xFFFFu32).filter_map(char::from_u32) {
            let bytes = c.to_string().into_bytes();
            if !cm.is_identity3(&bytes) {
                continue;
            }
            kept += 1;
            for t in &tails {
                let key = [&bytes[..], t].concat();
                for llama in [false, true] {
                    assert_eq!(cm.longest_prefix(&key, llama), None, "{name}: {c:?}");
                }
            }
        }
        for c in ['\u{4e2d}', '\u{6587}', '\u{3042}', '\u{ac00}'] {
            assert!(cm.is_identity3(c.to_string().as_bytes()), "{name}: {c:?}");
        }
        for c in ['\u{3000}', '\u{ff26}', '\u{f900}', '\u{2460}', '\u{fb01}'] {
            assert!(!cm.is_identity3(c.to_string().as_bytes()), "{name}: {c:?}");
        }
        // Surrogates and overlong forms are never kept.
        for bad in [[0xED, 0xA0, 0x80], [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF]] {
            assert!(!cm.is_identity3(&bad), "{name}: {bad:?}");
        }
        assert!(kept > 50_000, "{name}: {kept}");
    }
}

/// The ASCII table settles a step only where the walk gives the same
/// match: every ASCII byte followed by every byte or by nothing, for
/// every shared model with a charsmap and in both flavors' walks.
#[test]
fn the_ascii_table_agrees_with_the_walk() {
    let mut maps = 0;
    for (name, spec) in charsmap_specs() {
        let cm = CharsMap::from_blob(&spec.precompiled_charsmap, "normalizer_spec").expect(name);
        maps += 1;
        let mut settled = 0;
        // After the ASCII byte: nothing, any one byte, and whole chars
        // (combining marks, which NFKC joins to a letter before them).
        let tails: Vec<Vec<u8>> = (0..=255u8)
            .map(|c| vec![c])
            .chain([Vec::new()])
            .chain(
                (0x80..0x800u32)
                    .chain(0x3099..=0x309A)
                    .chain(0x20D0..0x2100)
                    .chain(0xFF00..0xFF10)
                    .filter_map(char::from_u32)
                    .map(|c| c.to_string().into_bytes()),
            )
            .collect();
        for b in 0..128u8 {
            let nexts = tails.iter().map(|t| [&[b][..], t].concat());
            for key in nexts {
                let Some(fast) = cm.ascii_prefix(&key) else {
                    continue;
                };
                settled += 1;
                for llama in [false, true] {
                    let walk = cm
                        .longest_prefix(&key, llama)
                        .filter(|&(len, _)| len == 1)
                        .map(|(_, v)| v);
                    assert_eq!(
                        cm.longest_prefix(&key, llama).map_or(1, |m| m.0),
                        1,
                        "{name}: {key:?} matched longer than the table says"
                    );
                    assert_eq!(fast, walk, "{name}: {key:?}, llama walk {llama}");
                }
            }
        }
        // Most ASCII pairs (of 127 * 129 with an ASCII or no next
        // byte; a non-ASCII next byte always walks) are settled.
        assert!(settled > 127 * 100, "{name}: {settled}");
    }
    assert_eq!(maps, 2);
}

/// Copying identity runs whole gives the same text and offsets as the
/// char-by-char loop (which a user-defined symbol that never matches
/// forces), on texts that mix ASCII with what the charsmap rewrites.
#[test]
fn identity_runs_match_the_char_loop() {
    let pieces = [
        "a",
        "Zq",
        " ",
        "   ",
        "\t",
        "\n",
        "\r\n",
        "\u{0}",
        "\u{7}",
        "\u{7f}",
        "e\u{301}",
        "<\u{338}",
        "\u{ff26}",
        "\u{3000}",
        "\u{a0}",
        "\u{2028}",
        "\u{fb01}",
        "\u{4e2d}\u{6587}",
        "\u{ff76}\u{ff9e}",
        "\u{3042}\u{30fc}\u{30ab}",
        "\u{f900}",
        "\u{2460}",
        "\u{2581}",
        "\u{fffd}",
        "\u{e000}",
        "\u{ffff}",
        "\u{304b}\u{3099}",
        "\u{1100}\u{1161}",
        "\u{ac00}",
        "\u{2028}\u{4e00}",
        "1,000",
        "x\u{200b}y",
        "\u{1f600}",
        "~",
        "'",
        "\u{2126}",
        "..",
    ];
    for (name, spec) in charsmap_specs() {
        let never = PrefixMatcher::new([("\u{10fffe}\u{10ffff}".as_bytes(), 0)]);
        for suffix in [false, true] {
            let norm = Normalizer::new(&spec, suffix, "normalizer_spec").expect(name);
            let mut state = 7u64;
            for n in 0..600 {
                let mut text = String::new();
                for _ in 0..n % 40 {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
                }
                let (mut a, mut b) = (Vec::new(), Vec::new());
                let (mut ma, mut mb) = (Vec::new(), Vec::new());
                norm.normalize(text.as_bytes(), &mut a, Some(&mut ma), None);
                norm.normalize(text.as_bytes(), &mut b, Some(&mut mb), Some(&never));
                assert_eq!((&a, &ma), (&b, &mb), "{name}: {text:?}");
                norm.normalize(text.as_bytes(), &mut a, None, None);
                assert_eq!(a, b, "{name}: {text:?} without offsets");
            }
        }
    }
}
