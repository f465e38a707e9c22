//! The pure functions of the parallel encoder: chunk edges and the cut search.
//!
//! Nothing here encodes; everything works on text positions and on the
//! windows of [`ChunkEncoding`]s, so it is unit-tested with hand-made chunks.

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{IsNormalized, is_nfc_quick, is_nfkc_quick};

use super::{ChunkEncoding, EdgeRule, SplitFamily, SplitSpec};

/// A char no normalizer merges with the text before it: ASCII, or a starter
/// (combining class 0) that is NFC- and NFKC-quick-check stable.
pub(crate) fn stable_char(c: char) -> bool {
    if c.is_ascii() {
        return true;
    }
    canonical_combining_class(c) == 0
        && is_nfc_quick(std::iter::once(c)) == IsNormalized::Yes
        && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes
}

/// `regex-syntax`'s ranges for a one-class pattern (`\w`, `\s`).
fn class_ranges(pattern: &str) -> Vec<(char, char)> {
    use regex_syntax::hir::{Class, HirKind};
    match regex_syntax::Parser::new()
        .parse(pattern)
        .map(|h| h.into_kind())
    {
        Ok(HirKind::Class(Class::Unicode(class))) => class
            .ranges()
            .iter()
            .map(|r| (r.start(), r.end()))
            .collect(),
        _ => Vec::new(),
    }
}

fn in_ranges(ranges: &[(char, char)], c: char) -> bool {
    let i = ranges.partition_point(|&(_, end)| end < c);
    ranges.get(i).is_some_and(|&(start, _)| start <= c)
}

/// `\w` as the reference's `regex` crate has it (`tokenizers` 0.x: an
/// added token's `single_word`).
pub(crate) fn is_word_char(c: char) -> bool {
    static WORD: std::sync::LazyLock<Vec<(char, char)>> =
        std::sync::LazyLock::new(|| class_ranges(r"\w"));
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    in_ranges(&WORD, c)
}

/// `\s` as the reference's `regex` crate has it (`tokenizers` 0.x: an
/// added token's `lstrip` and `rstrip`).
pub(crate) fn is_space(c: char) -> bool {
    static SPACE: std::sync::LazyLock<Vec<(char, char)>> =
        std::sync::LazyLock::new(|| class_ranges(r"\s"));
    if c.is_ascii() {
        return matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r');
    }
    in_ranges(&SPACE, c)
}

/// The byte position `n` chars after `pos` (clamped to the text end).
pub(crate) fn advance_chars(text: &str, pos: usize, n: usize) -> usize {
    let Some(rest) = text.get(pos..) else {
        return text.len();
    };
    match rest.char_indices().nth(n) {
        Some((i, _)) => pos + i,
        None => text.len(),
    }
}

/// The byte position `n` chars before `pos` (clamped to the text start).
pub(crate) fn retreat_chars(text: &str, pos: usize, n: usize) -> usize {
    let Some(head) = text.get(..pos) else {
        return 0;
    };
    match head.char_indices().rev().nth(n.saturating_sub(1)) {
        Some((i, _)) if n > 0 => i,
        _ if n == 0 => pos,
        _ => 0,
    }
}

/// The first allowed edge at or after `target` and before `hi`, else the last
/// one before `target` and after `lo`. `None` when `[lo, hi)` has none.
pub(crate) fn find_edge(
    text: &str,
    rule: &EdgeRule,
    target: usize,
    lo: usize,
    hi: usize,
) -> Option<usize> {
    let hi = hi.min(text.len());
    let target = target.clamp(lo, hi);
    (target..hi)
        .find(|&p| rule.allows(text, p))
        .or_else(|| {
            (lo.saturating_add(1)..target)
                .rev()
                .find(|&p| rule.allows(text, p))
        })
        .filter(|&p| p > lo && p < hi)
}

/// One planned chunk: `[start, end)` of the text, and its windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkPlan {
    pub start: usize,
    pub end: usize,
    /// Head window length (bytes from `start`).
    pub head: usize,
    /// Tail window length (bytes before `end`).
    pub tail: usize,
}

/// Extra window bytes beyond the overlap, so the tokens around any candidate
/// cut and their neighbours are known.
pub(crate) fn window_slack(spec: &SplitSpec) -> usize {
    2 * spec.max_token_bytes + 64
}

