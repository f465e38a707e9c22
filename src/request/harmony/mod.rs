//! gpt-oss requests rendered as vLLM and SGLang render them: with
//! `openai-harmony` rather than the model's Jinja template (issue 40).
//!
//! The `openai-harmony` crate is not a dependency: it pulls `reqwest`,
//! `image` and its own tiktoken copy unconditionally and loads its
//! vocabulary from a download or `TIKTOKEN_ENCODINGS_BASE`. This module
//! renders the same pieces, encodes them with the handle's own vocabulary
//! (gpt-oss `tokenizer.json` or the embedded `o200k_harmony`), and is checked
//! id for id against the Python package (`tests/golden/harmony/`).

mod convert;
mod render;
mod schema;
mod stream;

use crate::chat::ChatRequest;
use crate::error::{Error, ErrorKind, Result};
use crate::request::{ChatEncoding, ChatSpecialTokens, EncodeChatOptions};
use crate::tokenizer::Tokenizer;
use render::{Control, Piece};
pub use stream::{HarmonyEvent, HarmonyHeader, HarmonyStream};

fn refuse(detail: impl Into<String>) -> Error {
    Error::new(ErrorKind::ChatFormat {
        format: "harmony",
        detail: detail.into(),
    })
}

/// The prompt text Harmony renders for `request` (no vocabulary needed):
/// control tokens spelled out, every request string as given.
///
/// # Errors
/// [`ErrorKind::ChatFormat`] for a request vLLM refuses (an unknown role or
/// reasoning effort, a non-function tool, `continue_final_message`).
pub fn render_text(request: &ChatRequest) -> Result<String> {
    let messages = convert::to_harmony(request)?;
    Ok(render::render_for_completion(&messages).to_text())
}

/// The special-token spellings (`<|…|>` that name a special id) in `text`.
fn special_texts<'t>(tok: &Tokenizer, text: &'t str) -> impl Iterator<Item = &'t str> {
    let mut rest = 0;
    std::iter::from_fn(move || {
        while let Some(open) = text.get(rest..)?.find("<|") {
            let start = rest + open;
            let Some(close) = text.get(start + 2..).and_then(|t| t.find("|>")) else {
                rest = text.len();
                return None;
            };
            let end = start + 2 + close + 2;
            let candidate = text.get(start..end)?;
            match tok.token_to_id(candidate) {
                Some(id) if tok.is_special_id(id) => {
                    rest = end;
                    return Some(candidate);
                }
                _ => rest = start + 2,
            }
        }
        None
    })
}

/// The body of `encode_chat` under [`ChatFormat::Harmony`](crate::ChatFormat::Harmony).
pub(crate) fn encode_chat(
    tok: &Tokenizer,
    request: &ChatRequest,
    options: &EncodeChatOptions,
) -> Result<ChatEncoding> {
    let messages = convert::to_harmony(request)?;
    let rendered = render::render_for_completion(&messages);
    let control_id = |c: Control| -> Result<u32> {
        tok.token_to_id(c.text())
            .filter(|&id| tok.is_special_id(id))
            .ok_or_else(|| {
                refuse(format!(
                    "the vocabulary has no special token {} (Harmony needs o200k_harmony, as gpt-oss ships it)",
                    c.text()
                ))
            })
    };
    let backend = tok.backend_dyn();
    let policy = options.special_tokens;
    let mut ids = Vec::new();
    let mut piece_ends = Vec::with_capacity(rendered.pieces.len());
    let mut forged = 0;
    for (n, piece) in rendered.pieces.iter().enumerate() {
        match piece {
            Piece::Control(c) => ids.push(control_id(*c)?),
            Piece::Text { text, from_request } => {
                if *from_request && let Some(token) = special_texts(tok, text).next() {
                    if policy == ChatSpecialTokens::Reject {
                        let location = rendered
                            .spans
                            .iter()
                            .find(|(_, r)| r.contains(&n))
                            .and_then(|(s, _)| *s)
                            .map_or_else(|| "the tools".to_owned(), |i| format!("message {i}"));
                        return Err(Error::new(ErrorKind::SpecialTokenInRequest {
                            location,
                            token: token.to_owned(),
                        }));
                    }
                    forged += special_texts(tok, text).count();
                }
                let encoding =
                    if policy == ChatSpecialTokens::Parse && backend.parses_special_text() {
                        backend.encode(text, false)?
                    } else {
                        backend.encode_plain(text, false, &[]).ok_or_else(|| {
                            refuse("this backend cannot encode special-token text as text")
                        })??
                    };
                ids.extend_from_slice(encoding.ids());
            }
        }
        piece_ends.push(ids.len());
    }
    let message_ranges = options.message_ranges.then(|| {
        let start_of = |p: usize| match p {
            0 => 0,
            _ => piece_ends.get(p - 1).copied().unwrap_or(0),
        };
        let mut ranges: Vec<Option<std::ops::Range<usize>>> = vec![None; request.messages.len()];
        for (source, span) in &rendered.spans {
            let Some(slot) = source.and_then(|s| ranges.get_mut(s)) else {
                continue;
            };
            if span.is_empty() {
                continue;
            }
            let end = piece_ends.get(span.end - 1).copied().unwrap_or(0);
            let start = start_of(span.start);
            *slot = Some(match slot.take() {
                Some(r) => std::ops::Range {
                    start: std::cmp::min(r.start, start),
                    end: std::cmp::max(r.end, end),
                },
                None => start..end,
            });
        }
        ranges
    });
    let text = options.return_text.then(|| rendered.to_text());
    let special_texts_as_text = if policy == ChatSpecialTokens::Parse {
        0
    } else {
        forged
    };
    Ok(ChatEncoding {
        prompt_tokens: ids.len(),
        ids,
        text,
        message_ranges,
        special_texts_as_text,
    })
}
