//! Code points whose character class the native pre-tokenizer (`bitcannon`'s
//! tables, Unicode 17) and the references do not agree on, and a fast test
//! for whether a text holds one ([`CodePointSet`]). A segment holding one
//! is split on the crate's side, so classes always follow the reference's:
//! - [`DIVERGENT`]: the regex engines' (Unicode 16: `fancy-regex` /
//!   `regex-syntax` for tiktoken, Python `tokenizers`' for `tokenizer.json`
//!   splits), for tiktoken (DESIGN.md invariant `unicode-classes-are-reference`) and the
//!   `tokenizer.json`
//!   splits (`hf::regex_split`, invariant `unicode-classes-are-reference`);
//! - [`BERT_DIVERGENT`]: `BertPreTokenizer`'s punctuation (invariant
//!   `unicode-classes-are-reference`).
//!
//! The tables are checked, not trusted: `table_covers_every_difference` and
//! `class_run_tables_cover_every_difference` compare the two splitters on
//! every code point, in several contexts.

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

/// Code points that `tokenizers` 1.0's `BertPreTokenizer` (`bitcannon`'s
/// punctuation class, Unicode 17) splits differently from the reference's
/// (Python `tokenizers` 0.23.3: `char::is_ascii_punctuation` or
/// `unicode_categories` 0.1.1's `is_punctuation`, whose tables predate
/// Unicode 10): punctuation added since (U+2E43.., Newa, Makasar, …),
/// which the reference keeps inside a word, and U+166D, punctuation there
/// and a symbol since Unicode 12. `class_run_tables_cover_every_difference`
/// derives it again on every code point.
pub(crate) const BERT_DIVERGENT: &[(u32, u32)] = &[
    (0x061D, 0x061D),
    (0x09FD, 0x09FD),
    (0x0A76, 0x0A76),
    (0x0C77, 0x0C77),
    (0x0C84, 0x0C84),
    (0x166D, 0x166D),
    (0x1B4E, 0x1B4F),
    (0x1B7D, 0x1B7F),
    (0x2E43, 0x2E4F),
    (0x2E52, 0x2E5D),
    (0x10D6E, 0x10D6E),
    (0x10EAD, 0x10EAD),
    (0x10ED0, 0x10ED0),
    (0x10F55, 0x10F59),
    (0x10F86, 0x10F89),
    (0x111C9, 0x111C9),
    (0x113D4, 0x113D5),
    (0x113D7, 0x113D8),
    (0x1144B, 0x1144F),
    (0x1145A, 0x1145B),
    (0x1145D, 0x1145D),
    (0x11660, 0x1166C),
    (0x116B9, 0x116B9),
    (0x1183B, 0x1183B),
    (0x11944, 0x11946),
    (0x119E2, 0x119E2),
    (0x11A3F, 0x11A46),
    (0x11A9A, 0x11A9C),
    (0x11A9E, 0x11AA2),
    (0x11B00, 0x11B09),
    (0x11BE1, 0x11BE1),
    (0x11C41, 0x11C45),
    (0x11C70, 0x11C71),
    (0x11EF7, 0x11EF8),
    (0x11F43, 0x11F4F),
    (0x11FFF, 0x11FFF),
    (0x12FF1, 0x12FF2),
    (0x16D6D, 0x16D6F),
    (0x16E97, 0x16E9A),
    (0x16FE2, 0x16FE2),
    (0x1E5FF, 0x1E5FF),
    (0x1E95E, 0x1E95F),
];

/// A set of code-point ranges, and a fast test for whether a text holds
/// one. Built at compile time from a sorted table.
pub(crate) struct CodePointSet {
    ranges: &'static [(u32, u32)],
    /// The distinct UTF-8 lead bytes of the members (at most [`MAX_LEADS`]),
    /// `leads[..n_leads]`; the rest repeat the first.
    leads: [u8; MAX_LEADS],
    n_leads: usize,
    /// One bit per 64 code points (`cp >> 6`) holding a member.
    blocks: [u64; BLOCK_WORDS],
}

