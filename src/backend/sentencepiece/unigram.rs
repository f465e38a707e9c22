//! Unigram segmentation: sentencepiece's `EncodeOptimized` Viterbi
//! (`unigram_model.cc`, 0.2.3), reproduced operation for operation so that
//! float rounding, ties and the score re-basing give the same path.
//!
//! - Positions are UTF-8 byte offsets; a "character" is `OneCharLen` bytes.
//! - From each character start, every piece that is a prefix of the rest of
//!   the text (shortest first) is a candidate edge; UNUSED pieces are
//!   skipped. A USER_DEFINED piece scores `0.1 * (byte_length - 1)`, any
//!   other piece its own score.
//! - If no piece covers exactly one character, an unknown edge of one
//!   character scores `min(NORMAL scores) - 10`.
//! - An edge replaces the best path ending at its end only when strictly
//!   better (f32 arithmetic); the first candidate always sets it.
//! - When the running score leaves [-100000, 100000] the scores from the
//!   current position to the furthest reached position are re-based, exactly
//!   as sentencepiece does.
//!
//! [`Flavor::LlamaCpp`] is llama.cpp's `llm_tokenizer_ugm_session::tokenize`
//! (GGUF `t5` vocabularies, c392e509) on the same lattice walk: a candidate
//! is the f32 best score of its start plus the edge score, added and
//! compared in f64 against the f32 best score of its end, and stored
//! rounded to f32 (`best_tokenization::score_sum` is a float there); no
//! re-basing; USER_DEFINED pieces score 0; UNUSED pieces are candidates like
//! NORMAL ones; a position no edge reached keeps llama.cpp's initial
//! `{unk, 0, -FLT_MAX}`.

use super::PieceType;
use super::model::{PieceSink, Vocab};
use super::trie::Trie;
use super::utf8::char_len_at;

/// What the lattice needs from a piece table.
pub(crate) trait UnigramVocab {
    fn len(&self) -> usize;
    fn kind(&self, id: u32) -> PieceType;
    fn score(&self, id: u32) -> f32;
    /// The id an unknown character becomes ([`super::model::NO_ID`] for none).
    fn unk_id_raw(&self) -> u32;
}

impl UnigramVocab for Vocab {
    fn len(&self) -> usize {
        Vocab::len(self)
    }
    fn kind(&self, id: u32) -> PieceType {
        Vocab::kind(self, id)
    }
    fn score(&self, id: u32) -> f32 {
        Vocab::score(self, id)
    }
    fn unk_id_raw(&self) -> u32 {
        Vocab::unk_id_raw(self)
    }
}

/// Whose Viterbi rules the lattice follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// sentencepiece 0.2.3 (`EncodeOptimized`).
    SentencePiece,
    /// llama.cpp's UGM tokenizer.
    LlamaCpp,
}

const UNK_PENALTY: f32 = 10.0;
const SCORE_RESET_THRESHOLD: f64 = 100_000.0;
/// The sentencepiece flavor's lattice emits its settled part at the first
/// position every path passes through once it holds this many positions
/// (invariant `sentencepiece-fast-paths-exact`): 48 KiB of nodes, where a whole text's lattice was
/// 12 bytes a
/// byte of text.
const WINDOW: usize = 4096;

/// A lattice position: `u32` in the scratch (a node of 12 bytes, as
/// sentencepiece's `BestPathNode`), `usize` for a text of 4 GiB or more.
trait Position: Copy + PartialEq {
    /// "Not reached" (sentencepiece's `starts_at = -1`).
    const NONE: Self;
    /// `n`, which is below [`Self::NONE`] (the caller picks the width).
    fn at(n: usize) -> Self;
    fn get(self) -> usize;
}

impl Position for u32 {
    const NONE: Self = u32::MAX;
    #[inline(always)]
    fn at(n: usize) -> Self {
        n as u32
    }
    #[inline(always)]
    fn get(self) -> usize {
        self as usize
    }
}

impl Position for usize {
    const NONE: Self = usize::MAX;
    #[inline(always)]
    fn at(n: usize) -> Self {
        n
    }
    #[inline(always)]
    fn get(self) -> usize {
        self
    }
}

#[derive(Debug, Clone, Copy)]
struct BestNode<P> {
    id: u32,
    /// The best path's score, an f32 in both flavors (llama.cpp compares
    /// in f64 and stores f32).
    score: f32,
    /// [`Position::NONE`] for "not reached".
    starts_at: P,
}

