//! The budget types that hold a handle: [`TokenCounter`] and [`Chunks`]
//! (above `tokenizer.rs` in the layer map; the searches they run are
//! `budget`'s, below it).

use super::EdgeRule;
use super::budget::Search;
use crate::error::{Error, ErrorKind, Result};
use crate::tokenizer::Tokenizer;

/// Counts everything appended so far, re-encoding only the text after the
/// last restart point (invariant `budget-equals-brute-force`).
#[derive(Debug, Clone)]
pub struct TokenCounter {
    tok: Tokenizer,
    add_special_tokens: bool,
    text: String,
    /// 0 or a restart point of `text` that later text cannot change.
    anchor: usize,
    /// `count(text[..anchor])` without BOS/EOS.
    anchor_count: usize,
    /// Bytes past a restart point that must be present before it is final
    /// (an added token could still straddle it).
    lookahead: usize,
}

impl TokenCounter {
    pub(crate) fn new(tok: Tokenizer, add_special_tokens: bool) -> Self {
        let lookahead = tok.budget_edges().map_or(0, EdgeRule::max_token_len) + 4;
        Self {
            tok,
            add_special_tokens,
            text: String::new(),
            anchor: 0,
            anchor_count: 0,
            lookahead,
        }
    }

    /// Appends `piece`. Amortized cost: proportional to `piece` plus the text
    /// since the last restart point.
    pub fn push(&mut self, piece: &str) -> Result<()> {
        let scan_from = self.anchor + 1;
        self.text.push_str(piece);
        let Some(edges) = self.tok.budget_edges() else {
            return Ok(());
        };
        let limit = self.text.len().saturating_sub(self.lookahead);
        if limit <= scan_from {
            return Ok(());
        }
        let tok = &self.tok;
        let mut search = Search::new(&self.text, Some(edges), |t: &str| tok.count_raw(t));
        if let Some(s) = search.prev_restart(scan_from, limit) {
            let piece = search.ctx(self.anchor, s)?;
            self.anchor_count += piece;
            self.anchor = s;
        }
        Ok(())
    }

    /// Exact token count of everything appended so far (as
    /// `encode(text, add_special_tokens).len()`).
    pub fn count(&self) -> Result<usize> {
        if self.text.is_empty() {
            return self.tok.count("", self.add_special_tokens);
        }
        let tok = &self.tok;
        let edges = tok.budget_edges();
        let mut search = Search::new(&self.text, edges, |t: &str| tok.count_raw(t));
        let tail = search.ctx(self.anchor, self.text.len())?;
        Ok(self.anchor_count + tail + tok.special_overhead(&self.text, self.add_special_tokens)?)
    }

    /// Everything appended so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Empties the counter, keeping the tokenizer.
    pub fn clear(&mut self) {
        self.text.clear();
        self.anchor = 0;
        self.anchor_count = 0;
    }
}

/// One chunk of [`Tokenizer::split`](crate::Tokenizer::split): the byte range
/// `[start, end)` of the input and the chunk's own token count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Chunk {
    /// First byte of the chunk in the input.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
    /// `encode(&text[start..end], add_special_tokens).len()`.
    pub tokens: usize,
}

/// The iterator [`Tokenizer::split`](crate::Tokenizer::split) returns.
#[derive(Debug)]
pub struct Chunks<'a> {
    tok: &'a Tokenizer,
    text: &'a str,
    at: usize,
    max_tokens: usize,
    add_special_tokens: bool,
    done: bool,
}

impl<'a> Chunks<'a> {
    pub(crate) fn new(
        tok: &'a Tokenizer,
        text: &'a str,
        max_tokens: usize,
        add_special_tokens: bool,
    ) -> Self {
        Self {
            tok,
            text,
            at: 0,
            max_tokens,
            add_special_tokens,
            done: false,
        }
    }
}

impl Iterator for Chunks<'_> {
    type Item = Result<Chunk>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.at >= self.text.len() {
            return None;
        }
        let rest = &self.text[self.at..];
        let found = self
            .tok
            .prefix_within_counted(rest, self.max_tokens, self.add_special_tokens);
        match found {
            Ok((0, _)) => {
                self.done = true;
                Some(Err(Error::new(ErrorKind::BudgetTooSmall {
                    max_tokens: self.max_tokens,
                    at: self.at,
                })))
            }
            Ok((end, tokens)) => {
                let chunk = Chunk {
                    start: self.at,
                    end: self.at + end,
                    tokens,
                };
                self.at += end;
                Some(Ok(chunk))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl Tokenizer {
    /// Consecutive chunks of `text`, each the longest prefix of the rest
    /// within `max_tokens` tokens, covering the text with no gaps. A budget
    /// too small for some character yields
    /// [`ErrorKind::BudgetTooSmall`](crate::ErrorKind::BudgetTooSmall) and ends.
    pub fn split<'t>(
        &'t self,
        text: &'t str,
        max_tokens: usize,
        add_special_tokens: bool,
    ) -> Chunks<'t> {
        Chunks::new(self, text, max_tokens, add_special_tokens)
    }

    /// A counter for text that arrives piece by piece: the exact count of
    /// everything appended so far, at a cost proportional to what was
    /// appended (see [`TokenCounter`]).
    pub fn token_counter(&self, add_special_tokens: bool) -> TokenCounter {
        TokenCounter::new(self.clone(), add_special_tokens)
    }
}
