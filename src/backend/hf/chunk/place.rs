//! Placing a pre-tokenized piece's tokens: every span on its own
//! ([`HfBackend::place_all`]), or the window tokens only, forward through
//! the head window and backward through the tail window
//! ([`HfBackend::walk`]).

use tokenizers::pipeline::{PipelineToken, Span};

use super::{Flow, HfBackend, Out, Piece, Scratch, SegMap, Windows, err};
use crate::error::Result;

impl HfBackend {
    /// Every pre-token tokenized and placed on its own (spans go to
    /// `out.offsets`): token lengths when they add up to the pre-token.
    pub(super) fn place_all(
        &self,
        piece: &Piece<'_>,
        to_full: &impl Fn(usize) -> usize,
        scratch: &mut Scratch,
        out: &mut Out,
    ) -> Result<()> {
        let spans = std::mem::take(&mut scratch.spans);
        for span in &spans {
            scratch.one.clear();
            self.tokenize_spans(
                piece.text,
                std::slice::from_ref(span),
                &mut scratch.model,
                &mut scratch.one,
            )?;
            self.fix_folds_from(&mut scratch.one, 0);
            let (s, e) = (piece.at(span.start), piece.at(span.end));
            // Exact lengths when they add up to the pre-token, else the whole
            // pre-token's span for each token.
            let lens: Option<Vec<usize>> = scratch
                .one
                .iter()
                .map(|t| {
                    self.vocab
                        .normalized_len
                        .get(t.id() as usize)
                        .copied()
                        .flatten()
                        .map(|l| l as usize)
                })
                .collect();
            let exact = lens.filter(|l| l.iter().sum::<usize>() == e - s);
            let mut p = s;
            for (k, t) in scratch.one.iter().enumerate() {
                let span = match &exact {
                    Some(lens) => {
                        let q = p + lens[k];
                        let span = (to_full(p), to_full(q));
                        p = q;
                        span
                    }
                    None => (to_full(s), to_full(e)),
                };
                out.offsets.push((out.tokens.len(), span));
                out.tokens.push(*t);
            }
        }
        scratch.spans = spans;
        Ok(())
    }

