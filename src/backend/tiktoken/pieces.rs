//! The pre-tokenizer pieces of a tiktoken pattern, with whitespace runs cut
//! without the regex.
//!
//! `fancy_regex` runs `\s+(?!\S)` and `\s*[\r\n]+` in its backtracking VM,
//! which pushes one state per whitespace char: from about a million
//! consecutive spaces the match fails with "Max stack size exceeded" (Python
//! tiktoken fails the same way). For the built-in patterns the piece that
//! starts at a run of two or more whitespace chars is decided by the run
//! alone (DESIGN.md invariant `whitespace-runs-linear` has the argument), so it is computed here in
//! one pass and the regex only ever starts where fewer than two whitespace
//! chars follow. Every other piece is the regex's own leftmost match.

use super::encodings::{
    CL100K_PATTERN, GPT2_PATTERN, LLAMA3_PATTERN, O200K_PATTERN, TEKKEN_PATTERN,
};

/// How a pattern's whitespace alternatives end a piece inside a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WsRule {
    /// Has a newline alternative (`\s*[\r\n]+` or `\s*[\r\n]`).
    newline_alt: bool,
    /// Tries the end-of-text alternative (`\s++$`) before the newline one.
    end_first: bool,
}

/// The rule for one of the built-in patterns; `None` for any other (the
/// regex then decides every piece).
pub(crate) fn ws_rule(pattern: &str) -> Option<WsRule> {
    // `'s|…| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s`
    if pattern == GPT2_PATTERN {
        return Some(WsRule {
            newline_alt: false,
            end_first: true,
        });
    }
    // `…|\s++$|\s*[\r\n]|\s+(?!\S)|\s`
    if pattern == CL100K_PATTERN {
        return Some(WsRule {
            newline_alt: true,
            end_first: true,
        });
    }
    // `…|\s*[\r\n]+|\s+(?!\S)|\s+`
    if pattern == O200K_PATTERN || pattern == LLAMA3_PATTERN || pattern == TEKKEN_PATTERN {
        return Some(WsRule {
            newline_alt: true,
            end_first: false,
        });
    }
    None
}

/// The end of the piece starting at `start`, when `text[start..]` starts with
/// at least two whitespace chars; `None` otherwise.
fn ws_piece_end(text: &str, start: usize, rule: WsRule) -> Option<usize> {
    let mut count = 0usize;
    let mut end = start;
    let mut last_start = start;
    let mut after_newline = None;
    for (i, c) in text.get(start..)?.char_indices() {
        if !c.is_whitespace() {
            break;
        }
        count += 1;
        last_start = start + i;
        end = last_start + c.len_utf8();
        if matches!(c, '\r' | '\n') {
            after_newline = Some(end);
        }
    }
    if count < 2 {
        return None;
    }
    let at_end = end == text.len();
    if rule.end_first && at_end {
        return Some(end);
    }
    if rule.newline_alt
        && let Some(e) = after_newline
    {
        return Some(e);
    }
    // `\s+(?!\S)`: the whole run at the end of the text, else all but its last char.
    Some(if at_end { end } else { last_start })
}

/// The pieces of `text`, as tiktoken's `regex.find_iter(text)` yields them.
pub(crate) struct Pieces<'r, 't> {
    regex: &'r fancy_regex::Regex,
    text: &'t str,
    pos: usize,
    rule: Option<WsRule>,
}

impl<'r, 't> Pieces<'r, 't> {
    pub(crate) fn new(regex: &'r fancy_regex::Regex, text: &'t str, rule: Option<WsRule>) -> Self {
        Self {
            regex,
            text,
            pos: 0,
            rule,
        }
    }
}

impl Iterator for Pieces<'_, '_> {
    type Item = Result<(usize, usize), fancy_regex::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let start = self.pos;
        if start >= self.text.len() {
            return None;
        }
        if let Some(end) = self.rule.and_then(|r| ws_piece_end(self.text, start, r)) {
            self.pos = end;
            return Some(Ok((start, end)));
        }
        match self.regex.find_from_pos(self.text, start) {
            Ok(Some(m)) => {
                // The patterns never match empty; step past one char if one did.
                self.pos = if m.end() > m.start() {
                    m.end()
                } else {
                    let step = self.text[m.end()..]
                        .chars()
                        .next()
                        .map_or(1, char::len_utf8);
                    m.end() + step
                };
                Some(Ok((m.start(), m.end())))
            }
            Ok(None) => {
                self.pos = self.text.len();
                None
            }
            Err(e) => {
                self.pos = self.text.len();
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::backend::tiktoken::encodings::PATTERNS;

    fn regex_pieces(regex: &fancy_regex::Regex, text: &str) -> Vec<(usize, usize)> {
        regex
            .find_iter(text)
            .map(|m| m.map(|m| (m.start(), m.end())).unwrap())
            .collect()
    }

    fn our_pieces(regex: &fancy_regex::Regex, text: &str, pattern: &str) -> Vec<(usize, usize)> {
        Pieces::new(regex, text, ws_rule(pattern))
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn every_builtin_pattern_has_a_rule() {
        for p in PATTERNS {
            assert!(ws_rule(p).is_some());
        }
        assert!(ws_rule(r"\s+").is_none());
    }

    #[test]
    fn whitespace_runs_cut_as_the_regex_does() {
        let cases = [
            "",
            " ",
            "  ",
            "a  b",
            "a \n b",
            "a\n\n  \t b",
            "x.\n\n  y",
            "  \n",
            "\n \n ",
            "a   ",
            "a \u{a0}\u{3000} b",
            "\r\n\r\n",
            " 1",
            "  1",
            "\t\t'll",
            "a\u{85}\u{85}b",
            "hello   world  \n\n  foo\t\t\t",
            "x /\n\n  z",
            "  !!  ",
            " \u{2028}\u{2029}x",
        ];
        for pattern in PATTERNS {
            let regex = fancy_regex::Regex::new(pattern).unwrap();
            for text in cases {
                assert_eq!(
                    our_pieces(&regex, text, pattern),
                    regex_pieces(&regex, text),
                    "{pattern} on {text:?}"
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases()))]
        #[test]
        fn random_texts_cut_as_the_regex_does(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just(" "), Just("\t"), Just("\n"), Just("\r"), Just("\u{a0}"), Just("\u{3000}"),
                    Just("a"), Just("Ab"), Just("1"), Just("123"), Just("."), Just("'s"), Just("/"),
                    Just("é"), Just("\u{301}"), Just("中"), Just("\u{b}"), Just("\u{85}"),
                ],
                0..40,
            ),
            which in 0usize..4,
        ) {
            let text: String = parts.concat();
            let pattern = PATTERNS[which];
            let regex = fancy_regex::Regex::new(pattern).unwrap();
            prop_assert_eq!(our_pieces(&regex, &text, pattern), regex_pieces(&regex, &text));
        }
    }

    fn cases() -> u32 {
        std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(512)
    }
}
