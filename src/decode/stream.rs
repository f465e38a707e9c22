//! [`DecodeStream`]: ids in one at a time, text out as soon as it is final.

use crate::backend::{DecodeStyle, StartRule};
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
/// `decode(prompt)` (DESIGN.md invariant `stream-equals-decode`).
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
///
/// Cloning is cheap (a few ids): one prompt's stream can start several generations.
#[derive(Debug, Clone)]
pub struct DecodeStream {
    tokenizer: Tokenizer,
    skip_special_tokens: bool,
    unknown_ids: UnknownIds,
    state: State,
    /// vLLM's `spaces_between_special_tokens` (off unless asked for).
    special_spaces: SpecialSpaces,
}

/// State of the `spaces_between_special_tokens` rule: a special token that
/// renders is set apart by one space from the text on either side.
#[derive(Debug, Clone, Copy, Default)]
struct SpecialSpaces {
    on: bool,
    /// Some text was rendered before (the prompt counts).
    rendered: bool,
    /// The last thing rendered was a special token: the next text gets a space.
    space_due: bool,
}

/// What a stream does with an id outside the vocabulary.
///
/// Models generate such ids: embedding matrices are padded past the
/// tokenizer's vocabulary (Qwen3 has 151,669 tokens and more rows), and
/// vLLM renders them as nothing. [`Tokenizer::decode`] stays strict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum UnknownIds {
    /// The step fails with [`ErrorKind::UnknownTokenId`](crate::ErrorKind::UnknownTokenId).
    Error,
    /// The id renders nothing, the stream goes on, and the
    /// `rtok_stream_unknown_ids_total` counter goes up.
    #[default]
    Skip,
}

#[derive(Debug, Clone)]
enum State {
    /// Byte styles: O(1) per token, no re-decoding.
    Bytes(ByteState),
    /// Other decoders: re-decode a window with the prefix/read-offset rule.
    Window {
        /// The emitted prefix (`..read_offset`), then the ids not emitted yet.
        ids: Vec<u32>,
        read_offset: usize,
    },
}

/// A windowed stream emits at the latest once this many ids wait beyond the
/// emitted prefix, so a decoder that keeps ending in U+FFFD (a token whose
/// text is U+FFFD, an endless invalid byte run) costs O(1) per step.
const MAX_WAITING: usize = 16;

#[derive(Debug, Clone)]
struct ByteState {
    rule: StartRule,
    /// The start rule still applies (nothing rendered yet, as the rule counts it).
    at_start: bool,
    /// Bytes not yet emitted: an incomplete UTF-8 character (≤ 3 bytes).
    pending: Vec<u8>,
    /// Ids whose bytes are (partly) in `pending`.
    ids: Vec<u32>,
}

impl ByteState {
    fn new(rule: StartRule) -> Self {
        Self {
            rule,
            at_start: rule != StartRule::None,
            pending: Vec::new(),
            ids: Vec::new(),
        }
    }

    /// The bytes `id` renders here (a known id that is not skipped), moving
    /// past the start of the text as the rule says (DESIGN.md invariant `stream-equals-decode`).
    fn bytes_for<'t>(&mut self, tok: &'t Tokenizer, id: u32) -> &'t [u8] {
        let plain = tok.token_bytes(id).unwrap_or_default();
        if !self.at_start {
            return plain;
        }
        match self.rule {
            StartRule::StripSpace => {
                if plain.is_empty() {
                    return plain;
                }
                self.at_start = false;
                plain.strip_prefix(b" ").unwrap_or(plain)
            }
            StartRule::FirstIdStripSpace => {
                self.at_start = false;
                plain.strip_prefix(b" ").unwrap_or(plain)
            }
            StartRule::FirstToken => {
                self.at_start = false;
                tok.first_token_bytes(id).unwrap_or(plain)
            }
            StartRule::SentencePiece { repeat } => {
                let mut bytes = plain;
                if tok.byte_piece(id).is_none() && !tok.is_special_id(id) {
                    let first = tok.first_token_bytes(id).unwrap_or(plain);
                    if first.len() != plain.len() {
                        bytes = first;
                        self.at_start &= repeat;
                    }
                }
                self.at_start &= bytes.is_empty();
                bytes
            }
            _ => {
                self.at_start = false;
                plain
            }
        }
    }

    /// A known id that renders nothing (a skipped special) went by.
    fn skipped(&mut self) {
        if self.rule == StartRule::FirstIdStripSpace {
            self.at_start = false;
        }
    }

    /// Appends `id`'s bytes and appends the text that is final to `out`.
    fn push(&mut self, tok: &Tokenizer, id: u32, out: &mut String) {
        let bytes = self.bytes_for(tok, id);
        // Fast path: nothing pending and the token is whole characters.
        if self.pending.is_empty()
            && let Ok(text) = std::str::from_utf8(bytes)
        {
            out.push_str(text);
            return;
        }
        self.pending.extend_from_slice(bytes);
        self.ids.push(id);
        take_complete_into(&mut self.pending, false, out);
        if self.pending.is_empty() {
            self.ids.clear();
        }
    }
}

