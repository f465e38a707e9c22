//! [`DecodeStream`]: ids in one at a time, text out as soon as it is final.

use crate::backend::DecodeStyle;
use crate::error::{Error, Result};
use crate::tokenizer::Tokenizer;

/// Prompt tokens kept as context for the first generated token (as TGI, vLLM and sglang do).
const PROMPT_CONTEXT: usize = 5;

/// Incremental detokenizer for one generation.
///
/// Each [`step`](Self::step) returns the text that token completes, or `None`
/// while a character or word is still forming. Text is never taken back and
/// never holds a broken UTF-8 character, and joining every step plus
/// [`flush`](Self::flush) gives exactly `decode(prompt + generated)` minus
/// `decode(prompt)` (DESIGN.md, stream rules).
///
/// Decoding token by token on its own gets this wrong, which is the failure the
/// type prevents:
///
/// ```
/// use router_tokenizer::{create_tokenizer, DecodeStream};
/// let tok = create_tokenizer("o200k_base")?;
/// let ids = tok.encode("Fraktur: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢", false)?.into_ids();
/// // One id at a time: each 4-byte letter is split across tokens.
/// let naive: String = ids.iter().map(|&id| tok.decode(&[id], false)).collect::<Result<_, _>>()?;
/// assert!(naive.contains('\u{FFFD}'));
/// // The stream holds partial bytes back until the character is complete:
/// let mut stream = DecodeStream::new(&tok, &[], false);
/// let mut text = String::new();
/// for &id in &ids {
///     if let Some(piece) = stream.step(id)? {
///         assert!(!piece.contains('\u{FFFD}'));
///         text.push_str(&piece);
///     }
/// }
/// text.push_str(&stream.flush()?.unwrap_or_default());
/// assert_eq!(text, "Fraktur: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢");
/// # Ok::<(), router_tokenizer::Error>(())
/// ```
pub struct DecodeStream {
    tokenizer: Tokenizer,
    skip_special_tokens: bool,
    state: State,
}

enum State {
    /// Byte-concatenative backends: O(1) per token, no re-decoding.
    Bytes {
        /// Bytes not yet emitted: an incomplete UTF-8 character.
        pending: Vec<u8>,
        /// Ids whose bytes are (partly) in `pending`.
        ids: Vec<u32>,
    },
    /// Other decoders: re-decode a window with the prefix/read-offset rule.
    Window {
        ids: Vec<u32>,
        prefix_offset: usize,
        read_offset: usize,
    },
}

impl DecodeStream {
    /// A stream whose first token follows `prompt_ids` (only the last few are kept).
    pub fn new(tokenizer: &Tokenizer, prompt_ids: &[u32], skip_special_tokens: bool) -> Self {
        // The last few prompt ids that render: skipped specials decode to
        // nothing, so a window of only those would lose the leading space.
        let mut context: Vec<u32> = prompt_ids
            .iter()
            .rev()
            .filter(|&&id| !(skip_special_tokens && tokenizer.is_special_id(id)))
            .take(PROMPT_CONTEXT)
            .copied()
            .collect();
        context.reverse();
        let context = &context[..];
        let state = match tokenizer.decode_style() {
            DecodeStyle::ByteConcat => {
                // A prompt that ends inside a character hands its partial bytes on.
                let mut tail: Vec<u8> = Vec::new();
                for &id in context {
                    if let Some(b) = tokenizer.token_bytes(id)
                        && !(skip_special_tokens && tokenizer.is_special_id(id))
                    {
                        tail.extend_from_slice(b);
                    }
                }
                let keep = incomplete_suffix_len(&tail);
                State::Bytes {
                    pending: tail[tail.len() - keep..].to_vec(),
                    ids: Vec::new(),
                }
            }
            _ => State::Window {
                ids: context.to_vec(),
                prefix_offset: 0,
                read_offset: context.len(),
            },
        };
        Self {
            tokenizer: tokenizer.clone(),
            skip_special_tokens,
            state,
        }
    }

