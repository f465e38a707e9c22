//! `tokenizers`' NFC normalizer with its quick check answered from a table,
//! for a `tokenizer.json` whose only normalizer is NFC (Qwen2/3, Command-R;
//! DESIGN.md invariant `crate-steps-equal-reference`), composing as the reference does (invariant
//! `unicode-classes-are-reference`).
//!
//! **Unicode version.** The reference, Python `tokenizers` 0.23.3, composes
//! with `unicode-normalization-alignments` 0.1.12, whose tables are Unicode
//! 9.0; `tokenizers` 1.0's `unicode-normalization` has Unicode 17. A mark
//! assigned since 9.0 (U+1AE9, U+08CA, ...) has class 0 for the reference,
//! so `"a\u{1AE9}\u{94D}"` stays as it is there where Unicode 17 puts the
//! virama first (Qwen3 ids `[157, 104, 102, 29607]` against `[29607, 157,
//! 104, 102]`). So a text whose quick check is not *Yes* is composed with the
//! reference's crate. The quick check itself may keep Unicode 17's tables: a
//! text that passes it is NFC under Unicode 9.0 too (normalization
//! properties of assigned chars are stable, a char unassigned in 9.0 is a
//! starter that composes with nothing there, and cutting an ordered run of
//! marks at new starters leaves ordered runs).
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

use tokenizers::pipeline::{Normalizer, PipelineNormalizer};
use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{IsNormalized, is_nfc_quick};

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

/// The reference's NFC of `text`: `text` itself when its quick check is
/// *Yes*, else its composition under Unicode 9.0.
pub(super) fn normalize(text: &str) -> Cow<'_, str> {
    if is_nfc_quick_yes(text) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(reference_nfc(text))
    }
}

/// NFC with the reference's tables (`unicode-normalization-alignments`).
fn reference_nfc(text: &str) -> String {
    use unicode_normalization_alignments::UnicodeNormalization as _;
    text.nfc().map(|(c, _)| c).collect()
}

/// A chain of normalizers run as the reference runs it: `tokenizers`'
/// `normalize_all`, with NFC, NFD, NFKC and NFKD composed and decomposed
/// under Unicode 9.0 like the reference's (invariant `unicode-classes-are-reference`). The other
/// steps are
/// `tokenizers`' own. A text whose Unicode 17 quick check is *Yes* is in
/// that form under 9.0 too (see the module notes), so it is kept as it is.
pub(super) fn normalize_chain<'a>(
    normalizers: &[PipelineNormalizer],
    input: &'a str,
    offset: usize,
) -> tokenizers::Result<Cow<'a, str>> {
    let mut cow: Cow<'a, str> = Cow::Borrowed(input);
    for n in normalizers {
        cow = match cow {
            Cow::Borrowed(s) => reference_step(n, s, offset)?,
            Cow::Owned(s) => match reference_step(n, &s, offset)? {
                Cow::Owned(o) => Cow::Owned(o),
                Cow::Borrowed(b) if b.len() == s.len() && b.as_ptr() == s.as_ptr() => Cow::Owned(s),
                Cow::Borrowed(b) => Cow::Owned(b.to_owned()),
            },
        };
    }
    Ok(cow)
}

/// One step of [`normalize_chain`].
fn reference_step<'a>(
    n: &PipelineNormalizer,
    s: &'a str,
    offset: usize,
) -> tokenizers::Result<Cow<'a, str>> {
    use unicode_normalization::{is_nfd_quick, is_nfkc_quick, is_nfkd_quick};
    use unicode_normalization_alignments::UnicodeNormalization as _;
    let yes = |quick: IsNormalized| matches!(quick, IsNormalized::Yes);
    let form = match n {
        PipelineNormalizer::NFC(_) => return Ok(normalize(s)),
        PipelineNormalizer::Bert(bert) => {
            let mut out = String::with_capacity(s.len() + 8);
            super::bert_norm::reference_bert(bert, s, &mut out);
            return Ok(Cow::Owned(out));
        }
        PipelineNormalizer::NFD(_) if !yes(is_nfd_quick(s.chars())) => s.nfd().map(|(c, _)| c),
        PipelineNormalizer::NFKC(_) if !yes(is_nfkc_quick(s.chars())) => {
            return Ok(Cow::Owned(s.nfkc().map(|(c, _)| c).collect()));
        }
        PipelineNormalizer::NFKD(_) if !yes(is_nfkd_quick(s.chars())) => {
            return Ok(Cow::Owned(s.nfkd().map(|(c, _)| c).collect()));
        }
        PipelineNormalizer::NFD(_) | PipelineNormalizer::NFKC(_) | PipelineNormalizer::NFKD(_) => {
            return Ok(Cow::Borrowed(s));
        }
        _ => return n.normalize(s, offset),
    };
    Ok(Cow::Owned(form.collect()))
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

    /// NFC under Unicode 17, as `tokenizers` 1.0 composes.
    fn unicode17_nfc(text: &str) -> String {
        use unicode_normalization::UnicodeNormalization as _;
        text.nfc().collect()
    }

    /// Python `tokenizers` 0.23.3's `normalizers.NFC().normalize_str` leaves
    /// these as they are: marks assigned after Unicode 9.0 before a lower
    /// class (U+0334, class 1; U+094D, class 9). Unicode 17 reorders them.
    #[test]
    fn marks_new_since_unicode_9_stay_where_the_reference_leaves_them() {
        for text in [
            "a\u{1AE9}\u{94D}",
            "a\u{7FD}\u{334}",
            "a\u{898}\u{334}",
            "a\u{8CA}\u{334}",
            "a\u{1E2AE}\u{334}",
            "a\u{1E2EF}\u{334}",
        ] {
            assert_eq!(normalize(text), text, "{text:?}");
            assert_ne!(unicode17_nfc(text), text, "{text:?}");
        }
        // Marks Unicode 9.0 knows still move, and compose (Python: "á̴" both).
        assert_eq!(normalize("a\u{301}\u{334}"), "\u{e1}\u{334}");
        assert_eq!(normalize("a\u{334}\u{301}"), "\u{e1}\u{334}");
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
            prop_assert_eq!(ours, reference_nfc(&text));
        }
    }
}
