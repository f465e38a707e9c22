//! tiktoken encodings on the crate's byte-level BPE engine: `tokenizers`
//! 1.0's native pre-tokenizer (the `bitcannon` grammars) and the crate's
//! byte-level BPE ([`ByteBpe`]), built from the ranks (DESIGN.md invariants
//! `last-merge-lemma`, `native-pieces-equal-regex`, `unicode-classes-are-reference` and `background-build-invisible`).
//!
//! The ranks define the merges. For every token `t` of two or more bytes,
//! tiktoken's own merge is run on `t`'s bytes alone; when it ends in `t`,
//! its last step joined two parts `(l, r)`, and `(l, r) → t` is the one merge
//! listed for `t`, in rank order. DESIGN.md invariant `last-merge-lemma` proves that a merge run
//! over any
//! text only ever forms `t` from that split, so this one-merge-per-token
//! list gives tiktoken's ids exactly (no two merges share a product, so the
//! list index orders merges as the ranks do, and ties go leftmost in both).
//!
//! The pre-tokenizer is the encoding's pattern as the native grammar spells
//! it (invariant `native-pieces-equal-regex` has why the pieces are tiktoken's): cl100k's `\s++$`
//! alternative is the one difference, repaired by joining the last two
//! pre-tokens of a segment when both are whitespace. Text holding a code
//! point whose class the grammar's Unicode tables see differently from
//! tiktoken's regex engine (invariant `unicode-classes-are-reference`) is left to the regex path.

use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use tokenizers::SplitDelimiterBehavior;
use tokenizers::pipeline::{PreTokenizer, PreTokenizerScratch, Span};
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};

use super::encodings::{
    CL100K_PATTERN, GPT2_PATTERN, LLAMA3_PATTERN, O200K_PATTERN, TEKKEN_PATTERN,
};
use crate::backend::BuildCancel;
use crate::backend::ascii_split;
use crate::backend::bpe::ByteBpe;
use crate::backend::char_cuts::CharCuts;
use crate::backend::thread_scratch::ThreadScratch;
use crate::backend::word_cuts::{self, CutScratch, WordCuts};

/// `tokenizers`' GPT-2 spelling (invariant `native-pieces-equal-regex`: same pieces as
/// tiktoken's r50k/p50k).
const NATIVE_GPT2: &str = crate::contract::family::BYTE_LEVEL_PATTERN;

/// The native grammar's spelling of each built-in pattern, and whether the
/// cl100k end-of-text repair applies.
fn native_pattern(pattern: &str) -> Option<(&'static str, bool)> {
    if pattern == GPT2_PATTERN || pattern == NATIVE_GPT2 {
        return Some((NATIVE_GPT2, false));
    }
    if pattern == CL100K_PATTERN {
        return Some((LLAMA3_PATTERN, true));
    }
    if pattern == LLAMA3_PATTERN {
        return Some((LLAMA3_PATTERN, false));
    }
    if pattern == O200K_PATTERN {
        return Some((O200K_PATTERN, false));
    }
    if pattern == TEKKEN_PATTERN {
        return Some((TEKKEN_PATTERN, false));
    }
    None
}

/// Why no fast engine was built (the backend then keeps the regex path).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FastError {
    #[error("the pattern has no native grammar")]
    Pattern,
    #[error("building the byte-level BPE: {0}")]
    Build(String),
    /// Every handle of the backend was dropped while the engine was built
    /// in the background (issue 39).
    #[error("the build was cancelled: its backend is gone")]
    Cancelled,
}

/// tiktoken's `_byte_pair_merge` on `piece` alone; returns the split of its
/// last merge when the merge ends in one part (the whole piece).
fn last_merge(
    piece: &[u8],
    ranks: &FxHashMap<Vec<u8>, u32>,
    parts: &mut Vec<(usize, u32)>,
) -> Option<usize> {
    let n = piece.len();
    if n < 2 {
        return None;
    }
    parts.clear();
    let rank_of = |s: &[u8]| ranks.get(s).copied().unwrap_or(u32::MAX);
    for i in 0..n - 1 {
        parts.push((i, rank_of(&piece[i..i + 2])));
    }
    parts.push((n - 1, u32::MAX));
    parts.push((n, u32::MAX));
    let get_rank = |parts: &[(usize, u32)], i: usize| -> u32 {
        if i + 3 < parts.len() {
            rank_of(&piece[parts[i].0..parts[i + 3].0])
        } else {
            u32::MAX
        }
    };
    let mut split = None;
    loop {
        let mut min = (u32::MAX, usize::MAX);
        for (i, &(_, r)) in parts[..parts.len() - 1].iter().enumerate() {
            if r < min.0 {
                min = (r, i);
            }
        }
        if min.0 == u32::MAX {
            break;
        }
        let i = min.1;
        if parts.len() == 3 {
            // Two parts left: this merge makes the whole piece.
            split = Some(parts[1].0);
        }
        if i > 0 {
            parts[i - 1].1 = get_rank(parts, i - 1);
        }
        parts[i].1 = get_rank(parts, i);
        parts.remove(i + 1);
    }
    (parts.len() == 2).then_some(split).flatten()
}