/// Reusable buffers for [`Unigram::encode`].
#[derive(Debug, Default)]
pub(crate) struct UnigramScratch {
    best: Vec<BestNode<u32>>,
    path: Vec<(usize, usize, u32)>,
}

impl UnigramScratch {
    /// Frees buffers larger than `keep` bytes.
    pub(crate) fn trim(&mut self, keep: usize) {
        if self.best.capacity() * std::mem::size_of::<BestNode<u32>>() > keep {
            self.best = Vec::new();
        }
        if self.path.capacity() * 24 > keep {
            self.path = Vec::new();
        }
    }
}

/// Where the windowed lattice stands: `best[i]` is position `base + i`,
/// settled parts are emitted from `flush_from` on, and nodes exist up to
/// `covered` (exclusive). `check_at` is the position from which either
/// needs a look: one compare a char.
struct Window {
    /// The text's length.
    size: usize,
    /// No edge is longer than this.
    reach: usize,
    /// Positions between settle points ([`WINDOW`]; `usize::MAX`: none).
    window: usize,
    base: usize,
    covered: usize,
    flush_from: usize,
    check_at: usize,
}

impl Window {
    /// The next position at which to settle or to grow the nodes.
    #[inline(always)]
    fn next_check(&self) -> usize {
        let grow_from = if self.covered > self.size {
            usize::MAX
        } else {
            self.covered.saturating_sub(self.reach)
        };
        self.flush_from.min(grow_from)
    }

    /// At a check position: emits the settled path up to `starts_at` and
    /// moves the window there when every path passes through it, and grows
    /// the nodes as far as an edge from here can end.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn advance<P: Position, S: PieceSink>(
        &mut self,
        best: &mut Vec<BestNode<P>>,
        starts_at: usize,
        max_frontier: usize,
        unreached: BestNode<P>,
        normalized: &[u8],
        path: &mut Vec<(usize, usize, u32)>,
        sink: &mut S,
    ) {
        // Every path passes through `starts_at` when no edge from
        // before it ends past it: the path up to it is settled.
        if starts_at >= self.flush_from && max_frontier <= starts_at {
            Unigram::emit_settled(best, self.base, starts_at, normalized, path, sink);
            // Past the frontier every node is still unreached: the
            // nodes from `starts_at` on move to the front as they are.
            best.copy_within(starts_at - self.base.., 0);
            best.truncate(self.covered - starts_at);
            self.base = starts_at;
            self.flush_from = self.base.saturating_add(self.window);
        }
        // Nodes as far as an edge from here can end.
        if (starts_at + self.reach).min(self.size) >= self.covered {
            let to = (starts_at + self.reach + self.window).min(self.size) + 1;
            best.resize(to - self.base, unreached);
            self.covered = to;
        }
        self.check_at = self.next_check();
    }
}

/// sentencepiece's score re-basing: subtracts `offset` (the score at
/// `starts_at`) from the nodes from `starts_at` to `hi` that are reached.
#[inline(always)]
fn rebase<P: Position>(
    best: &mut [BestNode<P>],
    base: usize,
    starts_at: usize,
    hi: usize,
    offset: f32,
) {
    for (i, node) in best
        .iter_mut()
        .enumerate()
        .take(hi - base + 1)
        .skip(starts_at - base)
    {
        if i == starts_at - base || node.starts_at != P::NONE {
            node.score -= offset;
        }
    }
}

/// Whether `candidate` replaces the best path ending at `target`.
#[inline(always)]
fn better<P: Position>(llama: bool, target: &BestNode<P>, candidate: f64) -> bool {
    if llama {
        candidate > f64::from(target.score)
    } else {
        target.starts_at == P::NONE || candidate > f64::from(target.score)
    }
}

/// A path score plus an edge score: f64 for llama.cpp (compared
/// unrounded, stored as f32 by the caller), f32 for sentencepiece.
#[inline(always)]
fn add(llama: bool, till_here: f64, score: f32) -> f64 {
    if llama {
        till_here + f64::from(score)
    } else {
        f64::from(score + till_here as f32)
    }
}

/// Unigram tables.
#[derive(Debug, Clone)]
pub(crate) struct Unigram {
    trie: Trie,
    unk_score: f32,
    flavor: Flavor,
    /// [`WINDOW`]; the tests vary it.
    window: usize,
}

