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

use super::model::{PieceSink, Vocab};
use super::trie::Trie;
use super::utf8::char_len_at;

const UNK_PENALTY: f32 = 10.0;
const SCORE_RESET_THRESHOLD: f32 = 100_000.0;

#[derive(Debug, Clone, Copy)]
struct BestNode {
    id: u32,
    score: f32,
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
}

impl Unigram {
    /// `trie` maps every NORMAL / USER_DEFINED / UNUSED piece to its id.
    pub(crate) fn new(vocab: &Vocab, trie: Trie) -> Self {
        let mut min_score = f32::MAX;
        for id in 0..vocab.len() as u32 {
            if vocab.kind(id) == super::PieceType::Normal {
                min_score = min_score.min(vocab.score(id));
            }
        }
        Self {
            trie,
            unk_score: min_score - UNK_PENALTY,
        }
    }

    /// Encodes `normalized`, pushing (byte range, id) for every piece of the
    /// best path; unknown characters get `vocab.unk_id_raw()`.
    pub(crate) fn encode<S: PieceSink>(
        &self,
        vocab: &Vocab,
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
        let best = &mut scratch.best;
        best.clear();
        best.resize(
            size + 1,
            BestNode {
                id: u32::MAX,
                score: 0.0,
                starts_at: usize::MAX,
            },
        );
        let mut starts_at = 0usize;
        let mut max_frontier = 0usize;
        while starts_at < size {
            let mut till_here = best[starts_at].score;
            if !(-SCORE_RESET_THRESHOLD..=SCORE_RESET_THRESHOLD).contains(&till_here) {
                let offset = till_here;
                let hi = max_frontier.min(size);
                for (i, node) in best.iter_mut().enumerate().take(hi + 1).skip(starts_at) {
                    if i == starts_at || node.starts_at != usize::MAX {
                        node.score -= offset;
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
                if kind == super::PieceType::Unused {
                    return true;
                }
                let key_pos = starts_at + length;
                max_frontier = max_frontier.max(key_pos);
                let score = if kind == super::PieceType::UserDefined {
                    (0.1f64 * f64::from(length as i32 - 1)) as f32
                } else {
                    vocab.score(id)
                };
                let candidate = score + till_here;
                let target = &mut best[key_pos];
                if target.starts_at == usize::MAX || candidate > target.score {
                    target.score = candidate;
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
                let candidate = self.unk_score + till_here;
                let target = &mut best[starts_at + mblen];
                if target.starts_at == usize::MAX || candidate > target.score {
                    target.score = candidate;
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
