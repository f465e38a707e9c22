//! The engines that encode while `tokenizers`' model is still being built
//! (DESIGN.md invariant `interim-equals-built`): a BPE with byte fallback and a WordPiece. A
//! byte-level BPE needs none: the crate's engine (`backend::bpe`) is its
//! model step from the load on, and its `tokenizers` model is never built
//! (`pipe::Pipe::forgo`).
//!
//! `PipelineBPE::from_config` is most of a BPE `tokenizer.json` load (its
//! vocabulary store and pair tables), and its tables are only needed for
//! speed. The load builds this engine instead, from the same vocabulary and
//! merges, in tens of milliseconds, and starts the model build on a thread
//! of its own; encodes run here until that model is ready, then on it.
//!
//! The merge loop is the reference's (`tokenizers` 0.x `Word::merge_all`):
//! a queue of adjacent pairs ordered by merge rank, then by position, an
//! entry dropped when its pair no longer stands there with the same result.
//! Ids are therefore the reference's by construction, and a differential
//! test holds them to the built model's on every corpus and adversarial file.
//!
//! Performance notes: nothing here competes with the built model's word
//! cache (`docs/decisions/byte_level_engine.md` (entry 309) measured an engine like this at
//! 1.3–2.2× slower warm);
//! it serves the first encodes of a fresh load. A per-thread map of the
//! words seen so far keeps repeated words off the merge loop.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;
use tokenizers::pipeline::{PipelineToken, Span};

/// Words remembered per thread before the map starts again.
const WORD_MAP_LIMIT: usize = 1 << 16;

/// A BPE with byte fallback over a word's chars: each char starts as its
/// own entry's id, else as its bytes' `<0xNN>` pieces; merges join adjacent
/// ids.
pub(crate) struct InterimBpe {
    /// Chars with an entry of their own...
    chars: FxHashMap<char, u32>,
    /// ...and every byte's `<0xNN>` piece for the rest (so the unknown
    /// token is never needed).
    bytes: [u32; 256],
    /// `(left, right)` → `(rank, merged id)`; a pair listed twice keeps its
    /// last rank, as the reference's map does.
    pairs: FxHashMap<u64, (u32, u32)>,
    /// For `ignore_merges`: vocabulary entries by the bytes they spell.
    words: Option<WordIndex>,
    scratch: thread_local::ThreadLocal<RefCell<Scratch>>,
}

#[derive(Default)]
struct Scratch {
    /// Words already merged on this thread.
    seen: FxHashMap<Box<[u8]>, Box<[u32]>>,
    /// A word's first ids.
    ids: Vec<u32>,
    symbols: Vec<Symbol>,
    queue: BinaryHeap<Reverse<(u32, u32, u32)>>,
}

#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    prev: u32,
    next: u32,
    alive: bool,
}

const NONE: u32 = u32::MAX;

/// Vocabulary entries by their UTF-8 bytes, in one arena: a map of boxed
/// keys cost a third of the engine's build (128,000 allocations for a
/// vocabulary the size of Llama-3's).
struct WordIndex {
    arena: Vec<u8>,
    /// Hash of the bytes → `(offset, length, id)` in `arena`.
    by_hash: FxHashMap<u64, (u32, u32, u32)>,
}

impl WordIndex {
    /// `None` if two entries' bytes share a hash (never seen; the built
    /// model is then waited for) or the arena outgrows `u32` offsets.
    fn build(vocab: &[(&str, u32)]) -> Option<Self> {
        let mut arena = Vec::with_capacity(vocab.len() * 8);
        let mut by_hash = FxHashMap::with_capacity_and_hasher(vocab.len(), Default::default());
        for &(token, id) in vocab {
            let start = arena.len();
            arena.extend_from_slice(token.as_bytes());
            let hash = hash_bytes(&arena[start..]);
            let entry = (
                u32::try_from(start).ok()?,
                u32::try_from(arena.len() - start).ok()?,
                id,
            );
            if by_hash.insert(hash, entry).is_some() {
                return None;
            }
        }
        Some(Self { arena, by_hash })
    }

    fn get(&self, word: &[u8]) -> Option<u32> {
        let &(start, len, id) = self.by_hash.get(&hash_bytes(word))?;
        let start = start as usize;
        (self.arena.get(start..start + len as usize)? == word).then_some(id)
    }
}

