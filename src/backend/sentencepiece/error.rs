//! Typed errors of the SentencePiece backend.

use thiserror::Error;

/// Everything that can go wrong while reading a `.model` file or decoding ids.
///
/// Reader errors name the protobuf field (as `message.field`) and the byte
/// offset in the file where the problem was found.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SpmError {
    /// The file ended inside a tag, varint, fixed-width value or length-delimited field.
    #[error("truncated model: {field} at byte {offset} needs more bytes than the file has")]
    Truncated {
        /// Byte offset where the incomplete item starts.
        offset: usize,
        /// Field (or wire item) being read.
        field: &'static str,
    },
    /// A varint longer than 10 bytes.
    #[error("malformed varint for {field} at byte {offset}")]
    Varint {
        /// Byte offset where the varint starts.
        offset: usize,
        /// Field being read.
        field: &'static str,
    },
    /// A known field carries a wire type other than the one the schema gives it.
    #[error("field {field}: expected wire type {expected}, got {got} (byte {offset})")]
    WireType {
        /// Field whose wire type is wrong.
        field: &'static str,
        /// Wire type from the schema.
        expected: u8,
        /// Wire type found in the file.
        got: u8,
        /// Byte offset of the tag.
        offset: usize,
    },
    /// A wire type that protobuf does not define (6, 7), a field number 0, or
    /// an unbalanced group.
    #[error("invalid protobuf tag {tag:#x} at byte {offset}")]
    InvalidTag {
        /// The raw tag value.
        tag: u64,
        /// Byte offset of the tag.
        offset: usize,
    },
    /// A length prefix claims more bytes than remain in the enclosing message.
    #[error("field {field}: length {len} at byte {offset} exceeds the {remaining} bytes left")]
    LengthOutOfRange {
        /// Field whose length is out of range.
        field: &'static str,
        /// Claimed length.
        len: u64,
        /// Bytes actually left in the enclosing message.
        remaining: usize,
        /// Byte offset of the length prefix.
        offset: usize,
    },
    /// Groups nested deeper than the reader allows.
    #[error("protobuf nesting deeper than {limit} at byte {offset}")]
    TooDeep {
        /// Nesting limit.
        limit: usize,
        /// Byte offset where the limit was hit.
        offset: usize,
    },
    /// A string field is not valid UTF-8 (the backend requires UTF-8 pieces and surfaces).
    #[error("field {field} (index {index}) is not valid UTF-8")]
    InvalidUtf8 {
        /// Field holding the bytes.
        field: &'static str,
        /// Piece index, or 0 for non-repeated fields.
        index: usize,
    },
    /// The model has no pieces at all.
    #[error("model has no pieces")]
    NoPieces,
    /// More pieces than fit in a `u32` id space (`i32` in sentencepiece).
    #[error("model has {count} pieces, more than sentencepiece's i32 id space")]
    TooManyPieces {
        /// Number of pieces found.
        count: usize,
    },
    /// A piece is empty (sentencepiece: "piece must not be empty").
    #[error("piece {index} is empty")]
    EmptyPiece {
        /// Piece index.
        index: usize,
    },
    /// A piece is 8000 bytes or longer (sentencepiece: "piece is too long").
    #[error("piece {index} is {len} bytes long (limit 7999)")]
    PieceTooLong {
        /// Piece index.
        index: usize,
        /// Piece length in bytes.
        len: usize,
    },
    /// A piece contains a NUL byte (sentencepiece: "piece must not include null character").
    #[error("piece {index} contains a NUL byte")]
    NulInPiece {
        /// Piece index.
        index: usize,
    },
    /// The same piece string is defined twice (sentencepiece: "... is already defined").
    #[error("piece {index} {piece:?} is already defined")]
    DuplicatePiece {
        /// Index of the second definition.
        index: usize,
        /// The duplicated piece.
        piece: String,
    },
    /// More than one piece of type UNKNOWN.
    #[error("unknown piece defined twice (second at index {index})")]
    DuplicateUnknown {
        /// Index of the second UNKNOWN piece.
        index: usize,
    },
    /// No UNKNOWN piece while byte_fallback is off (sentencepiece: "unk is not defined").
    #[error("model has no UNKNOWN piece and byte_fallback is off")]
    MissingUnknown,
    /// A BYTE piece although `trainer_spec.byte_fallback` is false.
    #[error("byte piece {index} found although byte_fallback is false")]
    BytePieceWithoutFallback {
        /// Piece index.
        index: usize,
    },
    /// A BYTE piece whose text is not `<0xXX>`.
    #[error("byte piece {index} {piece:?} is not of the form <0xXX>")]
    InvalidBytePiece {
        /// Piece index.
        index: usize,
        /// The piece text.
        piece: String,
    },
    /// byte_fallback is on but not all 256 `<0xXX>` pieces exist.
    #[error("byte_fallback is on but byte piece <0x{missing:02X}> is missing")]
    MissingBytePieces {
        /// The first missing byte value.
        missing: u8,
    },
    /// A Unigram model with a NaN or infinite score (sentencepiece: "score is NaN or Inf").
    #[error("piece {index} has a NaN or infinite score")]
    NonFiniteScore {
        /// Piece index.
        index: usize,
    },
    /// A Unigram model without any NORMAL, USER_DEFINED or UNUSED piece.
    #[error("unigram model has no normal pieces")]
    NoNormalPieces,
    /// The precompiled charsmap is malformed.
    #[error("{spec}.precompiled_charsmap is invalid: {reason}")]
    Charsmap {
        /// `normalizer_spec` or `denormalizer_spec`.
        spec: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An id outside `0..vocab_size` was passed to decode.
    #[error("unknown token id {0}")]
    UnknownId(u32),
    /// The denormalizer produced bytes that are not UTF-8.
    #[error("decoded text is not valid UTF-8")]
    DecodedNotUtf8,
}
