//! Encoding a rendered prompt whose special-token matches are not all
//! special: the text is cut at the matches that stay special, and each
//! stretch between them is encoded with special-token text as plain text
//! (DESIGN.md, invariant `typed-markers-stay-text`).

use std::ops::Range;

use super::provenance::touches;
use super::special_text::SpecialText;
use crate::backend;
use crate::encoding::Encoding;
use crate::error::{Error, Result};

/// A special-token match in the rendered prompt.
pub(crate) struct Match {
    pub range: Range<usize>,
    pub id: u32,
    /// Whether it touches a byte that came from the request.
    pub forged: bool,
}

/// Every special-token match of `text`, leftmost-longest.
pub(crate) fn matches(st: &SpecialText, text: &str, marked: &[Range<usize>]) -> Vec<Match> {
    let Some(matcher) = &st.matcher else {
        return Vec::new();
    };
    matcher
        .find_iter(text)
        .filter_map(|m| {
            let range = m.start()..m.end();
            let id = *st.ids.get(m.pattern().as_usize())?;
            let forged = st.is_marker(m.pattern().as_usize()) && touches(marked, &range);
            Some(Match { range, id, forged })
        })
        .collect()
}

/// Ids (and spans) of `text` with only `specials` as special tokens: each
/// stretch between them is encoded with special-token text as text.
pub(crate) fn encode_cut(
    backend: &dyn backend::Tokenizer,
    text: &str,
    specials: &[&Match],
    markers: &[u32],
    with_offsets: bool,
) -> Result<Encoding> {
    let mut ids = Vec::with_capacity(text.len() / 3 + specials.len() + 2);
    let mut offsets = Vec::new();
    let mut pos = 0;
    let stretch = |start: usize, end: usize, ids: &mut Vec<u32>, offsets: &mut Vec<_>| {
        if start == end {
            return Ok(());
        }
        let piece = text
            .get(start..end)
            .ok_or_else(|| Error::config("encode_chat: a cut is not on a char boundary"))?;
        let enc = plain(backend, piece, markers, with_offsets)?;
        let (piece_ids, piece_offsets) = enc.into_parts();
        ids.extend_from_slice(&piece_ids);
        if with_offsets {
            let spans = piece_offsets
                .ok_or_else(|| Error::config("encode_chat: the backend returned no offsets"))?;
            offsets.extend(spans.iter().map(|&(a, b)| (a + start, b + start)));
        }
        Ok::<(), Error>(())
    };
    for m in specials {
        stretch(pos, m.range.start, &mut ids, &mut offsets)?;
        ids.push(m.id);
        if with_offsets {
            offsets.push((m.range.start, m.range.end));
        }
        pos = m.range.end;
    }
    stretch(pos, text.len(), &mut ids, &mut offsets)?;
    if with_offsets {
        Encoding::with_offsets(ids, offsets)
            .ok_or_else(|| Error::config("encode_chat: one span per id expected"))
    } else {
        Ok(Encoding::from_ids(ids))
    }
}

/// `text` with special-token text and `markers` as plain text, no BOS/EOS.
fn plain(
    backend: &dyn backend::Tokenizer,
    text: &str,
    markers: &[u32],
    with_offsets: bool,
) -> Result<Encoding> {
    if let Some(result) = backend.encode_plain(text, with_offsets, markers) {
        return result;
    }
    if !backend.parses_special_text() && markers.is_empty() {
        return if with_offsets {
            backend.encode_with_offsets(text, false)
        } else {
            backend.encode(text, false)
        };
    }
    Err(Error::config(format!(
        "encode_chat: the {} backend cannot encode special-token text as plain text per call; refusing the request instead of parsing it",
        backend.backend_name()
    )))
}

/// The ids `add_special_tokens` puts before and after a text, found by
/// encoding `"a"` both ways.
pub(crate) fn bos_eos(backend: &dyn backend::Tokenizer) -> Result<(Vec<u32>, Vec<u32>)> {
    let with = backend.encode("a", true)?.into_ids();
    let bare = plain(backend, "a", &[], false)?.into_ids();
    let at = (0..=with.len().saturating_sub(bare.len()))
        .find(|&i| with.get(i..i + bare.len()) == Some(bare.as_slice()))
        .ok_or_else(|| Error::config("encode_chat: cannot tell the ids add_special_tokens adds"))?;
    Ok((with[..at].to_vec(), with[at + bare.len()..].to_vec()))
}