/// The byte of a `<0xNN>` piece as the reference spells it (`<{b:#04X}>`).
fn byte_piece(token: &str) -> Option<u8> {
    let hex = token.strip_prefix("<0x")?.strip_suffix('>')?;
    let b = u8::from_str_radix(hex, 16).ok()?;
    (hex.len() == 2 && format!("{b:02X}") == hex).then_some(b)
}

fn hash_bytes(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(bytes);
    h.finish()
}

fn pair_key(left: u32, right: u32) -> u64 {
    (u64::from(left) << 32) | u64::from(right)
}

impl InterimBpe {
    /// The engine of a BPE model from its vocabulary (`model.vocab` only:
    /// added tokens never reach the model) and its merges as `[left, right,
    /// merged]` ids in rank order. `None` when a byte has no `<0xNN>` piece
    /// (the built model is then waited for).
    pub(crate) fn build(
        vocab: &[(&str, u32)],
        merges: &[[u32; 3]],
        ignore_merges: bool,
    ) -> Option<Self> {
        let mut bytes = [NONE; 256];
        let mut chars = FxHashMap::default();
        for &(token, id) in vocab {
            let mut it = token.chars();
            if let (Some(c), None) = (it.next(), it.next()) {
                chars.insert(c, id);
            } else if let Some(b) = byte_piece(token) {
                bytes[usize::from(b)] = id;
            }
        }
        if bytes.contains(&NONE) {
            return None;
        }
        let mut pairs = FxHashMap::with_capacity_and_hasher(merges.len(), Default::default());
        for (rank, &[left, right, merged]) in merges.iter().enumerate() {
            pairs.insert(pair_key(left, right), (u32::try_from(rank).ok()?, merged));
        }
        let words = if ignore_merges {
            Some(WordIndex::build(vocab)?)
        } else {
            None
        };
        Some(Self {
            chars,
            bytes,
            pairs,
            words,
            scratch: thread_local::ThreadLocal::new(),
        })
    }

    /// Appends the ids of every span of `text` to `out`, as the built
    /// model's `tokenize_spans` does.
    pub(crate) fn tokenize_spans(&self, text: &str, spans: &[Span], out: &mut Vec<PipelineToken>) {
        let cell = self.scratch.get_or_default();
        let mut scratch = cell.borrow_mut();
        let bytes = text.as_bytes();
        for span in spans {
            let Some(word) = bytes.get(span.range()) else {
                continue;
            };
            self.word(word, &mut scratch, out);
        }
    }

    fn word(&self, word: &[u8], scratch: &mut Scratch, out: &mut Vec<PipelineToken>) {
        if word.is_empty() {
            return;
        }
        if let Some(id) = self.words.as_ref().and_then(|w| w.get(word)) {
            out.push(PipelineToken::from(id));
            return;
        }
        if let Some(ids) = scratch.seen.get(word) {
            out.extend(ids.iter().map(|&id| PipelineToken::from(id)));
            return;
        }
        let first = out.len();
        self.merge(word, scratch, out);
        if scratch.seen.len() >= WORD_MAP_LIMIT {
            scratch.seen.clear();
        }
        let ids: Box<[u32]> = out[first..].iter().map(|t| t.id()).collect();
        scratch.seen.insert(word.into(), ids);
    }

    /// A word's first ids, as the reference's `merge_word` finds them.
    fn start(&self, word: &[u8], ids: &mut Vec<u32>) {
        ids.clear();
        // A span is a slice of a `str` cut on char boundaries.
        let text = String::from_utf8_lossy(word);
        for c in text.chars() {
            match self.chars.get(&c) {
                Some(&id) => ids.push(id),
                None => {
                    let mut buf = [0u8; 4];
                    ids.extend(
                        c.encode_utf8(&mut buf)
                            .bytes()
                            .map(|b| self.bytes[usize::from(b)]),
                    );
                }
            }
        }
    }