impl DecodeStream {
    /// A stream whose first token follows `prompt_ids` (only the last few are kept).
    /// Unknown ids are skipped; see [`with_unknown_ids`](Self::with_unknown_ids).
    pub fn new(tokenizer: &Tokenizer, prompt_ids: &[u32], skip_special_tokens: bool) -> Self {
        let state = match tokenizer.decode_style() {
            DecodeStyle::ByteConcat => State::Bytes(byte_context(
                tokenizer,
                StartRule::None,
                prompt_ids,
                skip_special_tokens,
            )),
            DecodeStyle::ByteConcatWithStart(rule) => State::Bytes(byte_context(
                tokenizer,
                rule,
                prompt_ids,
                skip_special_tokens,
            )),
            _ => {
                let ids = window_context(tokenizer, prompt_ids, skip_special_tokens);
                State::Window {
                    read_offset: ids.len(),
                    ids,
                }
            }
        };
        let rendered = prompt_ids.iter().any(|&id| {
            id_known(tokenizer, id) && !(skip_special_tokens && tokenizer.is_special_id(id))
        });
        Self {
            tokenizer: tokenizer.clone(),
            skip_special_tokens,
            unknown_ids: UnknownIds::default(),
            state,
            special_spaces: SpecialSpaces {
                on: false,
                rendered,
                space_due: false,
            },
        }
    }

    /// The same stream with vLLM's `spaces_between_special_tokens`: every
    /// special token that renders (with `skip_special_tokens` off) is set
    /// apart by one space from the text before and after it, as
    /// `" ".join(sub_texts)` does in `transformers`' slow tokenizers, and
    /// the text before it is decoded on its own (a partial character there
    /// becomes U+FFFD). Off by default: fast tokenizers ignore the option,
    /// and with it off the stream equals [`Tokenizer::decode`] (DESIGN.md invariant
    /// `stream-equals-decode`).
    #[must_use]
    pub fn with_spaces_between_special_tokens(mut self, on: bool) -> Self {
        self.special_spaces.on = on;
        self
    }

    /// One id's text for a logprobs entry (see [`TokenText`](crate::TokenText)),
    /// without touching the stream. Ids outside the vocabulary follow the
    /// stream's [`UnknownIds`] policy (`Skip`: empty text and bytes).
    pub fn token_text(&self, id: u32) -> Result<crate::TokenText> {
        match crate::decode::token_raw_bytes(&self.tokenizer, id)? {
            Some(bytes) => Ok(crate::TokenText::from_bytes(id, bytes)),
            None => match self.unknown_ids {
                UnknownIds::Error => Err(Error::unknown_id(id, self.tokenizer.vocab_size())),
                UnknownIds::Skip => Ok(crate::TokenText::from_bytes(id, Vec::new())),
            },
        }
    }

    /// [`token_text`](Self::token_text) for several ids (top-k alternatives).
    pub fn token_texts(&self, ids: &[u32]) -> Result<Vec<crate::TokenText>> {
        ids.iter().map(|&id| self.token_text(id)).collect()
    }

    /// The same stream with another policy for ids outside the vocabulary.
    #[must_use]
    pub fn with_unknown_ids(mut self, policy: UnknownIds) -> Self {
        self.unknown_ids = policy;
        self
    }

    /// Feeds one id; returns the text it completes, if any.
    pub fn step(&mut self, id: u32) -> Result<Option<String>> {
        self.tokenizer.metrics().stream_steps(1);
        let mut out = String::new();
        self.step_into(id, &mut out)?;
        Ok((!out.is_empty()).then_some(out))
    }