/// Lead bytes a set may have: two `memchr3` passes find them.
const MAX_LEADS: usize = 6;

/// `(0x10FFFF >> 6) + 1` blocks of 64 code points, one bit each.
const BLOCK_WORDS: usize = 0x110000 / 64 / 64;

/// The UTF-8 lead byte of `cp`.
const fn lead_byte(cp: u32) -> u8 {
    (if cp < 0x80 {
        cp
    } else if cp < 0x800 {
        0xC0 | (cp >> 6)
    } else if cp < 0x10000 {
        0xE0 | (cp >> 12)
    } else {
        0xF0 | (cp >> 18)
    }) as u8
}

impl CodePointSet {
    /// The set of `ranges` (inclusive, ascending, disjoint, no ASCII).
    /// Fails to compile when they lead with more than [`MAX_LEADS`] bytes.
    pub(crate) const fn new(ranges: &'static [(u32, u32)]) -> Self {
        let mut set = Self {
            ranges,
            leads: [0; MAX_LEADS],
            n_leads: 0,
            blocks: [0; BLOCK_WORDS],
        };
        let mut is_lead = [false; 256];
        let mut n_leads = 0;
        let mut k = 0;
        while k < ranges.len() {
            let (lo, hi) = ranges[k];
            assert!(lo >= 0x80 && lo <= hi && hi <= 0x10FFFF);
            assert!(k == 0 || ranges[k - 1].1 < lo);
            let mut cp = lo;
            while cp <= hi {
                let b = cp >> 6;
                set.blocks[(b / 64) as usize] |= 1 << (b % 64);
                let lead = lead_byte(cp);
                if !is_lead[lead as usize] {
                    assert!(n_leads < MAX_LEADS, "too many lead bytes");
                    is_lead[lead as usize] = true;
                    set.leads[n_leads] = lead;
                    n_leads += 1;
                }
                cp += 1;
            }
            k += 1;
        }
        set.n_leads = n_leads;
        let mut i = n_leads;
        while i < MAX_LEADS {
            set.leads[i] = set.leads[0];
            i += 1;
        }
        set
    }

