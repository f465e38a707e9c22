//! `tokenizers`' NFC normalizer with its quick check answered from a table,
//! for a `tokenizer.json` whose only normalizer is NFC (Qwen2/3, Command-R;
//! DESIGN.md claim 321).
//!
//! `tokenizers`' `NFC` returns its input unchanged when
//! `unicode_normalization::is_nfc_quick` answers *Yes*, and otherwise
//! returns `input.nfc().collect()`. [`normalize`] does the same, with the
//! quick check from [`is_nfc_quick_yes`], which gives that answer exactly:
//! the same walk (ASCII resets the combining class; any other char must
//! have `NFC_Quick_Check=Yes`, and a non-zero class may not follow a higher
//! one), with each BMP char's quick-check value and class read from one
//! table built from the same crate's functions (one copy of
//! `unicode-normalization` is linked, so both read the same Unicode tables).
//!
//! Performance notes: `is_nfc_quick` was 14% of a Qwen3 encode of English,
//! a combining-class search and a quick-check search per non-ASCII char and
//! a call per ASCII one. Here ASCII goes eight bytes at a time and every
//! BMP char is one load from a 64 KiB table; astral chars (emoji) still ask
//! the crate.

use std::borrow::Cow;
use std::sync::OnceLock;

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};

/// Table value of a char whose quick check is not *Yes*.
const NOT_YES: u8 = u8::MAX;

/// Per BMP code point: its canonical combining class when its
/// `NFC_Quick_Check` is *Yes*, else [`NOT_YES`] (no class is 255).
fn bmp_table() -> &'static [u8; 0x10000] {
    static TABLE: OnceLock<Box<[u8; 0x10000]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = Box::new([0u8; 0x10000]);
        for (cp, slot) in table.iter_mut().enumerate().skip(0x80) {
            // Surrogates are no chars: never looked up.
            if let Some(c) = u32::try_from(cp).ok().and_then(char::from_u32) {
                *slot = class_if_yes(c);
            }
        }
        table
    })
}

/// `c`'s combining class when its quick check is *Yes*, else [`NOT_YES`].
fn class_if_yes(c: char) -> u8 {
    match is_nfc_quick(std::iter::once(c)) {
        IsNormalized::Yes => canonical_combining_class(c),
        IsNormalized::No | IsNormalized::Maybe => NOT_YES,
    }
}

/// Builds the table now (at load), so no encode pays for it.
pub(super) fn prepare() {
    let _ = bmp_table();
}

/// `tokenizers`' `NFC::normalize`: `text` itself when its quick check is
/// *Yes*, else its NFC (the same crate's composition).
pub(super) fn normalize(text: &str) -> Cow<'_, str> {
    if is_nfc_quick_yes(text) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfc().collect())
    }
}

/// Whether `is_nfc_quick(text.chars())` is *Yes*: then `tokenizers`' NFC
/// returns `text` unchanged.
pub(super) fn is_nfc_quick_yes(text: &str) -> bool {
    let table = bmp_table();
    let bytes = text.as_bytes();
    let mut last_class = 0u8;
    let mut i = 0;
    while i < bytes.len() {
        if crate::backend::ascii_word_at(bytes, i) {
            last_class = 0;
            i += 8;
            continue;
        }
        let lead = bytes[i];
        if lead < 0x80 {
            last_class = 0;
            i += 1;
            continue;
        }
        let Some(c) = text.get(i..).and_then(|rest| rest.chars().next()) else {
            return false;
        };
        let class = match usize::try_from(u32::from(c))
            .ok()
            .and_then(|cp| table.get(cp))
        {
            Some(&v) => v,
            None => class_if_yes(c),
        };
        if class == NOT_YES || (class != 0 && last_class > class) {
            return false;
        }
        last_class = class;
        i += c.len_utf8();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(text: &str) -> bool {
        matches!(is_nfc_quick(text.chars()), IsNormalized::Yes)
    }

    /// `tokenizers`' own NFC normalizer.
    fn tokenizers_nfc(text: &str) -> String {
        use tokenizers::pipeline::Normalizer;
        tokenizers::normalizers::NFC
            .normalize(text, 0)
            .unwrap()
            .into_owned()
    }

    #[test]
    fn every_bmp_char_alone_and_after_a_mark() {
        for cp in 0..0x10000u32 {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            for text in [
                c.to_string(),
                format!("a{c}"),
                format!("\u{301}{c}"),
                format!("\u{316}{c}b"),
                format!("{c}\u{301}"),
                format!("abcdefgh{c}abcdefgh"),
            ] {
                assert_eq!(
                    is_nfc_quick_yes(&text),
                    reference(&text),
                    "U+{cp:04X} in {text:?}"
                );
            }
        }
    }

    #[test]
    fn astral_and_known_cases() {
        for (text, yes) in [
            ("plain ASCII text, with punctuation!\n", true),
            ("中文，标点。ひらがな カタカナ 한국어 ＡＢＣ", true),
            ("café naïve Ελληνικά русский עברית العربية", true),
            ("e\u{301}", false),
            ("a\u{301}\u{316}", false),
            ("a\u{316}\u{301}", false),
            ("a\u{316}\u{317}", true),
            ("か\u{3099}", false),
            ("\u{AC00}\u{11A8}", false),
            ("\u{2000}", false),
            ("\u{212B}", false),
            ("😀👩\u{200D}👩", true),
            ("\u{1D15E}", false),
            ("\u{2F800}", false),
        ] {
            assert_eq!(is_nfc_quick_yes(text), yes, "{text:?}");
            assert_eq!(reference(text), yes, "{text:?}");
        }
    }

    proptest! {
        #[test]
        fn equals_the_crate_quick_check(
            chars in prop::collection::vec(
                prop_oneof![
                    4 => 0x20u32..0x80,
                    2 => 0x80u32..0x800,
                    1 => 0x300u32..0x370,
                    1 => 0x800u32..0x10000,
                    1 => 0x10000u32..0x30000,
                ],
                0..64,
            )
        ) {
            let text: String = chars.into_iter().filter_map(char::from_u32).collect();
            prop_assert_eq!(is_nfc_quick_yes(&text), reference(&text), "{:?}", text);
            let ours = normalize(&text).into_owned();
            prop_assert_eq!(ours, tokenizers_nfc(&text));
        }
    }
}
