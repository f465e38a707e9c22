//! Where a character-BPE word can be cut into pieces that the model merges
//! alone with the same ids (DESIGN.md invariant `cut-where-no-entry-joins`).
//!
//! Gemma-3's `tokenizer.json` replaces every space by `▁` and has no
//! pre-tokenizer that splits on it, so `tokenizers` merges each run of text
//! between added tokens (a whole line) as one word. The word cache answers
//! a line seen before in one probe, but a new line is a merge over hundreds
//! of chars: text seen once ran at 5–14 MB/s. Most boundaries before a `▁`,
//! around punctuation and between CJK chars are places no merge can join
//! across; cut there, the line becomes words the cache has seen.
//!
//! # The argument
//! - The model is a character BPE (not byte-level, no `ignore_merges`, no
//!   dropout, no word prefix or suffix): a word starts as its chars (a char
//!   the vocabulary lacks as its byte pieces or the unknown token), and each
//!   merge joins two adjacent symbols into the vocabulary entry spelled by
//!   their concatenation.
//! - The cut goes between chars `a` and `b` when both are vocabulary entries
//!   of their own and no entry holds `a` followed by `b`. The symbols at the
//!   boundary start as `a` and `b`; as long as nothing joins across, the
//!   symbol holding the last char before the boundary ends in `a` and the one
//!   holding the first char after it starts with `b`, so a merge across would
//!   make an entry holding `ab`, and there is none. The two sides never join,
//!   and each side makes the merges it makes alone (the word's lowest-ranked
//!   pair is the lowest of its side, and ties go leftmost within a side).
//!   Byte fallback and the unknown token act per symbol, and `fuse_unk`
//!   cannot fuse across, since neither `a` nor `b` is unknown.
//! - So the word's ids are its pieces' ids, each merged alone.
//!
//! Performance note: a boundary between two ASCII chars is one bit of a 2 KB
//! table; one with a char of U+0080..U+FFFF checks that char's bit in an
//! 8 KB table and then the pair in a 128 KB hashed bit set that may answer
//! "joined" falsely (so a few free boundaries are not cut, never the
//! reverse). All of it stays in cache.

use tokenizers::pipeline::Span;

/// Chars below this can be cut around; a char above it never is (rare
/// chars, and a small table).
const TABLE_CHARS: usize = 0x1_0000;
/// Bits of the hashed pair set (128 KiB).
const PAIR_BITS: usize = 1 << 20;

/// Where the words of one character-BPE vocabulary may be cut.
pub(crate) struct JoinCuts {
    /// Row `a` (ASCII): bit `b` set when a cut may go between ASCII `a` and
    /// `b`.
    ascii: Box<[u128; 128]>,
    /// Bit `c` set when `c` (below [`TABLE_CHARS`]) is an entry of its own.
    single: Box<[u64]>,
    /// The pairs some entry holds where either char is not ASCII, hashed
    /// (a set bit may be another pair's).
    joined: Box<[u64]>,
}

impl JoinCuts {
    /// The cuts of a vocabulary given every entry (`tokens`); `None` when no
    /// boundary may ever be cut.
    pub(crate) fn build<'a>(tokens: impl Iterator<Item = &'a str>) -> Option<Self> {
        let mut single = vec![0u64; TABLE_CHARS / 64].into_boxed_slice();
        let mut joined = vec![0u64; PAIR_BITS / 64].into_boxed_slice();
        let mut ascii_joined = vec![0u128; 128].into_boxed_slice();
        for token in tokens {
            let mut chars = token.chars();
            let Some(mut prev) = chars.next() else {
                continue;
            };
            if chars.as_str().is_empty() {
                if let Some(w) = single.get_mut(prev as usize / 64) {
                    *w |= 1 << (prev as usize % 64);
                }
                continue;
            }
            for c in chars {
                let (a, b) = (u32::from(prev), u32::from(c));
                if a < 128 && b < 128 {
                    ascii_joined[a as usize] |= 1 << b;
                } else {
                    let h = pair_bit(a, b);
                    joined[h / 64] |= 1 << (h % 64);
                }
                prev = c;
            }
        }
        let is_single = |c: usize| single[c / 64] & (1 << (c % 64)) != 0;
        let ascii_single: u128 = (0..128)
            .filter(|&c| is_single(c))
            .fold(0, |m, c| m | 1 << c);
        let mut ascii = Box::new([0u128; 128]);
        for (a, row) in ascii.iter_mut().enumerate() {
            if is_single(a) {
                *row = ascii_single & !ascii_joined[a];
            }
        }
        let any_ascii = ascii.iter().any(|&r| r != 0);
        // Words 0 and 1 are the ASCII chars.
        let any_other = single.get(2..).is_some_and(|w| w.iter().any(|&w| w != 0));
        (any_ascii || any_other).then_some(Self {
            ascii,
            single,
            joined,
        })
    }

    #[inline(always)]
    fn is_single(&self, c: u32) -> bool {
        self.single
            .get(c as usize / 64)
            .is_some_and(|w| w & (1 << (c % 64)) != 0)
    }

    /// Whether a cut may go between `a` and `b`.
    #[inline(always)]
    fn cuts(&self, a: u32, b: u32) -> bool {
        if a < 128 && b < 128 {
            return self.ascii[a as usize & 127] & (1 << b) != 0;
        }
        if !self.is_single(a) || !self.is_single(b) {
            return false;
        }
        let h = pair_bit(a, b);
        self.joined[h / 64] & (1 << (h % 64)) == 0
    }

    /// The pieces of the word `span` of `bytes`, appended to `out`.
    pub(crate) fn cut_span(&self, bytes: &[u8], span: Span, out: &mut Vec<Span>) {
        let word = bytes.get(span.range()).unwrap_or_default();
        let Some((mut prev, mut at)) = char_at(word, 0) else {
            out.push(span);
            return;
        };
        let mut from = 0;
        while let Some(&b) = word.get(at) {
            // ASCII after ASCII, most of the boundaries of most text: one
            // bit of the small table.
            let (c, next) = if b < 0x80 {
                if prev < 128 {
                    if self.ascii[prev as usize & 127] & (1 << b) != 0 {
                        out.push(Span::new(span.start + from as u32, span.start + at as u32));
                        from = at;
                    }
                    prev = u32::from(b);
                    at += 1;
                    continue;
                }
                (u32::from(b), at + 1)
            } else {
                match char_at(word, at) {
                    Some(next) => next,
                    None => break,
                }
            };
            if self.cuts(prev, c) {
                out.push(Span::new(span.start + from as u32, span.start + at as u32));
                from = at;
            }
            prev = c;
            at = next;
        }
        out.push(Span::new(span.start + from as u32, span.end));
    }
}

