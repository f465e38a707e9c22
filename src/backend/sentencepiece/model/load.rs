//! [`SentencePieceModel::from_bytes`] in its phases: parse, the piece checks
//! and the [`Vocab`], the engine, then the normalizers and settings.

use super::super::bpe::Bpe;
use super::super::error::SpmError;
use super::super::normalizer::{Normalizer, PrefixMatcher};
use super::super::piece_table::PieceTable;
use super::super::proto::{
    ModelProto, ModelType, NormalizerSpec, PieceType, TrainerSpec, parse_model,
};
use super::super::trie::Trie;
use super::super::unigram::Unigram;
use super::{Engine, NO_ID, SentencePieceModel, SpmSettings, Vocab, byte_piece_value};

/// sentencepiece rejects pieces of this many bytes or more.
const MAX_PIECE_BYTES: usize = 8000;

/// Default surface of the unknown piece in decoded text (U+2047 with spaces).
const DEFAULT_UNK_SURFACE: &str = " \u{2047} ";

fn byte_piece_name(b: u8) -> [u8; 6] {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    [
        b'<',
        b'0',
        b'x',
        HEX[usize::from(b >> 4)],
        HEX[usize::from(b & 15)],
        b'>',
    ]
}

/// The bytes of piece `i` (a range of the input buffer).
fn piece_bytes<'a>(proto: &ModelProto, bytes: &'a [u8], i: usize) -> &'a [u8] {
    let (s, e) = proto.pieces[i].piece;
    bytes.get(s..e).unwrap_or_default()
}

impl SentencePieceModel {
    /// Reads a serialized `ModelProto` (the `.model` file).
    ///
    /// Applies the checks sentencepiece 0.2.3 applies at load (empty,
    /// duplicated, over-long or NUL-containing pieces, a missing or doubled
    /// unknown piece, byte pieces vs. `byte_fallback`, non-finite Unigram
    /// scores, malformed charsmaps) and additionally requires pieces and the
    /// unknown surface to be UTF-8. Never panics; allocation is bounded by a
    /// small multiple of `bytes.len()`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SpmError> {
        let proto = parse_model(bytes)?;
        let ts = &proto.trainer_spec;
        let n = check_pieces(&proto, bytes)?;
        let byte_fallback = ts.byte_fallback;
        let (vocab, user_defined) = build_vocab(&proto, bytes, n)?;
        let matcher = PrefixMatcher::new(user_defined.iter().map(|&id| (vocab.piece(id), id)));

        let mut byte_ids = Box::new([NO_ID; 256]);
        for (b, slot) in byte_ids.iter_mut().enumerate() {
            *slot = vocab.spm_piece_to_id(&byte_piece_name(b as u8));
        }
        let engine = build_engine(ts.model_type, &vocab, byte_fallback, &byte_ids)?;

        let ns = &proto.normalizer_spec;
        let normalizer = Normalizer::new(ns, ts.treat_whitespace_as_suffix, "normalizer_spec")?;
        let denormalizer = match &proto.denormalizer_spec {
            Some(d) if !d.precompiled_charsmap.is_empty() => {
                Some(Normalizer::new(d, false, "denormalizer_spec")?)
            }
            _ => None,
        };
        let unk_surface = unk_surface(ts)?;
        let [unk_id, bos_id, eos_id, pad_id] = special_ids(&vocab, ts);
        let settings = settings(ns, ts, &normalizer, denormalizer.is_some());

        let raw_bpe = match &engine {
            Engine::Bpe(b) => {
                b.raw_path_ok()
                    && !normalizer.has_charsmap()
                    && !ns.remove_extra_whitespaces
                    && ns.escape_whitespaces
                    && !ts.treat_whitespace_as_suffix
            }
            _ => false,
        };
        let mut model = Self {
            vocab,
            model_type: ts.model_type,
            engine,
            matcher,
            normalizer,
            denormalizer,
            byte_fallback,
            byte_ids,
            unk_id,
            bos_id,
            eos_id,
            pad_id,
            unk_surface,
            add_dummy_prefix: ns.add_dummy_prefix,
            remove_extra_whitespaces: ns.remove_extra_whitespaces,
            settings,
            raw_bpe,
            stream_bytes: Vec::new(),
            stream_spans: Vec::new(),
        };
        model.build_stream_table();
        Ok(model)
    }
}

