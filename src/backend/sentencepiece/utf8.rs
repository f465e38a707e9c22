//! UTF-8 helpers with sentencepiece's exact semantics (`util.h` / `util.cc`).

/// The UTF-8 bytes of U+2581 LOWER ONE EIGHTH BLOCK, sentencepiece's space mark.
pub(crate) const SPACE_MARK: &[u8] = "\u{2581}".as_bytes();

/// U+FFFD in UTF-8.
pub(crate) const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

/// sentencepiece's `OneCharLen`: the length of a UTF-8 sequence judged from
/// its lead byte only (continuation and invalid lead bytes count as 1).
#[inline]
pub(crate) fn one_char_len(lead: u8) -> usize {
    const TABLE: [u8; 16] = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4];
    TABLE[usize::from(lead >> 4)] as usize
}

/// `min(OneCharLen(s[0]), s.len())` for a non-empty `s`; 0 for an empty one.
#[inline]
pub(crate) fn char_len_at(s: &[u8]) -> usize {
    match s.first() {
        Some(&b) => one_char_len(b).min(s.len()),
        None => 0,
    }
}

#[inline]
fn is_trail(b: u8) -> bool {
    (b & 0xC0) == 0x80
}

#[inline]
fn is_valid_codepoint(c: u32) -> bool {
    c < 0xD800 || (0xE000..=0x10FFFF).contains(&c)
}

/// sentencepiece's `IsValidDecodeUTF8`: decodes one character at the start of
/// `s` (non-empty) and returns `(valid, length)`. An invalid sequence has
/// length 1. A literal U+FFFD counts as valid.
pub(crate) fn valid_decode(s: &[u8]) -> (bool, usize) {
    let Some(&b0) = s.first() else {
        return (false, 1);
    };
    if b0 < 0x80 {
        return (true, 1);
    }
    let len = s.len();
    let b = |i: usize| s.get(i).copied().unwrap_or(0);
    if len >= 2 && (b0 & 0xE0) == 0xC0 {
        let cp = (u32::from(b0 & 0x1F) << 6) | u32::from(b(1) & 0x3F);
        if is_trail(b(1)) && cp >= 0x80 && is_valid_codepoint(cp) {
            return (true, 2);
        }
    } else if len >= 3 && (b0 & 0xF0) == 0xE0 {
        let cp =
            (u32::from(b0 & 0x0F) << 12) | (u32::from(b(1) & 0x3F) << 6) | u32::from(b(2) & 0x3F);
        if is_trail(b(1)) && is_trail(b(2)) && cp >= 0x800 && is_valid_codepoint(cp) {
            return (true, 3);
        }
    } else if len >= 4 && (b0 & 0xF8) == 0xF0 {
        let cp = (u32::from(b0 & 0x07) << 18)
            | (u32::from(b(1) & 0x3F) << 12)
            | (u32::from(b(2) & 0x3F) << 6)
            | u32::from(b(3) & 0x3F);
        if is_trail(b(1))
            && is_trail(b(2))
            && is_trail(b(3))
            && cp >= 0x10000
            && is_valid_codepoint(cp)
        {
            return (true, 4);
        }
    }
    (false, 1)
}

/// Appends `bytes` to `out`, replacing every byte that does not start a valid
/// UTF-8 character with U+FFFD, one replacement per bad byte (sentencepiece's
/// byte-piece decoding; this differs from `String::from_utf8_lossy`, which
/// replaces a maximal invalid subpart with a single U+FFFD).
pub(crate) fn push_bytes_lossy(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut rest = bytes;
    while !rest.is_empty() {
        let (valid, n) = valid_decode(rest);
        let n = n.min(rest.len());
        if valid {
            out.extend_from_slice(&rest[..n]);
        } else {
            out.extend_from_slice(REPLACEMENT);
        }
        rest = &rest[n..];
    }
}

/// Packs the (up to 4) bytes of one character into a `u32` key, big-endian.
///
/// Distinct characters give distinct keys: a character of 2 or more bytes
/// (by [`one_char_len`]) starts with a lead byte >= 0xC0, so keys of
/// different lengths fall in disjoint ranges.
#[inline]
pub(crate) fn pack_char(c: &[u8]) -> u32 {
    let mut v = 0u32;
    for &b in c.iter().take(4) {
        v = (v << 8) | u32::from(b);
    }
    v
}

/// The index of the three-byte sequence `b0 b1 b2` (`E0..=EF, 80..=BF,
/// 80..=BF`): the low four bits of the lead byte and six of each
/// continuation byte. For a valid char (U+0800..U+FFFF) it is the code
/// point; it is one to one over the overlong and surrogate forms too, which
/// decode to code points below U+0800 or in U+D800..U+DFFF. The trie's char
/// jump (invariant `sentencepiece-fast-paths-exact`) and the charsmap's identity bitmap (invariant
/// `sentencepiece-fast-paths-exact`) index by
/// it.
#[inline]
pub(crate) fn three_byte_at(b0: u8, b1: u8, b2: u8) -> usize {
    (usize::from(b0 & 0x0F) << 12) | (usize::from(b1 & 0x3F) << 6) | usize::from(b2 & 0x3F)
}

/// [`three_byte_at`] of the sequence `bytes` starts with, if it starts with
/// one.
#[inline]
pub(crate) fn three_byte_index(bytes: &[u8]) -> Option<usize> {
    match *bytes {
        [b0 @ 0xE0..=0xEF, b1 @ 0x80..=0xBF, b2 @ 0x80..=0xBF, ..] => {
            Some(three_byte_at(b0, b1, b2))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lossy_is_per_byte() {
        let mut out = Vec::new();
        push_bytes_lossy(&mut out, &[0xE2, 0x82, 0x41]);
        assert_eq!(out, "\u{FFFD}\u{FFFD}A".as_bytes());
        out.clear();
        push_bytes_lossy(&mut out, "\u{FFFD}é".as_bytes());
        assert_eq!(out, "\u{FFFD}é".as_bytes());
        out.clear();
        push_bytes_lossy(&mut out, &[0xED, 0xA0, 0x80]);
        assert_eq!(out, "\u{FFFD}\u{FFFD}\u{FFFD}".as_bytes());
    }

    #[test]
    fn pack_distinguishes_lengths() {
        assert_ne!(pack_char(&[0xC3, 0xA9]), pack_char(&[0xE2, 0xC3, 0xA9]));
        assert_eq!(pack_char(b"a"), u32::from(b'a'));
    }
}
