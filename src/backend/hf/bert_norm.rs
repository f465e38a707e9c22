//! `BertNormalizer` with the common characters taken out of `tokenizers`'
//! per-character Unicode lookups (DESIGN.md invariants `crate-steps-equal-reference` and
//! `pipeline-walk-equals-pipeline`).
//!
//! `tokenizers` 1.0 runs every character of a BERT tokenizer's input through
//! a category binary search (clean-up), NFD, a second binary search
//! (accent stripping) and `to_lowercase`: about three quarters of MiniLM's
//! encode time. Two classes of characters have a fixed answer under every
//! setting of the four flags, and both are *stable starters* (combining class
//! 0, no canonical decomposition), so NFD never moves a mark across them:
//! - ASCII: a control character other than `\t`, `\n`, `\r` is removed by
//!   `clean_text`, those three become a space, a letter is lowercased;
//! - the CJK Unified Ideographs of Unicode 1.1 and Extension A of Unicode 3.0
//!   (`U+4E00..=U+9FA5`, `U+3400..=U+4DB5`; later additions are left out, as
//!   `tokenizers`' category tables may not know them): padded with spaces by
//!   `handle_chinese_chars`, otherwise unchanged.
//!
//! Everything between two such characters goes to `tokenizers`' own
//! normalizer in one piece, with any removed ASCII control inside it (its
//! removal joins the characters around it, which NFD may reorder), so the
//! output is the same string: the normalizer's steps are per character except
//! NFD, and NFD of a text cut just before a stable starter is the NFD of the
//! pieces (`tests::*` compare both on every character class and on the
//! corpus).

use std::borrow::Cow;
use tokenizers::normalizers::bert::BertNormalizer;
use tokenizers::pipeline::PipelineNormalizer;

/// `ASCII[b]` for a removed byte.
const REMOVED: u8 = 0xFF;

/// A normalizer chain that is exactly one `BertNormalizer`, run with the
/// fast classes above.
#[derive(Debug)]
pub(super) struct BertFast {
    /// The settings, for every other character ([`reference_bert`]).
    slow: BertNormalizer,
    /// What each ASCII byte becomes ([`REMOVED`]: nothing).
    ascii: [u8; 128],
    pad_han: bool,
}

impl BertFast {
    /// `Some` when `normalizers` is a single `BertNormalizer`.
    pub(super) fn new(normalizers: &[PipelineNormalizer]) -> Option<Self> {
        let [PipelineNormalizer::Bert(bert)] = normalizers else {
            return None;
        };
        let mut ascii = [0u8; 128];
        for (b, out) in (0u8..).zip(ascii.iter_mut()) {
            *out = match b {
                b'\t' | b'\n' | b'\r' if bert.clean_text => b' ',
                0x00..=0x1F | 0x7F if bert.clean_text => REMOVED,
                _ if bert.lowercase => b.to_ascii_lowercase(),
                _ => b,
            };
        }
        Some(Self {
            slow: *bert,
            ascii,
            pad_han: bert.handle_chinese_chars,
        })
    }

    /// The same string as [`reference_bert`] on `input`.
    pub(super) fn normalize<'a>(&self, input: &'a str) -> tokenizers::Result<Cow<'a, str>> {
        let mut out = String::with_capacity(input.len() + input.len() / 2);
        // Start of the text not yet normalized that goes to `slow`.
        let mut pending: Option<usize> = None;
        for (i, c) in input.char_indices() {
            let fast = if c.is_ascii() {
                let mapped = self.ascii[c as usize];
                // A removed control joins its neighbours: it stays in a
                // pending piece, and is dropped after a stable starter.
                if mapped == REMOVED {
                    continue;
                }
                Some((char::from(mapped), false))
            } else if is_stable_han(c) {
                Some((c, self.pad_han))
            } else {
                None
            };
            match fast {
                Some((mapped, pad)) => {
                    if let Some(start) = pending.take() {
                        self.flush(&input[start..i], &mut out)?;
                    }
                    if pad {
                        out.push(' ');
                        out.push(mapped);
                        out.push(' ');
                    } else {
                        out.push(mapped);
                    }
                }
                None => {
                    pending.get_or_insert(i);
                }
            }
        }
        if let Some(start) = pending {
            self.flush(&input[start..], &mut out)?;
        }
        Ok(Cow::Owned(out))
    }

    fn flush(&self, piece: &str, out: &mut String) -> tokenizers::Result<()> {
        reference_bert(&self.slow, piece, out);
        Ok(())
    }
}

