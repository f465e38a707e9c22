//! A small protobuf wire reader for sentencepiece's `ModelProto`
//! (`sentencepiece_model.proto`, proto2).
//!
//! Only the fields that affect encoding, decoding and metadata are kept; all
//! other fields (known or unknown) are skipped by wire type, as protobuf does.
//! Semantics follow the protobuf C++ runtime where they matter:
//! - a non-repeated scalar that appears twice keeps the last value;
//! - an embedded message that appears twice is merged field by field;
//! - a closed (proto2) enum with a value outside the enum is ignored (the
//!   field keeps its previous value, normally the default);
//! - `int32` values are the low 32 bits of the varint.
//!
//! Deviation (stricter than protobuf): a *known* field with the wrong wire
//! type is an error ([`SpmError::WireType`]) instead of being filed as an
//! unknown field. No real model contains one.
//!
//! Nothing is allocated from a claimed length: every length is checked
//! against the bytes that remain in the enclosing message first, so memory
//! use is bounded by a small multiple of the input size.

use super::error::SpmError;

const WT_VARINT: u8 = 0;
const WT_I64: u8 = 1;
const WT_LEN: u8 = 2;
const WT_SGROUP: u8 = 3;
const WT_EGROUP: u8 = 4;
const WT_I32: u8 = 5;

/// Deepest group nesting accepted while skipping unknown fields (protobuf's
/// default recursion limit is 100).
const MAX_DEPTH: usize = 100;

/// Piece type (`ModelProto.SentencePiece.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PieceType {
    /// A normal piece (`NORMAL = 1`).
    Normal,
    /// The unknown piece (`UNKNOWN = 2`).
    Unknown,
    /// A control symbol such as `<s>` (`CONTROL = 3`).
    Control,
    /// A user-defined symbol, never split (`USER_DEFINED = 4`).
    UserDefined,
    /// A piece that is never produced by encode (`UNUSED = 5`).
    Unused,
    /// A byte-fallback piece `<0xXX>` (`BYTE = 6`).
    Byte,
}

impl PieceType {
    fn from_proto(v: u64) -> Option<Self> {
        Some(match v {
            1 => Self::Normal,
            2 => Self::Unknown,
            3 => Self::Control,
            4 => Self::UserDefined,
            5 => Self::Unused,
            6 => Self::Byte,
            _ => return None,
        })
    }

    /// NORMAL, USER_DEFINED and UNUSED pieces (sentencepiece's `pieces_` map);
    /// the others are "reserved".
    pub(crate) fn is_normal_like(self) -> bool {
        matches!(self, Self::Normal | Self::UserDefined | Self::Unused)
    }
}

/// Segmentation algorithm (`TrainerSpec.ModelType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelType {
    /// Unigram language model (`UNIGRAM = 1`, the proto default).
    Unigram,
    /// Byte-pair encoding (`BPE = 2`).
    Bpe,
    /// Whitespace-delimited words (`WORD = 3`).
    Word,
    /// Characters (`CHAR = 4`).
    Char,
}

impl ModelType {
    fn from_proto(v: u64) -> Option<Self> {
        Some(match v {
            1 => Self::Unigram,
            2 => Self::Bpe,
            3 => Self::Word,
            4 => Self::Char,
            _ => return None,
        })
    }
}

/// One `ModelProto.SentencePiece`.
#[derive(Debug, Clone)]
pub(crate) struct PieceProto {
    /// Byte range of `piece` in the input buffer.
    pub(crate) piece: (usize, usize),
    pub(crate) score: f32,
    pub(crate) kind: PieceType,
}

