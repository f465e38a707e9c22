//! Code points whose character class the native pre-tokenizer (`bitcannon`'s
//! tables, Unicode 17) and the references' regex engines (Unicode 16:
//! `fancy-regex` / `regex-syntax` for tiktoken, Python `tokenizers`' for
//! `tokenizer.json`) do not agree on. A segment holding one is encoded on
//! a regex path, so classes always follow the reference's Unicode version:
//! tiktoken's (DESIGN.md claim 197) and the `tokenizer.json` splits'
//! (`hf::regex_split`, claim 325).
//!
//! The table is checked, not trusted: `table_covers_every_difference`
//! compares the two splitters on every code point outside it, in several
//! contexts, for every built-in pattern.

/// Inclusive code-point ranges, ascending, where the two engines may split
/// differently: what `table_covers_every_difference` finds. With
/// `tokenizers` 1.0.0-rc.3 and `regex-syntax` 0.8 these are the letters,
/// marks and digits new in Unicode 17 (Sidetic, Tolong Siki, Beria Erfe,
/// Tai Yo, CJK Extension J, …), which `bitcannon` classes and the regex
/// engine (Unicode 16) does not. All take three or four UTF-8 bytes.
pub(crate) const DIVERGENT: &[(u32, u32)] = &[
    (0x088F, 0x088F),
    (0x0C5C, 0x0C5C),
    (0x0CDC, 0x0CDC),
    (0x1ACF, 0x1ADD),
    (0x1AE0, 0x1AEB),
    (0xA7CE, 0xA7CF),
    (0xA7D2, 0xA7D2),
    (0xA7D4, 0xA7D4),
    (0xA7F1, 0xA7F1),
    (0x10940, 0x10959),
    (0x10EC5, 0x10EC7),
    (0x10EFA, 0x10EFB),
    (0x11B60, 0x11B67),
    (0x11DB0, 0x11DDB),
    (0x11DE0, 0x11DE9),
    (0x16EA0, 0x16EB8),
    (0x16EBB, 0x16ED3),
    (0x16FF2, 0x16FF6),
    (0x187F8, 0x187FF),
    (0x18D09, 0x18D1E),
    (0x18D80, 0x18DF2),
    (0x1E6C0, 0x1E6DE),
    (0x1E6E0, 0x1E6F5),
    (0x1E6FE, 0x1E6FF),
    (0x2B73A, 0x2B73F),
    (0x2CEA2, 0x2CEAD),
    (0x323B0, 0x33479),
];

