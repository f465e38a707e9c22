//! [`StopSequenceDecoder`]: a [`DecodeStream`] that stops on tokens or strings
//! and never emits text that could still turn into a stop.

use aho_corasick::AhoCorasick;
use rustc_hash::FxHashSet;

use super::stream::DecodeStream;
use crate::error::{Error, Result};
use crate::tokenizer::Tokenizer;

/// What to stop on. Hidden stops are cut from the output; visible ones are kept.
#[derive(Debug, Clone, Default)]
pub struct StopConfig {
    /// Token ids that end generation; their text is not emitted.
    pub stop_token_ids: Vec<u32>,
    /// Token ids that end generation; their text is emitted.
    pub visible_stop_token_ids: Vec<u32>,
    /// Strings that end generation; the output stops before them.
    pub stop_strings: Vec<String>,
    /// Strings that end generation; the output includes them.
    pub visible_stop_strings: Vec<String>,
    /// Stops are ignored until more than this many tokens were processed.
    pub min_tokens: usize,
    /// Leave special tokens out of the text.
    pub skip_special_tokens: bool,
}

/// What one [`StopSequenceDecoder::process_token`] call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Text that is final and can be sent.
    Text(String),
    /// Nothing to send yet (a partial character, or text that may start a stop).
    Held,
    /// Generation stopped; nothing more to send.
    Stopped,
    /// Generation stopped; send this last text.
    StoppedWithText(String),
}

/// The stop that ended generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchedStop {
    /// A stop token id, and whether it was visible.
    Token {
        /// The id.
        id: u32,
        /// Whether its text was emitted.
        visible: bool,
    },
    /// A stop string: its index in the hidden or visible list.
    String {
        /// Index in `stop_strings` (hidden) or `visible_stop_strings` (visible).
        index: usize,
        /// The string.
        text: String,
        /// Whether it was emitted.
        visible: bool,
    },
}

/// Streams text for one generation and stops on the first stop token or string.
///
/// The jail holds only the longest suffix of the text that is a proper prefix
/// of some stop string; everything before it is released at once.
pub struct StopSequenceDecoder {
    stream: DecodeStream,
    tokenizer: Tokenizer,
    /// The stream as it stood before the first generated id, for `reset`.
    start: DecodeStream,
    config: StopConfig,
    /// All stop strings, hidden first, then visible.
    matcher: Option<AhoCorasick>,
    /// Every proper prefix of every stop string.
    prefixes: FxHashSet<Box<[u8]>>,
    /// First bytes of stop strings: a jail can only start at one of them.
    starts: [bool; 256],
    longest_stop: usize,
    jail: String,
    tokens_seen: usize,
    matched: Option<MatchedStop>,
}

impl StopSequenceDecoder {
    /// A decoder for a generation that follows `prompt_ids`.
    pub fn new(tokenizer: &Tokenizer, prompt_ids: &[u32], config: StopConfig) -> Result<Self> {
        let all: Vec<&str> = config
            .stop_strings
            .iter()
            .chain(&config.visible_stop_strings)
            .map(String::as_str)
            .collect();
        if all.iter().any(|s| s.is_empty()) {
            return Err(Error::config("empty stop string"));
        }
        let matcher = if all.is_empty() {
            None
        } else {
            Some(AhoCorasick::new(&all).map_err(|e| Error::config(format!("stop strings: {e}")))?)
        };
        let mut prefixes = FxHashSet::default();
        for s in &all {
            for k in 1..s.len() {
                prefixes.insert(s.as_bytes()[..k].into());
            }
        }
        let mut starts = [false; 256];
        for s in &all {
            if let Some(&b) = s.as_bytes().first() {
                starts[usize::from(b)] = true;
            }
        }
        let start = DecodeStream::new(tokenizer, prompt_ids, config.skip_special_tokens);
        Ok(Self {
            stream: start.clone(),
            start,
            tokenizer: tokenizer.clone(),
            longest_stop: all.iter().map(|s| s.len()).max().unwrap_or(0),
            matcher,
            prefixes,
            starts,
            config,
            jail: String::new(),
            tokens_seen: 0,
            matched: None,
        })
    }