    /// The reference's merge loop over one word.
    fn merge(&self, word: &[u8], scratch: &mut Scratch, out: &mut Vec<PipelineToken>) {
        let Scratch {
            ids,
            symbols,
            queue,
            ..
        } = scratch;
        self.start(word, ids);
        symbols.clear();
        queue.clear();
        let Some(last) = ids.len().checked_sub(1) else {
            return;
        };
        for (i, &id) in ids.iter().enumerate() {
            // Positions fit: a span is at most `u32::MAX` bytes.
            let i = i as u32;
            symbols.push(Symbol {
                id,
                prev: if i == 0 { NONE } else { i - 1 },
                next: if i as usize == last { NONE } else { i + 1 },
                alive: true,
            });
        }
        for (i, w) in symbols.windows(2).enumerate() {
            if let Some(&(rank, merged)) = self.pairs.get(&pair_key(w[0].id, w[1].id)) {
                queue.push(Reverse((rank, i as u32, merged)));
            }
        }
        while let Some(Reverse((_, pos, merged))) = queue.pop() {
            let at = pos as usize;
            let left = symbols[at];
            if !left.alive || left.next == NONE {
                continue;
            }
            let right = symbols[left.next as usize];
            if self
                .pairs
                .get(&pair_key(left.id, right.id))
                .is_none_or(|&(_, id)| id != merged)
            {
                continue;
            }
            symbols[at].id = merged;
            symbols[at].next = right.next;
            symbols[left.next as usize].alive = false;
            if right.next != NONE {
                symbols[right.next as usize].prev = pos;
            }
            if left.prev != NONE
                && let Some(&(rank, id)) = self
                    .pairs
                    .get(&pair_key(symbols[left.prev as usize].id, merged))
            {
                queue.push(Reverse((rank, left.prev, id)));
            }
            if right.next != NONE
                && let Some(&(rank, id)) = self
                    .pairs
                    .get(&pair_key(merged, symbols[right.next as usize].id))
            {
                queue.push(Reverse((rank, pos, id)));
            }
        }
        let mut at = 0;
        while at != NONE {
            let symbol = symbols[at as usize];
            out.push(PipelineToken::from(symbol.id));
            at = symbol.next;
        }
    }
}

/// A model that encodes while `tokenizers`' is built.
pub(crate) enum InterimModel {
    Bpe(Box<InterimBpe>),
    WordPiece(InterimWordPiece),
}

impl InterimModel {
    /// Appends the ids of every span of `text` to `out`, as the built
    /// model's `tokenize_spans` does. `by_token` is the file's token → id
    /// table (`Vocab::by_token`), which the WordPiece engine looks up.
    pub(crate) fn tokenize_spans(
        &self,
        text: &str,
        spans: &[Span],
        by_token: &FxHashMap<Box<str>, u32>,
        out: &mut Vec<PipelineToken>,
    ) {
        match self {
            Self::Bpe(bpe) => bpe.tokenize_spans(text, spans, out),
            Self::WordPiece(wp) => wp.tokenize_spans(text, spans, by_token, out),
        }
    }
}

/// `tokenizers` 0.x's `WordPiece::tokenize` (invariant `interim-equals-built`): per word, the
/// longest entry it starts with, then the longest entry the prefix and the
/// rest start with, and so on; a word with a piece no entry starts, or of
/// more than `max_chars` chars, is one unknown token. Entries are looked up
/// in the file's token table and kept when the id is a `model.vocab` one
/// (no second table: a tenth of MiniLM's load).
pub(crate) struct InterimWordPiece {
    /// Whether each id is a `model.vocab` entry.
    model: Vec<bool>,
    prefix: Box<str>,
    max_chars: usize,
    unk: u32,
    /// The longest entry, in bytes: no candidate longer is looked up.
    longest: usize,
}

impl InterimWordPiece {
    /// From `model.vocab`'s entries and the added tokens' `(content, id)`.
    /// `None` when the unknown token is not an entry (the reference then
    /// errors on an unknown word), or an added token's content is an entry
    /// under another id (the token table holds one of the two): the built
    /// model is waited for instead.
    pub(crate) fn build(
        vocab: &[(&str, u32)],
        added: &[(&str, u32)],
        prefix: &str,
        unk_token: &str,
        max_chars: usize,
    ) -> Option<Self> {
        let size = vocab
            .iter()
            .map(|&(_, id)| id as usize + 1)
            .max()
            .unwrap_or(0);
        let mut model = vec![false; size];
        let added: FxHashMap<&str, u32> = added.iter().copied().collect();
        let (mut unk, mut longest) = (None, 0);
        for &(token, id) in vocab {
            model[id as usize] = true;
            longest = longest.max(token.len());
            if token == unk_token {
                unk = Some(id);
            }
            if added.get(token).is_some_and(|&a| a != id) {
                return None;
            }
        }
        Some(Self {
            model,
            prefix: prefix.into(),
            max_chars,
            unk: unk?,
            longest,
        })
    }

    fn tokenize_spans(
        &self,
        text: &str,
        spans: &[Span],
        by_token: &FxHashMap<Box<str>, u32>,
        out: &mut Vec<PipelineToken>,
    ) {
        let mut candidate = String::new();
        for span in spans {
            if let Some(word) = text.get(span.range()) {
                self.word(word, by_token, &mut candidate, out);
            }
        }
    }

