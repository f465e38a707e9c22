//! A `ModelProto` written in memory, for vocabularies that arrive without a
//! `.model` file (a `tokenizer.json` converted from one, DESIGN.md invariant
//! `spm-route-same-merges`).
//!
//! The bytes go through [`SentencePieceModel::from_bytes`], so such a model
//! is built and checked exactly as a `.model` file is: one engine, one set of
//! load checks.

use super::{PieceType, SentencePieceModel, SpmError};

/// One piece: its text, score and type, in id order.
pub(crate) struct SynthPiece<'a> {
    pub(crate) piece: &'a str,
    pub(crate) score: f32,
    pub(crate) kind: PieceType,
}

/// A BPE model with byte fallback and the identity normalizer that escapes
/// spaces as `▁` and adds the dummy prefix (Llama-2 / Mistral-7B's settings).
pub(crate) fn bpe_byte_fallback(
    pieces: &[SynthPiece<'_>],
    unk_piece: Option<&str>,
) -> Result<SentencePieceModel, SpmError> {
    let mut out = Vec::with_capacity(pieces.iter().map(|p| p.piece.len() + 12).sum());
    for p in pieces {
        let mut msg = Vec::with_capacity(p.piece.len() + 10);
        put_bytes(&mut msg, 1, p.piece.as_bytes());
        put_tag(&mut msg, 2, 5);
        msg.extend_from_slice(&p.score.to_le_bytes());
        put_varint_field(&mut msg, 3, piece_type_number(p.kind));
        put_bytes(&mut out, 1, &msg);
    }
    let mut trainer = Vec::new();
    put_varint_field(&mut trainer, 3, 2); // model_type = BPE
    put_varint_field(&mut trainer, 35, 1); // byte_fallback = true
    if let Some(unk) = unk_piece {
        put_bytes(&mut trainer, 45, unk.as_bytes());
    }
    put_bytes(&mut out, 2, &trainer);
    let mut normalizer = Vec::new();
    put_bytes(&mut normalizer, 1, b"identity");
    put_varint_field(&mut normalizer, 3, 1); // add_dummy_prefix
    put_varint_field(&mut normalizer, 4, 0); // remove_extra_whitespaces (default true)
    put_varint_field(&mut normalizer, 5, 1); // escape_whitespaces
    put_bytes(&mut out, 3, &normalizer);
    SentencePieceModel::from_bytes(&out)
}

fn piece_type_number(kind: PieceType) -> u64 {
    match kind {
        PieceType::Normal => 1,
        PieceType::Unknown => 2,
        PieceType::Control => 3,
        PieceType::UserDefined => 4,
        PieceType::Unused => 5,
        PieceType::Byte => 6,
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_tag(out: &mut Vec<u8>, field: u64, wire_type: u64) {
    put_varint(out, (field << 3) | wire_type);
}

fn put_varint_field(out: &mut Vec<u8>, field: u64, v: u64) {
    put_tag(out, field, 0);
    put_varint(out, v);
}

fn put_bytes(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    put_tag(out, field, 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_model_reads_back() {
        let mut names: Vec<String> = (0..=255u8).map(|b| format!("<0x{b:02X}>")).collect();
        names.extend(["<unk>", "\u{2581}", "a", "b", "\u{2581}a", "ab"].map(str::to_owned));
        let pieces: Vec<SynthPiece<'_>> = names
            .iter()
            .enumerate()
            .map(|(i, n)| SynthPiece {
                piece: n,
                score: if i < 257 { 0.0 } else { -(i as f32) },
                kind: match i {
                    0..=255 => PieceType::Byte,
                    256 => PieceType::Unknown,
                    _ => PieceType::Normal,
                },
            })
            .collect();
        let m = bpe_byte_fallback(&pieces, Some("<unk>")).unwrap();
        assert_eq!(m.vocab_size(), names.len());
        assert_eq!(m.unk_id(), Some(256));
        assert!(m.byte_fallback() && m.adds_dummy_prefix());
        assert!(!m.settings().remove_extra_whitespaces);
        assert_eq!(m.score(261), Some(-261.0));
        // "ab" is split "▁a" + "b" ("▁a" scores higher than "ab"); "c" falls back to a byte.
        assert_eq!(m.encode("ab c"), vec![260, 259, 257, 0x63]);
    }
}
