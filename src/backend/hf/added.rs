//! Added-token matching on one Aho-Corasick automaton per pass (raw text,
//! normalized text), in place of `tokenizers`' bucket matcher, for files
//! whose added tokens carry an `lstrip`, `rstrip` or `single_word` flag
//! (DESIGN.md invariant `crate-steps-equal-reference`), and for files with tokens that start with
//! whitespace (Gemma-3's runs of `\n` and `\t`; invariant `crate-steps-equal-reference`).
//!
//! Why the matches are the same: the reference (`tokenizers` 0.x,
//! `AddedVocabulary::find_matches`) walks the leftmost-longest matches of
//! the pass's tokens, each search going on from the previous match's own
//! end; with `encode_special_tokens` a special token's match is skipped.
//! Trying each position from the search position on, in order, with an
//! anchored longest-match automaton over the same texts finds the same
//! match, and the skip is the same loop. Flags follow the reference too:
//! a `single_word` match beside a word char (`\w`) is skipped; `lstrip`
//! takes the whitespace (`\s`) before it, but none the previous match
//! took; `rstrip` takes the whitespace after it, even where the next match
//! starts (the reference then emits both tokens, and the text after the
//! later one's end is encoded again: [`Found::stop`] may go back). `\w`
//! and `\s` are `regex-syntax`'s classes, the reference's (Unicode 16):
//! `tokenizers` 1.0's own matcher classes Unicode 17's new letters as word
//! chars, drops the second of two such overlapping matches, and panics on a
//! `single_word` token beside a multi-byte char. Each token's id is the one
//! `tokenizers`' own matcher gives its whole text (checked for every token
//! at load: any disagreement keeps `tokenizers`' matcher), so ids agree.
//!
//! Performance notes: the bucket matcher probes every candidate length of
//! a candidate's first byte, longest first, one hash each: Gemma-3's added
//! `\n`…`\n`×31, `\t` and `▁` runs made every newline cost about thirty
//! probes, 30–45 % of an encode of English or code. Here a byte table
//! finds the positions a token may start at, and an anchored DFA takes the
//! longest token there in one walk.

use aho_corasick::{AhoCorasick, AhoCorasickKind, Anchored, Input, MatchKind, StartKind};
use serde_json::Value;
use tokenizers::pipeline::PipelinePatternMatcher;
use tokenizers::vocab::bucket_added_vocabulary::AddedVocabulary as BucketAddedVocabulary;

use crate::contract::split::{is_space, is_word_char};

/// How one added token matches: its id and flags.
#[derive(Debug, Clone, Copy)]
struct TokenRule {
    id: u32,
    special: bool,
    lstrip: bool,
    rstrip: bool,
    single_word: bool,
}

/// An added-token match as the walk uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Found {
    /// Where the token's span starts (after `lstrip`): the text before it,
    /// from the previous match's `stop`, is encoded.
    pub start: usize,
    /// Where its span ends (after `rstrip`); the next text starts here, even
    /// where that is before a previous match's `stop`.
    pub stop: usize,
    /// Where the next search starts: the end of the token's own text.
    pub resume: usize,
    pub id: u32,
}

/// The added tokens of one pass.
struct Pass {
    /// Anchored: the longest token starting at a given position.
    automaton: AhoCorasick,
    /// Bytes some token starts with: the positions worth trying.
    first: [bool; 256],
    /// Per pattern.
    tokens: Vec<TokenRule>,
}

impl Pass {
    /// One pass's automaton over its patterns (`texts`, with their rules):
    /// `Some(None)` for no pattern, `None` where the automaton cannot be built
    /// (the matcher then stays `tokenizers`').
    fn build((texts, tokens): (Vec<String>, Vec<TokenRule>)) -> Option<Option<Self>> {
        if texts.is_empty() {
            return Some(None);
        }
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .start_kind(StartKind::Anchored)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&texts)
            .ok()?;
        let mut first = [false; 256];
        for text in &texts {
            if let Some(&b) = text.as_bytes().first() {
                first[usize::from(b)] = true;
            }
        }
        Some(Some(Self {
            automaton,
            first,
            tokens,
        }))
    }

    /// The leftmost-longest match starting at or after `from`.
    fn find(&self, bytes: &[u8], from: usize) -> Option<(usize, usize, TokenRule)> {
        let mut at = from;
        loop {
            // The next position a token may start at, then the longest
            // token there: the leftmost-longest match.
            at += bytes
                .get(at..)?
                .iter()
                .position(|&b| self.first[usize::from(b)])?;
            let input = Input::new(bytes)
                .span(at..bytes.len())
                .anchored(Anchored::Yes);
            let Some(m) = self.automaton.find(input) else {
                at += 1;
                continue;
            };
            let rule = *self.tokens.get(m.pattern().as_usize())?;
            return Some((m.start(), m.end(), rule));
        }
    }

    /// The reference's next match: see the module docs.
    fn next(
        &self,
        text: &str,
        search: usize,
        gap_from: usize,
        specials_as_text: bool,
    ) -> Option<Found> {
        let mut at = search;
        loop {
            let (s, e, rule) = self.find(text.as_bytes(), at)?;
            at = e;
            if specials_as_text && rule.special {
                continue;
            }
            // A match of a token's (UTF-8) text starts and ends on char
            // boundaries.
            let (before, after) = (text.get(..s)?, text.get(e..)?);
            if rule.single_word
                && (before.chars().next_back().is_some_and(is_word_char)
                    || after.chars().next().is_some_and(is_word_char))
            {
                continue;
            }
            let start = if rule.lstrip {
                let spaces: usize = before
                    .chars()
                    .rev()
                    .take_while(|&c| is_space(c))
                    .map(char::len_utf8)
                    .sum();
                (s - spaces).max(gap_from)
            } else {
                s
            };
            let stop = if rule.rstrip {
                e + after
                    .chars()
                    .take_while(|&c| is_space(c))
                    .map(char::len_utf8)
                    .sum::<usize>()
            } else {
                e
            };
            return Some(Found {
                start,
                stop,
                resume: e,
                id: rule.id,
            });
        }
    }
}

