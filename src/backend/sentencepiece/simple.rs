//! WORD and CHAR models (`word_model.cc`, `char_model.cc`).
//!
//! WORD splits the normalized text before every space mark (U+2581) and looks
//! each word up whole; CHAR emits user-defined symbols and single characters.
//! In both, a piece that is missing or UNUSED becomes unknown.

use super::model::{PieceSink, Vocab};
use super::normalizer::PrefixMatcher;
use super::utf8::{SPACE_MARK, char_len_at};

fn id_for(vocab: &Vocab, w: &[u8]) -> u32 {
    let unk = vocab.unk_id_raw();
    match vocab.lookup_no_reserved(w) {
        Some(id) if id != unk && vocab.kind(id) == super::PieceType::Unused => unk,
        Some(id) => id,
        None => unk,
    }
}

/// WORD model: `SplitIntoWords(text, false, false)` then whole-word lookup.
pub(crate) fn encode_word<S: PieceSink>(vocab: &Vocab, normalized: &[u8], sink: &mut S) {
    let mut word_start = 0usize;
    let mut pos = 0usize;
    while pos < normalized.len() {
        let l = char_len_at(&normalized[pos..]);
        let is_ws = &normalized[pos..pos + l] == SPACE_MARK;
        if is_ws && pos > word_start {
            let w = &normalized[word_start..pos];
            sink.piece(word_start, w, id_for(vocab, w));
            word_start = pos;
        }
        pos += l;
    }
    if pos > word_start {
        let w = &normalized[word_start..pos];
        sink.piece(word_start, w, id_for(vocab, w));
    }
}

/// CHAR model: user-defined symbols, else one character at a time.
pub(crate) fn encode_char<S: PieceSink>(
    vocab: &Vocab,
    matcher: &PrefixMatcher,
    normalized: &[u8],
    sink: &mut S,
) {
    let mut pos = 0usize;
    while pos < normalized.len() {
        let (l, _) = matcher.prefix_len(&normalized[pos..]);
        let l = l.max(1);
        let w = &normalized[pos..pos + l];
        sink.piece(pos, w, id_for(vocab, w));
        pos += l;
    }
}
