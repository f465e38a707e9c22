//! Native SentencePiece (`.model`) backend with exact parity to Google's
//! `sentencepiece` library (0.2.3): the same ids as `EncodeAsIds`, the same
//! text as `DecodeIds`.
//!
//! Layout:
//! - `proto`: a small protobuf wire reader for `ModelProto` (no protoc);
//! - `normalizer`: precompiled charsmap (darts-clone double array),
//!   whitespace handling and the dummy prefix, with a normalized→input
//!   offset map;
//! - `bpe`, `unigram`, `simple`: the BPE, Unigram, WORD and CHAR segmenters;
//! - `cache`: per-thread memos for BPE (results are unaffected);
//! - `piece_table`: the vocabulary's piece → id maps;
//! - `model`: [`SentencePieceModel`], which ties them together, and
//!   `model::sinks`, where a segmentation goes (ids, or ids with input spans).

mod adapter;
mod bpe;
mod cache;
mod error;
pub(crate) mod llama;
pub(crate) mod model;
mod normalizer;
mod piece_table;
mod proto;
mod simple;
pub(crate) mod synth;
mod trie;
mod unigram;
mod utf8;

pub(crate) use adapter::{SpmBackend, window_chunk};
pub use error::SpmError;
pub use model::{SentencePieceModel, SpmSettings};
pub use proto::{ModelType, PieceType};

/// What the GGUF `t5` (llama.cpp UGM) vocabularies borrow from this engine.
pub(crate) mod ugm {
    pub(crate) use super::PieceType;
    pub(crate) use super::model::{NO_ID, PieceSink};
    pub(crate) use super::normalizer::{Normalizer, PrefixMatcher};
    pub(crate) use super::proto::NormalizerSpec;
    pub(crate) use super::trie::Trie;
    pub(crate) use super::unigram::{Flavor, Unigram, UnigramScratch, UnigramVocab};
}

/// Hook for fuzzing the reader: parses `data` as a model and, when it loads,
/// runs encodes (with and without offsets), decodes and the streaming table.
/// Never panics.
#[doc(hidden)]
pub fn fuzz_model(data: &[u8]) {
    if let Ok(m) = SentencePieceModel::from_bytes(data) {
        let _ = m.encode("Hello world, \u{2581} 日本語 \u{0} ﬁ  ");
        let mut ids = Vec::new();
        let mut offs = Vec::new();
        m.encode_with_offsets("  a  b \u{3000}", &mut ids, &mut offs);
        let n = m.vocab_size().min(512) as u32;
        let all: Vec<u32> = (0..n).collect();
        let _ = m.decode(&all, true);
        let _ = m.decode(&all, false);
        for id in 0..n {
            let _ = m.piece_bytes(id);
        }
    }
}
