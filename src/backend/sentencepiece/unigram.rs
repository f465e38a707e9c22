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

#[derive(Debug, Clone, Copy)]
struct BestNode {
    id: u32,
    /// Always an f32 value (widened for llama.cpp's f64 comparisons).
    score: f64,
    /// `usize::MAX` for "not reached".
    starts_at: usize,
}

/// Reusable buffers for [`Unigram::encode`].
#[derive(Debug, Default)]
pub(crate) struct UnigramScratch {
    best: Vec<BestNode>,
    path: Vec<(usize, usize, u32)>,
}

impl UnigramScratch {
    /// Frees buffers larger than `keep` bytes.
    pub(crate) fn trim(&mut self, keep: usize) {
        if self.best.capacity() * std::mem::size_of::<BestNode>() > keep {
            self.best = Vec::new();
        }
        if self.path.capacity() * 24 > keep {
            self.path = Vec::new();
        }
    }
}

/// Unigram tables.
#[derive(Debug, Clone)]
pub(crate) struct Unigram {
    trie: Trie,
    unk_score: f32,
    flavor: Flavor,
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
            trie,
            unk_score: min_score - UNK_PENALTY,
            flavor,
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
        let size = normalized.len();
        if size == 0 {
            return;
        }
        let unk_id = vocab.unk_id_raw();
        let n_pieces = vocab.len();
        let llama = self.flavor == Flavor::LlamaCpp;
        let best = &mut scratch.best;
        best.clear();
        // llama.cpp starts every position at {unk, 0, -FLT_MAX} and position
        // 0 at score 0; sentencepiece marks positions as not reached.
        let unreached = if llama {
            BestNode {
                id: unk_id,
                score: f64::from(-f32::MAX),
                starts_at: 0,
            }
        } else {
            BestNode {
                id: u32::MAX,
                score: 0.0,
                starts_at: usize::MAX,
            }
        };
        best.resize(size + 1, unreached);
        best[0].score = 0.0;
        // Whether `candidate` replaces the best path ending at `target`.
        let better = |target: &BestNode, candidate: f64| {
            if llama {
                candidate > target.score
            } else {
                target.starts_at == usize::MAX || candidate > target.score
            }
        };
        // A path score plus an edge score: f64 for llama.cpp (compared
        // unrounded, stored as f32 below), f32 for sentencepiece.
        let add = |till_here: f64, score: f32| {
            if llama {
                till_here + f64::from(score)
            } else {
                f64::from(score + till_here as f32)
            }
        };
        let mut starts_at = 0usize;
        let mut max_frontier = 0usize;
        while starts_at < size {
            let mut till_here = best[starts_at].score;
            if !llama && !(-SCORE_RESET_THRESHOLD..=SCORE_RESET_THRESHOLD).contains(&till_here) {
                let offset = till_here as f32;
                let hi = max_frontier.min(size);
                for (i, node) in best.iter_mut().enumerate().take(hi + 1).skip(starts_at) {
                    if i == starts_at || node.starts_at != usize::MAX {
                        node.score = f64::from(node.score as f32 - offset);
                    }
                }
                till_here = 0.0;
            }
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
                max_frontier = max_frontier.max(key_pos);
                let score = match kind {
                    PieceType::UserDefined if llama => 0.0,
                    PieceType::UserDefined => (0.1f64 * f64::from(length as i32 - 1)) as f32,
                    _ => vocab.score(id),
                };
                let candidate = add(till_here, score);
                let target = &mut best[key_pos];
                if better(target, candidate) {
                    target.score = f64::from(candidate as f32);
                    target.starts_at = starts_at;
                    target.id = id;
                }
                if length == mblen {
                    has_single_node = true;
                }
                true
            });
            if !has_single_node {
                max_frontier = max_frontier.max(starts_at + mblen);
                let candidate = add(till_here, self.unk_score);
                let target = &mut best[starts_at + mblen];
                if better(target, candidate) {
                    target.score = f64::from(candidate as f32);
                    target.starts_at = starts_at;
                    target.id = unk_id;
                }
            }
            starts_at += mblen;
        }
        let path = &mut scratch.path;
        path.clear();
        let mut ends_at = size;
        while ends_at > 0 {
            let node = best[ends_at];
            if node.starts_at >= ends_at {
                // Unreachable for a well-formed lattice; stop rather than loop.
                break;
            }
            path.push((node.starts_at, ends_at, node.id));
            ends_at = node.starts_at;
        }
        for &(s, e, id) in path.iter().rev() {
            sink.piece(s, &normalized[s..e], id);
        }
    }
}
