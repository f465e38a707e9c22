//! Added-token matching on one Aho-Corasick automaton per pass (raw text,
//! normalized text), in place of `tokenizers`' bucket matcher, for files
//! whose added tokens carry no `lstrip`, `rstrip` or `single_word` flag and
//! include tokens that start with whitespace (Gemma-3's runs of `\n` and
//! `\t`; DESIGN.md claim 323).
//!
//! Why the matches are the same: `tokenizers`' `extract_next` takes, from
//! the search position, the leftmost position where an added token of the
//! pass starts and, there, the longest one (its buckets probe candidate
//! lengths longest first); with `encode_special_tokens` a special token's
//! match is skipped and the search goes on from its end. Trying each
//! position from the search position on, in order, with an anchored
//! longest-match automaton over the same texts finds the same match, and
//! the skip is the same loop. Each token's id is the one `tokenizers`' own matcher gives
//! its whole text (checked for every token at load: any disagreement keeps
//! `tokenizers`' matcher), so ids agree too.
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

/// The added tokens of one pass.
struct Pass {
    /// Anchored: the longest token starting at a given position.
    automaton: AhoCorasick,
    /// Bytes some token starts with: the positions worth trying.
    first: [bool; 256],
    /// Per pattern: the token id and whether it is special.
    tokens: Vec<(u32, bool)>,
}

impl Pass {
    /// `extract_next` of this pass.
    fn extract_next(
        &self,
        bytes: &[u8],
        from: usize,
        specials_as_text: bool,
    ) -> Option<((usize, usize), u32)> {
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
            let (id, special) = *self.tokens.get(m.pattern().as_usize())?;
            if specials_as_text && special {
                at = m.end();
                continue;
            }
            return Some(((m.start(), m.end()), id));
        }
    }
}

/// One pass's token texts and, per text, its id and whether it is special.
type PassTokens<'a> = (Vec<&'a str>, Vec<(u32, bool)>);

/// Both passes, or `None` where `tokenizers`' matcher must stay.
pub(super) struct AddedMatcher {
    raw: Option<Pass>,
    normalized: Option<Pass>,
}

impl AddedMatcher {
    /// From the file's `added_tokens`, checked against `tokenizers`' matcher
    /// (`vocab`); `None` when a token has a flag this matcher does not
    /// follow, is empty, or is matched otherwise by `tokenizers`.
    pub(super) fn new(json: &Value, vocab: &BucketAddedVocabulary) -> Option<Self> {
        let list = match json.get("added_tokens") {
            None | Some(Value::Null) => return None,
            Some(v) => v.as_array()?,
        };
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
        if !whitespace_led {
            return None;
        }
        let mut passes: [PassTokens<'_>; 2] = Default::default();
        for token in list {
            let flag = |k: &str| token.get(k).and_then(Value::as_bool);
            if [flag("lstrip"), flag("rstrip"), flag("single_word")]
                .iter()
                .any(|f| *f != Some(false))
            {
                return None;
            }
            let content = token.get("content")?.as_str().filter(|c| !c.is_empty())?;
            let normalized = flag("normalized")?;
            let special = flag("special")?;
            // The id `tokenizers` gives the token's own text, in its pass.
            let ((s, e), id) = vocab.extract_next(content.as_bytes(), 0, normalized, false)?;
            if (s, e) != (0, content.len()) {
                return None;
            }
            let pass = &mut passes[usize::from(normalized)];
            pass.0.push(content);
            pass.1.push((id, special));
        }
        let build = |(texts, tokens): PassTokens<'_>| -> Option<Option<Pass>> {
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
            Some(Some(Pass {
                automaton,
                first,
                tokens,
            }))
        };
        let [raw, normalized] = passes;
        Some(Self {
            raw: build(raw)?,
            normalized: build(normalized)?,
        })
    }

    /// `tokenizers`' `extract_next` (see the module docs).
    pub(super) fn extract_next(
        &self,
        bytes: &[u8],
        from: usize,
        normalized: bool,
        specials_as_text: bool,
    ) -> Option<((usize, usize), u32)> {
        let pass = if normalized {
            &self.normalized
        } else {
            &self.raw
        };
        pass.as_ref()?.extract_next(bytes, from, specials_as_text)
    }
}