/// The `TrainerSpec` fields the backend uses, with proto defaults.
#[derive(Debug, Clone)]
pub(crate) struct TrainerSpec {
    pub(crate) model_type: ModelType,
    pub(crate) vocab_size: i32,
    pub(crate) max_sentencepiece_length: i32,
    pub(crate) split_by_unicode_script: bool,
    pub(crate) split_by_number: bool,
    pub(crate) split_by_whitespace: bool,
    pub(crate) treat_whitespace_as_suffix: bool,
    pub(crate) allow_whitespace_only_pieces: bool,
    pub(crate) split_digits: bool,
    pub(crate) byte_fallback: bool,
    pub(crate) unk_id: i32,
    pub(crate) bos_id: i32,
    pub(crate) eos_id: i32,
    pub(crate) pad_id: i32,
    pub(crate) unk_piece: Vec<u8>,
    pub(crate) bos_piece: Vec<u8>,
    pub(crate) eos_piece: Vec<u8>,
    pub(crate) pad_piece: Vec<u8>,
    /// `None` when the field is absent (decode then uses `" ⁇ "`).
    pub(crate) unk_surface: Option<Vec<u8>>,
}

impl Default for TrainerSpec {
    fn default() -> Self {
        Self {
            model_type: ModelType::Unigram,
            vocab_size: 8000,
            max_sentencepiece_length: 16,
            split_by_unicode_script: true,
            split_by_number: true,
            split_by_whitespace: true,
            treat_whitespace_as_suffix: false,
            allow_whitespace_only_pieces: false,
            split_digits: false,
            byte_fallback: false,
            unk_id: 0,
            bos_id: 1,
            eos_id: 2,
            pad_id: -1,
            unk_piece: b"<unk>".to_vec(),
            bos_piece: b"<s>".to_vec(),
            eos_piece: b"</s>".to_vec(),
            pad_piece: b"<pad>".to_vec(),
            unk_surface: None,
        }
    }
}

/// The `NormalizerSpec` fields, with proto defaults.
#[derive(Debug, Clone)]
pub(crate) struct NormalizerSpec {
    pub(crate) name: Vec<u8>,
    pub(crate) precompiled_charsmap: Vec<u8>,
    pub(crate) add_dummy_prefix: bool,
    pub(crate) remove_extra_whitespaces: bool,
    pub(crate) escape_whitespaces: bool,
    pub(crate) normalization_rule_tsv: Vec<u8>,
}

impl Default for NormalizerSpec {
    fn default() -> Self {
        Self {
            name: Vec::new(),
            precompiled_charsmap: Vec::new(),
            add_dummy_prefix: true,
            remove_extra_whitespaces: true,
            escape_whitespaces: true,
            normalization_rule_tsv: Vec::new(),
        }
    }
}

/// The parsed `ModelProto`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModelProto {
    pub(crate) pieces: Vec<PieceProto>,
    pub(crate) trainer_spec: TrainerSpec,
    pub(crate) normalizer_spec: NormalizerSpec,
    /// `Some` when field 5 is present.
    pub(crate) denormalizer_spec: Option<NormalizerSpec>,
}

/// Reads a whole `ModelProto` from `data`.
pub(crate) fn parse_model(data: &[u8]) -> Result<ModelProto, SpmError> {
    let mut cur = Cursor { data, pos: 0 };
    let mut model = ModelProto::default();
    let end = data.len();
    while cur.pos < end {
        let (field, wt, tag_at) = cur.tag(end)?;
        match field {
            1 => {
                let (s, e) = cur.len_field(end, wt, tag_at, "ModelProto.pieces")?;
                model.pieces.push(parse_piece(&mut cur, s, e)?);
            }
            2 => {
                let (s, e) = cur.len_field(end, wt, tag_at, "ModelProto.trainer_spec")?;
                parse_trainer_spec(&mut cur, s, e, &mut model.trainer_spec)?;
            }
            3 => {
                let (s, e) = cur.len_field(end, wt, tag_at, "ModelProto.normalizer_spec")?;
                parse_normalizer_spec(&mut cur, s, e, &mut model.normalizer_spec)?;
            }
            5 => {
                let (s, e) = cur.len_field(end, wt, tag_at, "ModelProto.denormalizer_spec")?;
                let spec = model.denormalizer_spec.get_or_insert_with(Default::default);
                parse_normalizer_spec(&mut cur, s, e, spec)?;
            }
            _ => cur.skip(end, field, wt, tag_at, 0)?,
        }
    }
    Ok(model)
}