/// Both passes, or `None` where `tokenizers`' matcher must stay.
pub(super) struct AddedMatcher {
    raw: Option<Pass>,
    normalized: Option<Pass>,
}

impl AddedMatcher {
    /// From the file's `added_tokens`, checked against `tokenizers`' matcher
    /// (`vocab`); `None` when no token has a flag and none starts with
    /// whitespace (`fast`: build for the latter too), when a token lacks a
    /// field, or when one is matched otherwise by `tokenizers`.
    ///
    /// A `normalized` token matches in normalized text as its content
    /// normalized alone (`normalize`), as in the reference.
    pub(super) fn new(
        json: &Value,
        vocab: &BucketAddedVocabulary,
        normalize: &dyn Fn(&str) -> Option<String>,
        fast: bool,
    ) -> Option<Self> {
        let list = match json.get("added_tokens") {
            None | Some(Value::Null) => return None,
            Some(v) => v.as_array()?,
        };
        let flag = |token: &Value, k: &str| token.get(k).and_then(Value::as_bool);
        // Flags are only followed here (the module docs).
        let flagged = list.iter().any(|token| {
            ["lstrip", "rstrip", "single_word"]
                .iter()
                .any(|k| flag(token, k) == Some(true))
        });
        // Where no token starts with whitespace, candidates are rare in
        // text and `tokenizers`' matcher is as fast: Mistral-Nemo's `<…>`
        // and `[…]` tokens measured 0.87–0.99× on prompts of 64 B to 4 KiB.
        let whitespace_led = list.iter().any(|token| {
            token
                .get("content")
                .and_then(Value::as_str)
                .and_then(|t| t.bytes().next())
                .is_some_and(|b| b.is_ascii_whitespace())
        });
        if !(flagged || (fast && whitespace_led)) {
            return None;
        }
        let mut passes: [(Vec<String>, Vec<TokenRule>); 2] = Default::default();
        for token in list {
            let content = token.get("content")?.as_str()?;
            // The reference ignores empty tokens.
            if content.is_empty() {
                continue;
            }
            // Absent flags read as `AddedToken::from` sets them: special
            // false, normalized when not special.
            let special = flag(token, "special").unwrap_or(false);
            let normalized = flag(token, "normalized").unwrap_or(!special);
            let rule = TokenRule {
                id: token
                    .get("id")
                    .and_then(Value::as_u64)
                    .and_then(|id| u32::try_from(id).ok())?,
                special,
                lstrip: flag(token, "lstrip").unwrap_or(false),
                rstrip: flag(token, "rstrip").unwrap_or(false),
                single_word: flag(token, "single_word").unwrap_or(false),
            };
            let pattern = if normalized {
                normalize(content)?
            } else {
                content.to_owned()
            };
            if pattern.is_empty() {
                continue;
            }
            // The id `tokenizers` gives the token's own text, in its pass
            // (its matcher may panic on a flagged token: then the file's id).
            let own = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                vocab.extract_next(pattern.as_bytes(), 0, normalized, false)
            }));
            let id = match own {
                Ok(Some(((0, e), id))) if e == pattern.len() => id,
                _ if rule.lstrip || rule.rstrip || rule.single_word => rule.id,
                _ => return None,
            };
            let pass = &mut passes[usize::from(normalized)];
            pass.0.push(pattern);
            pass.1.push(TokenRule { id, ..rule });
        }
        let [raw, normalized] = passes;
        Some(Self {
            raw: Pass::build(raw)?,
            normalized: Pass::build(normalized)?,
        })
    }

    /// The reference's next match of a pass over `text`: the search starts
    /// at `search`, `lstrip` takes nothing before `gap_from` (the previous
    /// match's `stop`).
    pub(super) fn next(
        &self,
        text: &str,
        search: usize,
        gap_from: usize,
        normalized: bool,
        specials_as_text: bool,
    ) -> Option<Found> {
        let pass = if normalized {
            &self.normalized
        } else {
            &self.raw
        };
        pass.as_ref()?
            .next(text, search, gap_from, specials_as_text)
    }
}