/// Plans chunks whose starts are the allowed edges nearest to `targets`
/// (ascending byte positions), each chunk running `overlap_chars` past the
/// next one's start. Fewer than two chunks means "do not split".
pub(crate) fn plan_chunks(
    text: &str,
    spec: &SplitSpec,
    targets: &[usize],
    overlap_chars: usize,
    radius: usize,
) -> Vec<ChunkPlan> {
    let n = text.len();
    let mut starts = vec![0usize];
    for &t in targets {
        let prev = starts.last().copied().unwrap_or(0);
        if t <= prev || t >= n {
            continue;
        }
        let lo = prev.max(t.saturating_sub(radius));
        if let Some(edge) = find_edge(text, &spec.edges, t, lo, t.saturating_add(radius))
            && edge > prev
        {
            starts.push(edge);
        }
    }
    let slack = window_slack(spec);
    let mut plans: Vec<ChunkPlan> = Vec::with_capacity(starts.len());
    for (i, &start) in starts.iter().enumerate() {
        let end = match starts.get(i + 1) {
            None => n,
            Some(&next) => {
                let target = advance_chars(text, next, overlap_chars.max(1));
                if target >= n {
                    n
                } else {
                    find_edge(
                        text,
                        &spec.edges,
                        target,
                        next,
                        target.saturating_add(radius),
                    )
                    .unwrap_or(n)
                }
            }
        };
        plans.push(ChunkPlan {
            start,
            end,
            head: 0,
            tail: 0,
        });
    }
    for i in 0..plans.len() {
        if i > 0 {
            plans[i].head = plans[i - 1].end - plans[i].start + slack;
        }
        if let Some(next) = plans.get(i + 1).map(|p| p.start) {
            plans[i].tail = plans[i].end - next + slack;
        }
    }
    plans
}

/// A chunk's encoding seen in global text coordinates.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    /// Global byte offset of the chunk start.
    pub start: usize,
    /// Global byte offset of the chunk end.
    pub end: usize,
    /// Index of `enc.ids[0]` in the chunk's ids: an L1 seed holds only the
    /// ids of its span window, the ones before it live in the cache entry
    /// (0 for an encoded chunk).
    pub first: usize,
    pub enc: &'a ChunkEncoding,
}

impl View<'_> {
    /// Number of ids in the chunk, held or not.
    fn len(&self) -> usize {
        self.first + self.enc.ids.len()
    }

    /// Index of the first id whose span the tail window holds.
    fn tail_first(&self) -> usize {
        self.first + self.enc.tail_first
    }

    /// Global span of the id at index `i`, when a window covers it.
    fn span(&self, i: usize) -> Option<(usize, usize)> {
        let enc = self.enc;
        let i = i.checked_sub(self.first)?;
        let (s, e) = if i < enc.head.len() {
            enc.head[i]
        } else if i >= enc.tail_first {
            *enc.tail.get(i - enc.tail_first)?
        } else {
            return None;
        };
        Some((self.start + s, self.start + e))
    }

    fn id(&self, i: usize) -> Option<u32> {
        self.enc.ids.get(i.checked_sub(self.first)?).copied()
    }

    fn is_boundary(&self, global: usize) -> bool {
        let Some(local) = global.checked_sub(self.start) else {
            return false;
        };
        self.enc.boundaries.binary_search(&local).is_ok()
    }

    /// Whether a boundary lies strictly inside `(lo, hi)` (global).
    fn boundary_between(&self, lo: usize, hi: usize) -> bool {
        let b = &self.enc.boundaries;
        let lo_local = lo.saturating_sub(self.start);
        let i = b.partition_point(|&x| x <= lo_local);
        b.get(i).is_some_and(|&x| self.start + x < hi)
    }

    /// The last boundary at or before `global`.
    fn boundary_at_or_before(&self, global: usize) -> Option<usize> {
        let b = &self.enc.boundaries;
        let local = global.checked_sub(self.start)?;
        let i = b.partition_point(|&x| x <= local);
        i.checked_sub(1).map(|i| self.start + b[i])
    }

    /// Index of the token whose span starts at `global` and is not empty,
    /// searched in the tail window.
    fn tail_token_starting_at(&self, global: usize) -> Option<usize> {
        let local = global.checked_sub(self.start)?;
        let tail = &self.enc.tail;
        let i = tail.partition_point(|&(s, _)| s < local);
        let (s, e) = *tail.get(i)?;
        (s == local && e > s).then_some(self.tail_first() + i)
    }

    /// Index of the token whose span starts at `global`, searched in the head window.
    fn head_token_starting_at(&self, global: usize) -> Option<usize> {
        let local = global.checked_sub(self.start)?;
        let head = &self.enc.head;
        let i = head.partition_point(|&(s, _)| s < local);
        let (s, e) = *head.get(i)?;
        (s == local && e > s).then_some(self.first + i)
    }
}

