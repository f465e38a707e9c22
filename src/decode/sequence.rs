//! [`Sequence`]: a growing token sequence and its text, fed by text or by ids.

use super::stream::{DecodeStream, UnknownIds};
use crate::error::Result;
use crate::tokenizer::Tokenizer;

/// A token sequence with its decoded text, kept in step.
///
/// [`append_text`](Self::append_text) encodes the text and feeds the ids
/// through the same incremental decoder as [`append_token`](Self::append_token),
/// so mixing the two is correct by construction: [`text`](Self::text) plus the
/// still-held tail is always `decode(token_ids())`. Ids outside the
/// vocabulary are errors here (the sequence keeps its ids for `decode`).
#[derive(Debug, Clone)]
pub struct Sequence {
    tokenizer: Tokenizer,
    stream: DecodeStream,
    ids: Vec<u32>,
    text: String,
    skip_special_tokens: bool,
}

impl Sequence {
    /// An empty sequence.
    pub fn new(tokenizer: &Tokenizer, skip_special_tokens: bool) -> Self {
        Self {
            tokenizer: tokenizer.clone(),
            stream: DecodeStream::new(tokenizer, &[], skip_special_tokens)
                .with_unknown_ids(UnknownIds::Error),
            ids: Vec::new(),
            text: String::new(),
            skip_special_tokens,
        }
    }

    /// Empties the sequence, keeping the tokenizer and settings.
    pub fn clear(&mut self) {
        self.stream = DecodeStream::new(&self.tokenizer, &[], self.skip_special_tokens)
            .with_unknown_ids(UnknownIds::Error);
        self.ids.clear();
        self.text.clear();
    }

    /// Encodes `text` (no special tokens added) and appends its ids.
    pub fn append_text(&mut self, text: &str) -> Result<()> {
        let ids = self.tokenizer.encode(text, false)?.into_ids();
        for id in ids {
            self.append_token(id)?;
        }
        Ok(())
    }

    /// Appends one id; returns the text it completed.
    pub fn append_token(&mut self, id: u32) -> Result<Option<String>> {
        let new = self.stream.step(id)?;
        self.ids.push(id);
        if let Some(t) = &new {
            self.text.push_str(t);
        }
        Ok(new)
    }

    /// The text completed so far (a partial character at the end is held back).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The whole text, the held-back tail included (as `decode` renders it).
    pub fn full_text(&self) -> Result<String> {
        self.tokenizer.decode(&self.ids, self.skip_special_tokens)
    }

    /// Every id appended so far.
    pub fn token_ids(&self) -> &[u32] {
        &self.ids
    }

    /// Number of ids.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no id was appended.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}