    /// Feeds several ids (speculative decoding); returns the text they
    /// complete together, the same as one [`step`](Self::step) per id,
    /// gathered in one buffer.
    pub fn step_many(&mut self, ids: &[u32]) -> Result<Option<String>> {
        self.tokenizer.metrics().stream_steps(ids.len());
        let mut out = String::new();
        for &id in ids {
            self.step_into(id, &mut out)?;
        }
        Ok((!out.is_empty()).then_some(out))
    }

    /// Former name of [`step_many`](Self::step_many).
    #[deprecated(note = "renamed to `step_many`")]
    pub fn step_batch(&mut self, ids: &[u32]) -> Result<Option<String>> {
        self.step_many(ids)
    }

    /// Ends the stream: whatever is still held (a partial character becomes U+FFFD,
    /// exactly as a one-shot decode renders it).
    pub fn flush(&mut self) -> Result<Option<String>> {
        let mut out = String::new();
        let start = out.len();
        self.flush_plain(&mut out)?;
        if self.special_spaces.on {
            self.spaced(&mut out, start);
        }
        Ok((!out.is_empty()).then_some(out))
    }

    /// [`step`](Self::step), appending the text to `out`.
    fn step_into(&mut self, id: u32, out: &mut String) -> Result<()> {
        if !self.special_spaces.on {
            return self.step_plain(id, out);
        }
        if !id_known(&self.tokenizer, id) {
            return self.unknown(id);
        }
        let start = out.len();
        if !self.tokenizer.is_special_id(id) {
            self.step_plain(id, out)?;
            self.spaced(out, start);
            return Ok(());
        }
        if self.skip_special_tokens {
            return self.step_plain(id, out);
        }
        // A special token that renders: the text before it ends here.
        self.flush_plain(out)?;
        self.special_spaces.rendered |= out.len() > start;
        if self.special_spaces.rendered {
            out.push(' ');
        }
        out.push_str(&self.tokenizer.decode(&[id], false)?);
        self.special_spaces.rendered = true;
        self.special_spaces.space_due = true;
        Ok(())
    }

    /// Puts the space due after a special token before the text appended
    /// to `out` since `start`, if any.
    fn spaced(&mut self, out: &mut String, start: usize) {
        if out.len() == start {
            return;
        }
        self.special_spaces.rendered = true;
        if std::mem::take(&mut self.special_spaces.space_due) {
            out.insert(start, ' ');
        }
    }

    fn step_plain(&mut self, id: u32, out: &mut String) -> Result<()> {
        match &mut self.state {
            State::Bytes(st) => {
                if self.tokenizer.token_bytes(id).is_none() {
                    return self.unknown(id);
                }
                if self.skip_special_tokens && self.tokenizer.is_special_id(id) {
                    st.skipped();
                    return Ok(());
                }
                st.push(&self.tokenizer, id, out);
                Ok(())
            }
            State::Window { ids, read_offset } => {
                if !id_known(&self.tokenizer, id) {
                    return self.unknown(id);
                }
                if self.skip_special_tokens && self.tokenizer.is_special_id(id) {
                    // Renders nothing, so no text can complete. One is kept
                    // between two others: a decoder may end a byte run there.
                    let last_skipped = ids.last().is_some_and(|&l| self.tokenizer.is_special_id(l));
                    if !last_skipped {
                        ids.push(id);
                    }
                    return Ok(());
                }
                ids.push(id);
                // Byte-fallback pieces (`<0xNN>`) that end in an incomplete
                // character wait for it; every complete character goes out
                // at once (DESIGN.md invariant `stream-equals-decode`).
                let held = incomplete_tail(&self.tokenizer, ids);
                let end = ids.len() - held;
                if end <= *read_offset {
                    return Ok(());
                }
                let force = end - *read_offset > MAX_WAITING;
                advance_window(
                    &self.tokenizer,
                    ids,
                    end,
                    read_offset,
                    self.skip_special_tokens,
                    force,
                    out,
                )
            }
        }
    }

    fn flush_plain(&mut self, out: &mut String) -> Result<()> {
        match &mut self.state {
            State::Bytes(st) => {
                st.ids.clear();
                take_complete_into(&mut st.pending, true, out);
                Ok(())
            }
            State::Window { ids, read_offset } => {
                if *read_offset >= ids.len() {
                    return Ok(());
                }
                let end = ids.len();
                advance_window(
                    &self.tokenizer,
                    ids,
                    end,
                    read_offset,
                    self.skip_special_tokens,
                    true,
                    out,
                )
            }
        }
    }

