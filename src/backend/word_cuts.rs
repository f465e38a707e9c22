//! Pre-tokens cut where no merge joins across, so that text seen once is
//! merged as short pieces the word cache holds: CJK clauses of a byte-level
//! BPE (DESIGN.md invariant `cut-where-no-entry-joins`) and the whole pieces of a character BPE
//! (invariant `cut-where-no-entry-joins`). The ids are the model's on the uncut spans.
//!
//! A clause seen again is cut again: a memo of whole clauses measured
//! slower than the cut and the pieces' cache probes, seen once and seen
//! again alike (`docs/perf/byte_engine_2026-12-02.md`, "Memos"), and text
//! sent again is the job of the handle's caches.

use tokenizers::pipeline::Span;

use crate::backend::char_cuts::{CharCuts, holds_cjk_lead, next_cjk_lead};
use crate::backend::join_cuts::JoinCuts;

/// Pre-tokens in a row without a CJK lead byte after which
/// [`encode_spans`] searches for the next one at once.
const PLAIN_RUN: u32 = 4;

/// The working memory of [`encode_spans`] on one thread: the spans of the
/// next model call.
#[derive(Default)]
pub(crate) struct CutScratch {
    pieces: Vec<Span>,
}

impl CutScratch {
    /// Drops the span buffer (after a huge input).
    pub(crate) fn release_pieces(&mut self) {
        self.pieces = Vec::new();
    }
}

/// The model's ids for `spans` of `text`, appended to `out`, where `model`
/// encodes a list of spans. Without `cuts`, or with CJK cuts and no CJK
/// lead byte in `text`, that is one `model` call. Otherwise a pre-token the
/// cuts apply to is cut, and its pieces are encoded with the spans around
/// it in one call. The ids are the same as `model` on `spans` (invariant `cut-where-no-entry-joins`
/// and 358).
pub(crate) fn encode_spans<O, E>(
    cuts: Option<WordCuts<'_>>,
    scratch: &mut CutScratch,
    text: &str,
    spans: &[Span],
    out: &mut O,
    mut model: impl FnMut(&[Span], &mut O) -> Result<(), E>,
) -> Result<(), E> {
    match cuts {
        None => model(spans, out),
        Some(WordCuts::Cjk(cuts)) => encode_cjk(cuts, scratch, text, spans, out, model),
        Some(WordCuts::Joins(cuts)) => encode_joined(cuts, scratch, text, spans, out, model),
    }
}