fn parse_piece(cur: &mut Cursor<'_>, start: usize, end: usize) -> Result<PieceProto, SpmError> {
    cur.pos = start;
    let mut p = PieceProto {
        piece: (start, start),
        score: 0.0,
        kind: PieceType::Normal,
    };
    while cur.pos < end {
        let (field, wt, tag_at) = cur.tag(end)?;
        match field {
            1 => p.piece = cur.len_field(end, wt, tag_at, "SentencePiece.piece")?,
            2 => p.score = cur.float(end, wt, tag_at, "SentencePiece.score")?,
            3 => {
                let v = cur.varint_field(end, wt, tag_at, "SentencePiece.type")?;
                if let Some(t) = PieceType::from_proto(v) {
                    p.kind = t;
                }
            }
            _ => cur.skip(end, field, wt, tag_at, 0)?,
        }
    }
    Ok(p)
}

fn parse_trainer_spec(
    cur: &mut Cursor<'_>,
    start: usize,
    end: usize,
    t: &mut TrainerSpec,
) -> Result<(), SpmError> {
    cur.pos = start;
    while cur.pos < end {
        let (field, wt, tag_at) = cur.tag(end)?;
        match field {
            3 => {
                let v = cur.varint_field(end, wt, tag_at, "TrainerSpec.model_type")?;
                if let Some(m) = ModelType::from_proto(v) {
                    t.model_type = m;
                }
            }
            4 => t.vocab_size = cur.int32(end, wt, tag_at, "TrainerSpec.vocab_size")?,
            20 => {
                t.max_sentencepiece_length =
                    cur.int32(end, wt, tag_at, "TrainerSpec.max_sentencepiece_length")?
            }
            21 => {
                t.split_by_unicode_script =
                    cur.boolean(end, wt, tag_at, "TrainerSpec.split_by_unicode_script")?
            }
            22 => {
                t.split_by_whitespace =
                    cur.boolean(end, wt, tag_at, "TrainerSpec.split_by_whitespace")?
            }
            23 => {
                t.split_by_number = cur.boolean(end, wt, tag_at, "TrainerSpec.split_by_number")?
            }
            24 => {
                t.treat_whitespace_as_suffix =
                    cur.boolean(end, wt, tag_at, "TrainerSpec.treat_whitespace_as_suffix")?
            }
            25 => t.split_digits = cur.boolean(end, wt, tag_at, "TrainerSpec.split_digits")?,
            26 => {
                t.allow_whitespace_only_pieces =
                    cur.boolean(end, wt, tag_at, "TrainerSpec.allow_whitespace_only_pieces")?
            }
            35 => t.byte_fallback = cur.boolean(end, wt, tag_at, "TrainerSpec.byte_fallback")?,
            40 => t.unk_id = cur.int32(end, wt, tag_at, "TrainerSpec.unk_id")?,
            41 => t.bos_id = cur.int32(end, wt, tag_at, "TrainerSpec.bos_id")?,
            42 => t.eos_id = cur.int32(end, wt, tag_at, "TrainerSpec.eos_id")?,
            43 => t.pad_id = cur.int32(end, wt, tag_at, "TrainerSpec.pad_id")?,
            44 => t.unk_surface = Some(cur.bytes(end, wt, tag_at, "TrainerSpec.unk_surface")?),
            45 => t.unk_piece = cur.bytes(end, wt, tag_at, "TrainerSpec.unk_piece")?,
            46 => t.bos_piece = cur.bytes(end, wt, tag_at, "TrainerSpec.bos_piece")?,
            47 => t.eos_piece = cur.bytes(end, wt, tag_at, "TrainerSpec.eos_piece")?,
            48 => t.pad_piece = cur.bytes(end, wt, tag_at, "TrainerSpec.pad_piece")?,
            _ => cur.skip(end, field, wt, tag_at, 0)?,
        }
    }
    Ok(())
}