/// The merge list of invariant `last-merge-lemma`: one `(left, right)` per token that tiktoken
/// can form, in rank order (byte strings); `tokens` lists `ranks`' entries.
/// Each token's merge is its own, so
/// they run on rayon (a fifth of o200k's engine build, `docs/perf/design_log/tiktoken.md`
/// (entry 349)). Once
/// `cancel` is set the remaining tokens are skipped and the list is
/// [`FastError::Cancelled`].
pub(crate) fn derive_merges(
    ranks: &FxHashMap<Vec<u8>, u32>,
    tokens: &[(&Vec<u8>, u32)],
    cancel: &BuildCancel,
) -> Result<Vec<(u32, usize)>, FastError> {
    let mut out: Vec<(u32, usize)> = tokens
        .par_iter()
        .map_init(
            || Vec::with_capacity(64),
            |parts, &(token, rank)| {
                if cancel.cancelled() {
                    return None;
                }
                last_merge(token, ranks, parts).map(|split| (rank, split))
            },
        )
        .flatten_iter()
        .collect();
    stage(cancel)?;
    out.par_sort_unstable();
    Ok(out)
}

/// Between two stages of a background build: stop if its backend is gone.
fn stage(cancel: &BuildCancel) -> Result<(), FastError> {
    if cancel.cancelled() {
        return Err(FastError::Cancelled);
    }
    Ok(())
}

/// An encoding's pattern on the native grammar (invariant `native-pieces-equal-regex`): the pieces
/// of a
/// segment, for the engine and, until it is built, for the rank path.
pub(crate) struct NativeSplit {
    split: Split,
    /// The masks' pieces of the pattern's ASCII text (invariant `ascii-pieces-equal-regex`).
    ascii: Option<ascii_split::Grammar>,
    /// cl100k: join the last two pre-tokens of a segment when both are whitespace.
    end_fix: bool,
}