/// What cuts a model's words (one kind per model).
#[derive(Clone, Copy)]
pub(crate) enum WordCuts<'a> {
    /// A byte-level BPE's CJK clauses (invariant `cut-where-no-entry-joins`).
    Cjk(&'a CharCuts),
    /// A character BPE's whole pieces (invariant `cut-where-no-entry-joins`).
    Joins(&'a JoinCuts),
}

/// [`encode_spans`] with CJK cuts.
fn encode_cjk<O, E>(
    cuts: &CharCuts,
    scratch: &mut CutScratch,
    text: &str,
    spans: &[Span],
    out: &mut O,
    mut model: impl FnMut(&[Span], &mut O) -> Result<(), E>,
) -> Result<(), E> {
    let bytes = text.as_bytes();
    // No CJK lead byte lies before `clear_to` (after the last span looked
    // at): the spans that end there go to the model as they are.
    let mut clear_to = next_cjk_lead(bytes, 0);
    if clear_to >= bytes.len() {
        return model(spans, out);
    }
    let pieces = &mut scratch.pieces;
    // Everything is encoded together: the spans as they are, clauses cut.
    pieces.clear();
    // Spans in a row without a lead byte: after a few, the next lead byte is
    // searched for at once, so text with a few CJK chars is not checked one
    // pre-token at a time, and dense CJK text pays no search per pre-token.
    let mut plain_run = 0;
    let mut rest = spans;
    while let Some((span, after)) = rest.split_first() {
        if span.end as usize <= clear_to {
            let plain = rest
                .iter()
                .position(|s| s.end as usize > clear_to)
                .unwrap_or(rest.len());
            let (before, after) = rest.split_at(plain);
            pieces.extend_from_slice(before);
            rest = after;
            continue;
        }
        rest = after;
        let word = bytes.get(span.range()).unwrap_or_default();
        if !holds_cjk_lead(word) {
            pieces.push(*span);
            plain_run += 1;
            if plain_run == PLAIN_RUN {
                clear_to = next_cjk_lead(bytes, span.end as usize);
                plain_run = 0;
            }
            continue;
        }
        plain_run = 0;
        if word.len() < CharCuts::MIN_CUT_BYTES {
            pieces.push(*span);
            continue;
        }
        cuts.cut_span(bytes, *span, pieces);
    }
    flush(pieces, out, &mut model)
}

/// [`encode_spans`] with a character BPE's cuts: each span cut where no
/// entry joins (invariant `cut-where-no-entry-joins`).
fn encode_joined<O, E>(
    cuts: &JoinCuts,
    scratch: &mut CutScratch,
    text: &str,
    spans: &[Span],
    out: &mut O,
    mut model: impl FnMut(&[Span], &mut O) -> Result<(), E>,
) -> Result<(), E> {
    let bytes = text.as_bytes();
    let pieces = &mut scratch.pieces;
    pieces.clear();
    for span in spans {
        cuts.cut_span(bytes, *span, pieces);
    }
    flush(pieces, out, &mut model)
}

/// What is queued in `pieces`, encoded.
fn flush<O, E>(
    pieces: &[Span],
    out: &mut O,
    model: &mut impl FnMut(&[Span], &mut O) -> Result<(), E>,
) -> Result<(), E> {
    if pieces.is_empty() {
        return Ok(());
    }
    model(pieces, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `encode_spans` on a stand-in model: one id per char, so cutting a
    /// span anywhere gives the same ids, and the cuts show only in the
    /// calls made. Returns the ids and the
    /// spans of each model call.
    fn encode_per_char(
        cuts: Option<&CharCuts>,
        scratch: &mut CutScratch,
        text: &str,
        spans: &[Span],
    ) -> (Vec<u32>, Vec<Vec<Span>>) {
        let (mut out, mut calls): (Vec<u32>, _) = (Vec::new(), Vec::new());
        encode_spans(
            cuts.map(WordCuts::Cjk),
            scratch,
            text,
            spans,
            &mut out,
            |sp, o| {
                calls.push(sp.to_vec());
                for s in sp {
                    o.extend(text[s.range()].chars().map(u32::from));
                }
                Ok::<(), ()>(())
            },
        )
        .expect("stand-in model");
        (out, calls)
    }

    /// Text with a few CJK clauses among many plain pre-tokens, and CJK
    /// text outside the spans (as between the segments of special tokens):
    /// every span reaches the model once, in order, whether the lead-byte
    /// search skips it or not.
    #[test]
    fn sparse_cjk_and_gaps_keep_every_span_in_order() {
        let cuts = CharCuts::build(["中文".as_bytes()].into_iter(), None).expect("rules");
        for (gap, every) in [(false, 3), (false, 40), (true, 7), (true, 1)] {
            let mut text = String::new();
            let mut spans = Vec::new();
            for n in 0..400usize {
                let word = if n % every == 0 {
                    "中文天地"
                } else {
                    " ab"
                };
                if gap && n % 5 == 0 {
                    // Not in any span: a lead byte the spans never hold.
                    text.push('字');
                }
                let start = text.len() as u32;
                text.push_str(word);
                spans.push(Span::new(start, text.len() as u32));
            }
            let expected: Vec<u32> = spans
                .iter()
                .flat_map(|s| text[s.range()].chars().map(u32::from))
                .collect();
            let mut scratch = CutScratch::default();
            for _ in 0..4 {
                let (ids, _) = encode_per_char(Some(&cuts), &mut scratch, &text, &spans);
                assert_eq!(ids, expected, "gap {gap}, every {every}");
            }
        }
    }

    #[test]
    fn every_encode_is_one_model_call_with_the_clauses_cut() {
        let cuts =
            CharCuts::build(["中文".as_bytes(), "天".as_bytes()].into_iter(), None).expect("rules");
        let text = "天天中文，天中。ab 中文字幕";
        let bounds = [0, 12, 15, 21, 24, 26, 27, text.len()];
        let spans: Vec<Span> = bounds
            .windows(2)
            .map(|w| Span::new(w[0] as u32, w[1] as u32))
            .collect();
        let expected: Vec<u32> = text.chars().map(u32::from).collect();
        let mut scratch = CutScratch::default();
        // Seen once or often, the same: one call, the clauses cut (more
        // spans than went in), the same ids.
        for _ in 0..80 {
            let (ids, calls) = encode_per_char(Some(&cuts), &mut scratch, text, &spans);
            assert_eq!(ids, expected);
            assert_eq!(calls.len(), 1);
            assert!(calls[0].len() > spans.len(), "{:?}", calls[0]);
        }
        // Without cuts, or without CJK, the spans go to the model as they are.
        let plain = [Span::new(0, 2), Span::new(2, 11)];
        for (cuts, text, spans) in [
            (None, text, &spans[..]),
            (Some(&cuts), "ab cd ef gh", &plain),
        ] {
            let (ids, calls) = encode_per_char(cuts, &mut scratch, text, spans);
            assert_eq!(calls, [spans.to_vec()]);
            assert_eq!(ids.len(), text.chars().count());
        }
    }
}
