//! [`StopSequenceDecoder`]: a [`DecodeStream`] that stops on EOS, stop tokens,
//! stop id sequences or stop strings, and never emits text that could still
//! turn into a stop.

use std::sync::Arc;

use super::kmp::Kmp;
use super::stream::{DecodeStream, UnknownIds};
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
    /// Sequences of ids that end generation once all of them were generated
    /// in a row. Their text is emitted (the earlier ids' text may already be
    /// out when the last one arrives), like a visible stop.
    pub stop_token_sequences: Vec<Vec<u32>>,
    /// The end-of-sequence ids, reported as [`MatchedStop::Eos`] and never
    /// emitted. `None`: the tokenizer's [`eos_token_ids`](Tokenizer::eos_token_ids).
    pub eos_token_ids: Option<Vec<u32>>,
    /// Generate past EOS (vLLM's `ignore_eos`): EOS ids are plain tokens.
    pub ignore_eos: bool,
    /// Stops are ignored until more than this many tokens were processed: a
    /// stop string counts only if it ends in text produced after that.
    pub min_tokens: usize,
    /// Leave special tokens out of the text.
    pub skip_special_tokens: bool,
    /// What an id outside the vocabulary does (default: skipped and counted).
    pub unknown_ids: UnknownIds,
    /// vLLM's `spaces_between_special_tokens` (see
    /// [`DecodeStream::with_spaces_between_special_tokens`]); off by default.
    pub spaces_between_special_tokens: bool,
}

/// What one [`StopSequenceDecoder::process_token`] call produced.
///
/// Serialized (feature `serde`) as `{"kind": "text", "text": "…"}`,
/// `{"kind": "held"}`, `{"kind": "stopped"}`,
/// `{"kind": "stopped_with_text", "text": "…"}`, as `rtok stream` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(tag = "kind", content = "text", rename_all = "snake_case")
)]
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

impl Output {
    /// Whether generation stopped.
    pub fn is_stopped(&self) -> bool {
        matches!(self, Self::Stopped | Self::StoppedWithText(_))
    }

    /// The text to send, if any.
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Text(t) | Self::StoppedWithText(t) => Some(t),
            Self::Held | Self::Stopped => None,
        }
    }
}

/// What one [`StopSequenceDecoder::process_tokens`] call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BatchOutput {
    /// The text of the whole batch, and whether it stopped, as one
    /// [`process_token`](StopSequenceDecoder::process_token) call per id gives.
    pub output: Output,
    /// The index in the batch of the id on which generation stopped: the
    /// router keeps `ids[..=index]` and drops the rest.
    pub stopped_at: Option<usize>,
}

/// The stop that ended generation.
///
/// Serialized (feature `serde`) with its variant as `type`: `{"type": "eos",
/// "id": 2}`, `{"type": "string", "index": 0, "text": "###", "visible": false}`, …
/// For API fields use [`finish_reason`](Self::finish_reason) and
/// [`stop_reason`](Self::stop_reason).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(tag = "type", rename_all = "snake_case")
)]
pub enum MatchedStop {
    /// An end-of-sequence id (OpenAI `finish_reason: "stop"`, vLLM `stop_reason: None`).
    Eos {
        /// The id.
        id: u32,
    },
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
    /// A stop id sequence: its index in `stop_token_sequences`.
    TokenSequence {
        /// Index in `stop_token_sequences`.
        index: usize,
    },
}

/// `rtok_stops_total`'s `reason`, in `metrics::STOP_REASONS` order.
impl crate::metrics::StopIndex for MatchedStop {
    fn stop_index(&self) -> usize {
        match self {
            MatchedStop::Eos { .. } => 0,
            MatchedStop::Token { .. } => 1,
            MatchedStop::String { .. } => 2,
            MatchedStop::TokenSequence { .. } => 3,
        }
    }
}

/// vLLM's `stop_reason` for a stop: the stop token id or the stop string
/// (serialized untagged: a number or a string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(untagged))]
pub enum StopReason<'a> {
    /// A stop token id.
    Token(u32),
    /// A stop string.
    String(&'a str),
}