impl NativeSplit {
    /// The splitter for `pattern`; an error when it has no native grammar.
    pub(crate) fn new(pattern: &str) -> Result<Self, FastError> {
        let (native, end_fix) = native_pattern(pattern).ok_or(FastError::Pattern)?;
        let split = Split::native(
            SplitPattern::Regex(native.to_owned()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(|e| FastError::Build(e.to_string()))?;
        if split.grammar().is_none() {
            return Err(FastError::Pattern);
        }
        Ok(Self {
            split,
            ascii: ascii_split::Grammar::of(native),
            end_fix,
        })
    }

    /// The pre-tokens of `text` into `spans` (cleared first). `Ok(false)`
    /// when `text` must be cut by the regex instead: a code point of invariant
    /// `unicode-classes-are-reference`, or over 4 GiB. `ascii`: `text` is
    /// all ASCII (none of those code points, and the masks take it whole).
    pub(crate) fn spans(
        &self,
        text: &str,
        ascii: bool,
        scratch: &mut PreTokenizerScratch,
        spans: &mut Vec<Span>,
    ) -> Result<bool, String> {
        spans.clear();
        if u32::try_from(text.len()).is_err()
            || (!ascii && crate::backend::divergence::needs_regex(text))
        {
            return Ok(false);
        }
        self.cut(text, ascii, scratch, spans)?;
        Ok(true)
    }

    /// The grammar's pieces of `text`, whatever code points it holds.
    fn cut(
        &self,
        text: &str,
        ascii: bool,
        scratch: &mut PreTokenizerScratch,
        spans: &mut Vec<Span>,
    ) -> Result<(), String> {
        let mut native = |text: &str, spans: &mut Vec<Span>| {
            self.split
                .pre_tokenize(text, scratch, spans)
                .map_err(|e| e.to_string())
        };
        match self.ascii {
            Some(grammar) => ascii_split::split(grammar, text, ascii, spans, native)?,
            None => native(text, spans)?,
        }
        if self.end_fix {
            fix_end(text, spans);
        }
        Ok(())
    }
}

/// The fast engine for one encoding.
pub(crate) struct FastBpe {
    /// The backend's splitter (its rank path cuts with the same one).
    split: Arc<NativeSplit>,
    model: ByteBpe,
    /// Where a CJK pre-token may be cut for the model (invariant `cut-where-no-entry-joins`).
    cuts: Option<CharCuts>,
    /// A warm scratch per thread.
    scratch: ThreadScratch<Scratch>,
}

struct Scratch {
    pre: PreTokenizerScratch,
    spans: Vec<Span>,
    /// The CJK cuts' (invariant `cut-where-no-entry-joins`).
    cuts: CutScratch,
}

impl FastBpe {
    /// Builds the engine from the ordinary ranks, cutting with `split`;
    /// a background build stops between stages once `cancel` is set.
    pub(crate) fn new(
        ranks: &FxHashMap<Vec<u8>, u32>,
        split: Arc<NativeSplit>,
        cancel: &BuildCancel,
    ) -> Result<Self, FastError> {
        stage(cancel)?;
        let tokens: Vec<(&Vec<u8>, u32)> = ranks.iter().map(|(t, &r)| (t, r)).collect();
        let merges = derive_merges(ranks, &tokens, cancel)?;
        let mut by_rank: Vec<Option<&[u8]>> = Vec::new();
        for (token, &rank) in ranks {
            let i = rank as usize;
            if i >= by_rank.len() {
                by_rank.resize(i + 1, None);
            }
            by_rank[i] = Some(token);
        }
        stage(cancel)?;
        // Each derived merge as `[left, right, merged]` ranks.
        let list = merges
            .iter()
            .map(|&(rank, at)| {
                let token = by_rank
                    .get(rank as usize)
                    .copied()
                    .flatten()
                    .ok_or_else(|| FastError::Build("rank without a token".into()))?;
                let part = |bytes: &[u8]| {
                    ranks
                        .get(bytes)
                        .copied()
                        .ok_or_else(|| FastError::Build("a merge part without a rank".into()))
                };
                Ok([part(&token[..at])?, part(&token[at..])?, rank])
            })
            .collect::<Result<Vec<_>, FastError>>()?;
        stage(cancel)?;
        // tiktoken takes a piece that is a token whole.
        let model = ByteBpe::build(ranks.iter().map(|(t, &r)| (t.as_slice(), r)), &list, true)
            .ok_or_else(|| {
                FastError::Build(
                    "a byte without a rank, or merges whose codes do not order as their ranks"
                        .into(),
                )
            })?;
        stage(cancel)?;
        // tiktoken takes a piece that is a token whole (`ignore_merges`):
        // the cuts must know the tokens its merges do not form.
        let rebuilds = |token: &[u8]| {
            let mut parts = Vec::new();
            last_merge(token, ranks, &mut parts).is_some()
        };
        let cuts = CharCuts::build(tokens.iter().map(|(t, _)| t.as_slice()), Some(&rebuilds));
        Ok(Self {
            split,
            model,
            cuts,
            scratch: ThreadScratch::default(),
        })
    }

    /// Encodes one segment (text between special tokens), appending ids to
    /// `out`. `false` when the segment must take the regex path instead (a
    /// code point of invariant `unicode-classes-are-reference`, or over 4 GiB).
    pub(crate) fn encode(&self, text: &str, out: &mut Vec<u32>) -> Result<bool, String> {
        self.encode_with_pieces(text, out, |_| {})
    }

    /// [`encode`](Self::encode), then `on_pieces` sees the segment's
    /// pre-tokens (ascending, contiguous, relative to the segment) from the
    /// engine's own buffer: the chunk encoder reads only those near its
    /// windows, so nothing is copied per pre-token.
    pub(crate) fn encode_with_pieces(
        &self,
        text: &str,
        out: &mut Vec<u32>,
        on_pieces: impl FnOnce(&[Span]),
    ) -> Result<bool, String> {
        if text.is_empty() {
            return Ok(true);
        }
        let fresh = || Scratch {
            pre: PreTokenizerScratch::default(),
            spans: Vec::new(),
            cuts: CutScratch::default(),
        };
        let run = |scratch: &mut Scratch| {
            let result = self.encode_with(text, out, scratch);
            if let Ok(true) = result {
                on_pieces(&scratch.spans);
            }
            // Large buffers are not kept past a huge input.
            if scratch.spans.capacity() > 1 << 20 {
                scratch.spans = Vec::new();
                scratch.cuts.release_pieces();
            }
            result
        };
        self.scratch.with(fresh, run)
    }

    fn encode_with(
        &self,
        text: &str,
        out: &mut Vec<u32>,
        scratch: &mut Scratch,
    ) -> Result<bool, String> {
        // One pass says whether any step must look for other bytes.
        let ascii = text.is_ascii();
        if !self
            .split
            .spans(text, ascii, &mut scratch.pre, &mut scratch.spans)?
        {
            return Ok(false);
        }
        word_cuts::encode_spans::<_, String>(
            self.cuts.as_ref().filter(|_| !ascii).map(WordCuts::Cjk),
            &mut scratch.cuts,
            text,
            &scratch.spans,
            out,
            |spans, out| {
                self.model.encode_spans(text.as_bytes(), spans, out);
                Ok(())
            },
        )?;
        Ok(true)
    }
}

/// cl100k's `\s++$`: a segment's trailing whitespace is one piece where the
/// native grammar (`\s*[\r\n]+` first) cuts it after its last newline, so
/// two whitespace pre-tokens at the end are joined (invariant `native-pieces-equal-regex`).
fn fix_end(text: &str, spans: &mut Vec<Span>) {
    let n = spans.len();
    if n < 2 {
        return;
    }
    let (a, b) = (spans[n - 2], spans[n - 1]);
    let ws = |s: Span| {
        text.get(s.range())
            .is_some_and(|t| t.chars().all(char::is_whitespace))
    };
    if b.end as usize == text.len() && ws(a) && ws(b) {
        spans.truncate(n - 1);
        spans[n - 2].end = b.end;
    }
}

/// The pieces the fast engine cuts `text` into for a tiktoken `pattern`
/// (tests compare them with the regex's).
#[cfg(test)]
pub(crate) fn native_pieces(pattern: &str, text: &str) -> Vec<(usize, usize)> {
    let split = NativeSplit::new(pattern).expect("a built-in pattern");
    let mut spans = Vec::new();
    split
        .cut(
            text,
            text.is_ascii(),
            &mut PreTokenizerScratch::default(),
            &mut spans,
        )
        .expect("pre-tokenize");
    spans
        .iter()
        .map(|s| (s.start as usize, s.end as usize))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::backend::tiktoken::encodings::PATTERNS;

    use crate::backend::ascii_split::tests::regex_pieces;

    #[test]
    fn cl100k_trailing_whitespace_is_one_piece() {
        for text in [
            "x\n  ",
            "x.\n \n\t ",
            "a \n",
            "\n\n  ",
            " \n ",
            "a\r\n\r\n  ",
        ] {
            assert_eq!(
                native_pieces(CL100K_PATTERN, text),
                regex_pieces(CL100K_PATTERN, text),
                "{text:?}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]
        #[test]
        fn pieces_match_the_regex(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just(" "), Just("\t"), Just("\n"), Just("\r"), Just("\u{a0}"), Just("\u{3000}"),
                    Just("a"), Just("Ab"), Just("AB"), Just("1"), Just("123"), Just("."), Just("'s"),
                    Just("'LL"), Just("/"), Just("é"), Just("\u{301}"), Just("中"), Just("\u{b}"),
                    Just("\u{85}"), Just("ǅ"), Just("ʰ"), Just("\u{200d}"), Just("½"), Just("Ⅻ"),
                    Just("_"), Just("👍"), Just("\u{1}"),
                ],
                0..40,
            ),
            which in 0usize..PATTERNS.len(),
        ) {
            let text: String = parts.concat();
            let pattern = PATTERNS[which];
            prop_assert_eq!(native_pieces(pattern, &text), regex_pieces(pattern, &text));
        }
    }

    #[test]
    fn derived_merges_are_one_per_formable_token() {
        let enc = crate::backend::tiktoken::encodings::BuiltinEncoding::Cl100kBase;
        let ranks = enc.spec().unwrap().ranks;
        let tokens: Vec<(&Vec<u8>, u32)> = ranks.iter().map(|(t, &r)| (t, r)).collect();
        let merges = derive_merges(&ranks, &tokens, &BuildCancel::never()).unwrap();
        // Sorted by rank, one per product.
        assert!(merges.windows(2).all(|w| w[0].0 < w[1].0));
        let mut parts = Vec::new();
        // " the" forms from " t" + "he"? Whatever the split, both halves
        // are tokens and merging the whole gives the token.
        let by_rank: FxHashMap<u32, &Vec<u8>> = ranks.iter().map(|(t, &r)| (r, t)).collect();
        for &(rank, at) in merges.iter().step_by(97) {
            let t = by_rank[&rank];
            assert!(ranks.contains_key(&t[..at]) && ranks.contains_key(&t[at..]));
            assert_eq!(last_merge(t, &ranks, &mut parts), Some(at));
        }
        // Most multi-byte tokens are formable.
        assert!(merges.len() > ranks.len() * 9 / 10, "{}", merges.len());
    }
}