    /// Whether `c` is a member.
    pub(crate) fn contains(&self, c: char) -> bool {
        let c = c as u32;
        self.ranges
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

    /// Whether `text` holds a member.
    ///
    /// Performance: `memchr3` jumps from one byte that can lead a member to
    /// the next (a lead byte, at least 0xC2, never occurs inside a UTF-8
    /// char, so each hit starts a char), and only those chars are decoded
    /// and looked up in the block bitmap; Latin, CJK and code text that
    /// holds no lead byte costs two SIMD passes. A char-by-char walk from
    /// the first lead byte cost BERT's check (whose leads include 0xE2, the
    /// lead of the quotes and dashes of U+2000..) 10 % of MiniLM's encode
    /// of Chinese; the regex path's check was 12 % of an o200k encode of
    /// Chinese before it was limited to lead bytes at all.
    pub(crate) fn in_text(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        let [a, b, c, d, e, f] = self.leads;
        let find = |group: usize, from: usize| -> Option<usize> {
            let hay = bytes.get(from..)?;
            let hit = if group == 0 {
                memchr::memchr3(a, b, c, hay)
            } else if self.n_leads > 3 {
                memchr::memchr3(d, e, f, hay)
            } else {
                None
            };
            hit.map(|k| k + from)
        };
        let mut next = [find(0, 0), find(1, 0)];
        loop {
            let i = match next {
                [None, None] => return false,
                [Some(x), None] | [None, Some(x)] => x,
                [Some(x), Some(y)] => x.min(y),
            };
            if let Some(ch) = text.get(i..).and_then(|s| s.chars().next()) {
                let block = ch as u32 >> 6;
                if self.blocks[(block / 64) as usize] & (1 << (block % 64)) != 0
                    && self.contains(ch)
                {
                    return true;
                }
            }
            for (group, slot) in next.iter_mut().enumerate() {
                if *slot == Some(i) {
                    *slot = find(group, i + 1);
                }
            }
        }
    }
}

/// [`DIVERGENT`] as a set.
pub(crate) static UNICODE17: CodePointSet = CodePointSet::new(DIVERGENT);

/// [`BERT_DIVERGENT`] as a set.
pub(crate) static BERT_PUNCTUATION: CodePointSet = CodePointSet::new(BERT_DIVERGENT);

/// Whether `text` holds a code point of [`DIVERGENT`].
pub(crate) fn needs_regex(text: &str) -> bool {
    UNICODE17.in_text(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads_cover_the_table() {
        for set in [&UNICODE17, &BERT_PUNCTUATION] {
            for &(lo, hi) in set.ranges {
                for cp in lo..=hi {
                    let Some(c) = char::from_u32(cp) else {
                        continue;
                    };
                    let mut buf = [0u8; 4];
                    let lead = c.encode_utf8(&mut buf).as_bytes()[0];
                    assert!(set.leads.contains(&lead), "U+{cp:04X}");
                    assert!(set.in_text(&format!("中文 abc{c}")), "U+{cp:04X}");
                    assert!(set.in_text(&format!("{c}")), "U+{cp:04X}");
                }
            }
            assert!(!set.in_text("中文，日本語 한국어 ASCII Ελληνικά “quoted” — ok"));
        }
    }

    /// The reference's (`tokenizers` 0.x) `BertPreTokenizer` (`bert`:
    /// whitespace dropped) or `Punctuation` (`Isolated`): each punctuation
    /// char a piece, and each run between them.
    fn punct_reference(text: &str, bert: bool) -> Vec<(usize, usize)> {
        use unicode_categories::UnicodeCategories;
        let mut out = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices() {
            let punct = c.is_ascii_punctuation() || c.is_punctuation();
            if punct || (bert && c.is_whitespace()) {
                out.extend(start.take().map(|s| (s, i)));
                if punct {
                    out.push((i, i + c.len_utf8()));
                }
            } else if start.is_none() {
                start = Some(i);
            }
        }
        out.extend(start.map(|s| (s, text.len())));
        out
    }

    fn native(pre: &dyn tokenizers::pipeline::PreTokenizer, text: &str) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        pre.pre_tokenize(
            text,
            &mut tokenizers::pipeline::PreTokenizerScratch::default(),
            &mut spans,
        )
        .unwrap();
        spans
            .iter()
            .map(|s| (s.start as usize, s.end as usize))
            .collect()
    }

    /// A pre-tokenizer as a function: the byte spans of a text's pieces.
    type Splitter<'a> = dyn Fn(&str) -> Vec<(usize, usize)> + 'a;

    /// The code points of `chars` where `native` and `reference` split
    /// differently in one of `contexts` (`(before, after)`, each char's
    /// text ending in `sep`): a block of 4096 chars at a time, and a
    /// block's chars one by one only where the block differs.
    fn differences(
        native: &Splitter,
        reference: &Splitter,
        chars: &[char],
        contexts: &[(&str, &str)],
        sep: char,
    ) -> Vec<u32> {
        let text_for = |chars: &[char], (l, r): (&str, &str)| -> String {
            chars.iter().map(|c| format!("{l}{c}{r}{sep}")).collect()
        };
        let differs = |t: &str| native(t) != reference(t);
        let mut found: Vec<u32> = Vec::new();
        for block in chars.chunks(4096) {
            for &ctx in contexts {
                if !differs(&text_for(block, ctx)) {
                    continue;
                }
                for &c in block {
                    if differs(&text_for(&[c], ctx)) {
                        found.push(c as u32);
                    }
                }
            }
        }
        found.sort_unstable();
        found.dedup();
        found
    }

    /// `tokenizers` 1.0's class-run pre-tokenizers split as the reference
    /// off their table and differently on every code point of it:
    /// `BertPreTokenizer` and `Punctuation` off [`BERT_DIVERGENT`],
    /// `Whitespace` (`\w+|[^\w\s]+` on the `regex` crate there) off
    /// [`DIVERGENT`].
    #[test]
    fn class_run_tables_cover_every_difference() {
        use tokenizers::SplitDelimiterBehavior::Isolated;
        use tokenizers::pre_tokenizers::{bert, punctuation, whitespace};
        let words = fancy_regex::Regex::new(r"\w+|[^\w\s]+").unwrap();
        let punctuation = punctuation::Punctuation::new(Isolated);
        let cases: [(&str, &Splitter, &Splitter, &CodePointSet); 3] = [
            (
                "BertPreTokenizer",
                &|t| native(&bert::BertPreTokenizer, t),
                &|t| punct_reference(t, true),
                &BERT_PUNCTUATION,
            ),
            (
                "Punctuation",
                &|t| native(&punctuation, t),
                &|t| punct_reference(t, false),
                &BERT_PUNCTUATION,
            ),
            (
                "Whitespace",
                &|t| native(&whitespace::Whitespace, t),
                &|t| {
                    words
                        .find_iter(t)
                        .map(|m| m.map(|m| (m.start(), m.end())).unwrap())
                        .collect()
                },
                &UNICODE17,
            ),
        ];
        let all: Vec<char> = (0..=0x10FFFFu32).filter_map(char::from_u32).collect();
        let contexts = [("a", "a"), (" ", " "), ("", ""), (".", "."), ("é", "1")];
        for (name, native, reference, set) in cases {
            let found = differences(native, reference, &all, &contexts, '\u{3000}');
            let outside: Vec<String> = found
                .iter()
                .filter_map(|&cp| char::from_u32(cp))
                .filter(|&c| !set.contains(c))
                .map(|c| format!("U+{:04X}", c as u32))
                .collect();
            assert!(outside.is_empty(), "{name} splits differently: {outside:?}");
            let listed: usize = set
                .ranges
                .iter()
                .map(|&(lo, hi)| (lo..=hi).filter(|&cp| char::from_u32(cp).is_some()).count())
                .sum();
            assert_eq!(
                found.len(),
                listed,
                "{name}: a listed code point splits the same"
            );
        }
    }
    use crate::backend::tiktoken::encodings::{
        CL100K_PATTERN, GPT2_PATTERN, LLAMA3_PATTERN, O200K_PATTERN, TEKKEN_PATTERN,
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

    #[test]
    fn table_covers_every_difference() {
        let mut found: Vec<u32> = Vec::new();
        let all: Vec<char> = (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|&c| c != '\u{1}' && !UNICODE17.contains(c))
            .collect();
        for pattern in [
            GPT2_PATTERN,
            CL100K_PATTERN,
            O200K_PATTERN,
            LLAMA3_PATTERN,
            TEKKEN_PATTERN,
        ] {
            let re = fancy_regex::Regex::new(pattern).unwrap();
            found.extend(differences(
                &|t| native_pieces(pattern, t),
                &|t| regex_pieces(&re, t),
                &all,
                &CONTEXTS,
                '\u{1}',
            ));
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
            assert_eq!(needs_regex(&text), UNICODE17.contains(c), "{:X}", c as u32);
            assert_eq!(
                needs_regex(&c.to_string()),
                UNICODE17.contains(c),
                "{:X}",
                c as u32
            );
        }
        // The scan steps char by char: after chars of every width, and
        // after an eight-byte ASCII run at any offset, it still lands on
        // the listed code point.
        let listed = DIVERGENT.iter().flat_map(|&(lo, hi)| [lo, hi]);
        let sample = (0..=0x10FFFFu32).step_by(97).chain(listed);
        for c in sample.filter_map(char::from_u32) {
            for prefix in ["é", "中", "😀", "aé中😀", "abcdefghij中", "é12345678"] {
                let text = format!("{prefix}{c}é");
                assert_eq!(
                    needs_regex(&text),
                    UNICODE17.contains(c),
                    "{prefix} {:X}",
                    c as u32
                );
            }
        }
    }
}