impl MatchedStop {
    /// OpenAI's `finish_reason` for a generation this stop ended: always
    /// `"stop"` (EOS, stop ids, strings and sequences alike). A generation
    /// that ended with no stop is [`finish_reason_of`](Self::finish_reason_of)`(None)`.
    pub fn finish_reason(&self) -> &'static str {
        "stop"
    }

    /// OpenAI's `finish_reason` for a finished generation: `"stop"` when a
    /// stop ended it ([`StopSequenceDecoder::matched_stop`]), `"length"` when
    /// none did (it ran to `max_tokens` or the context).
    pub fn finish_reason_of(stop: Option<&MatchedStop>) -> &'static str {
        stop.map_or("length", Self::finish_reason)
    }

    /// vLLM's `stop_reason`: the stop token id or stop string that ended
    /// generation, `None` for EOS (and for an id sequence, which vLLM has no
    /// field for; its index is in [`MatchedStop::TokenSequence`]).
    pub fn stop_reason(&self) -> Option<StopReason<'_>> {
        match self {
            Self::Eos { .. } | Self::TokenSequence { .. } => None,
            Self::Token { id, .. } => Some(StopReason::Token(*id)),
            Self::String { text, .. } => Some(StopReason::String(text)),
        }
    }
}

/// Stop strings (hidden first, then visible) and id sequences, built once and
/// shared by every clone and `reset`.
#[derive(Debug)]
struct Stops {
    strings: Vec<Kmp<u8>>,
    n_hidden: usize,
    /// First bytes of stop strings: while no string is partly matched, other
    /// bytes are skipped without touching the automata.
    starts: [bool; 256],
    sequences: Vec<Kmp<u32>>,
    eos: Vec<u32>,
}

/// Streams text for one generation and stops on the first stop.
///
/// The jail holds only the longest suffix of the text that is a proper prefix
/// of some stop string (so never more than the longest stop); everything
/// before it is released at once. Each byte of text is examined once per stop
/// string, whatever the stops' lengths (DESIGN.md, invariants `stop-first-completion`,
/// `jail-is-longest-stop-prefix` and `stream-linear`).
#[derive(Debug, Clone)]
pub struct StopSequenceDecoder {
    stream: DecodeStream,
    /// The stream as it stood before the first generated id, for `reset`.
    start: DecodeStream,
    config: StopConfig,
    stops: Arc<Stops>,
    /// Per stop string: bytes matched so far (a KMP state).
    string_states: Vec<u32>,
    /// The largest of `string_states`: the jail's length.
    jail_len: usize,
    sequence_states: Vec<u32>,
    /// `jail[head..]` is held back; `..head` was released and is dropped
    /// lazily, so a long jail that releases a little each step is not
    /// shifted each step.
    jail: String,
    head: usize,
    tokens_seen: usize,
    matched: Option<MatchedStop>,
}