fn parse_normalizer_spec(
    cur: &mut Cursor<'_>,
    start: usize,
    end: usize,
    n: &mut NormalizerSpec,
) -> Result<(), SpmError> {
    cur.pos = start;
    while cur.pos < end {
        let (field, wt, tag_at) = cur.tag(end)?;
        match field {
            1 => n.name = cur.bytes(end, wt, tag_at, "NormalizerSpec.name")?,
            2 => {
                n.precompiled_charsmap =
                    cur.bytes(end, wt, tag_at, "NormalizerSpec.precompiled_charsmap")?
            }
            3 => {
                n.add_dummy_prefix =
                    cur.boolean(end, wt, tag_at, "NormalizerSpec.add_dummy_prefix")?
            }
            4 => {
                n.remove_extra_whitespaces =
                    cur.boolean(end, wt, tag_at, "NormalizerSpec.remove_extra_whitespaces")?
            }
            5 => {
                n.escape_whitespaces =
                    cur.boolean(end, wt, tag_at, "NormalizerSpec.escape_whitespaces")?
            }
            6 => {
                n.normalization_rule_tsv =
                    cur.bytes(end, wt, tag_at, "NormalizerSpec.normalization_rule_tsv")?
            }
            _ => cur.skip(end, field, wt, tag_at, 0)?,
        }
    }
    Ok(())
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn varint(&mut self, end: usize, field: &'static str) -> Result<u64, SpmError> {
        let start = self.pos;
        let mut v = 0u64;
        for i in 0..10 {
            let Some(&b) = self.data.get(self.pos).filter(|_| self.pos < end) else {
                return Err(SpmError::Truncated {
                    offset: start,
                    field,
                });
            };
            self.pos += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(SpmError::Varint {
            offset: start,
            field,
        })
    }

    /// Reads a tag; returns (field number, wire type, offset of the tag).
    fn tag(&mut self, end: usize) -> Result<(u32, u8, usize), SpmError> {
        let at = self.pos;
        let tag = self.varint(end, "tag")?;
        let field = tag >> 3;
        let wt = (tag & 7) as u8;
        if field == 0 || field > (1 << 29) - 1 || wt > WT_I32 {
            return Err(SpmError::InvalidTag { tag, offset: at });
        }
        Ok((field as u32, wt, at))
    }

    fn expect(wt: u8, expected: u8, field: &'static str, offset: usize) -> Result<(), SpmError> {
        if wt == expected {
            Ok(())
        } else {
            Err(SpmError::WireType {
                field,
                expected,
                got: wt,
                offset,
            })
        }
    }

    /// Reads a length prefix and returns the byte range of the payload,
    /// leaving the cursor after it.
    fn len_field(
        &mut self,
        end: usize,
        wt: u8,
        tag_at: usize,
        field: &'static str,
    ) -> Result<(usize, usize), SpmError> {
        Self::expect(wt, WT_LEN, field, tag_at)?;
        let at = self.pos;
        let len = self.varint(end, field)?;
        let remaining = end - self.pos;
        if len > remaining as u64 {
            return Err(SpmError::LengthOutOfRange {
                field,
                len,
                remaining,
                offset: at,
            });
        }
        let s = self.pos;
        let e = s + len as usize;
        self.pos = e;
        Ok((s, e))
    }

    fn bytes(
        &mut self,
        end: usize,
        wt: u8,
        tag_at: usize,
        field: &'static str,
    ) -> Result<Vec<u8>, SpmError> {
        let (s, e) = self.len_field(end, wt, tag_at, field)?;
        Ok(self.data.get(s..e).unwrap_or_default().to_vec())
    }

    fn varint_field(
        &mut self,
        end: usize,
        wt: u8,
        tag_at: usize,
        field: &'static str,
    ) -> Result<u64, SpmError> {
        Self::expect(wt, WT_VARINT, field, tag_at)?;
        self.varint(end, field)
    }

    fn int32(
        &mut self,
        end: usize,
        wt: u8,
        tag_at: usize,
        field: &'static str,
    ) -> Result<i32, SpmError> {
        Ok(self.varint_field(end, wt, tag_at, field)? as i32)
    }

    fn boolean(
        &mut self,
        end: usize,
        wt: u8,
        tag_at: usize,
        field: &'static str,
    ) -> Result<bool, SpmError> {
        Ok(self.varint_field(end, wt, tag_at, field)? != 0)
    }

    fn fixed<const N: usize>(
        &mut self,
        end: usize,
        field: &'static str,
    ) -> Result<[u8; N], SpmError> {
        let at = self.pos;
        let bytes = self
            .data
            .get(at..at.saturating_add(N))
            .filter(|_| at.saturating_add(N) <= end)
            .and_then(|s| <[u8; N]>::try_from(s).ok())
            .ok_or(SpmError::Truncated { offset: at, field })?;
        self.pos = at + N;
        Ok(bytes)
    }

    fn float(
        &mut self,
        end: usize,
        wt: u8,
        tag_at: usize,
        field: &'static str,
    ) -> Result<f32, SpmError> {
        Self::expect(wt, WT_I32, field, tag_at)?;
        Ok(f32::from_le_bytes(self.fixed::<4>(end, field)?))
    }

    /// Skips one field whose tag has been read.
    fn skip(
        &mut self,
        end: usize,
        field: u32,
        wt: u8,
        tag_at: usize,
        depth: usize,
    ) -> Result<(), SpmError> {
        match wt {
            WT_VARINT => {
                self.varint(end, "unknown varint field")?;
            }
            WT_I64 => {
                self.fixed::<8>(end, "unknown fixed64 field")?;
            }
            WT_LEN => {
                self.len_field(end, wt, tag_at, "unknown length-delimited field")?;
            }
            WT_I32 => {
                self.fixed::<4>(end, "unknown fixed32 field")?;
            }
            WT_SGROUP => {
                if depth >= MAX_DEPTH {
                    return Err(SpmError::TooDeep {
                        limit: MAX_DEPTH,
                        offset: tag_at,
                    });
                }
                loop {
                    if self.pos >= end {
                        return Err(SpmError::Truncated {
                            offset: tag_at,
                            field: "unknown group",
                        });
                    }
                    let (f, w, at) = self.tag(end)?;
                    if w == WT_EGROUP {
                        if f != field {
                            return Err(SpmError::InvalidTag {
                                tag: (u64::from(f) << 3) | u64::from(w),
                                offset: at,
                            });
                        }
                        break;
                    }
                    self.skip(end, f, w, at, depth + 1)?;
                }
            }
            _ => {
                // WT_EGROUP without a matching start group.
                return Err(SpmError::InvalidTag {
                    tag: (u64::from(field) << 3) | u64::from(wt),
                    offset: tag_at,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    #[test]
    fn merges_repeated_submessages_and_ignores_unknown_enum() {
        let mut d = Vec::new();
        // trainer_spec { model_type: BPE }
        d.extend_from_slice(&[0x12, 0x02, 0x18, 0x02]);
        // trainer_spec { byte_fallback: true, model_type: 9 (unknown) }
        d.extend_from_slice(&[0x12, 0x05, 0x98, 0x02, 0x01, 0x18, 0x09]);
        let m = parse_model(&d).unwrap_or_default();
        assert_eq!(m.trainer_spec.model_type, ModelType::Bpe);
        assert!(m.trainer_spec.byte_fallback);
    }

    #[test]
    fn absurd_length_is_typed() {
        let mut d = vec![0x0a];
        varint(1 << 31, &mut d);
        let e = parse_model(&d);
        assert!(matches!(e, Err(SpmError::LengthOutOfRange { len, .. }) if len == 1 << 31));
    }

    #[test]
    fn wrong_wire_type_is_typed() {
        let e = parse_model(&[0x08, 0x01]);
        assert!(matches!(
            e,
            Err(SpmError::WireType {
                expected: 2,
                got: 0,
                ..
            })
        ));
    }

    #[test]
    fn groups_are_skipped_and_checked() {
        // field 9 start group { field 1 varint 5 } end group 9
        let d = [0x4b, 0x08, 0x05, 0x4c];
        assert!(parse_model(&d).is_ok());
        let bad = [0x4b, 0x08, 0x05, 0x54];
        assert!(matches!(
            parse_model(&bad),
            Err(SpmError::InvalidTag { .. })
        ));
        let deep: Vec<u8> = std::iter::repeat_n(0x4b, 1000).collect();
        assert!(matches!(parse_model(&deep), Err(SpmError::TooDeep { .. })));
    }
}