    /// The tokenizer the stream decodes with (for the stop decoder's metrics).
    pub(super) fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The ids whose text is not fully emitted yet (plus, for windowed
    /// decoders, the few before them kept as context).
    pub fn tokens(&self) -> &[u32] {
        match &self.state {
            State::Bytes(st) => &st.ids,
            State::Window { ids, .. } => ids,
        }
    }

    fn unknown(&self, id: u32) -> Result<()> {
        match self.unknown_ids {
            UnknownIds::Error => Err(Error::unknown_id(id, self.tokenizer.vocab_size())),
            UnknownIds::Skip => {
                self.tokenizer.metrics().stream_unknown_id();
                Ok(())
            }
        }
    }
}

/// Whether `id` is in the vocabulary (decodes).
fn id_known(tok: &Tokenizer, id: u32) -> bool {
    tok.token_bytes(id).is_some()
        || ((id as usize) < tok.vocab_size() && tok.id_to_token(id).is_some())
}

/// The state a byte-style stream starts in after `prompt`: whether the start
/// rule still applies, and the prompt's incomplete trailing character.
///
/// The rule's state comes from the prompt's first ids (it ends at the first
/// that renders, so this is O(1) for real prompts); the pending bytes from the
/// last [`PROMPT_CONTEXT`] ids that render.
fn byte_context(tok: &Tokenizer, rule: StartRule, prompt: &[u32], skip: bool) -> ByteState {
    let renders = |id: u32| tok.token_bytes(id).is_some() && !(skip && tok.is_special_id(id));
    let mut st = ByteState::new(rule);
    // The prompt's text is not emitted.
    let mut discard = String::new();
    let mut i = 0;
    while i < prompt.len() && st.at_start {
        if renders(prompt[i]) {
            st.push(tok, prompt[i], &mut discard);
            discard.clear();
        } else if tok.token_bytes(prompt[i]).is_some() {
            st.skipped();
        }
        i += 1;
    }
    let mut tail = prompt.len();
    let mut n = 0;
    while tail > i && n < PROMPT_CONTEXT {
        tail -= 1;
        n += usize::from(renders(prompt[tail]));
    }
    if tail > i {
        st.pending.clear();
    }
    for &id in &prompt[tail.max(i)..] {
        if renders(id) {
            st.push(tok, id, &mut discard);
            discard.clear();
        }
    }
    st.ids.clear();
    st
}

/// The prompt ids a windowed stream starts with: the last [`PROMPT_CONTEXT`]
/// that render, and the skipped specials among them collapsed to one each.
///
/// The window must decode its suffix exactly as the whole prompt would, so
/// it never starts inside a byte-fallback run where that could change the
/// run's text: it moves back to a character start, or to the run's last
/// invalid byte (`tokenizers` renders a run with one as U+FFFD throughout).
fn window_context(tokenizer: &Tokenizer, prompt: &[u32], skip: bool) -> Vec<u32> {
    let skipped = |id: u32| skip && tokenizer.is_special_id(id);
    // Walked backwards, so `ctx` is reversed until the end.
    let mut ctx: Vec<u32> = Vec::new();
    let push = |ctx: &mut Vec<u32>, id: u32| {
        if !(skipped(id) && ctx.last().is_some_and(|&l| skipped(l))) {
            ctx.push(id);
        }
    };
    let mut rendered = 0;
    let mut i = prompt.len();
    while i > 0 && rendered < PROMPT_CONTEXT {
        i -= 1;
        let id = prompt[i];
        rendered += usize::from(!skipped(id));
        push(&mut ctx, id);
    }
    let nominal = ctx.len();
    let starts_in_run = ctx
        .iter()
        .rev()
        .find(|&&id| !skipped(id))
        .is_some_and(|&id| tokenizer.byte_piece(id).is_some());
    if starts_in_run {
        while i > 0 {
            let id = prompt[i - 1];
            if !(skipped(id) || tokenizer.byte_piece(id).is_some()) {
                break;
            }
            i -= 1;
            push(&mut ctx, id);
        }
    }
    ctx.reverse();
    if ctx.len() > nominal {
        let start = run_safe_start(tokenizer, &ctx, ctx.len() - nominal, &skipped);
        ctx.drain(..start);
    }
    ctx
}

/// The latest index `<= nominal` in `ids` (which begins with a byte-fallback
/// run) from which the run decodes as it does whole.
fn run_safe_start(
    tokenizer: &Tokenizer,
    ids: &[u32],
    nominal: usize,
    skipped: &dyn Fn(u32) -> bool,
) -> usize {
    // (index, byte) of the run's pieces up to the nominal start.
    let mut run: Vec<(usize, u8)> = Vec::new();
    for (i, &id) in ids.iter().enumerate().take(nominal + 1) {
        match tokenizer.byte_piece(id) {
            Some(b) => run.push((i, b)),
            None if skipped(id) && run.is_empty() => {}
            // A skipped special inside the run: some decoders end the run
            // there, others do not. Keeping the whole run is right for both.
            None if skipped(id) => return 0,
            None => break,
        }
    }
    let bytes: Vec<u8> = run.iter().map(|&(_, b)| b).collect();
    // Byte index of the nominal start: every run byte before it is "earlier".
    let limit = run.iter().take_while(|&&(i, _)| i < nominal).count();
    let mut cut = 0;
    let mut last_error = None;
    let mut pos = 0;
    while pos < bytes.len() && pos <= limit {
        let (valid, error) = match std::str::from_utf8(&bytes[pos..]) {
            Ok(_) => (bytes.len() - pos, None),
            Err(e) => (e.valid_up_to(), Some(e.error_len())),
        };
        let mut k = pos;
        while k < pos + valid && k <= limit {
            if !is_continuation(bytes[k]) {
                cut = k;
            }
            k += 1;
        }
        let at = pos + valid;
        match error {
            Some(Some(n)) if at <= limit => {
                cut = at;
                last_error = Some(at);
                pos = at + n;
            }
            Some(None) if at <= limit => {
                cut = at;
                break;
            }
            _ => break,
        }
    }
    let byte = last_error.unwrap_or(cut);
    run.get(byte).map_or(nominal, |&(i, _)| i)
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Decodes a window and its emitted prefix, and emits the difference unless
/// it must wait (`!flush` and the text is not longer yet, or ends in U+FFFD).
/// The ids just emitted become the next prefix (TGI's rule); the ones before
/// them are never read again and are dropped, so memory stays bounded.
///
/// Only `ids[..end]` is decoded; the ids after it (an incomplete character's
/// byte pieces) wait for the next step.
fn advance_window(
    tokenizer: &Tokenizer,
    ids: &mut Vec<u32>,
    end: usize,
    read_offset: &mut usize,
    skip_special_tokens: bool,
    flush: bool,
    out: &mut String,
) -> Result<()> {
    let end = end.min(ids.len());
    let read = (*read_offset).min(end);
    let prefix = tokenizer.decode(&ids[..read], skip_special_tokens)?;
    let full = tokenizer.decode(&ids[..end], skip_special_tokens)?;
    if !flush && (full.len() <= prefix.len() || full.ends_with('\u{FFFD}')) {
        return Ok(());
    }
    out.push_str(new_suffix(&prefix, &full));
    ids.drain(..read);
    *read_offset = end - read;
    Ok(())
}

/// How many ids at the end of `ids` are byte-fallback pieces whose bytes
/// are the start of a character still missing its last bytes (0 to 3).
fn incomplete_tail(tokenizer: &Tokenizer, ids: &[u32]) -> usize {
    let mut tail = [0u8; 4];
    let mut n = 0;
    for &id in ids.iter().rev().take(3) {
        let Some(b) = tokenizer.byte_piece(id) else {
            break;
        };
        n += 1;
        tail[4 - n] = b;
        if !is_continuation(b) {
            let incomplete = matches!(
                std::str::from_utf8(&tail[4 - n..]),
                Err(e) if e.valid_up_to() == 0 && e.error_len().is_none()
            );
            return if incomplete { n } else { 0 };
        }
    }
    0
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
#[cfg(test)]
fn take_complete(pending: &mut Vec<u8>, finish: bool) -> String {
    let mut out = String::new();
    take_complete_into(pending, finish, &mut out);
    out
}

/// [`take_complete`], appending to `out`.
pub(crate) fn take_complete_into(pending: &mut Vec<u8>, finish: bool, out: &mut String) {
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