    /// Feeds one id; returns the text it completes, if any.
    pub fn step(&mut self, id: u32) -> Result<Option<String>> {
        match &mut self.state {
            State::Bytes { pending, ids } => {
                let bytes = self
                    .tokenizer
                    .token_bytes(id)
                    .ok_or_else(|| Error::unknown_id(id, self.tokenizer.vocab_size()))?;
                if self.skip_special_tokens && self.tokenizer.is_special_id(id) {
                    return Ok(None);
                }
                // Fast path: nothing pending and the token is whole characters.
                if pending.is_empty()
                    && let Ok(text) = std::str::from_utf8(bytes)
                {
                    return Ok((!text.is_empty()).then(|| text.to_owned()));
                }
                pending.extend_from_slice(bytes);
                ids.push(id);
                let text = take_complete(pending, false);
                if pending.is_empty() {
                    ids.clear();
                }
                Ok((!text.is_empty()).then_some(text))
            }
            State::Window {
                ids,
                prefix_offset,
                read_offset,
            } => {
                if id as usize >= self.tokenizer.vocab_size() {
                    return Err(Error::unknown_id(id, self.tokenizer.vocab_size()));
                }
                ids.push(id);
                // A byte-fallback piece (`<0xNN>`) may still turn earlier bytes
                // into U+FFFD once the run ends: wait for the run to end.
                if self
                    .tokenizer
                    .id_to_token(id)
                    .is_some_and(|t| t.len() == 6 && t.starts_with("<0x") && t.ends_with('>'))
                {
                    return Ok(None);
                }
                let (prefix, full) = window_texts(
                    &self.tokenizer,
                    ids,
                    *prefix_offset,
                    *read_offset,
                    self.skip_special_tokens,
                )?;
                if full.len() <= prefix.len() || full.ends_with('\u{FFFD}') {
                    return Ok(None);
                }
                let new_text = new_suffix(&prefix, &full).to_owned();
                // The ids just emitted become the next prefix (TGI's rule); the
                // ones before them are never read again, so memory stays bounded.
                ids.drain(..*read_offset);
                *prefix_offset = 0;
                *read_offset = ids.len();
                Ok((!new_text.is_empty()).then_some(new_text))
            }
        }
    }

    /// Feeds several ids; returns the text they complete together.
    pub fn step_batch(&mut self, ids: &[u32]) -> Result<Option<String>> {
        let mut out = String::new();
        for &id in ids {
            if let Some(text) = self.step(id)? {
                out.push_str(&text);
            }
        }
        Ok((!out.is_empty()).then_some(out))
    }

    /// Ends the stream: whatever is still held (a partial character becomes U+FFFD,
    /// exactly as a one-shot decode renders it).
    pub fn flush(&mut self) -> Result<Option<String>> {
        let text = match &mut self.state {
            State::Bytes { pending, ids } => {
                ids.clear();
                take_complete(pending, true)
            }
            State::Window {
                ids,
                prefix_offset,
                read_offset,
            } => {
                if *read_offset >= ids.len() {
                    return Ok(None);
                }
                let (prefix, full) = window_texts(
                    &self.tokenizer,
                    ids,
                    *prefix_offset,
                    *read_offset,
                    self.skip_special_tokens,
                )?;
                let text = new_suffix(&prefix, &full).to_owned();
                *prefix_offset = *read_offset;
                *read_offset = ids.len();
                text
            }
        };
        Ok((!text.is_empty()).then_some(text))
    }

    /// The ids whose text is not fully emitted yet (plus, for windowed
    /// decoders, the few before them kept as context).
    pub fn tokens(&self) -> &[u32] {
        match &self.state {
            State::Bytes { ids, .. } | State::Window { ids, .. } => ids,
        }
    }
}