/// The reference's `BertNormalizer` on `text`, appended to `out` (DESIGN.md
/// invariant `unicode-classes-are-reference`): Python `tokenizers` 0.23.3 classes controls and
/// nonspacing
/// marks with `unicode_categories` 0.1.1 and decomposes with
/// `unicode-normalization-alignments` 0.1.12 (Unicode 9.0), where
/// `tokenizers` 1.0 uses Unicode 17 for both; a mark assigned since 9.0
/// (U+0898, U+1AE9) is kept by the reference's accent stripping and moves
/// nothing in its NFD.
pub(super) fn reference_bert(bert: &BertNormalizer, text: &str, out: &mut String) {
    use unicode_categories::UnicodeCategories as _;
    use unicode_normalization_alignments::UnicodeNormalization as _;
    let cleaned = text.chars().flat_map(|c| clean_char(bert, c)).flatten();
    if bert.strip_accents.unwrap_or(bert.lowercase) {
        let stripped = cleaned
            .nfd()
            .map(|(c, _)| c)
            .filter(|c| !c.is_mark_nonspacing());
        emit(stripped, bert.lowercase, out);
    } else {
        emit(cleaned, bert.lowercase, out);
    }
}

/// `c` after the reference's `clean_text` and `handle_chinese_chars`: none,
/// one or three chars.
fn clean_char(bert: &BertNormalizer, c: char) -> [Option<char>; 3] {
    use unicode_categories::UnicodeCategories as _;
    let space = matches!(c, '\t' | '\n' | '\r');
    if bert.clean_text {
        if c == '\0' || c == '\u{fffd}' || (!space && c.is_other()) {
            return [None; 3];
        }
        if space || c.is_whitespace() {
            return [Some(' '), None, None];
        }
    }
    if bert.handle_chinese_chars && is_chinese_char(c) {
        [Some(' '), Some(c), Some(' ')]
    } else {
        [Some(c), None, None]
    }
}

/// Appends `chars` to `out`, lowercased (`char::to_lowercase`) if asked.
fn emit(chars: impl Iterator<Item = char>, lowercase: bool, out: &mut String) {
    if lowercase {
        out.extend(chars.flat_map(char::to_lowercase));
    } else {
        out.extend(chars);
    }
}