    /// Feeds one generated id.
    pub fn process_token(&mut self, id: u32) -> Result<Output> {
        if self.matched.is_some() {
            return Ok(Output::Stopped);
        }
        self.tokens_seen += 1;
        let stops_active = self.tokens_seen > self.config.min_tokens;
        let hidden = self.config.stop_token_ids.contains(&id);
        let visible = self.config.visible_stop_token_ids.contains(&id);
        if stops_active && (hidden || visible) {
            if id as usize >= self.tokenizer.vocab_size() {
                return Err(Error::unknown_id(id, self.tokenizer.vocab_size()));
            }
            let mut text = std::mem::take(&mut self.jail);
            if visible && let Some(t) = self.stream.step(id)? {
                text.push_str(&t);
            }
            if let Some(t) = self.stream.flush()? {
                text.push_str(&t);
            }
            self.matched = Some(MatchedStop::Token { id, visible });
            return Ok(stopped(text));
        }
        let new_text = self.stream.step(id)?;
        Ok(self.absorb(new_text.as_deref().unwrap_or(""), stops_active))
    }

    /// Ends the generation: releases the jail and any partial character.
    pub fn flush(&mut self) -> Result<Output> {
        if self.matched.is_some() {
            return Ok(Output::Stopped);
        }
        let tail = self.stream.flush()?.unwrap_or_default();
        let stops_active = self.tokens_seen > self.config.min_tokens;
        let out = self.absorb(&tail, stops_active);
        if matches!(out, Output::Stopped | Output::StoppedWithText(_)) {
            return Ok(out);
        }
        let mut text = match out {
            Output::Text(t) => t,
            _ => String::new(),
        };
        text.push_str(&std::mem::take(&mut self.jail));
        Ok(if text.is_empty() {
            Output::Held
        } else {
            Output::Text(text)
        })
    }

    /// Starts over for a new generation after the same prompt, keeping the configuration.
    pub fn reset(&mut self) {
        self.stream = self.start.clone();
        self.jail.clear();
        self.tokens_seen = 0;
        self.matched = None;
    }

    /// The stop that ended generation, if any.
    pub fn matched_stop(&self) -> Option<&MatchedStop> {
        self.matched.as_ref()
    }

    /// The text currently held back because it may start a stop string.
    pub fn jailed(&self) -> &str {
        &self.jail
    }

    /// Adds new text to the jail, stops at the first complete stop string,
    /// and releases everything that can no longer start one.
    fn absorb(&mut self, new_text: &str, stops_active: bool) -> Output {
        if new_text.is_empty() {
            return Output::Held;
        }
        self.jail.push_str(new_text);
        if stops_active && let Some(matcher) = &self.matcher {
            // The first stop to complete; among those ending together, the longest.
            let first = matcher
                .find_overlapping_iter(self.jail.as_str())
                .min_by_key(|m| (m.end(), m.start()));
            if let Some(m) = first {
                let index = m.pattern().as_usize();
                let n_hidden = self.config.stop_strings.len();
                let visible = index >= n_hidden;
                let (list_index, text) = if visible {
                    (
                        index - n_hidden,
                        self.config.visible_stop_strings[index - n_hidden].clone(),
                    )
                } else {
                    (index, self.config.stop_strings[index].clone())
                };
                let cut = if visible { m.end() } else { m.start() };
                let out = self.jail[..cut].to_owned();
                self.jail.clear();
                self.matched = Some(MatchedStop::String {
                    index: list_index,
                    text,
                    visible,
                });
                return stopped(out);
            }
        }
        // Keep the longest suffix that is a proper prefix of a stop string.
        let len = self.jail.len();
        let max_keep = self.longest_stop.saturating_sub(1).min(len);
        let keep = (1..=max_keep)
            .rev()
            .find(|&k| {
                let bytes = &self.jail.as_bytes()[len - k..];
                self.starts[usize::from(bytes[0])]
                    && self.jail.is_char_boundary(len - k)
                    && self.prefixes.contains(bytes)
            })
            .unwrap_or(0);
        let released: String = self.jail.drain(..len - keep).collect();
        if released.is_empty() {
            Output::Held
        } else {
            Output::Text(released)
        }
    }
}

fn stopped(text: String) -> Output {
    if text.is_empty() {
        Output::Stopped
    } else {
        Output::StoppedWithText(text)
    }
}
