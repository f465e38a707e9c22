//! Encoding with byte offsets on `tokenizers` 1.0, whose pipeline returns ids only.
//!
//! This runs the same stages as `PipelineTokenizer::encode_into` (added tokens
//! on raw text, normalize, added tokens on normalized text, pre-tokenize,
//! model), one pre-token at a time so each token is known to lie inside its
//! pre-token, and measures tokens by the bytes they stand for in normalized
//! text. Normalized positions go back to the input through
//! [`full_map`](super::chunk::full_map): exact piece by piece (the parallel
//! encoder's chunks use the same map, so their offsets agree), heuristic
//! ([`align`](super::align::align)) only past a piece whose normalization
//! depends on its context.
//! The ids are the fast path's ids; a test checks that on the whole corpus.

use std::borrow::Cow;
use tokenizers::pipeline::{
    Model, PipelinePatternMatcher, PipelineToken, PipelineTokenizer, PreTokenizer,
    PreTokenizerScratch, Span, normalize_all,
};

use super::chunk::{PieceNorm, full_map};
use super::vocab::Vocab;
use crate::error::{Error, Result};

const NAME: &str = "hf";

/// Appends ids and input byte spans for `text` (no post-processing).
pub(crate) fn encode_with_offsets(
    pipe: &PipelineTokenizer,
    vocab: &Vocab,
    text: &str,
    specials_as_text: bool,
    pieces: &PieceNorm,
    ids: &mut Vec<u32>,
    offsets: &mut Vec<(usize, usize)>,
) -> Result<()> {
    let added = pipe.get_added_vocabulary();
    let mut model_scratch = pipe.get_model().init_scratch();
    let mut pre_scratch = PreTokenizerScratch::default();
    let mut spans: Vec<Span> = Vec::new();
    let mut out: Vec<PipelineToken> = Vec::new();
    let bytes = text.as_bytes();
    let mut pos = 0;
    loop {
        let next = added.extract_next(bytes, pos, false, specials_as_text);
        let text_end = next.map_or(text.len(), |((s, _), _)| s);
        if text_end > pos {
            let segment = text
                .get(pos..text_end)
                .ok_or_else(|| Error::backend(NAME, "added-token match off a char boundary"))?;
            let normalized = normalize_all(pipe.get_normalizers(), segment, pos)
                .map_err(|e| Error::backend(NAME, e.to_string()))?;
            let map = match &normalized {
                Cow::Borrowed(_) => None,
                Cow::Owned(s) if s == segment => None,
                Cow::Owned(s) => Some(full_map(pipe.get_normalizers(), pieces, segment, s)),
            };
            let to_input = |p: usize| -> usize {
                pos + map
                    .as_ref()
                    .map_or(p, |m| m.get(p).map_or(segment.len(), |&v| v as usize))
            };
            let norm = normalized.as_ref();
            let nbytes = norm.as_bytes();
            let mut npos = 0;
            loop {
                let nnext = added.extract_next(nbytes, npos, true, specials_as_text);
                let nend = nnext.map_or(norm.len(), |((s, _), _)| s);
                if nend > npos {
                    let chunk = norm.get(npos..nend).ok_or_else(|| {
                        Error::backend(NAME, "normalized match off a char boundary")
                    })?;
                    spans.clear();
                    pipe.get_pre_tokenizer()
                        .pre_tokenize(chunk, &mut pre_scratch, &mut spans)
                        .map_err(|e| Error::backend(NAME, e.to_string()))?;
                    for span in &spans {
                        out.clear();
                        pipe.get_model()
                            .tokenize_spans(
                                chunk,
                                std::slice::from_ref(span),
                                &mut model_scratch,
                                &mut out,
                            )
                            .map_err(|e| Error::backend(NAME, e.to_string()))?;
                        if !vocab.fold_fixups.is_empty() {
                            let fixed: Vec<PipelineToken> = out
                                .iter()
                                .flat_map(|t| match vocab.fold_fixups.get(&t.id()) {
                                    Some(ids) => {
                                        ids.iter().map(|&i| PipelineToken::from(i)).collect()
                                    }
                                    None => vec![*t],
                                })
                                .collect();
                            out = fixed;
                        }
                        let (s, e) = (npos + span.start as usize, npos + span.end as usize);
                        place(vocab, &out, s, e, &to_input, ids, offsets);
                    }
                }
                let Some(((s, e), id)) = nnext else { break };
                ids.push(id);
                offsets.push((to_input(s), to_input(e)));
                npos = e;
            }
        }
        let Some(((s, e), id)) = next else { break };
        ids.push(id);
        offsets.push((s, e));
        pos = e;
    }
    Ok(())
}

/// Gives the tokens of one pre-token `[s, e)` (normalized coordinates) their spans.
///
/// Token lengths are their normalized byte lengths. If they do not add up to
/// the pre-token (an `[UNK]`, a WordLevel token), every token gets the whole
/// pre-token's span: coarse, but still monotone and covering.
fn place(
    vocab: &Vocab,
    tokens: &[PipelineToken],
    s: usize,
    e: usize,
    to_input: &impl Fn(usize) -> usize,
    ids: &mut Vec<u32>,
    offsets: &mut Vec<(usize, usize)>,
) {
    let lens: Option<Vec<usize>> = tokens
        .iter()
        .map(|t| {
            vocab
                .normalized_len
                .get(t.id() as usize)
                .copied()
                .flatten()
                .map(|l| l as usize)
        })
        .collect();
    let exact = lens.filter(|l| l.iter().sum::<usize>() == e - s);
    let mut p = s;
    for (k, t) in tokens.iter().enumerate() {
        ids.push(t.id());
        match &exact {
            Some(lens) => {
                let q = p + lens[k];
                offsets.push((to_input(p), to_input(q)));
                p = q;
            }
            None => offsets.push((to_input(s), to_input(e))),
        }
    }
}
