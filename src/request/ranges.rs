//! Which ids each message produced: the render of the conversation up to
//! message `k` marks where message `k + 1` starts (DESIGN.md, invariant
//! `chat-encode-is-render-encode`).

use std::ops::Range;

use crate::chat::{ChatRequest, ChatTemplate, ContinueFinalMessage};

/// Byte positions `b_0 = 0, b_1, …, b_n` in `full` where each message's
/// rendering ends (`None` where the prefix render fails, is not a prefix of
/// `full`, or goes backwards).
pub(crate) fn byte_bounds(
    template: &ChatTemplate,
    request: &ChatRequest,
    restore: &dyn Fn(String) -> String,
    full: &str,
) -> Vec<Option<usize>> {
    let mut base = request.clone();
    base.messages = Vec::new();
    base.add_generation_prompt = false;
    base.continue_final_message = ContinueFinalMessage::Off;
    let mut bounds = Vec::with_capacity(request.messages.len() + 1);
    bounds.push(Some(0));
    let mut last = 0;
    for k in 1..=request.messages.len() {
        let mut sub = base.clone();
        sub.messages = request.messages[..k].to_vec();
        let bound = template
            .render(&sub)
            .ok()
            .map(restore)
            .filter(|s| full.starts_with(s.as_str()) && s.len() >= last)
            .map(|s| s.len());
        if let Some(b) = bound {
            last = b;
        }
        bounds.push(bound);
    }
    bounds
}

/// Message `k`'s ids: those starting in `[b_k, b_{k+1})`.
pub(crate) fn id_ranges(
    bounds: &[Option<usize>],
    offsets: &[(usize, usize)],
) -> Vec<Option<Range<usize>>> {
    let id_at =
        |b: usize| offsets.partition_point(|&(start, end)| start < b || (end == 0 && b > 0));
    bounds
        .windows(2)
        .map(|w| match (w[0], w[1]) {
            (Some(a), Some(b)) if a <= b => Some(id_at(a)..id_at(b)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_split_at_token_starts() {
        // Tokens: BOS (0,0), "ab" (0,2), "c" (2,3), "de" (3,5), "f" (5,6).
        let offsets = [(0, 0), (0, 2), (2, 3), (3, 5), (5, 6)];
        let bounds = [Some(0), Some(3), Some(4), None, Some(6)];
        assert_eq!(
            id_ranges(&bounds, &offsets),
            vec![Some(0..3), Some(3..4), None, None]
        );
    }
}
