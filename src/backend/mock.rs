//! A tiny byte tokenizer for tests: id = byte value, plus `<s>` (256) and `</s>` (257).

use crate::backend::{DecodeStyle, Decoder, Encoder, Tokenizer};
use crate::encoding::Encoding;
use crate::error::{Error, Result};
use crate::special::{SpecialToken, SpecialTokens};

/// Encodes each byte as its own id; `<s>`/`</s>` in the text are special.
pub struct MockTokenizer {
    specials: SpecialTokens,
    bytes: Vec<Vec<u8>>,
}

impl Default for MockTokenizer {
    fn default() -> Self {
        let mut bytes: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        bytes.push(b"<s>".to_vec());
        bytes.push(b"</s>".to_vec());
        Self {
            specials: SpecialTokens {
                bos: Some(SpecialToken {
                    content: "<s>".into(),
                    id: 256,
                }),
                eos: Some(SpecialToken {
                    content: "</s>".into(),
                    id: 257,
                }),
                ..SpecialTokens::default()
            },
            bytes,
        }
    }
}

impl Encoder for MockTokenizer {
    fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        let ids = self
            .encode_with_offsets(text, add_special_tokens)?
            .into_ids();
        Ok(Encoding::from_ids(ids))
    }

    fn encode_with_offsets(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        let mut ids = Vec::new();
        let mut offsets = Vec::new();
        if add_special_tokens {
            ids.push(256);
            offsets.push((0, 0));
        }
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i..].starts_with(b"<s>") {
                ids.push(256);
                offsets.push((i, i + 3));
                i += 3;
            } else if b[i..].starts_with(b"</s>") {
                ids.push(257);
                offsets.push((i, i + 4));
                i += 4;
            } else {
                ids.push(u32::from(b[i]));
                offsets.push((i, i + 1));
                i += 1;
            }
        }
        Encoding::with_offsets(ids, offsets)
            .ok_or_else(|| Error::backend("mock", "length mismatch"))
    }

    /// Every byte is its own id; `<s>`/`</s>` are text.
    fn encode_plain(
        &self,
        text: &str,
        with_offsets: bool,
        _markers: &[u32],
    ) -> Option<Result<Encoding>> {
        let ids: Vec<u32> = text.bytes().map(u32::from).collect();
        if !with_offsets {
            return Some(Ok(Encoding::from_ids(ids)));
        }
        let offsets = (0..text.len()).map(|i| (i, i + 1)).collect();
        Some(
            Encoding::with_offsets(ids, offsets)
                .ok_or_else(|| Error::backend("mock", "length mismatch")),
        )
    }
}

impl Decoder for MockTokenizer {
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        let mut out = Vec::new();
        for &id in ids {
            let bytes = self
                .token_bytes(id)
                .ok_or_else(|| Error::unknown_id(id, self.bytes.len()))?;
            if !(skip_special_tokens && self.is_special_id(id)) {
                out.extend_from_slice(bytes);
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn decode_style(&self) -> DecodeStyle {
        DecodeStyle::ByteConcat
    }

    fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.bytes.get(id as usize).map(Vec::as_slice)
    }
}

impl Tokenizer for MockTokenizer {
    fn backend_name(&self) -> &'static str {
        "mock"
    }

    fn vocab_size(&self) -> usize {
        self.bytes.len()
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.bytes
            .iter()
            .position(|b| b == token.as_bytes())
            .and_then(|p| u32::try_from(p).ok())
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        self.token_bytes(id)
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    fn is_special_id(&self, id: u32) -> bool {
        id >= 256 && (id as usize) < self.bytes.len()
    }

    fn special_tokens(&self) -> &SpecialTokens {
        &self.specials
    }
}

/// The public plug-in trait, so downstream tests (feature `test-util`) can
/// wrap it with [`Tokenizer::from_backend`](crate::Tokenizer::from_backend):
/// everything but the crate-internal hooks, from the impls above.
impl crate::backend::plugin::Backend for MockTokenizer {
    fn backend_name(&self) -> &'static str {
        Tokenizer::backend_name(self)
    }

    fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        Encoder::encode(self, text, add_special_tokens)
    }

    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        Decoder::decode(self, ids, skip_special_tokens)
    }

    fn vocab_size(&self) -> usize {
        Tokenizer::vocab_size(self)
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        Tokenizer::token_to_id(self, token)
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        Tokenizer::id_to_token(self, id)
    }

    fn encode_with_offsets(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        Encoder::encode_with_offsets(self, text, add_special_tokens)
    }

    fn special_tokens(&self) -> &SpecialTokens {
        Tokenizer::special_tokens(self)
    }

    fn is_special_id(&self, id: u32) -> bool {
        Tokenizer::is_special_id(self, id)
    }

    fn decode_style(&self) -> DecodeStyle {
        Decoder::decode_style(self)
    }

    fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        Decoder::token_bytes(self, id)
    }
}