/// The already-emitted prefix of a window and the whole window, decoded.
fn window_texts(
    tokenizer: &Tokenizer,
    ids: &[u32],
    prefix_offset: usize,
    read_offset: usize,
    skip_special_tokens: bool,
) -> Result<(String, String)> {
    Ok((
        tokenizer.decode(&ids[prefix_offset..read_offset], skip_special_tokens)?,
        tokenizer.decode(&ids[prefix_offset..], skip_special_tokens)?,
    ))
}

/// The part of `full` after `prefix`. When a decoder rewrote the prefix
/// (tokenizers' `InvalidPrefix` case), emit from the end of the longest common
/// prefix: text may repeat, but none is lost and nothing panics.
fn new_suffix<'a>(prefix: &str, full: &'a str) -> &'a str {
    if let Some(rest) = full.strip_prefix(prefix) {
        return rest;
    }
    let common = prefix
        .char_indices()
        .zip(full.chars())
        .find(|((_, a), b)| a != b)
        .map_or(prefix.len().min(full.len()), |((i, _), _)| i);
    let mut start = common.min(full.len());
    while !full.is_char_boundary(start) {
        start -= 1;
    }
    &full[start..]
}

/// Takes the longest valid UTF-8 prefix out of `pending`, turning invalid
/// sequences into U+FFFD as `String::from_utf8_lossy` would. An incomplete
/// character at the end stays, unless `finish`.
pub(crate) fn take_complete(pending: &mut Vec<u8>, finish: bool) -> String {
    let mut out = String::new();
    let mut start = 0;
    loop {
        match std::str::from_utf8(&pending[start..]) {
            Ok(s) => {
                out.push_str(s);
                start = pending.len();
                break;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                // Safe: `valid_up_to` bytes are valid UTF-8.
                out.push_str(&String::from_utf8_lossy(&pending[start..start + valid]));
                start += valid;
                match e.error_len() {
                    Some(n) => {
                        out.push('\u{FFFD}');
                        start += n;
                    }
                    None if finish => {
                        out.push('\u{FFFD}');
                        start = pending.len();
                        break;
                    }
                    None => break,
                }
            }
        }
    }
    pending.drain(..start);
    out
}

/// Length of a trailing incomplete (but so far valid) UTF-8 sequence.
fn incomplete_suffix_len(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => 0,
        Err(e) if e.error_len().is_none() => bytes.len() - e.valid_up_to(),
        Err(_) => {
            // Invalid bytes earlier: only a valid-looking tail can continue.
            let tail_start = bytes.len().saturating_sub(3);
            (tail_start..bytes.len())
                .find(|&i| {
                    matches!(std::str::from_utf8(&bytes[i..]), Err(e) if e.valid_up_to() == 0 && e.error_len().is_none())
                })
                .map_or(0, |i| bytes.len() - i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_complete_matches_lossy() {
        for bytes in [
            &b"abc"[..],
            b"\xE2\x82",
            b"\xE2\x82\xAC",
            b"a\xFFb",
            b"\xF0\x9F\x98",
            b"\xC3\x28",
            b"\xED\xA0\x80x",
        ] {
            let mut pending = bytes.to_vec();
            let mut out = take_complete(&mut pending, false);
            out.push_str(&take_complete(&mut pending, true));
            assert_eq!(out, String::from_utf8_lossy(bytes), "{bytes:?}");
            // Byte at a time gives the same.
            let mut pending = Vec::new();
            let mut out = String::new();
            for &b in bytes {
                pending.push(b);
                out.push_str(&take_complete(&mut pending, false));
            }
            out.push_str(&take_complete(&mut pending, true));
            assert_eq!(
                out,
                String::from_utf8_lossy(bytes),
                "{bytes:?} one byte at a time"
            );
        }
    }

    #[test]
    fn new_suffix_never_panics() {
        assert_eq!(new_suffix("ab", "abc"), "c");
        assert_eq!(new_suffix(" a", "a b"), "a b");
        assert_eq!(new_suffix("é", "e\u{301}x"), "e\u{301}x");
        assert_eq!(new_suffix("", "x"), "x");
    }
}