    fn word(
        &self,
        word: &str,
        by_token: &FxHashMap<Box<str>, u32>,
        candidate: &mut String,
        out: &mut Vec<PipelineToken>,
    ) {
        if word.is_empty() {
            return;
        }
        let first = out.len();
        if word.chars().count() > self.max_chars {
            out.push(PipelineToken::from(self.unk));
            return;
        }
        let entry = |s: &str| {
            by_token
                .get(s)
                .copied()
                .filter(|&id| self.model.get(id as usize) == Some(&true))
        };
        let mut start = 0;
        while start < word.len() {
            candidate.clear();
            if start > 0 {
                candidate.push_str(&self.prefix);
            }
            let lead = candidate.len();
            let rest = &word[start..];
            // The longest `rest[..end]` (on a char boundary, not empty) whose
            // candidate is an entry.
            let mut found = None;
            let mut end = rest.len().min(self.longest.saturating_sub(lead));
            while end > 0 {
                if let Some(piece) = rest.get(..end) {
                    candidate.truncate(lead);
                    candidate.push_str(piece);
                    if let Some(id) = entry(candidate) {
                        found = Some((id, end));
                        break;
                    }
                }
                end -= 1;
            }
            let Some((id, end)) = found else {
                out.truncate(first);
                out.push(PipelineToken::from(self.unk));
                return;
            };
            out.push(PipelineToken::from(id));
            start += end;
        }
    }
}

