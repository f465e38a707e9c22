//! Where a byte-level BPE pre-token of CJK text can be cut into pieces that
//! the model encodes alone with the same ids (DESIGN.md invariant `cut-where-no-entry-joins`).
//!
//! The pre-tokenizers of the byte-level BPEs keep a run of CJK ideographs or
//! kana whole (there are no spaces in it), so a pre-token is a clause, seen
//! once: every one is a word-cache miss and a merge over 15–60 bytes. A
//! merge joins two adjacent symbols into a vocabulary entry, so it can join
//! across the boundary between chars `a` and `b` only if some entry holds the
//! bytes on both sides of that boundary: a suffix of `a`'s bytes followed by
//! a prefix of `b`'s. Where no entry does, the merges on either side never
//! meet, and the pre-token's ids are the ids of its two sides, each merged
//! alone. In Llama-3's vocabulary that holds for nine in ten boundaries
//! between two CJK chars of the shared Chinese corpus, so the clause becomes
//! pieces of one or two chars, which the word cache answers.
//!
//! # The argument, in full
//! - Only boundaries between two three-byte chars whose lead byte is
//!   `0xE3..=0xE9` (U+3000..=U+9FFF) are cut, so every piece holds such a
//!   char.
//! - A merge `(L, R)` across the boundary `a|b` makes the entry `L R`, in
//!   which `R` starts at a byte of `0xE3..=0xE9`. For every entry and every
//!   position `p ≥ 1` holding such a byte, the rule `(tail(L), head(R))` is
//!   recorded, `L = entry[..p]`, `R = entry[p..]`: `tail` is the char `L`
//!   ends with when `L` holds it whole, else `L`'s last byte (a "partial"
//!   tail, matching every char ending in that byte); `head` likewise for the
//!   char `R` starts with. Every merge is an entry, so a boundary that no rule
//!   matches is never merged across.
//! - A model with `ignore_merges` takes a piece that is itself an entry
//!   whole, where the merges of the pre-token might not produce it. So the
//!   entries that hold such a lead byte and that the merges do not rebuild
//!   from their own bytes are listed (Llama-3: four, e.g. `中文字幕`), and a
//!   pre-token with a piece equal to one of them is not cut at all.
//! - The whole pre-token being an entry is no exception: its own rules cover
//!   every boundary in it, so nothing in it is cut.
//!
//! The SentencePiece engine's `JoinFilter` (invariant `cut-where-no-entry-joins`) cuts llama.cpp's
//! merge the same way, but there every symbol starts as a whole char, so a
//! pair of adjacent chars inside some token is the whole rule; here symbols
//! start as bytes and an entry may hold part of a char, which the partial
//! sides cover.

use rustc_hash::{FxHashMap, FxHashSet};
use tokenizers::pipeline::Span;

/// Byte length of the UTF-8 sequence a lead byte starts (llama.cpp's
/// `unicode_len_utf8`: 1 for continuation or invalid bytes).
#[inline]
pub(crate) fn utf8_len(lead: u8) -> usize {
    const LEN: [u8; 16] = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4];
    LEN[usize::from(lead >> 4)] as usize
}

/// The first code point the cuts consider, and how many there are.
const FIRST: u32 = 0x3000;
const COUNT: usize = 0xA000 - 0x3000;

/// A rule side: a whole char (its code point) or one byte of a partial one.
const PARTIAL: u32 = 1 << 31;

/// A lead byte of a char in `FIRST..FIRST + COUNT`.
#[inline(always)]
fn is_cjk_lead(b: u8) -> bool {
    (0xE3..=0xE9).contains(&b)
}

/// Whether the merges turn an entry's bytes back into that entry.
pub(crate) type Rebuilds<'a> = &'a dyn Fn(&[u8]) -> bool;

/// Whether `word` holds a CJK lead byte.
#[inline]
pub(crate) fn holds_cjk_lead(word: &[u8]) -> bool {
    word.iter().any(|&b| is_cjk_lead(b))
}

