//! [`TokenText`]: one id's text for logprobs, as OpenAI's API shows it.

use std::fmt::Write as _;

use crate::error::{Error, Result};
use crate::tokenizer::Tokenizer;

/// The text of one id on its own, for a logprobs entry (OpenAI's `token`
/// and `bytes` fields, vLLM's `decoded_token`).
///
/// `bytes` are what the id contributes to a decode away from the start of a
/// text (a byte-fallback piece `<0xE6>` is the byte `0xE6`, a Metaspace `▁`
/// is a space). `text` is those bytes when they are whole UTF-8 characters,
/// else OpenAI's convention for a partial character: `bytes:` followed by
/// `\xNN` for every byte (`bytes:\xe6\x97`). Computing it reads nothing but
/// the tokenizer, so a stream it is asked for is not disturbed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct TokenText {
    /// The id.
    pub id: u32,
    /// The display text.
    pub text: String,
    /// The raw bytes.
    pub bytes: Vec<u8>,
}

impl TokenText {
    /// Builds the entry from an id's raw bytes.
    pub fn from_bytes(id: u32, bytes: Vec<u8>) -> Self {
        let text = match std::str::from_utf8(&bytes) {
            Ok(s) => s.to_owned(),
            Err(_) => {
                let mut t = String::with_capacity(6 + 4 * bytes.len());
                t.push_str("bytes:");
                for b in &bytes {
                    // Writing to a String cannot fail.
                    let _ = write!(t, "\\x{b:02x}");
                }
                t
            }
        };
        Self { id, text, bytes }
    }
}

/// The raw bytes of `id` away from the start of a text; `None` outside the vocabulary.
pub(crate) fn token_raw_bytes(tok: &Tokenizer, id: u32) -> Result<Option<Vec<u8>>> {
    if let Some(b) = tok.token_bytes(id) {
        return Ok(Some(b.to_vec()));
    }
    if id as usize >= tok.vocab_size() || tok.id_to_token(id).is_none() {
        return Ok(None);
    }
    if let Some(b) = tok.byte_piece(id) {
        return Ok(Some(vec![b]));
    }
    // Windowed decoders: the id decoded on its own.
    Ok(Some(tok.decode(&[id], false)?.into_bytes()))
}

/// [`Tokenizer::token_text`]: strict about unknown ids.
pub(crate) fn token_text(tok: &Tokenizer, id: u32) -> Result<TokenText> {
    match token_raw_bytes(tok, id)? {
        Some(bytes) => Ok(TokenText::from_bytes(id, bytes)),
        None => Err(Error::unknown_id(id, tok.vocab_size())),
    }
}

impl Tokenizer {
    /// One id's text for a logprobs entry: its raw bytes and its display
    /// text (`bytes:\xe6\x97` when they are not whole characters). Fails on
    /// ids outside the vocabulary, as [`decode`](Self::decode) does.
    pub fn token_text(&self, id: u32) -> Result<TokenText> {
        token_text(self, id)
    }

    /// [`token_text`](Self::token_text) for several ids (top-k alternatives).
    pub fn token_texts(&self, ids: &[u32]) -> Result<Vec<TokenText>> {
        ids.iter().map(|&id| self.token_text(id)).collect()
    }
}