impl Unigram {
    /// `trie` maps every NORMAL / USER_DEFINED / UNUSED piece to its id.
    pub(crate) fn new<V: UnigramVocab>(vocab: &V, trie: Trie) -> Self {
        Self::with_flavor(vocab, trie, Flavor::SentencePiece)
    }

    /// Like [`new`](Self::new), following `flavor`'s rules.
    pub(crate) fn with_flavor<V: UnigramVocab>(vocab: &V, trie: Trie, flavor: Flavor) -> Self {
        let mut min_score = f32::MAX;
        for id in 0..vocab.len() as u32 {
            if vocab.kind(id) == PieceType::Normal {
                min_score = min_score.min(vocab.score(id));
            }
        }
        Self {
            // The lattice searches from every char (invariant `sentencepiece-fast-paths-exact`).
            trie: trie.with_char_jump(),
            unk_score: min_score - UNK_PENALTY,
            flavor,
            window: WINDOW,
        }
    }

    /// Encodes `normalized`, pushing (byte range, id) for every piece of the
    /// best path; unknown characters get `vocab.unk_id_raw()`.
    pub(crate) fn encode<V: UnigramVocab, S: PieceSink>(
        &self,
        vocab: &V,
        normalized: &[u8],
        scratch: &mut UnigramScratch,
        sink: &mut S,
    ) {
        let UnigramScratch { best, path } = scratch;
        if normalized.len() < u32::MAX as usize {
            self.lattice(vocab, normalized, best, path, sink);
        } else {
            self.lattice::<usize, V, S>(vocab, normalized, &mut Vec::new(), path, sink);
        }
    }

    /// [`encode`](Self::encode) with positions of type `P`, which holds
    /// every position of `normalized` below `P::NONE`.
    fn lattice<P: Position, V: UnigramVocab, S: PieceSink>(
        &self,
        vocab: &V,
        normalized: &[u8],
        best: &mut Vec<BestNode<P>>,
        path: &mut Vec<(usize, usize, u32)>,
        sink: &mut S,
    ) {
        let size = normalized.len();
        if size == 0 {
            return;
        }
        let unk_id = vocab.unk_id_raw();
        let n_pieces = vocab.len();
        let llama = self.flavor == Flavor::LlamaCpp;
        best.clear();
        let unreached = self.unreached_node::<P>(unk_id);
        // sentencepiece's lattice in a window over `base..` (invariant
        // `sentencepiece-fast-paths-exact`):
        // `best[i]` is position `base + i`. llama.cpp's flavor keeps the
        // whole text, since a position no edge reached there sends the path
        // back to 0.
        let window = if llama { usize::MAX } else { self.window };
        let windowed = window != usize::MAX;
        // No edge is longer than this.
        let reach = self.trie.max_key_len().max(4);
        let mut w = Window {
            size,
            reach,
            window,
            base: 0,
            // Settled parts are emitted from `flush_from` on; nodes exist up
            // to `covered` (exclusive).
            covered: if windowed {
                (size + 1).min(window.saturating_mul(2).saturating_add(reach + 1))
            } else {
                size + 1
            },
            flush_from: window,
            check_at: 0,
        };
        w.check_at = w.next_check();
        best.resize(w.covered, unreached);
        best[0].score = 0.0;
        let mut starts_at = 0usize;
        let mut max_frontier = 0usize;
        while starts_at < size {
            if starts_at >= w.check_at {
                w.advance(
                    best,
                    starts_at,
                    max_frontier,
                    unreached,
                    normalized,
                    path,
                    sink,
                );
            }
            let mut till_here = f64::from(best[starts_at - w.base].score);
            if !llama && !(-SCORE_RESET_THRESHOLD..=SCORE_RESET_THRESHOLD).contains(&till_here) {
                rebase(
                    best,
                    w.base,
                    starts_at,
                    max_frontier.min(size),
                    till_here as f32,
                );
                till_here = 0.0;
            }
            let mblen = self.relax(
                vocab,
                normalized,
                (starts_at, till_here),
                (n_pieces, unk_id, llama),
                &mut best[..],
                w.base,
                &mut max_frontier,
            );
            starts_at += mblen;
        }
        Self::emit_settled(best, w.base, size, normalized, path, sink);
    }

