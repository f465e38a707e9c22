//! A `tokenizer.json`'s regex splits run on `fancy-regex`, for segments
//! holding a code point that `tokenizers` 1.0's pre-tokenizer (`bitcannon`,
//! Unicode 17) classes differently from the reference, Python `tokenizers`
//! (Unicode 16): the letters, marks and digits new in Unicode 17
//! (DESIGN.md claim 325).
//!
//! DeepSeek-V3's `[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+` took `" 𐥀"` (a
//! Sidetic letter) as one piece where the reference, for which U+10940 is
//! unassigned, splits `" "` and `"𐥀"`: other ids. `fancy-regex` reads
//! `regex-syntax`'s Unicode 16 tables, the reference's classes (claim 197
//! found the same split for tiktoken), and follows `tokenizers`' `Split`:
//! with `Isolated` each match and each non-empty gap between matches is a
//! piece, with `Removed` and `invert` only the matches are; each later
//! split applies to every piece of the one before. Accepted shapes: one
//! such `Split`, or a `Sequence` of them ending in a `ByteLevel` that
//! neither splits nor adds a prefix space (Llama-3, Qwen3, DeepSeek-V3,
//! gpt-oss, Xenova's gpt-3.5). Anything else (Command-R's `Digits` and
//! splitting `ByteLevel`) keeps `tokenizers`' pre-tokenizer.

use fancy_regex::Regex;
use serde_json::Value;
use tokenizers::pipeline::Span;

/// The file's splits, in order, each with whether the gaps between its
/// matches are pieces too (`Isolated`) or dropped (`Removed` + `invert`).
pub(super) struct RegexSplit {
    steps: Vec<(Regex, bool)>,
}

impl RegexSplit {
    /// From the file's `pre_tokenizer`, or `None` for a shape not covered.
    pub(super) fn new(pre_tokenizer: &Value) -> Option<Self> {
        let items: Vec<&Value> = match pre_tokenizer.get("type")?.as_str()? {
            "Sequence" => pre_tokenizer
                .get("pretokenizers")?
                .as_array()?
                .iter()
                .collect(),
            "Split" => vec![pre_tokenizer],
            _ => return None,
        };
        let mut steps = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item.get("type")?.as_str()? {
                "Split" => steps.push(split_step(item)?),
                "ByteLevel" if i + 1 == items.len() => {
                    let off = |k: &str| item.get(k).and_then(Value::as_bool) == Some(false);
                    if !(off("use_regex") && off("add_prefix_space")) {
                        return None;
                    }
                }
                _ => return None,
            }
        }
        (!steps.is_empty()).then_some(Self { steps })
    }

    /// The pieces of `text` (byte spans into it), or `None` when a regex
    /// gives up (its backtracking limit): the caller keeps `tokenizers`'
    /// pre-tokenizer then.
    pub(super) fn split(&self, text: &str) -> Option<Vec<Span>> {
        let len = u32::try_from(text.len()).ok()?;
        let mut pieces = vec![Span::new(0, len)];
        let mut next = Vec::new();
        for (regex, keep_gaps) in &self.steps {
            next.clear();
            for piece in &pieces {
                let (start, end) = (piece.start as usize, piece.end as usize);
                let hay = text.get(start..end)?;
                let mut at = 0;
                for m in regex.find_iter(hay) {
                    let m = m.ok()?;
                    if m.start() == m.end() {
                        continue;
                    }
                    if *keep_gaps && m.start() > at {
                        next.push(span(start + at, start + m.start())?);
                    }
                    next.push(span(start + m.start(), start + m.end())?);
                    at = m.end();
                }
                if *keep_gaps && at < hay.len() {
                    next.push(span(start + at, end)?);
                }
            }
            std::mem::swap(&mut pieces, &mut next);
        }
        Some(pieces)
    }
}

fn span(start: usize, end: usize) -> Option<Span> {
    Some(Span::new(
        u32::try_from(start).ok()?,
        u32::try_from(end).ok()?,
    ))
}

/// A `Split` on a regex: `Isolated` and not inverted (matches and gaps
/// are pieces), or `Removed` and inverted (matches are the pieces, the
/// gaps between them are dropped).
fn split_step(item: &Value) -> Option<(Regex, bool)> {
    let invert = item.get("invert").and_then(Value::as_bool)?;
    let keep_gaps = match (item.get("behavior")?.as_str()?, invert) {
        ("Isolated", false) => true,
        ("Removed", true) => false,
        _ => return None,
    };
    let regex = Regex::new(item.get("pattern")?.get("Regex")?.as_str()?).ok()?;
    Some((regex, keep_gaps))
}
