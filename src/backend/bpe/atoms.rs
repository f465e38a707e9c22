//! Two- and three-byte chars that the merge may start from whole
//! (invariant *atoms-merge-as-bytes*): a CJK, kana or Hangul char is three
//! symbols from its bytes and two merges before it meets its neighbours
//! (a Cyrillic, Greek or Arabic letter two and one); started as its entry,
//! a clause of Chinese seen once has a third of the symbols and of the
//! merges.
//!
//! # The argument
//! A char `c` with an entry `C` of its own is an *atom* when
//! 1. the merge of `c`'s bytes alone gives `[C]`, and
//! 2. every merge with `C` as an operand ranks after every merge of (1);
//!
//! and one occurrence of it may start as `C` when also
//! 3. no entry holds a proper part of `c` together with the bytes next to
//!    it in the word: no entry ends with a proper prefix of `c`'s bytes
//!    after bytes that the word has right before `c` (a *head*), and none
//!    starts with a proper suffix of them before bytes that the word has
//!    right after it (a *tail*).
//!
//! Every merge makes an entry, so by (3) no merge joins a part of `c` with
//! a symbol outside it: until `c` is whole its merges are the merges of
//! `c` alone, whenever each is the lowest pair, and they end in `C` by
//! (1). A merge with `C` as an operand that the pre-formed word could make
//! earlier ranks above every merge of (1) (2), so in the word merged from
//! its bytes `c` is whole by the time that merge is the lowest pair: both
//! words make the same merges, in the same order, outside `c`. Applied to
//! each atom of a word in turn, the word's ids are those of its bytes.
//!
//! Heads and tails are few for CJK (DeepSeek-V3: 18 heads and 298 tails
//! next to three-byte chars, most of them Hebrew letters after a
//! continuation byte), so a char's check is a bit test of its neighbouring
//! byte against the first (last) bytes of its tails (heads), and a
//! comparison only where that bit is set: 35 of the 249,485 chars of
//! `corpus/zh` start as bytes for DeepSeek-V3. A char with more than
//! [`MAX_FRAGMENTS`] is no atom: the two-byte letters of a large
//! vocabulary have tails that start with the next letter's lead byte, and
//! checking them cost more than the merges saved (o200k, `corpus/multilingual`:
//! 0.97× without the cap, 1.0× with it; DeepSeek-V3 1.03×, Qwen3 1.02×,
//! Llama-3 1.02× over three-byte atoms alone).

use rustc_hash::FxHashMap;

use super::{NO_MERGE, Pairs, product};

/// The first char an atom may be: U+0080, the first of two bytes.
const FIRST: u32 = 0x80;
/// Chars U+0080..=U+DFFF: every two-byte char, and the three-byte ones up
/// to Hangul (lead bytes `0xC2..=0xED`).
const COUNT: usize = 0xE000 - FIRST as usize;

/// Bits of an entry of [`Atoms::chars`] for the atom's internal id; the
/// rule's index is above.
const ID_BITS: u32 = 24;
const ID_MASK: u32 = (1 << ID_BITS) - 1;
/// A char that is no atom.
const NONE: u32 = u32::MAX;

/// The most heads and tails an atom's occurrences are checked against.
const MAX_FRAGMENTS: usize = 32;

/// The heads and tails that may make a char's occurrence start as bytes
/// (see the module docs, (3)).
#[derive(Default, PartialEq, Eq, Hash, Clone)]
struct Rule {
    /// Bit `b` set when some head ends with byte `b`.
    before: [u64; 4],
    /// Bit `b` set when some tail starts with byte `b`.
    after: [u64; 4],
    heads: Vec<Box<[u8]>>,
    tails: Vec<Box<[u8]>>,
}

fn bit(set: &[u64; 4], b: u8) -> bool {
    set.get(usize::from(b >> 6))
        .is_some_and(|w| w >> (b & 63) & 1 != 0)
}