/// Whether `c` is in [`DIVERGENT`].
pub(crate) fn divergent(c: char) -> bool {
    let c = c as u32;
    DIVERGENT
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// One bit per 64 code points below U+10000 (`cp >> 6`) holding a
/// [`DIVERGENT`] one.
const BLOCKS3: [u64; 16] = {
    let mut bits = [0u64; 16];
    let mut k = 0;
    while k < DIVERGENT.len() {
        let (lo, hi) = DIVERGENT[k];
        let mut b = lo >> 6;
        while b <= hi >> 6 && b < 1024 {
            bits[(b / 64) as usize] |= 1 << (b % 64);
            b += 1;
        }
        k += 1;
    }
    bits
};

/// One bit per 4096 code points (`cp >> 12`) holding a [`DIVERGENT`] one
/// at or above U+10000.
const BLOCKS4: [u64; 5] = {
    let mut bits = [0u64; 5];
    let mut k = 0;
    while k < DIVERGENT.len() {
        let (lo, hi) = DIVERGENT[k];
        if hi >= 0x10000 {
            let lo = if lo < 0x10000 { 0x10000 } else { lo };
            let mut b = lo >> 12;
            while b <= hi >> 12 {
                bits[(b / 64) as usize] |= 1 << (b % 64);
                b += 1;
            }
        }
        k += 1;
    }
    bits
};

/// The UTF-8 lead bytes of the code points of [`DIVERGENT`]
/// (`leads_cover_the_table` checks them).
const LEADS: [u8; 4] = [0xE0, 0xE1, 0xEA, 0xF0];

/// Whether `text` holds a code point of [`DIVERGENT`]. Only lead bytes of
/// three- and four-byte chars are looked at (every listed code point is
/// one); their first two bytes pick a block, and only a flagged block
/// decodes the char.
///
/// Performance: the scan steps from char start to char start (a `&str`
/// is valid UTF-8, and the eight-byte ASCII skip lands on char starts
/// too), so a CJK text costs one block lookup per char instead of one
/// pass per byte; it was 12% of an o200k encode of Chinese. The scan starts
/// at the first byte that can lead a listed code point (found with
/// `memchr`): 256 KiB of Chinese took 212 µs before that, of English 27 µs.
pub(crate) fn needs_regex(text: &str) -> bool {
    let bytes = text.as_bytes();
    // Two SIMD passes for the lead bytes a listed code point can start
    // with; Latin, CJK and code text hold none and stop here.
    let hits = [
        memchr::memchr3(LEADS[0], LEADS[1], LEADS[2], bytes),
        memchr::memchr(LEADS[3], bytes),
    ];
    let Some(mut i) = hits.into_iter().flatten().min() else {
        return false;
    };
    while i < bytes.len() {
        // Eight ASCII bytes at a time.
        if crate::backend::ascii_word_at(bytes, i) {
            i += 8;
            continue;
        }
        let b = bytes[i];
        if b < 0x80 {
            i += 1;
            continue;
        }
        if b < 0xE0 {
            // A two-byte char (a continuation byte is never a char start).
            i += 2;
            continue;
        }
        let b1 = u32::from(bytes.get(i + 1).copied().unwrap_or(0) & 0x3F);
        let (flagged, width) = if b < 0xF0 {
            let block = (u32::from(b & 0x0F) << 6) | b1;
            (BLOCKS3[(block / 64) as usize] & (1 << (block % 64)) != 0, 3)
        } else {
            let block = (u32::from(b & 0x07) << 6) | b1;
            let hit = block < 320 && BLOCKS4[(block / 64) as usize] & (1 << (block % 64)) != 0;
            (hit, 4)
        };
        if flagged
            && let Some(c) = text.get(i..).and_then(|s| s.chars().next())
            && divergent(c)
        {
            return true;
        }
        i += width;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads_cover_the_table() {
        for &(lo, hi) in DIVERGENT {
            for cp in lo..=hi {
                let Some(c) = char::from_u32(cp) else {
                    continue;
                };
                let mut buf = [0u8; 4];
                let lead = c.encode_utf8(&mut buf).as_bytes()[0];
                assert!(LEADS.contains(&lead), "U+{cp:04X}");
                assert!(needs_regex(&format!("中文 abc{c}")), "U+{cp:04X}");
            }
        }
        assert!(!needs_regex("中文，日本語 한국어 ASCII Ελληνικά"));
    }
    use crate::backend::tiktoken::encodings::{
        CL100K_PATTERN, GPT2_PATTERN, LLAMA3_PATTERN, O200K_PATTERN,
    };
    use crate::backend::tiktoken::fast::native_pieces;

    /// Contexts that tell apart letters (by case), marks, digits, whitespace
    /// and the rest, at the start, inside and at the end of a piece.
    const CONTEXTS: [(&str, &str); 8] = [
        ("", ""),
        ("a", "a"),
        ("A", "a"),
        ("1", "1"),
        (" ", "."),
        ("x", "\n "),
        ("'", "'s"),
        ("\n", "  "),
    ];

    fn regex_pieces(re: &fancy_regex::Regex, text: &str) -> Vec<(usize, usize)> {
        re.find_iter(text)
            .map(|m| m.map(|m| (m.start(), m.end())).unwrap())
            .collect()
    }

    fn differs(re: &fancy_regex::Regex, pattern: &str, text: &str) -> bool {
        regex_pieces(re, text) != native_pieces(pattern, text)
    }

    fn text_for(chars: &[char], ctx: (&str, &str)) -> String {
        let mut s = String::new();
        for &c in chars {
            s.push_str(ctx.0);
            s.push(c);
            s.push_str(ctx.1);
            s.push('\u{1}');
        }
        s
    }

    #[test]
    fn table_covers_every_difference() {
        let mut found: Vec<u32> = Vec::new();
        let all: Vec<char> = (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|&c| c != '\u{1}' && !divergent(c))
            .collect();
        for pattern in [GPT2_PATTERN, CL100K_PATTERN, O200K_PATTERN, LLAMA3_PATTERN] {
            let re = fancy_regex::Regex::new(pattern).unwrap();
            for block in all.chunks(4096) {
                for ctx in CONTEXTS {
                    if !differs(&re, pattern, &text_for(block, ctx)) {
                        continue;
                    }
                    for &c in block {
                        if differs(&re, pattern, &text_for(&[c], ctx)) {
                            found.push(c as u32);
                        }
                    }
                }
            }
        }
        found.sort_unstable();
        found.dedup();
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        for c in found {
            match ranges.last_mut() {
                Some((_, hi)) if *hi + 1 == c => *hi = c,
                _ => ranges.push((c, c)),
            }
        }
        let listed: Vec<String> = ranges
            .iter()
            .map(|(lo, hi)| format!("(0x{lo:04X}, 0x{hi:04X}),"))
            .collect();
        assert!(
            ranges.is_empty(),
            "{} code points split differently outside DIVERGENT:\n{}",
            ranges.len(),
            listed.join("\n")
        );
    }

    #[test]
    fn table_is_sorted_and_detected() {
        for w in DIVERGENT.windows(2) {
            assert!(w[0].1 < w[1].0);
        }
        for &(lo, hi) in DIVERGENT {
            assert!(lo <= hi);
            for c in [lo, hi] {
                if let Some(c) = char::from_u32(c) {
                    assert!(needs_regex(&format!("ab{c}cd")));
                }
            }
        }
        assert!(!needs_regex("plain ASCII text, and é 中文"));
        // The block filter never hides a listed code point, in any position.
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            let text = format!("abcdefgh{c}");
            assert_eq!(needs_regex(&text), divergent(c), "{:X}", c as u32);
            assert_eq!(needs_regex(&c.to_string()), divergent(c), "{:X}", c as u32);
        }
        // The scan steps char by char: after chars of every width, and
        // after an eight-byte ASCII run at any offset, it still lands on
        // the listed code point.
        let listed = DIVERGENT.iter().flat_map(|&(lo, hi)| [lo, hi]);
        let sample = (0..=0x10FFFFu32).step_by(97).chain(listed);
        for c in sample.filter_map(char::from_u32) {
            for prefix in ["é", "中", "😀", "aé中😀", "abcdefghij中", "é12345678"] {
                let text = format!("{prefix}{c}é");
                assert_eq!(needs_regex(&text), divergent(c), "{prefix} {:X}", c as u32);
            }
        }
    }
}