/// The index of the first CJK lead byte of `bytes` at or after `from`, else
/// `bytes.len()`. Branch-free over 32-byte blocks, which the compiler
/// vectorizes: text without one is read at memory speed, so a text with a
/// few CJK chars pays the per-pre-token check only where they are (invariant
/// `cut-where-no-entry-joins`).
pub(crate) fn next_cjk_lead(bytes: &[u8], from: usize) -> usize {
    let from = from.min(bytes.len());
    let rest = bytes.get(from..).unwrap_or_default();
    let mut blocks = rest.chunks_exact(32);
    let any = |block: &[u8]| -> bool {
        // Most text is ASCII: a block of no byte past 0x7F (four words
        // tested at once) holds no lead byte.
        let high = block
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])))
            .fold(0, |acc, w| acc | w);
        high & 0x8080_8080_8080_8080 != 0 && block.iter().any(|&b| is_cjk_lead(b))
    };
    let mut at = from;
    for block in blocks.by_ref() {
        if any(block) {
            return at + block.iter().position(|&b| is_cjk_lead(b)).unwrap_or(0);
        }
        at += 32;
    }
    let tail = blocks.remainder();
    at + tail
        .iter()
        .position(|&b| is_cjk_lead(b))
        .unwrap_or(tail.len())
}

/// Bits of a [`CharCuts::info`] entry above the partial-head mask (bits
/// 0..7, lead byte `y` at bit `y - 0xE3`). (A char is a whole tail of some
/// rule when its `heads` signature is not 0.)
const WHOLE_HEAD: u16 = 1 << 9;
const PARTIAL_TAILS: u16 = 1 << 10;

/// Cut rules of one byte-level BPE vocabulary.
///
/// Performance note: a boundary is one load of each char's `info` and of
/// the tail's `heads` signature, all indexed by char, so the chars a text
/// uses stay in cache; only a boundary whose signature bit is set probes
/// the rules. A hash set probe per boundary first made the check cost more
/// than the model's encode, and a 128 KB filter indexed by the pair missed
/// the cache on most boundaries. A one-load signature filter in front of
/// the rules saved 10 % on Llama-3 and cost 3–8 % on Qwen3 and
/// DeepSeek-V3, whose heads fill the signatures
/// (`docs/decisions/byte_level_engine.md` (entry 353)). The rules are now
/// one open-addressing set of pairs ([`PairSet`]), in place of a sorted
/// list of heads per tail searched by halves: Chinese seen once 1.07× on
/// DeepSeek-V3, 1.06× on Qwen3, 1.03× on Llama-3
/// (`docs/perf/byte_engine_2026-12-07.md`).
pub(crate) struct CharCuts {
    /// `(tail, head)` rules between two whole chars (`cp - FIRST` each).
    whole: PairSet,
    /// Per char (`cp - FIRST`): the lead bytes of the partial heads a rule
    /// pairs with it as a whole tail, and the flags above.
    info: Box<[u16]>,
    /// Per char: bit [`head_bit`] of every whole head a rule pairs with it as
    /// a whole tail; a boundary whose bit is clear needs no set lookup.
    heads: Box<[u64]>,
    /// Per char with [`PARTIAL_TAILS`]: the last bytes (bit `x & 63`) of
    /// the partial tails a rule pairs with it as a whole head.
    partial_to_head: FxHashMap<u32, u64>,
    /// Partial tail × partial head rules: bit `y - 0xE3` of entry `x & 63`.
    partials: [u8; 64],
    /// Entries with a CJK lead byte that the merges do not rebuild, of a
    /// model that takes whole entries (`ignore_merges`).
    unmerged: FxHashSet<Box<[u8]>>,
    /// Bit `n` set when some entry of `unmerged` is `n` bytes long (`n < 64`);
    /// bit 63 also stands for every longer one.
    unmerged_lens: u64,
}

#[inline(always)]
fn head_bit(cp: u32) -> u64 {
    1 << (cp.wrapping_mul(0x9E37_79B9) >> 26)
}