    /// A position's node before any edge reaches it: llama.cpp starts every
    /// position at {unk, 0, -FLT_MAX} (and position 0 at score 0, set by the
    /// caller); sentencepiece marks positions as not reached.
    #[inline(always)]
    fn unreached_node<P: Position>(&self, unk_id: u32) -> BestNode<P> {
        if self.flavor == Flavor::LlamaCpp {
            BestNode {
                id: unk_id,
                score: -f32::MAX,
                starts_at: P::at(0),
            }
        } else {
            BestNode {
                id: u32::MAX,
                score: 0.0,
                starts_at: P::NONE,
            }
        }
    }

    /// Relaxes every edge from `starts_at` (whose best path scores
    /// `till_here`): each piece that is a prefix of the rest of the text,
    /// and the unknown edge of one character when no piece covers exactly
    /// one. Returns the character's byte length.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn relax<P: Position, V: UnigramVocab>(
        &self,
        vocab: &V,
        normalized: &[u8],
        (starts_at, till_here): (usize, f64),
        (n_pieces, unk_id, llama): (usize, u32, bool),
        best: &mut [BestNode<P>],
        base: usize,
        max_frontier: &mut usize,
    ) -> usize {
        let rest = &normalized[starts_at..];
        let mblen = char_len_at(rest);
        let mut has_single_node = false;
        self.trie.for_each_prefix(rest, |length, id| {
            if (id as usize) >= n_pieces {
                return true;
            }
            let kind = vocab.kind(id);
            if kind == PieceType::Unused && !llama {
                return true;
            }
            let key_pos = starts_at + length;
            *max_frontier = (*max_frontier).max(key_pos);
            let score = match kind {
                PieceType::UserDefined if llama => 0.0,
                PieceType::UserDefined => (0.1f64 * f64::from(length as i32 - 1)) as f32,
                _ => vocab.score(id),
            };
            let candidate = add(llama, till_here, score);
            let target = &mut best[key_pos - base];
            if better(llama, target, candidate) {
                target.score = candidate as f32;
                target.starts_at = P::at(starts_at);
                target.id = id;
            }
            if length == mblen {
                has_single_node = true;
            }
            true
        });
        if !has_single_node {
            *max_frontier = (*max_frontier).max(starts_at + mblen);
            let candidate = add(llama, till_here, self.unk_score);
            let target = &mut best[starts_at + mblen - base];
            if better(llama, target, candidate) {
                target.score = candidate as f32;
                target.starts_at = P::at(starts_at);
                target.id = unk_id;
            }
        }
        mblen
    }

    /// Emits the best path from `base` to `end` (positions `best` holds
    /// from `base` on), back from `end` and then in order.
    fn emit_settled<P: Position, S: PieceSink>(
        best: &[BestNode<P>],
        base: usize,
        end: usize,
        normalized: &[u8],
        path: &mut Vec<(usize, usize, u32)>,
        sink: &mut S,
    ) {
        path.clear();
        let mut ends_at = end;
        while ends_at > base {
            let Some(node) = best.get(ends_at - base) else {
                break;
            };
            let starts_at = node.starts_at.get();
            if starts_at >= ends_at || starts_at < base {
                // Unreachable for a well-formed lattice (and a settled
                // window never starts inside an edge); stop rather than loop.
                break;
            }
            path.push((starts_at, ends_at, node.id));
            ends_at = starts_at;
        }
        for &(s, e, id) in path.iter().rev() {
            sink.piece(s, &normalized[s..e], id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces with scores low enough that a long text re-bases the scores
    /// (sentencepiece) many times, an unused and a user-defined piece, and
    /// chars no piece covers (unknown edges).
    struct Table(Vec<(&'static str, f32, PieceType)>);

    impl UnigramVocab for Table {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn kind(&self, id: u32) -> PieceType {
            self.0[id as usize].2
        }
        fn score(&self, id: u32) -> f32 {
            self.0[id as usize].1
        }
        fn unk_id_raw(&self) -> u32 {
            0
        }
    }

    #[derive(Default)]
    struct Pieces(Vec<(usize, usize, u32)>);

    impl PieceSink for Pieces {
        fn piece(&mut self, start: usize, bytes: &[u8], id: u32) {
            self.0.push((start, bytes.len(), id));
        }
        fn plain(&mut self, start: usize, ids: &[u32], lens: &[u8]) {
            let mut s = start;
            for (&id, &len) in ids.iter().zip(lens) {
                self.piece(s, &vec![0; usize::from(len)], id);
                s += usize::from(len);
            }
        }
        fn plain_one(&mut self, start: usize, len: usize, id: u32) {
            self.0.push((start, len, id));
        }
    }

    /// The pieces of `text`'s best path, positions of type `P`.
    fn best_path<P: Position>(uni: &Unigram, table: &Table, text: &str) -> Pieces {
        let mut pieces = Pieces::default();
        uni.lattice::<P, _, _>(
            table,
            text.as_bytes(),
            &mut Vec::new(),
            &mut Vec::new(),
            &mut pieces,
        );
        pieces
    }

    /// Pieces with scores low enough that a long text re-bases the scores
    /// (sentencepiece) many times, unused and user-defined pieces, pieces
    /// with `▁`, a long piece, and the trie over them.
    fn table_and_trie() -> (Table, Trie) {
        let table = Table(vec![
            ("<unk>", 0.0, PieceType::Unknown),
            ("a", -900.0, PieceType::Normal),
            ("b", -950.0, PieceType::Normal),
            ("ab", -1500.0, PieceType::Normal),
            ("abc", -2100.0, PieceType::Normal),
            ("ba", -1700.0, PieceType::Normal),
            ("c", -1000.0, PieceType::Normal),
            ("cab", -2500.0, PieceType::Unused),
            ("ca", -1.0, PieceType::UserDefined),
            ("é", -1200.0, PieceType::Normal),
            ("▁", -3.0, PieceType::Normal),
            ("▁ab", -4.0, PieceType::Normal),
            ("abcabcab", -7000.0, PieceType::Normal),
            ("éé", -2399.5, PieceType::Normal),
        ]);
        let trie = Trie::build(
            table
                .0
                .iter()
                .enumerate()
                .skip(1)
                .map(|(id, (p, _, _))| (p.as_bytes(), id as u32)),
        );
        (table, trie)
    }

    /// The lattice in windows emits what the whole lattice does (invariant
    /// `sentencepiece-fast-paths-exact`): windows from one position up, over texts that re-base the
    /// scores (sentencepiece) many times, with unknown, user-defined and
    /// unused edges and pieces that span where a window might end.
    #[test]
    fn windows_give_the_whole_lattice_path() {
        let (table, trie) = table_and_trie();
        let parts = [
            "ab", "c", "abc", "ba", "é", "x", "cab", "€", "▁", "▁ab", "abcabcab", "éé",
        ];
        let whole = Unigram {
            window: usize::MAX,
            ..Unigram::new(&table, trie)
        };
        for seed in 0..40usize {
            let text: String = (0..200 + seed * 37)
                .map(|i| parts[(i * (seed + 3) + i / (seed + 2)) % parts.len()])
                .collect();
            let want = best_path::<u32>(&whole, &table, &text);
            for window in [1, 2, 3, 5, 8, 64, 4096] {
                let uni = Unigram {
                    window,
                    ..whole.clone()
                };
                assert_eq!(
                    best_path::<u32>(&uni, &table, &text).0,
                    want.0,
                    "seed {seed}, window {window}"
                );
            }
        }
    }

    /// The lattice keeps positions in `u32` below 4 GiB and in `usize`
    /// above; both widths give the same path, in both flavors.
    #[test]
    fn both_position_widths_give_the_same_path() {
        let (table, trie) = table_and_trie();
        let text: String = (0..3000)
            .map(|i| ["ab", "c", "abc", "ba", "é", "x", "cab", "€"][(i * 7 + i / 5) % 8])
            .collect();
        for flavor in [Flavor::SentencePiece, Flavor::LlamaCpp] {
            let uni = Unigram::with_flavor(&table, trie.clone(), flavor);
            let (narrow, wide) = (
                best_path::<u32>(&uni, &table, &text),
                best_path::<usize>(&uni, &table, &text),
            );
            assert_eq!(narrow.0, wide.0, "{flavor:?}");
            // The whole lattice at once gives the same path (invariant
            // `sentencepiece-fast-paths-exact`).
            let whole = Unigram {
                window: usize::MAX,
                ..uni.clone()
            };
            assert_eq!(
                best_path::<u32>(&whole, &table, &text).0,
                narrow.0,
                "{flavor:?}"
            );
            // The path covers the text, with unknown edges for `x` and `€`.
            assert_eq!(narrow.0.iter().map(|p| p.1).sum::<usize>(), text.len());
            assert!(narrow.0.iter().any(|p| p.2 == 0));
        }
    }
}