/// `tokenizers`' own unit cases for its BPE (`models/bpe/model.rs`) and its
/// pipeline WordPiece (`models/wordpiece/mod.rs`), on the interim engines.
/// The shared files are compared with the built models in `tests/it/interim.rs`.
#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-fallback pieces at ids 1000 + byte, which the char engine
    /// needs all of.
    fn with_byte_pieces(vocab: &[(&str, u32)]) -> Vec<(String, u32)> {
        let mut all: Vec<(String, u32)> = vocab.iter().map(|&(t, id)| (t.to_owned(), id)).collect();
        all.extend((0..=255u32).map(|b| (format!("<0x{b:02X}>"), 1000 + b)));
        all
    }

    fn char_bpe(
        vocab: &[(&str, u32)],
        merges: &[(&str, &str)],
        ignore_merges: bool,
    ) -> Option<InterimBpe> {
        let owned = with_byte_pieces(vocab);
        let entries: Vec<(&str, u32)> = owned.iter().map(|(t, id)| (t.as_str(), *id)).collect();
        let id = |t: &str| entries.iter().find(|e| e.0 == t).map(|e| e.1);
        let triples: Vec<[u32; 3]> = merges
            .iter()
            .map(|&(a, b)| {
                [
                    id(a).unwrap(),
                    id(b).unwrap(),
                    id(&format!("{a}{b}")).unwrap(),
                ]
            })
            .collect();
        InterimBpe::build(&entries, &triples, ignore_merges)
    }

    fn bpe_ids(bpe: &InterimBpe, word: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let span = Span::new(0, u32::try_from(word.len()).unwrap());
        bpe.tokenize_spans(word, &[span], &mut out);
        out.into_iter().map(|t| t.id()).collect()
    }

    /// `test_tokenize_with_and_without_dropout`, without dropout.
    #[test]
    fn unrelated_merges_whole() {
        let vocab = [
            ("u", 0),
            ("n", 1),
            ("r", 2),
            ("e", 3),
            ("l", 4),
            ("a", 5),
            ("t", 6),
            ("d", 7),
            ("re", 8),
            ("at", 9),
            ("ed", 10),
            ("un", 11),
            ("ated", 12),
            ("rel", 13),
            ("related", 14),
            ("unrelated", 15),
        ];
        let merges = [
            ("r", "e"),
            ("a", "t"),
            ("e", "d"),
            ("u", "n"),
            ("at", "ed"),
            ("re", "l"),
            ("rel", "ated"),
            ("un", "related"),
        ];
        let bpe = char_bpe(&vocab, &merges, false).unwrap();
        assert_eq!(bpe_ids(&bpe, "unrelated"), [15]);
    }

    /// `test_ignore_merges`, both ways.
    #[test]
    fn ignore_merges_takes_whole_entries() {
        let vocab = [
            (".:.:", 0),
            ("Ġbelirtilen", 1),
            (".", 2),
            (":", 3),
            ("bel", 4),
            ("irtilen", 5),
            ("Ġ", 6),
            (".:", 7),
            ("belirtilen", 8),
            (".:.", 9),
            ("be", 10),
            ("l", 11),
            ("ir", 12),
            ("ti", 13),
            ("en", 14),
            ("irtil", 15),
            ("irti", 16),
            ("i", 17),
            ("r", 18),
            ("t", 19),
            ("b", 20),
            ("e", 21),
            ("n", 22),
        ];
        let merges = [
            (".", ":"),
            ("b", "e"),
            ("be", "l"),
            ("i", "r"),
            ("t", "i"),
            ("ir", "ti"),
            ("e", "n"),
            ("irti", "l"),
        ];
        let on = char_bpe(&vocab, &merges, true).unwrap();
        assert_eq!(bpe_ids(&on, ".:.:"), [0]);
        assert_eq!(bpe_ids(&on, "Ġbelirtilen"), [1]);
        let off = char_bpe(&vocab, &merges, false).unwrap();
        assert_eq!(bpe_ids(&off, ".:.:"), [7, 7]);
        assert_eq!(bpe_ids(&off, "Ġbelirtilen"), [6, 4, 15, 14]);
    }

    /// `test_bpe_byte_fallback` and `…_newline`: a char without an entry is
    /// its bytes' pieces. Where a piece is missing the reference falls to
    /// the unknown token, which this engine leaves to the built model.
    #[test]
    fn byte_fallback_pieces() {
        let bpe = char_bpe(&[("<unk>", 0)], &[], false).unwrap();
        assert_eq!(bpe_ids(&bpe, "a"), [1000 + 0x61]);
        assert_eq!(bpe_ids(&bpe, "\n"), [1000 + 0x0A]);
        assert_eq!(bpe_ids(&bpe, "é"), [1000 + 0xC3, 1000 + 0xA9]);
        let partial: Vec<(&str, u32)> = vec![("<unk>", 0), ("<0x61>", 1)];
        assert!(InterimBpe::build(&partial, &[], false).is_none());
    }

    /// The reference collects its merges into a map, so a pair listed twice
    /// keeps its last rank: here `b c` (rank 1) before `a b` (rank 2).
    #[test]
    fn a_repeated_merge_keeps_its_last_rank() {
        let vocab = [("a", 0), ("b", 1), ("c", 2), ("ab", 3), ("bc", 4)];
        let bpe = char_bpe(&vocab, &[("a", "b"), ("b", "c"), ("a", "b")], false).unwrap();
        assert_eq!(bpe_ids(&bpe, "abc"), [0, 4]);
    }

    fn wordpiece(
        vocab: &[(&str, u32)],
        max_chars: usize,
    ) -> (InterimWordPiece, FxHashMap<Box<str>, u32>) {
        let wp = InterimWordPiece::build(vocab, &[], "##", "[UNK]", max_chars).unwrap();
        let by_token = vocab.iter().map(|&(t, id)| (t.into(), id)).collect();
        (wp, by_token)
    }

    fn wp_ids(wp: &(InterimWordPiece, FxHashMap<Box<str>, u32>), word: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let span = Span::new(0, u32::try_from(word.len()).unwrap());
        wp.0.tokenize_spans(word, &[span], &wp.1, &mut out);
        out.into_iter().map(|t| t.id()).collect()
    }

    /// `cache_hits_agree_with_a_cold_run`'s words.
    #[test]
    fn wordpiece_longest_match_and_unknown_words() {
        let vocab = [
            ("[UNK]", 0),
            ("hell", 1),
            ("##o", 2),
            ("hello", 3),
            ("world", 4),
        ];
        let wp = wordpiece(&vocab, 8);
        assert_eq!(wp_ids(&wp, "hello"), [3]);
        // No entry for `##w`: the whole word is one unknown token.
        assert_eq!(wp_ids(&wp, "hellow"), [0]);
        // Past `max_input_chars_per_word`.
        assert_eq!(wp_ids(&wp, "hellohello"), [0]);
        assert_eq!(wp_ids(&wp, "東京"), [0]);
        assert_eq!(wp_ids(&wp, &"hello".repeat(300)), [0]);
    }

    /// `accepts_an_empty_token_in_the_vocab` (bert-base-arabert ships `""`).
    #[test]
    fn wordpiece_with_an_empty_entry() {
        let wp = wordpiece(&[("", 0), ("[UNK]", 1), ("hello", 2)], 100);
        assert_eq!(wp_ids(&wp, "hello"), [2]);
        assert_eq!(wp_ids(&wp, "world"), [1]);
    }
}