/// The reference's CJK ranges for `handle_chinese_chars`.
fn is_chinese_char(c: char) -> bool {
    matches!(
        u32::from(c),
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

/// CJK ideographs every Unicode table since 3.0 assigns: combining class 0,
/// no decomposition, no case, not a control or space.
fn is_stable_han(c: char) -> bool {
    matches!(u32::from(c), 0x4E00..=0x9FA5 | 0x3400..=0x4DB5)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every setting of the four flags.
    fn all_settings() -> Vec<BertNormalizer> {
        let mut out = Vec::new();
        for clean in [true, false] {
            for chinese in [true, false] {
                for strip in [None, Some(true), Some(false)] {
                    for lower in [true, false] {
                        out.push(BertNormalizer::new(clean, chinese, strip, lower));
                    }
                }
            }
        }
        out
    }

    fn check(bert: BertNormalizer, text: &str) {
        let fast = BertFast::new(&[PipelineNormalizer::Bert(bert)]).unwrap();
        let mut want = String::new();
        reference_bert(&bert, text, &mut want);
        let got = fast.normalize(text).unwrap();
        assert_eq!(got, want, "{bert:?} on {text:?}");
    }

    /// What Python `tokenizers` 0.23.3's `normalizers.BertNormalizer`
    /// gives (default settings, then `lowercase=False`): marks assigned
    /// since Unicode 9.0 stay, Unicode 16 case pairs lowercase.
    #[test]
    fn reference_bert_follows_python() {
        let cases = [
            ("a\u{10940}b", "a\u{10940}b", "a\u{10940}b"),
            ("A\u{1AE9}\u{301}e", "a\u{1AE9}e", "A\u{1AE9}\u{301}e"),
            ("İSTANBUL", "istanbul", "İSTANBUL"),
            ("x\u{898}y", "x\u{898}y", "x\u{898}y"),
            (
                "\u{13A0}\u{10D50}",
                "\u{AB70}\u{10D70}",
                "\u{13A0}\u{10D50}",
            ),
        ];
        for (text, lower, cased) in cases {
            for (bert, want) in [
                (BertNormalizer::default(), lower),
                (BertNormalizer::new(true, true, None, false), cased),
            ] {
                let mut got = String::new();
                reference_bert(&bert, text, &mut got);
                assert_eq!(got, want, "{bert:?} on {text:?}");
            }
        }
    }

    #[test]
    fn only_a_lone_bert_normalizer_is_taken() {
        let bert = BertNormalizer::default();
        assert!(BertFast::new(&[PipelineNormalizer::Bert(bert)]).is_some());
        assert!(BertFast::new(&[]).is_none());
        assert!(
            BertFast::new(&[
                PipelineNormalizer::Bert(bert),
                PipelineNormalizer::Bert(bert)
            ])
            .is_none()
        );
    }

    /// Each fast character alone, and between marks of different combining
    /// classes (which NFD reorders when nothing stable separates them).
    #[test]
    fn fast_classes_match_the_reference_in_context() {
        let fast_chars = (0u32..0x80)
            .chain(0x3400..=0x4DB5)
            .chain(0x4E00..=0x9FA5)
            .filter_map(char::from_u32);
        let texts: Vec<String> = fast_chars
            .map(|c| format!("A\u{301}{c}\u{316}\u{301}e\u{7}\u{316}\u{301}{c}"))
            .collect();
        let joined = texts.concat();
        for bert in all_settings() {
            check(bert, &joined);
            for t in texts.iter().step_by(97) {
                check(bert, t);
            }
        }
    }

    /// Removed controls between marks, stable starters next to unstable
    /// ones (Hangul and compatibility ideographs decompose; later CJK
    /// additions and unassigned points).
    #[test]
    fn hostile_mixtures_match_the_reference() {
        let texts = [
            "e\u{301}\u{7}\u{316}x",
            "\u{7}\u{316}\u{301}",
            "a\u{0}\u{fffd}b\u{85}c\u{a0}d\u{3000}e\u{200b}f",
            "\u{f900}\u{4e00}\u{2f800}\u{9fa6}\u{9fff}\u{4db6}\u{20000}\u{31350}",
            "\u{ac00}\u{1100}\u{1161}\u{11a8}\u{4e00}\u{302}",
            "İSTANBUL ǅ ẞ straße \u{1d165}\u{1d16d}\u{4e00}\u{1d165}",
            "\u{e000}\u{10ffff}\u{fff0}\u{7f}\u{1f}\t\r\n\u{b}\u{c}",
            "",
        ];
        for bert in all_settings() {
            for t in texts {
                check(bert, t);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Random strings over an alphabet of every class above.
        #[test]
        fn random_mixtures_match_the_reference(
            picks in proptest::collection::vec(0usize..ALPHABET.len(), 0..40),
            setting in 0usize..24,
        ) {
            let text: String = picks.iter().map(|&i| ALPHABET[i]).collect();
            check(all_settings()[setting], &text);
        }
    }

    const ALPHABET: &[char] = &[
        'a',
        'Z',
        ' ',
        '\t',
        '\n',
        '\r',
        '\u{0}',
        '\u{7}',
        '\u{b}',
        '\u{1f}',
        '\u{7f}',
        '\u{85}',
        '\u{a0}',
        '\u{301}',
        '\u{316}',
        '\u{345}',
        '\u{1d165}',
        '\u{1d16d}',
        'é',
        'Å',
        'İ',
        'ǅ',
        '\u{4e00}',
        '\u{9fa5}',
        '\u{9fa6}',
        '\u{3400}',
        '\u{4db6}',
        '\u{f900}',
        '\u{2f800}',
        '\u{ac00}',
        '\u{1100}',
        '\u{3000}',
        '\u{fffd}',
        '\u{200b}',
        '\u{e000}',
        '，',
        '。',
    ];
}