impl StopSequenceDecoder {
    /// A decoder for a generation that follows `prompt_ids`.
    ///
    /// Construction is linear in the total length of the stops.
    pub fn new(tokenizer: &Tokenizer, prompt_ids: &[u32], config: StopConfig) -> Result<Self> {
        let all = config
            .stop_strings
            .iter()
            .chain(&config.visible_stop_strings);
        let mut strings = Vec::new();
        let mut starts = [false; 256];
        for s in all {
            let first = s
                .as_bytes()
                .first()
                .ok_or_else(|| Error::request("empty stop string"))?;
            starts[usize::from(*first)] = true;
            strings.push(Kmp::new(s.as_bytes()));
        }
        let mut sequences = Vec::with_capacity(config.stop_token_sequences.len());
        for seq in &config.stop_token_sequences {
            if seq.is_empty() {
                return Err(Error::request("empty stop token sequence"));
            }
            sequences.push(Kmp::new(seq));
        }
        let eos = if config.ignore_eos {
            Vec::new()
        } else {
            config
                .eos_token_ids
                .clone()
                .unwrap_or_else(|| tokenizer.eos_token_ids().to_vec())
        };
        let stops = Stops {
            n_hidden: config.stop_strings.len(),
            starts,
            eos,
            strings,
            sequences,
        };
        let start = DecodeStream::new(tokenizer, prompt_ids, config.skip_special_tokens)
            .with_unknown_ids(config.unknown_ids)
            .with_spaces_between_special_tokens(config.spaces_between_special_tokens);
        Ok(Self {
            stream: start.clone(),
            start,
            string_states: vec![0; stops.strings.len()],
            sequence_states: vec![0; stops.sequences.len()],
            stops: Arc::new(stops),
            jail_len: 0,
            config,
            jail: String::new(),
            head: 0,
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
        let active = self.tokens_seen > self.config.min_tokens;
        let mut sequence_hit = None;
        for (i, (kmp, state)) in self
            .stops
            .sequences
            .iter()
            .zip(&mut self.sequence_states)
            .enumerate()
        {
            if kmp.advance(state, id) && active && sequence_hit.is_none() {
                sequence_hit = Some(i);
            }
        }
        if active {
            let hidden = self.config.stop_token_ids.contains(&id);
            let visible = !hidden && self.config.visible_stop_token_ids.contains(&id);
            let stop = if hidden || visible {
                Some(MatchedStop::Token { id, visible })
            } else if self.stops.eos.contains(&id) {
                Some(MatchedStop::Eos { id })
            } else {
                None
            };
            if let Some(stop) = stop {
                let mut text = self.take_jail();
                if !visible {
                    // Not fed to the stream, but a step all the same.
                    self.stream.tokenizer().metrics().stream_steps(1);
                } else if let Some(t) = self.stream.step(id)? {
                    text.push_str(&t);
                }
                if let Some(t) = self.stream.flush()? {
                    text.push_str(&t);
                }
                self.stop(stop);
                return Ok(stopped(text));
            }
        }
        let new_text = self.stream.step(id)?;
        let out = self.absorb(new_text.unwrap_or_default(), active);
        match (sequence_hit, out) {
            (Some(index), Output::Text(t)) => self.finish_sequence(index, t),
            (Some(index), Output::Held) => self.finish_sequence(index, String::new()),
            (_, out) => Ok(out),
        }
    }

    /// Feeds several ids (speculative decoding): the same text and stop as one
    /// [`process_token`](Self::process_token) call per id, and the index of
    /// the id where generation stopped.
    pub fn process_tokens(&mut self, ids: &[u32]) -> Result<BatchOutput> {
        let mut text = String::new();
        if self.matched.is_some() {
            return Ok(BatchOutput {
                output: Output::Stopped,
                stopped_at: None,
            });
        }
        for (i, &id) in ids.iter().enumerate() {
            match self.process_token(id)? {
                Output::Text(t) => text.push_str(&t),
                Output::Held => {}
                Output::Stopped => {
                    return Ok(BatchOutput {
                        output: stopped(text),
                        stopped_at: Some(i),
                    });
                }
                Output::StoppedWithText(t) => {
                    text.push_str(&t);
                    return Ok(BatchOutput {
                        output: stopped(text),
                        stopped_at: Some(i),
                    });
                }
            }
        }
        Ok(BatchOutput {
            output: if text.is_empty() {
                Output::Held
            } else {
                Output::Text(text)
            },
            stopped_at: None,
        })
    }

    /// Ends the generation: releases the jail and any partial character.
    pub fn flush(&mut self) -> Result<Output> {
        if self.matched.is_some() {
            return Ok(Output::Stopped);
        }
        let tail = self.stream.flush()?.unwrap_or_default();
        let active = self.tokens_seen > self.config.min_tokens;
        let mut text = match self.absorb(tail, active) {
            out @ (Output::Stopped | Output::StoppedWithText(_)) => return Ok(out),
            Output::Text(t) => t,
            Output::Held => String::new(),
        };
        text.push_str(&self.take_jail());
        self.jail_len = 0;
        self.string_states.fill(0);
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
        self.head = 0;
        self.jail_len = 0;
        self.string_states.fill(0);
        self.sequence_states.fill(0);
        self.tokens_seen = 0;
        self.matched = None;
    }

    /// The stop that ended generation, if any.
    pub fn matched_stop(&self) -> Option<&MatchedStop> {
        self.matched.as_ref()
    }

    /// The text currently held back because it may start a stop string.
    pub fn jailed(&self) -> &str {
        &self.jail[self.head..]
    }

    /// One id's text for a logprobs entry, without touching the stream
    /// (see [`DecodeStream::token_text`]).
    pub fn token_text(&self, id: u32) -> Result<crate::TokenText> {
        self.stream.token_text(id)
    }

    /// [`token_text`](Self::token_text) for several ids (top-k alternatives).
    pub fn token_texts(&self, ids: &[u32]) -> Result<Vec<crate::TokenText>> {
        self.stream.token_texts(ids)
    }

    /// Number of ids processed since the start (or `reset`).
    pub fn tokens_seen(&self) -> usize {
        self.tokens_seen
    }

    /// A stop id sequence completed: everything held goes out with it.
    fn finish_sequence(&mut self, index: usize, mut text: String) -> Result<Output> {
        text.push_str(&self.take_jail());
        if let Some(t) = self.stream.flush()? {
            text.push_str(&t);
        }
        self.stop(MatchedStop::TokenSequence { index });
        Ok(stopped(text))
    }

    /// Runs the new text through the stop automata, stops at the first stop
    /// string to complete (among those ending at the same byte, the longest),
    /// and releases everything that can no longer start one. With `!active`
    /// (inside `min_tokens`) the automata advance but report no match.
    fn absorb(&mut self, new_text: String, active: bool) -> Output {
        if new_text.is_empty() {
            return Output::Held;
        }
        let stops = &*self.stops;
        let mut hit: Option<(usize, usize)> = None;
        for (j, &b) in new_text.as_bytes().iter().enumerate() {
            if self.jail_len == 0 && !stops.starts[usize::from(b)] {
                continue;
            }
            let mut longest = 0;
            for (i, (kmp, state)) in stops
                .strings
                .iter()
                .zip(&mut self.string_states)
                .enumerate()
            {
                if kmp.advance(state, b)
                    && active
                    && hit.is_none_or(|(_, h)| kmp.len() > stops.strings[h].len())
                {
                    hit = Some((j + 1, i));
                }
                longest = longest.max(*state as usize);
            }
            self.jail_len = longest;
            if hit.is_some() {
                break;
            }
        }
        if let Some((end, index)) = hit {
            let visible = index >= stops.n_hidden;
            let (list_index, text) = if visible {
                let i = index - stops.n_hidden;
                (i, self.config.visible_stop_strings[i].clone())
            } else {
                (index, self.config.stop_strings[index].clone())
            };
            let mut out = self.take_jail();
            let end = out.len() + end;
            let cut = if visible { end } else { end - text.len() };
            out.push_str(&new_text);
            out.truncate(cut);
            self.stop(MatchedStop::String {
                index: list_index,
                text,
                visible,
            });
            return stopped(out);
        }
        // The jail is the last `jail_len` bytes of (jail + new text).
        let released = if self.head == self.jail.len() && self.jail_len == 0 {
            new_text
        } else {
            self.jail.push_str(&new_text);
            let cut = self.jail.len() - self.jail_len;
            let released = self.jail[self.head..cut].to_owned();
            self.head = cut;
            // Compact once the released part outweighs the held one:
            // amortized O(1) per byte.
            if self.head == self.jail.len() {
                self.jail.clear();
                self.head = 0;
            } else if self.head > self.jail.len() / 2 {
                self.jail.drain(..self.head);
                self.head = 0;
            }
            released
        };
        if released.is_empty() {
            Output::Held
        } else {
            Output::Text(released)
        }
    }
}

impl StopSequenceDecoder {
    /// Ends the generation on `stop`, counted in `rtok_stops_total`.
    fn stop(&mut self, stop: MatchedStop) {
        self.stream.tokenizer().metrics().stop(&stop);
        self.matched = Some(stop);
    }

    /// Takes the held text out of the jail.
    fn take_jail(&mut self) -> String {
        let held = self.jail.split_off(self.head);
        self.jail.clear();
        self.head = 0;
        held
    }
}

fn stopped(text: String) -> Output {
    if text.is_empty() {
        Output::Stopped
    } else {
        Output::StoppedWithText(text)
    }
}