impl CharCuts {
    /// The rules of the vocabulary `entries` (each model entry's bytes).
    /// `rebuilt` is `None` for a model without `ignore_merges`; otherwise it
    /// says whether the merges turn an entry's bytes back into that entry.
    /// `None` when no entry holds a CJK lead byte after its first byte.
    pub(crate) fn build<'a>(
        entries: impl Iterator<Item = &'a [u8]>,
        rebuilt: Option<Rebuilds<'_>>,
    ) -> Option<Self> {
        let mut pairs: Vec<(u16, u16)> = Vec::new();
        let mut cuts = Self {
            whole: PairSet::default(),
            info: vec![0; COUNT].into_boxed_slice(),
            heads: vec![0; COUNT].into_boxed_slice(),
            partial_to_head: FxHashMap::default(),
            partials: [0; 64],
            unmerged: FxHashSet::default(),
            unmerged_lens: 0,
        };
        let mut any = false;
        for entry in entries {
            if let Some(rebuilt) = rebuilt
                && entry.iter().any(|&b| is_cjk_lead(b))
                && !rebuilt(entry)
            {
                cuts.unmerged_lens |= 1 << entry.len().min(63);
                cuts.unmerged.insert(entry.into());
            }
            for p in 1..entry.len() {
                if !is_cjk_lead(entry[p]) {
                    continue;
                }
                any = true;
                cuts.add(tail(&entry[..p]), head(&entry[p..]), &mut pairs);
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        cuts.whole = PairSet::new(&pairs);
        any.then_some(cuts)
    }

    fn add(&mut self, tail: u32, head: u32, pairs: &mut Vec<(u16, u16)>) {
        let slot = |cp: u32| (cp - FIRST) as usize;
        let lead_bit = |head: u32| 1u16 << ((head as u8).wrapping_sub(0xE3) & 7);
        match (tail & PARTIAL != 0, head & PARTIAL != 0) {
            (false, false) => {
                // A whole head is in range (it starts with a CJK lead
                // byte); a tail out of range never ends a cut piece.
                if in_range(tail) {
                    self.info[slot(head)] |= WHOLE_HEAD;
                    // Both below `COUNT`, which fits a `u16`.
                    pairs.push((slot(tail) as u16, slot(head) as u16));
                    self.heads[slot(tail)] |= head_bit(head);
                }
            }
            (false, true) => {
                if in_range(tail) {
                    self.info[slot(tail)] |= lead_bit(head);
                }
            }
            (true, false) => {
                self.info[slot(head)] |= PARTIAL_TAILS;
                *self.partial_to_head.entry(head).or_default() |= 1 << (tail & 63);
            }
            (true, true) => self.partials[(tail & 63) as usize] |= lead_bit(head) as u8,
        }
    }

    /// Whether some merge may join across the boundary between the chars
    /// `a` and `b` (both in range).
    #[inline(always)]
    fn bridged(&self, a: u32, b: u32) -> bool {
        let (i, j) = ((a - FIRST) as usize, (b - FIRST) as usize);
        let (Some(&ia), Some(&ib), Some(&heads)) =
            (self.info.get(i), self.info.get(j), self.heads.get(i))
        else {
            return true;
        };
        let last = (a & 63) as usize;
        let lead_bit = 1u8 << (lead_byte(b) - 0xE3);
        if (ia as u8) & lead_bit != 0 || self.partials[last] & lead_bit != 0 {
            return true;
        }
        if ib & PARTIAL_TAILS != 0
            && self
                .partial_to_head
                .get(&b)
                .is_some_and(|m| m & (1 << last) != 0)
        {
            return true;
        }
        if ib & WHOLE_HEAD == 0 || heads & head_bit(b) == 0 {
            return false;
        }
        self.whole.contains(i as u16, j as u16)
    }

    /// The fewest bytes of a pre-token with a boundary to cut: two CJK
    /// chars are six.
    pub(crate) const MIN_CUT_BYTES: usize = 6;

    /// The pieces of the pre-token `span` of `bytes`, appended to `out`;
    /// the span whole when a piece would be an entry the merges do not
    /// rebuild.
    pub(crate) fn cut_span(&self, bytes: &[u8], span: Span, out: &mut Vec<Span>) {
        let word = bytes.get(span.range()).unwrap_or_default();
        let pieces = out.len();
        self.cut_word(word, span.start, out);
        if out.len() - pieces > 1 && !self.unmerged.is_empty() {
            let unmerged = out[pieces..].iter().any(|piece| {
                let len = (piece.end - piece.start) as usize;
                self.unmerged_lens & (1 << len.min(63)) != 0
                    && bytes
                        .get(piece.range())
                        .is_some_and(|p| self.unmerged.contains(p))
            });
            if unmerged {
                out.truncate(pieces);
                out.push(span);
            }
        }
    }

    /// The pieces of `word` (at `base` in the text), appended to `out`.
    fn cut_word(&self, word: &[u8], base: u32, out: &mut Vec<Span>) {
        let mut from = 0usize;
        let mut prev = whole_char(word, 0);
        let mut at = prev.map_or_else(|| word.first().map_or(1, |&b| utf8_len(b)), |_| 3);
        while at < word.len() {
            let next = whole_char(word, at);
            if let (Some(a), Some(b)) = (prev, next)
                && !self.bridged(a, b)
            {
                out.push(Span::new(base + from as u32, base + at as u32));
                from = at;
            }
            prev = next;
            at += next.map_or_else(|| utf8_len(word[at]), |_| 3);
        }
        out.push(Span::new(base + from as u32, base + word.len() as u32));
    }
}

/// A set of `(tail, head)` pairs of char slots: open addressing on one
/// `u32` a pair, half full, so a boundary is one probe, nearly always one
/// line. (A sorted list of heads per tail, searched by halves, was a chain
/// of dependent loads at every boundary of Chinese text: 27 % of a
/// DeepSeek-V3 encode, whose common chars pair with hundreds of heads.)
#[derive(Default)]
struct PairSet {
    /// `tail << 16 | head`, plus one (0 is an empty slot).
    keys: Box<[u32]>,
    /// `32 - log2(keys.len())`.
    shift: u32,
}

impl PairSet {
    fn new(pairs: &[(u16, u16)]) -> Self {
        let len = (pairs.len() * 2).next_power_of_two().max(2);
        let mut set = Self {
            keys: vec![0; len].into_boxed_slice(),
            shift: 32 - len.trailing_zeros(),
        };
        let mask = len - 1;
        for &(tail, head) in pairs {
            let key = Self::key(tail, head);
            let mut at = set.home(key);
            while let Some(slot) = set.keys.get_mut(at) {
                if *slot == 0 || *slot == key {
                    *slot = key;
                    break;
                }
                at = (at + 1) & mask;
            }
        }
        set
    }

    #[inline(always)]
    fn key(tail: u16, head: u16) -> u32 {
        (u32::from(tail) << 16 | u32::from(head)) + 1
    }

    #[inline(always)]
    fn home(&self, key: u32) -> usize {
        (key.wrapping_mul(0x9E37_79B9) >> self.shift) as usize
    }

    #[inline]
    fn contains(&self, tail: u16, head: u16) -> bool {
        let key = Self::key(tail, head);
        let mask = self.keys.len().wrapping_sub(1);
        let mut at = self.home(key);
        // Half full: an empty slot ends every chain.
        while let Some(&slot) = self.keys.get(at) {
            if slot == key {
                return true;
            }
            if slot == 0 {
                return false;
            }
            at = (at + 1) & mask;
        }
        false
    }
}

fn in_range(cp: u32) -> bool {
    (FIRST..FIRST + COUNT as u32).contains(&cp)
}

/// The in-range char whose three bytes start at `at`, if that is one.
#[inline(always)]
fn whole_char(word: &[u8], at: usize) -> Option<u32> {
    match word.get(at..at + 3)? {
        &[a, b, c] if is_cjk_lead(a) && (b & 0xC0) == 0x80 && (c & 0xC0) == 0x80 => {
            Some((u32::from(a & 0x0F) << 12) | (u32::from(b & 0x3F) << 6) | u32::from(c & 0x3F))
        }
        _ => None,
    }
}

/// The first byte of the in-range char `cp`.
fn lead_byte(cp: u32) -> u8 {
    0xE0 | (cp >> 12) as u8
}

/// The rule side for the end of `left`: the char it ends with if whole
/// (and it is any char, in range or not), else its last byte as a partial.
fn tail(left: &[u8]) -> u32 {
    let n = left.len();
    // The start of the last char: at most three continuation bytes back.
    let lead = (n.saturating_sub(4)..n)
        .rev()
        .find(|&i| left[i] & 0xC0 != 0x80);
    if let Some(i) = lead
        && let Ok(s) = std::str::from_utf8(&left[i..])
        && let Some(c) = s.chars().next()
        && c.len_utf8() == n - i
    {
        return u32::from(c);
    }
    PARTIAL | u32::from(left[n - 1])
}

/// The rule side for the start of `right` (which starts with a CJK lead
/// byte): the char if whole, else the lead byte as a partial.
fn head(right: &[u8]) -> u32 {
    whole_char(right, 0).unwrap_or(PARTIAL | u32::from(right[0]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_cjk_lead_finds_the_first_at_every_offset() {
        // Lead bytes on both sides of the 32-byte blocks and in the tail.
        for len in [0usize, 1, 31, 32, 33, 64, 95, 130] {
            for at in (0..len).step_by(7).chain([len.saturating_sub(1)]) {
                let mut bytes = vec![b'a'; len];
                if let Some(b) = bytes.get_mut(at) {
                    *b = 0xE4;
                }
                for from in [0, at / 2, at, at + 1] {
                    let want = if len > 0 && from <= at { at } else { len };
                    assert_eq!(
                        next_cjk_lead(&bytes, from),
                        want,
                        "len {len}, at {at}, from {from}"
                    );
                }
            }
        }
        // Bytes around the lead range are not leads.
        assert_eq!(next_cjk_lead(&[0xE2, 0xEA, 0xEF, 0x80], 0), 4);
        assert_eq!(next_cjk_lead(b"abc", 9), 3);
    }

    #[test]
    fn pair_set_holds_its_pairs_and_no_other() {
        let pairs: Vec<(u16, u16)> = (0..5_000u16)
            .map(|i| (i % 97, i.wrapping_mul(31) % 28_000))
            .collect();
        let set = PairSet::new(&pairs);
        for &(t, h) in &pairs {
            assert!(set.contains(t, h), "{t} {h}");
        }
        let held: std::collections::HashSet<(u16, u16)> = pairs.iter().copied().collect();
        for t in 0..200u16 {
            for h in (0..28_000u16).step_by(13) {
                assert_eq!(set.contains(t, h), held.contains(&(t, h)), "{t} {h}");
            }
        }
        assert!(!PairSet::default().contains(1, 2));
        assert!(!PairSet::new(&[]).contains(0, 0));
    }

    fn cuts(entries: &[&str], rebuilt: Option<Rebuilds<'_>>) -> CharCuts {
        CharCuts::build(entries.iter().map(|e| e.as_bytes()), rebuilt).expect("CJK entries")
    }

    fn pieces<'a>(c: &CharCuts, text: &'a str) -> Vec<&'a str> {
        let mut out = Vec::new();
        c.cut_span(text.as_bytes(), Span::new(0, text.len() as u32), &mut out);
        out.iter().map(|s| &text[s.range()]).collect()
    }

    #[test]
    fn cuts_only_where_no_entry_spans_the_boundary() {
        let c = cuts(&["中文", "文字幕", "天"], None);
        assert_eq!(pieces(&c, "中文字幕天天"), ["中文字幕", "天", "天"]);
        assert_eq!(pieces(&c, "天中"), ["天", "中"]);
        // One char: nothing to cut.
        assert_eq!(pieces(&c, "中"), ["中"]);
    }

    #[test]
    fn partial_entries_keep_their_boundaries() {
        // 中 is E4 B8 AD, 方 E6 96 B9, 天 E5 A4 A9, 文 E6 96 87. An entry
        // that is the last byte of 中 and the lead byte of 方 and 文 joins
        // every char ending in 0xAD to every char starting with 0xE6.
        let c = CharCuts::build(
            [b"\xAD\xE6".as_slice(), "中文".as_bytes()].into_iter(),
            None,
        )
        .expect("rules");
        assert_eq!(pieces(&c, "中方"), ["中方"]);
        assert_eq!(pieces(&c, "天文"), ["天", "文"]);
        assert_eq!(pieces(&c, "天方中文"), ["天", "方", "中文"]);
    }

    #[test]
    fn an_unmerged_entry_keeps_its_word_whole() {
        let never: &dyn Fn(&[u8]) -> bool = &|e| e != "文字".as_bytes();
        let c = cuts(&["文字", "中", "天天"], Some(never));
        // 中|文 and 字|天 are cut, which would leave 文字 alone: not cut.
        assert_eq!(pieces(&c, "中文字天天"), ["中文字天天"]);
        let always: &dyn Fn(&[u8]) -> bool = &|_| true;
        let c = cuts(&["文字", "中", "天天"], Some(always));
        assert_eq!(pieces(&c, "中文字天天"), ["中", "文字", "天天"]);
    }

    #[test]
    fn other_chars_are_never_cut_around() {
        let c = cuts(&["中文"], None);
        assert_eq!(pieces(&c, "天a天b"), ["天a天b"]);
        assert_eq!(pieces(&c, "天天ab"), ["天", "天ab"]);
        assert_eq!(pieces(&c, "天😀天"), ["天😀天"]);
        // A pre-token led by punctuation (cl100k's `[^\p{L}\p{N}]?\p{L}+`).
        assert_eq!(pieces(&c, "，天天"), ["，天", "天"]);
        assert_eq!(pieces(&c, "a天天中文"), ["a天", "天", "中文"]);
    }
}