/// The piece count checks, and sentencepiece's over-long piece check, done
/// before anything is allocated per piece; returns the piece count.
fn check_pieces(proto: &ModelProto, bytes: &[u8]) -> Result<usize, SpmError> {
    let n = proto.pieces.len();
    if n == 0 {
        return Err(SpmError::NoPieces);
    }
    if n > i32::MAX as usize {
        return Err(SpmError::TooManyPieces { count: n });
    }
    for i in 0..n {
        let len = piece_bytes(proto, bytes, i).len();
        if len >= MAX_PIECE_BYTES {
            return Err(SpmError::PieceTooLong { index: i, len });
        }
    }
    Ok(n)
}

/// What the piece loop of [`build_vocab`] collects besides the tables: the
/// unknown piece, the byte pieces seen, and the user-defined pieces.
struct Specials {
    unk: u32,
    byte_found: [bool; 256],
    user_defined: Vec<u32>,
}

impl Specials {
    /// Records piece `i` (bytes `p`, text `s`) of type `kind`, refusing a
    /// second unknown piece and byte pieces that are malformed or come
    /// without byte fallback.
    fn record(
        &mut self,
        kind: PieceType,
        (i, p, s): (usize, &[u8], &str),
        byte_fallback: bool,
    ) -> Result<(), SpmError> {
        match kind {
            PieceType::UserDefined => self.user_defined.push(i as u32),
            PieceType::Unknown => {
                if self.unk != NO_ID {
                    return Err(SpmError::DuplicateUnknown { index: i });
                }
                self.unk = i as u32;
            }
            PieceType::Byte => {
                if !byte_fallback {
                    return Err(SpmError::BytePieceWithoutFallback { index: i });
                }
                match byte_piece_value(p) {
                    Some(b) => self.byte_found[usize::from(b)] = true,
                    None => {
                        return Err(SpmError::InvalidBytePiece {
                            index: i,
                            piece: s.to_owned(),
                        });
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The checks once every piece is in: an unknown piece (unless byte
    /// fallback), and all 256 byte pieces with byte fallback.
    fn finish(&self, byte_fallback: bool) -> Result<(), SpmError> {
        if self.unk == NO_ID && !byte_fallback {
            return Err(SpmError::MissingUnknown);
        }
        if byte_fallback && let Some(missing) = self.byte_found.iter().position(|&f| !f) {
            return Err(SpmError::MissingBytePieces {
                missing: missing as u8,
            });
        }
        Ok(())
    }
}

/// The [`Vocab`] of the `n` pieces, with sentencepiece's per-piece load
/// checks; also returns the user-defined piece ids (for the matcher).
fn build_vocab(proto: &ModelProto, bytes: &[u8], n: usize) -> Result<(Vocab, Vec<u32>), SpmError> {
    let ts = &proto.trainer_spec;
    let byte_fallback = ts.byte_fallback;
    let use_reserved = ts.model_type != ModelType::Bpe;

    let total: usize = (0..n).map(|i| piece_bytes(proto, bytes, i).len()).sum();
    let mut text = String::with_capacity(total);
    let mut spans = Vec::with_capacity(n);
    let mut scores = Vec::with_capacity(n);
    let mut kinds = Vec::with_capacity(n);
    let mut in_map = Vec::with_capacity(n);
    let mut pieces = PieceTable::with_capacity(n);
    let mut reserved = PieceTable::default();
    let mut specials = Specials {
        unk: NO_ID,
        byte_found: [false; 256],
        user_defined: Vec::new(),
    };

    for i in 0..n {
        let p = piece_bytes(proto, bytes, i);
        let mut kind = proto.pieces[i].kind;
        // sentencepiece (Load): with byte_fallback a "\0" piece is UNUSED.
        if byte_fallback && p == b"\0" {
            kind = PieceType::Unused;
        }
        if p.is_empty() {
            return Err(SpmError::EmptyPiece { index: i });
        }
        let s = std::str::from_utf8(p).map_err(|_| SpmError::InvalidUtf8 {
            field: "SentencePiece.piece",
            index: i,
        })?;
        let start = text.len();
        text.push_str(s);
        spans.push((start, text.len()));
        scores.push(proto.pieces[i].score);
        kinds.push(kind);
        if p == b"\0" && kind == PieceType::Unused {
            in_map.push(false);
            continue;
        }
        if p.contains(&0) {
            return Err(SpmError::NulInPiece { index: i });
        }
        let map = if kind.is_normal_like() || !use_reserved {
            &mut pieces
        } else {
            &mut reserved
        };
        let text_of = |id: u32| {
            spans
                .get(id as usize)
                .and_then(|&(s, e)| text.as_bytes().get(s..e))
                .unwrap_or_default()
        };
        if map.insert(p, i as u32, text_of).is_some() {
            return Err(SpmError::DuplicatePiece {
                index: i,
                piece: s.to_owned(),
            });
        }
        in_map.push(true);
        specials.record(kind, (i, p, s), byte_fallback)?;
    }
    specials.finish(byte_fallback)?;
    let vocab = Vocab {
        text,
        spans,
        scores,
        kinds,
        in_map,
        pieces,
        reserved,
        unk: specials.unk,
    };
    Ok((vocab, specials.user_defined))
}

/// The segmentation engine of `model_type` over `vocab` (BPE gets the
/// byte-piece ids `byte_ids` when byte fallback is on), with the Unigram
/// load checks.
fn build_engine(
    model_type: ModelType,
    vocab: &Vocab,
    byte_fallback: bool,
    byte_ids: &[u32; 256],
) -> Result<Engine, SpmError> {
    Ok(match model_type {
        ModelType::Bpe => Engine::Bpe(Box::new(Bpe::new(
            vocab,
            byte_fallback.then(|| Box::new(*byte_ids)),
        ))),
        ModelType::Unigram => {
            if let Some(i) = vocab.scores.iter().position(|s| !s.is_finite()) {
                return Err(SpmError::NonFiniteScore { index: i });
            }
            // Exactly the pieces of `vocab.pieces` (UNIGRAM keeps the
            // others in `reserved`; a duplicate was refused above).
            let entries: Vec<(&[u8], u32)> = (0..vocab.len() as u32)
                .filter(|&id| vocab.mergeable(id))
                .map(|id| (vocab.piece(id), id))
                .collect();
            if entries.is_empty() {
                return Err(SpmError::NoNormalPieces);
            }
            let trie = Trie::build(entries);
            Engine::Unigram(Unigram::new(vocab, trie))
        }
        ModelType::Word => Engine::Word,
        ModelType::Char => Engine::Char,
    })
}

/// The surface decode gives the unknown piece: `unk_surface`, which must
/// be UTF-8, or [`DEFAULT_UNK_SURFACE`].
fn unk_surface(ts: &TrainerSpec) -> Result<String, SpmError> {
    Ok(match &ts.unk_surface {
        Some(s) => std::str::from_utf8(s)
            .map_err(|_| SpmError::InvalidUtf8 {
                field: "TrainerSpec.unk_surface",
                index: 0,
            })?
            .to_owned(),
        None => DEFAULT_UNK_SURFACE.to_owned(),
    })
}

/// The effective unk, bos, eos and pad ids: the trainer's piece names (or
/// the defaults), when such a piece exists with the expected type.
fn special_ids(vocab: &Vocab, ts: &TrainerSpec) -> [Option<u32>; 4] {
    let special = |name: &[u8], default: &[u8], want: PieceType| -> Option<u32> {
        let name = if name.is_empty() { default } else { name };
        let id = vocab.spm_piece_to_id(name);
        (id != NO_ID && vocab.kind(id) == want).then_some(id)
    };
    let unk_id = special(&ts.unk_piece, b"<unk>", PieceType::Unknown);
    let bos_id = special(&ts.bos_piece, b"<s>", PieceType::Control);
    let eos_id = special(&ts.eos_piece, b"</s>", PieceType::Control);
    let pad_id = special(&ts.pad_piece, b"<pad>", PieceType::Control);
    [unk_id, bos_id, eos_id, pad_id]
}

/// The informational [`SpmSettings`] of the specs.
fn settings(
    ns: &NormalizerSpec,
    ts: &TrainerSpec,
    normalizer: &Normalizer,
    has_denormalizer: bool,
) -> SpmSettings {
    SpmSettings {
        normalizer_name: String::from_utf8_lossy(&ns.name).into_owned(),
        has_charsmap: normalizer.has_charsmap(),
        add_dummy_prefix: ns.add_dummy_prefix,
        remove_extra_whitespaces: ns.remove_extra_whitespaces,
        escape_whitespaces: ns.escape_whitespaces,
        treat_whitespace_as_suffix: ts.treat_whitespace_as_suffix,
        byte_fallback: ts.byte_fallback,
        split_digits: ts.split_digits,
        split_by_whitespace: ts.split_by_whitespace,
        split_by_unicode_script: ts.split_by_unicode_script,
        split_by_number: ts.split_by_number,
        allow_whitespace_only_pieces: ts.allow_whitespace_only_pieces,
        max_sentencepiece_length: ts.max_sentencepiece_length,
        trainer_vocab_size: ts.vocab_size,
        trainer_ids: [ts.unk_id, ts.bos_id, ts.eos_id, ts.pad_id],
        has_denormalizer,
    }
}