    /// Places the window tokens of one pre-tokenized piece whose tokens are
    /// `out.tokens[first..]`: forward through the head window, backward
    /// through the tail window.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn walk(
        &self,
        piece: &Piece<'_>,
        spans: &[Span],
        first: usize,
        windows: Windows<'_>,
        map: &mut SegMap<'_>,
        scratch: &mut Scratch,
        out: &mut Out,
    ) -> Result<()> {
        let last = out.tokens.len();
        let mut t = first;
        let mut k = 0;
        while k < spans.len() && !out.head.failed {
            let (ps, pe) = (piece.at(spans[k].start), piece.at(spans[k].end));
            let Some(a) = map.locate(ps, true) else {
                out.head.failed = true;
                break;
            };
            if a >= windows.head {
                break;
            }
            if windows.bounds {
                out.head.bounds.push(a);
            }
            match self.forward(
                piece,
                spans[k],
                (ps, pe),
                t,
                last,
                windows,
                map,
                scratch,
                out,
            )? {
                Flow::Done(count) => {
                    if windows.bounds {
                        match map.locate(pe, true) {
                            Some(b) => out.head.bounds.push(b),
                            None => out.head.failed = true,
                        }
                    }
                    t += count;
                    k += 1;
                }
                Flow::Stop => break,
            }
        }
        let floor_k = k;
        let mut t = last;
        let mut k = spans.len();
        while k > floor_k && !out.tail.failed {
            let span = spans[k - 1];
            let (ps, pe) = (piece.at(span.start), piece.at(span.end));
            let Some(b) = map.locate(pe, false) else {
                out.tail.failed = true;
                break;
            };
            if b <= windows.tail_from {
                break;
            }
            if windows.bounds {
                out.tail.bounds.push(b);
            }
            let flow =
                self.backward(piece, span, (ps, pe), first, t, windows, map, scratch, out)?;
            if windows.bounds {
                match map.locate(ps, false) {
                    Some(a) => out.tail.bounds.push(a),
                    None => out.tail.failed = true,
                }
            }
            match flow {
                Flow::Done(count) => {
                    t -= count;
                    k -= 1;
                }
                Flow::Stop => break,
            }
        }
        Ok(())
    }

    /// Re-tokenizes one pre-token alone and checks its tokens sit at `from`
    /// (`at(count)` gives it) in the chunk: how many tokens it has, when the
    /// lengths cannot tell. Their spans are then unknown (no cut next to them).
    fn count_alone(
        &self,
        piece: &Piece<'_>,
        span: Span,
        at: impl FnOnce(usize) -> Option<usize>,
        scratch: &mut Scratch,
        tokens: &[PipelineToken],
    ) -> Result<usize> {
        scratch.one.clear();
        self.tokenize_spans(
            piece.text,
            std::slice::from_ref(&span),
            &mut scratch.model,
            &mut scratch.one,
        )?;
        self.fix_folds_from(&mut scratch.one, 0);
        let count = scratch.one.len();
        let from = at(count).ok_or_else(|| err("pre-token tokens out of range"))?;
        if tokens.get(from..from + count) != Some(&scratch.one[..]) {
            return Err(err("pre-token tokens do not match the chunk's tokens"));
        }
        Ok(count)
    }

    /// Places the tokens of pre-token `[ps, pe)` starting at token `from`,
    /// while they start inside the head window.
    #[allow(clippy::too_many_arguments)]
    fn forward(
        &self,
        piece: &Piece<'_>,
        span: Span,
        (ps, pe): (usize, usize),
        from: usize,
        limit: usize,
        windows: Windows<'_>,
        map: &mut SegMap<'_>,
        scratch: &mut Scratch,
        out: &mut Out,
    ) -> Result<Flow> {
        let (mut p, mut i) = (ps, from);
        while p < pe {
            let len = out.tokens[..limit]
                .get(i)
                .and_then(|t| self.known_len(t.id()));
            let Some(l) = len.filter(|&l| p + l <= pe) else {
                // Lengths do not tell: count the tokens. A lone token covers
                // the pre-token; several keep unknown spans.
                let n = self.count_alone(piece, span, |_| Some(from), scratch, &out.tokens)?;
                if n == 1 && p == ps {
                    match (map.locate(ps, true), map.locate(pe, true)) {
                        (Some(a), Some(b)) if a < windows.head => {
                            out.head.known.push((from, (a, b)))
                        }
                        (Some(_), Some(_)) => return Ok(Flow::Stop),
                        _ => out.head.failed = true,
                    }
                }
                return Ok(Flow::Done(n));
            };
            let (Some(a), Some(b)) = (map.locate(p, true), map.locate(p + l, true)) else {
                out.head.failed = true;
                return Ok(Flow::Stop);
            };
            if a >= windows.head {
                return Ok(Flow::Stop);
            }
            out.head.known.push((i, (a, b)));
            p += l;
            i += 1;
        }
        Ok(Flow::Done(i - from))
    }

    /// Places the tokens of pre-token `[ps, pe)` ending before token `end`,
    /// backwards, while they end inside the tail window.
    #[allow(clippy::too_many_arguments)]
    fn backward(
        &self,
        piece: &Piece<'_>,
        span: Span,
        (ps, pe): (usize, usize),
        floor: usize,
        end: usize,
        windows: Windows<'_>,
        map: &mut SegMap<'_>,
        scratch: &mut Scratch,
        out: &mut Out,
    ) -> Result<Flow> {
        let (mut p, mut i) = (pe, end);
        while p > ps {
            let len = (i > floor)
                .then(|| out.tokens.get(i - 1))
                .flatten()
                .and_then(|t| self.known_len(t.id()));
            let Some(l) = len.filter(|&l| l <= p - ps) else {
                // Lengths do not tell: count the tokens. A lone token covers
                // the pre-token; several keep unknown spans.
                let n =
                    self.count_alone(piece, span, |c| end.checked_sub(c), scratch, &out.tokens)?;
                if n == 1 && p == pe {
                    match (map.locate(ps, false), map.locate(pe, false)) {
                        (Some(a), Some(b)) if b > windows.tail_from => {
                            out.tail.known.push((end - 1, (a, b)));
                        }
                        (Some(_), Some(_)) => return Ok(Flow::Stop),
                        _ => out.tail.failed = true,
                    }
                }
                return Ok(Flow::Done(n));
            };
            let (Some(a), Some(b)) = (map.locate(p - l, false), map.locate(p, false)) else {
                out.tail.failed = true;
                return Ok(Flow::Stop);
            };
            if b <= windows.tail_from {
                return Ok(Flow::Stop);
            }
            out.tail.known.push((i - 1, (a, b)));
            p -= l;
            i -= 1;
        }
        Ok(Flow::Done(end - i))
    }
}