/// The char of `word` at `at` and where the next starts (`None` at the end;
/// a sequence cut short reads as a char past the table, never cut around).
#[inline(always)]
fn char_at(word: &[u8], at: usize) -> Option<(u32, usize)> {
    let &lead = word.get(at)?;
    let cont = |k: usize| word.get(at + k).map_or(0, |&b| u32::from(b & 0x3F));
    let lead32 = u32::from(lead);
    Some(match lead {
        0..=0x7F => (lead32, at + 1),
        0xC0..=0xDF => ((lead32 & 0x1F) << 6 | cont(1), at + 2),
        0xE0..=0xEF => ((lead32 & 0x0F) << 12 | cont(1) << 6 | cont(2), at + 3),
        0xF0..=0xF7 => (u32::MAX, at + 4),
        _ => (u32::MAX, at + 1),
    })
}

/// The bit of pair `(a, b)` in [`JoinCuts::joined`].
#[inline(always)]
fn pair_bit(a: u32, b: u32) -> usize {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let h = ((u64::from(a) << 32 | u64::from(b)).wrapping_mul(K) >> 40) as usize;
    h & (PAIR_BITS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces<'a>(cuts: &JoinCuts, text: &'a str) -> Vec<&'a str> {
        let mut spans = Vec::new();
        cuts.cut_span(text.as_bytes(), Span::new(0, text.len() as u32), &mut spans);
        spans.iter().map(|s| &text[s.range()]).collect()
    }

    const VOCAB: &[&str] = &[
        "▁",
        "a",
        "b",
        "c",
        ".",
        ",",
        ">",
        "é",
        "中",
        "文",
        "字",
        "▁a",
        "▁b",
        "▁c",
        "ab",
        "▁▁",
        ".▁",
        "<0x41>▁",
        "中文",
        "a,",
    ];

    #[test]
    fn cuts_only_where_no_entry_joins() {
        let cuts = JoinCuts::build(VOCAB.iter().copied()).expect("cuts");
        // ▁▁, ▁a and ab are entries (no cut inside), b▁ and c▁ are not.
        assert_eq!(pieces(&cuts, "▁ab▁c▁▁a▁b"), ["▁ab", "▁c", "▁▁a", "▁b"]);
        // `.▁`, `>▁` (in a byte piece's spelling) and `a,` are entries.
        assert_eq!(
            pieces(&cuts, "a.▁b>▁ca,b,é▁a"),
            ["a", ".▁b", ">▁c", "a,", "b", ",", "é", "▁a"]
        );
        // 中文 is an entry, 文字 is not.
        assert_eq!(pieces(&cuts, "中文字中"), ["中文", "字", "中"]);
        // A char that is not an entry of its own (byte fallback) is never
        // cut around, nor is a char past the table.
        assert_eq!(pieces(&cuts, "xyz▁ab😀▁ab"), ["xyz▁ab😀▁ab"]);
    }

    #[test]
    fn spans_keep_their_place_in_the_text() {
        let cuts = JoinCuts::build(VOCAB.iter().copied()).expect("cuts");
        let text = "zz▁ab▁c▁ab▁cc";
        let mut spans = Vec::new();
        cuts.cut_span(text.as_bytes(), Span::new(2, text.len() as u32), &mut spans);
        let got: Vec<&str> = spans.iter().map(|s| &text[s.range()]).collect();
        assert_eq!(got, ["▁ab", "▁c", "▁ab", "▁c", "c"]);
        // The pieces tile the span.
        assert!(spans.windows(2).all(|w| w[0].end == w[1].start));
    }

    #[test]
    fn nothing_to_cut_without_free_pairs() {
        assert!(JoinCuts::build(["a", "b", "ab", "ba", "aa", "bb"].into_iter()).is_none());
        assert!(JoinCuts::build(["ab", "ba"].into_iter()).is_none());
    }
}
