//! `t5` vocabularies (llama.cpp's UGM) on the SentencePiece Unigram engine:
//! the normalizer and the Viterbi lattice of `backend/sentencepiece`, run
//! with [`Flavor::LlamaCpp`], which carries llama.cpp's differences
//! (`llm_tokenizer_ugm_session` at c392e509):
//! - each raw-text fragment left by the special-token split is normalized
//!   and segmented on its own, so `add_space_prefix` marks every fragment;
//! - normalization: user-defined tokens, then the precompiled charsmap, then
//!   llama.cpp's whitespace pass (see `sentencepiece::normalizer`);
//! - lattice: NORMAL, USER_DEFINED and UNUSED tokens are candidates,
//!   USER_DEFINED ones score 0, sums are f64; an uncovered character is the
//!   unk token at `min(NORMAL scores) - 10`;
//! - consecutive unk tokens collapse into one; there is no byte fallback.

use std::cell::RefCell;
use std::path::Path;

use super::vocab::{Vocab, attr, key};
use crate::backend::sentencepiece::ugm::{
    Flavor, NO_ID, Normalizer, NormalizerSpec, PieceSink, PieceType, PrefixMatcher, Trie, Unigram,
    UnigramScratch, UnigramVocab,
};
use crate::error::{Error, Result};

/// The UGM segmenter of one vocabulary.
pub(crate) struct Ugm {
    unigram: Unigram,
    normalizer: Normalizer,
    matcher: PrefixMatcher,
}

#[derive(Default)]
struct Scratch {
    normalized: Vec<u8>,
    n2o: Vec<usize>,
    lattice: UnigramScratch,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl UnigramVocab for Vocab {
    fn len(&self) -> usize {
        Vocab::len(self)
    }

    fn kind(&self, id: u32) -> PieceType {
        let a = self.attr(id);
        if a & attr::NORMAL != 0 {
            PieceType::Normal
        } else if a & attr::USER_DEFINED != 0 {
            PieceType::UserDefined
        } else if a & attr::UNUSED != 0 {
            PieceType::Unused
        } else if a & attr::UNKNOWN != 0 {
            PieceType::Unknown
        } else if a & attr::BYTE != 0 {
            PieceType::Byte
        } else {
            // CONTROL and UNDEFINED: never a lattice candidate.
            PieceType::Control
        }
    }

    fn score(&self, id: u32) -> f32 {
        self.scores.get(id as usize).copied().unwrap_or(0.0)
    }

    fn unk_id_raw(&self) -> u32 {
        self.unk.unwrap_or(NO_ID)
    }
}

impl Ugm {
    /// Builds the segmenter; a malformed charsmap is a parse error naming
    /// `path` and the key.
    pub(crate) fn build(path: &Path, v: &Vocab) -> Result<Self> {
        let spec = NormalizerSpec {
            precompiled_charsmap: v.charsmap.clone().unwrap_or_default(),
            add_dummy_prefix: v.add_space_prefix,
            remove_extra_whitespaces: v.remove_extra_whitespaces,
            escape_whitespaces: true,
            ..NormalizerSpec::default()
        };
        let normalizer = Normalizer::new(&spec, false, key::CHARSMAP)
            .map_err(|e| Error::parse(path, format!("GGUF key `{}`: {e}", key::CHARSMAP)))?
            .with_flavor(Flavor::LlamaCpp);
        let kinds = |want: &[PieceType]| {
            (0..v.len() as u32)
                .filter(|&id| want.contains(&UnigramVocab::kind(v, id)))
                .map(|id| (v.token(id), id))
                .collect::<Vec<_>>()
        };
        let mut entries = kinds(&[PieceType::Normal, PieceType::UserDefined, PieceType::Unused]);
        // Sorted by (text, id): a duplicated text keeps its last id, as
        // llama.cpp's trie does when it inserts in id order.
        entries.sort_unstable();
        let unigram = Unigram::with_flavor(v, Trie::build(entries), Flavor::LlamaCpp);
        let matcher = PrefixMatcher::new(kinds(&[PieceType::UserDefined]));
        Ok(Self {
            unigram,
            normalizer,
            matcher,
        })
    }

    /// Appends the ids of `text[start..end]` (one raw fragment) to `ids`, and
    /// their input spans to `offsets` when given.
    pub(crate) fn encode(
        &self,
        v: &Vocab,
        text: &str,
        start: usize,
        end: usize,
        ids: &mut Vec<u32>,
        offsets: Option<&mut Vec<(usize, usize)>>,
    ) -> Result<()> {
        let raw = &text.as_bytes()[start..end];
        SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            let Scratch {
                normalized,
                n2o,
                lattice,
            } = &mut *s;
            let want = offsets.is_some();
            self.normalizer.normalize(
                raw,
                normalized,
                want.then_some(&mut *n2o),
                Some(&self.matcher),
            );
            let mut sink = Sink {
                ids,
                offsets,
                n2o,
                base: start,
                unk: v.unk_id_raw(),
                prev_unk: false,
                missing_unk: false,
            };
            self.unigram.encode(v, normalized, lattice, &mut sink);
            if sink.missing_unk {
                return Err(Error::backend(
                    super::NAME,
                    "a character has no token and the vocabulary has no unknown token",
                ));
            }
            Ok(())
        })
    }
}

/// llama.cpp's backtrack: ids in order, consecutive unk ids merged.
struct Sink<'a> {
    ids: &'a mut Vec<u32>,
    offsets: Option<&'a mut Vec<(usize, usize)>>,
    n2o: &'a [usize],
    base: usize,
    unk: u32,
    prev_unk: bool,
    missing_unk: bool,
}

impl Sink<'_> {
    fn span(&self, start: usize, len: usize) -> (usize, usize) {
        let at = |i: usize| self.base + self.n2o.get(i).copied().unwrap_or(0);
        let s = at(start);
        (s, at(start + len).max(s))
    }
}

impl PieceSink for Sink<'_> {
    fn piece(&mut self, start: usize, bytes: &[u8], id: u32) {
        if id == NO_ID {
            self.missing_unk = true;
            return;
        }
        let is_unk = id == self.unk;
        let span = if self.offsets.is_some() {
            self.span(start, bytes.len())
        } else {
            (0, 0)
        };
        if is_unk && self.prev_unk {
            if let Some(last) = self.offsets.as_mut().and_then(|o| o.last_mut()) {
                last.1 = last.1.max(span.1);
            }
        } else {
            self.ids.push(id);
            if let Some(o) = self.offsets.as_mut() {
                o.push(span);
            }
        }
        self.prev_unk = is_unk;
    }

    fn plain(&mut self, start: usize, ids: &[u32], lens: &[u8]) {
        let mut at = start;
        for (&id, &len) in ids.iter().zip(lens) {
            self.plain_one(at, usize::from(len), id);
            at += usize::from(len);
        }
    }

    fn plain_one(&mut self, start: usize, len: usize, id: u32) {
        let span = self.span(start, len);
        self.ids.push(id);
        if let Some(o) = self.offsets.as_mut() {
            o.push(span);
        }
        self.prev_unk = false;
    }
}