fn set_bit(set: &mut [u64; 4], b: u8) {
    if let Some(w) = set.get_mut(usize::from(b >> 6)) {
        *w |= 1 << (b & 63);
    }
}

/// A byte-level vocabulary's atoms.
pub(super) struct Atoms {
    /// Per char (`cp - FIRST`): `rule << ID_BITS | internal id` of its
    /// atom, or [`NONE`].
    chars: Box<[u32]>,
    /// `rules[0]` is empty: the char starts whole everywhere.
    rules: Vec<Rule>,
}

impl Atoms {
    /// The atoms of a vocabulary (`entries`: every entry of two bytes or
    /// more, with its id); `operand_min[i]`: the lowest code of a merge
    /// with internal id `i` as an operand. `None` when no char is one.
    pub(super) fn build(
        entries: &[(&[u8], u32)],
        pairs: &Pairs,
        operand_min: &[u32],
    ) -> Option<Self> {
        // Heads by the part of a char an entry ends with (its first byte,
        // or two), tails by the part it starts with (its last, or two).
        let mut heads: FxHashMap<&[u8], Vec<&[u8]>> = FxHashMap::default();
        let mut tails: FxHashMap<&[u8], Vec<&[u8]>> = FxHashMap::default();
        for &(entry, _) in entries {
            let n = entry.len();
            for k in 1..=2.min(n - 1) {
                let (before, part) = entry.split_at(n - k);
                if is_lead(part[0]) && part[1..].iter().all(|&b| is_continuation(b)) {
                    heads.entry(part).or_default().push(before);
                }
                let (part, after) = entry.split_at(k);
                if part.iter().all(|&b| is_continuation(b)) {
                    tails.entry(part).or_default().push(after);
                }
            }
        }
        let mut chars = vec![NONE; COUNT].into_boxed_slice();
        let mut rules = vec![Rule::default()];
        let mut rule_index: FxHashMap<Rule, u32> = FxHashMap::default();
        rule_index.insert(Rule::default(), 0);
        let mut any = false;
        for &(entry, id) in entries {
            let Some((cp, len)) = whole_char(entry, 0).filter(|&(_, len)| len == entry.len())
            else {
                continue;
            };
            let Some(atom) = formed(entry, pairs, operand_min) else {
                continue;
            };
            if pairs.vocabulary(atom) != id || atom > ID_MASK {
                continue;
            }
            let mut rule = Rule::default();
            for part in (1..len).filter_map(|k| entry.get(..k)) {
                for &head in heads.get(part).into_iter().flatten() {
                    if let Some(&last) = head.last() {
                        set_bit(&mut rule.before, last);
                        rule.heads.push(head.into());
                    }
                }
            }
            for part in (1..len).filter_map(|k| entry.get(k..)) {
                for &tail in tails.get(part).into_iter().flatten() {
                    if let Some(&first) = tail.first() {
                        set_bit(&mut rule.after, first);
                        rule.tails.push(tail.into());
                    }
                }
            }
            // A check of many fragments would cost more than the merges
            // the atom saves (the letters of some scripts in large
            // vocabularies: o200k's Cyrillic).
            if rule.heads.len() + rule.tails.len() > MAX_FRAGMENTS {
                continue;
            }
            let next = rules.len() as u32;
            let index = *rule_index.entry(rule.clone()).or_insert_with(|| {
                rules.push(rule);
                next
            });
            // A char past the rules an entry can name starts as bytes.
            if index >> (32 - ID_BITS) != 0 {
                continue;
            }
            if let Some(slot) = chars.get_mut((cp - FIRST) as usize) {
                *slot = index << ID_BITS | atom;
                any = true;
            }
        }
        any.then_some(Self { chars, rules })
    }