/// An accepted cut: take the left chunk's ids before `left_end` and the right
/// chunk's ids from `right_start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    /// Global byte position of the cut.
    pub pos: usize,
    pub left_end: usize,
    pub right_start: usize,
    /// Accepted by the intra-word rule (inside one pre-token).
    pub intra: bool,
}

/// What the merge knows about the previous cut into the left chunk.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PrevCut {
    /// Global position (0 for the first chunk).
    pub pos: usize,
}

/// End of the region of text the match ending at `q` may have read, for the
/// GPT-family patterns: up to three chars past `q`, or, when `q` sits inside a
/// whitespace run, to the end of that run plus three chars. The scan stops at
/// `limit` (the answer is then at least `limit`).
pub(crate) fn region_end(text: &str, q: usize, limit: usize) -> usize {
    let limit = limit.min(text.len()).max(q);
    let before = text[..q].chars().next_back();
    let at = text[q..].chars().next();
    let ws = |c: Option<char>| c.is_some_and(char::is_whitespace);
    let from = if ws(before) && ws(at) {
        match text[q..limit].find(|c: char| !c.is_whitespace()) {
            Some(run) => q + run,
            None => return limit,
        }
    } else {
        q
    };
    advance_chars(text, from, 3)
}

/// The guard for boundary `q` of the left chunk: whatever decided it lies
/// inside the chunk, with one char to spare.
fn guarded(text: &str, q: usize, left_end: usize) -> bool {
    let end = region_end(text, q, left_end);
    end < left_end && advance_chars(text, end, 1) < left_end
}

/// Checks the merge rule for a cut at `p`, where `j` is the right chunk's
/// token starting at `p`. Returns the cut when every condition holds.
#[allow(clippy::too_many_arguments)]
fn check(
    text: &str,
    spec: &SplitSpec,
    left: View<'_>,
    right: View<'_>,
    j: usize,
    lo: usize,
    hi: usize,
    prev: PrevCut,
) -> Option<Cut> {
    let family = spec.family;
    // Rule 2, right side: the token after p and the one before it, alone on
    // their spans, the one before not touching the right chunk's start.
    let (p, c) = right.span(j)?;
    if p <= lo || p >= hi || c <= p || j == 0 {
        return None;
    }
    let (ra, rb) = right.span(j - 1)?;
    if rb <= ra || ra <= right.start || rb > p || (rb < p && !family.allows_gap()) {
        return None;
    }
    if j >= 2 && right.span(j - 2)?.1 > ra {
        return None;
    }
    if j + 1 < right.len() && right.span(j + 1)?.0 < c {
        return None;
    }
    // Left side: the same two tokens at the same places.
    let i = left.tail_token_starting_at(p)?;
    if i == 0 || i < left.tail_first() + 1 {
        return None;
    }
    if left.span(i)? != (p, c) || left.span(i - 1)? != (ra, rb) {
        return None;
    }
    if left.id(i)? != right.id(j)? || left.id(i - 1)? != right.id(j - 1)? {
        return None;
    }
    if c >= left.end {
        return None;
    }
    if i >= 2 {
        // The neighbour must be known: a token before the tail window could overlap.
        match left.span(i - 2) {
            Some((_, e)) if e <= ra => {}
            _ => return None,
        }
    }
    if i + 1 < left.len() && left.span(i + 1)?.0 < c {
        return None;
    }
    let cut = |intra| Cut {
        pos: p,
        left_end: i,
        right_start: j,
        intra,
    };
    let b = right.start;
    let far = |x: usize| x >= spec.max_token_bytes;
    // Rule 3, by family.
    if family == SplitFamily::WholeTextBpe {
        return (far(p - b) && far(left.end - p)).then(|| cut(false));
    }
    if !family.needs_boundaries() {
        return None;
    }
    if left.is_boundary(p) && right.is_boundary(p) && guarded(text, p, left.end) {
        if family.allows_gap() && rb < p && !(left.is_boundary(rb) && right.is_boundary(rb)) {
            return None;
        }
        return Some(cut(false));
    }
    // Intra-word: the whole candidate region inside one pre-token in both
    // chunks, the cut far from both edges, and the left pre-token's start a
    // true boundary (or inside the stretch a previous intra-word cut certified).
    if family.intra_word()
        && !left.boundary_between(lo, hi)
        && !right.boundary_between(lo, hi)
        && far(p - b)
        && far(left.end - p)
    {
        let s = left.boundary_at_or_before(lo)?;
        let s_ok = s < prev.pos || s == 0 || (s > left.start && guarded(text, s, left.end));
        if s_ok {
            return Some(cut(true));
        }
    }
    None
}