    /// The symbols `word` starts as, into `out`: each atom whose occurrence
    /// may start whole as its internal id, every other byte as itself.
    /// `false` (and `out` as it was) when no atom starts whole.
    pub(super) fn symbols(&self, word: &[u8], out: &mut Vec<u32>) -> bool {
        out.clear();
        let mut any = false;
        let mut at = 0;
        while let Some(&b) = word.get(at) {
            if is_lead(b)
                && let Some((cp, len)) = whole_char(word, at)
                && let Some(atom) = self.starts_whole(word, at, cp, len)
            {
                out.push(atom);
                any = true;
                at += len;
            } else {
                out.push(u32::from(b));
                at += 1;
            }
        }
        any
    }

    /// The atom of `cp` (at `at` of `word`) when this occurrence may start
    /// whole.
    #[inline]
    fn starts_whole(&self, word: &[u8], at: usize, cp: u32, len: usize) -> Option<u32> {
        let entry = *self.chars.get(cp.checked_sub(FIRST)? as usize)?;
        if entry == NONE {
            return None;
        }
        let rule = entry >> ID_BITS;
        if rule != 0 {
            let rule = self.rules.get(rule as usize)?;
            let (before, after) = word.split_at(at);
            let after = after.get(len..)?;
            if before.last().is_some_and(|&b| bit(&rule.before, b))
                && rule.heads.iter().any(|h| before.ends_with(h))
            {
                return None;
            }
            if after.first().is_some_and(|&b| bit(&rule.after, b))
                && rule.tails.iter().any(|t| after.starts_with(t))
            {
                return None;
            }
        }
        Some(entry & ID_MASK)
    }
}

/// Whether `b` leads a char an atom may be.
#[inline]
pub(super) fn is_lead(b: u8) -> bool {
    (0xC2..=0xED).contains(&b)
}

#[inline]
fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The char (and its length) whose bytes start at `at` of `word`, when
/// its lead byte is one of [`is_lead`]'s.
#[inline]
fn whole_char(word: &[u8], at: usize) -> Option<(u32, usize)> {
    let lead = *word.get(at)?;
    let cont = |k: usize| word.get(at + k).copied().filter(|&b| is_continuation(b));
    match lead {
        0xC2..=0xDF => {
            let b = cont(1)?;
            Some(((u32::from(lead & 0x1F) << 6) | u32::from(b & 0x3F), 2))
        }
        0xE0..=0xED => {
            let (b, c) = (cont(1)?, cont(2)?);
            let cp =
                (u32::from(lead & 0x0F) << 12) | (u32::from(b & 0x3F) << 6) | u32::from(c & 0x3F);
            // An overlong encoding is no char.
            (cp >= 0x800).then_some((cp, 3))
        }
        _ => None,
    }
}

/// The internal id that the two or three bytes `char` merge into alone,
/// when they merge into one (1) and every merge with it as an operand
/// ranks after their merges (2).
fn formed(char: &[u8], pairs: &Pairs, operand_min: &[u32]) -> Option<u32> {
    if let &[a, b] = char {
        let only = pairs.get(u32::from(a), u32::from(b));
        if only == NO_MERGE {
            return None;
        }
        let atom = product(only);
        let after = operand_min.get(atom as usize).copied().unwrap_or(NO_MERGE);
        return (after > only).then_some(atom);
    }
    let &[a, b, c] = char else { return None };
    let (a, b, c) = (u32::from(a), u32::from(b), u32::from(c));
    let (left, right) = (pairs.get(a, b), pairs.get(b, c));
    if left == NO_MERGE && right == NO_MERGE {
        return None;
    }
    // The lower pair first, the left one on a tie.
    let (first, last) = if left <= right {
        (left, pairs.get(product(left), c))
    } else {
        (right, pairs.get(a, product(right)))
    };
    if last == NO_MERGE {
        return None;
    }
    let atom = product(last);
    let after = operand_min.get(atom as usize).copied().unwrap_or(NO_MERGE);
    (after > first.max(last)).then_some(atom)
}