/// Searches the overlap `(lo, hi)` for the first position where the left and
/// right chunks may be stitched.
pub(crate) fn find_cut(
    text: &str,
    spec: &SplitSpec,
    left: View<'_>,
    right: View<'_>,
    lo: usize,
    prev: PrevCut,
) -> Option<Cut> {
    let hi = left.end;
    if lo >= hi {
        return None;
    }
    (right.first + 1..right.first + right.enc.head.len())
        .find_map(|j| check(text, spec, left, right, j, lo, hi, prev))
}

/// Re-checks a cut at exactly `pos` after the right chunk was re-encoded.
pub(crate) fn check_cut_at(
    text: &str,
    spec: &SplitSpec,
    left: View<'_>,
    right: View<'_>,
    pos: usize,
    lo: usize,
    prev: PrevCut,
) -> Option<Cut> {
    let j = right.head_token_starting_at(pos)?;
    check(text, spec, left, right, j, lo, left.end, prev)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(family: SplitFamily) -> SplitSpec {
        SplitSpec::new(family, Vec::new(), Vec::new(), 4, EdgeRule::default())
    }

    /// A chunk of a "one token per word, spaces attached in front" tokenizer,
    /// with every span known.
    fn words(text: &str, start: usize, end: usize) -> ChunkEncoding {
        let chunk = &text[start..end];
        let mut spans = Vec::new();
        let mut ids = Vec::new();
        let mut bounds = vec![0];
        let mut s = 0;
        for (i, c) in chunk.char_indices().skip(1) {
            if c == ' ' {
                spans.push((s, i));
                ids.push(chunk[s..i].len() as u32);
                bounds.push(i);
                s = i;
            }
        }
        spans.push((s, chunk.len()));
        ids.push(chunk[s..].len() as u32);
        bounds.push(chunk.len());
        let request = crate::contract::ChunkRequest::new(chunk.len(), chunk.len(), false);
        ChunkEncoding::from_spans(ids, spans, chunk.len(), &request, bounds)
    }

    #[test]
    fn edges_avoid_added_tokens_and_unstable_chars() {
        let mut rule = EdgeRule::default();
        rule.add_token("<s>");
        let text = "ab<s>cd";
        assert!(!rule.allows(text, 3)); // between '<' and 's'
        assert!(rule.allows(text, 2));
        rule.normalizes = true;
        let text = "e\u{301}x";
        assert!(!rule.allows(text, 1)); // before a combining mark
        assert!(rule.allows(text, 3));
        assert!(!rule.allows("é", 1)); // not a char boundary
        assert_eq!(
            find_edge("aaaa<s>bb", &EdgeRule::default(), 2, 0, 9),
            Some(2)
        );
        let mut r = EdgeRule::default();
        r.add_token("<s>");
        assert_eq!(find_edge("aaaa<s>bb", &r, 5, 0, 9), Some(7));
    }

    #[test]
    fn region_end_reads_whitespace_runs() {
        assert_eq!(region_end("ab cd", 2, 5), 5);
        assert_eq!(region_end("a    b", 2, 6), 6);
        assert_eq!(region_end("a     ", 2, 4), 4);
        assert_eq!(advance_chars("aé b", 1, 2), 4);
    }

    #[test]
    fn cut_at_shared_word_boundary() {
        let text = "one two three four five six seven eight nine ten";
        let spec = spec(SplitFamily::RegexBpe);
        let (b, e) = (14, 33);
        let left_enc = words(text, 0, e);
        let right_enc = words(text, b, text.len());
        let left = View {
            start: 0,
            end: e,
            first: 0,
            enc: &left_enc,
        };
        let right = View {
            start: b,
            end: text.len(),
            first: 0,
            enc: &right_enc,
        };
        let cut = find_cut(text, &spec, left, right, b, PrevCut::default()).unwrap();
        assert!(cut.pos > b && cut.pos < e);
        assert!(!cut.intra);
        let mut merged: Vec<u32> = left_enc.ids[..cut.left_end].to_vec();
        merged.extend_from_slice(&right_enc.ids[cut.right_start..]);
        assert_eq!(merged, words(text, 0, text.len()).ids);
        // A sequential family never cuts.
        let seq = super::super::SplitSpec::sequential("test");
        assert!(find_cut(text, &seq, left, right, b, PrevCut::default()).is_none());
    }
}
