//! What `encode_chat` knows about a tokenizer's special-token texts, built
//! once per tokenizer: a matcher, the alphabet of their characters (for
//! sentinels) and their proper prefixes and suffixes (for fragments at the
//! edges of a request string).

use aho_corasick::{AhoCorasick, MatchKind};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::backend;
use crate::error::{Error, Result};
use crate::special::{ControlTokens, SpecialToken};

/// Fragments shorter than this many chars are not flagged at a string's
/// edges (DESIGN.md, invariant `typed-markers-stay-text`).
pub(crate) const MIN_FRAGMENT_CHARS: usize = 2;

/// A tokenizer's control markers as the chat layer sees them.
pub(crate) struct SpecialText {
    /// Each text's id, in pattern order.
    pub ids: Vec<u32>,
    /// The texts, in pattern order.
    texts: Vec<Box<str>>,
    /// Per pattern: a token [`ControlTokens::with_text`] made ordinary
    /// vocabulary (its id wherever it is typed), not a marker.
    parsed: Vec<bool>,
    /// The ids of the non-special markers, sorted: a plain stretch keeps
    /// them as text ([`crate::backend::Encoder::encode_plain`]).
    pub plain_markers: Vec<u32>,
    /// Leftmost-longest over every text; `None` when there are none.
    pub matcher: Option<AhoCorasick>,
    /// The distinct chars of all marker texts, sorted; a sentinel is `base + index`.
    pub alphabet: Vec<char>,
    pub index: FxHashMap<char, u32>,
    /// Proper prefixes and suffixes (at least [`MIN_FRAGMENT_CHARS`] chars).
    prefixes: FxHashSet<Box<str>>,
    suffixes: FxHashSet<Box<str>>,
    /// First and last chars of the texts: a fragment at a string's start
    /// ends with one of `last`, one at its end starts with one of `first`.
    first: FxHashSet<char>,
    last: FxHashSet<char>,
    /// ASCII bytes that are a first or last char; `None` when some first or
    /// last char is not ASCII (then no prefilter).
    edge_bytes: Option<[bool; 128]>,
    /// The longest text, in bytes.
    max_len: usize,
}

/// Whether `text` is shaped as control tokens are and plain text never is:
/// `<|…|>` (OpenAI, Llama-3, Qwen, Command-R), `<｜…｜>` (DeepSeek) or an
/// upper-case bracket word, `[INST]`, `[/INST]`, `[TOOL_CALLS]` (Mistral).
/// HTML-like tags (`<think>`, but also Gemma-3's `<table>`) are not: they
/// count only where the template writes them.
pub(crate) fn has_marker_shape(text: &str) -> bool {
    let inner = |open: &str, close: &str| {
        text.strip_prefix(open)
            .and_then(|t| t.strip_suffix(close))
            .filter(|t| !t.is_empty() && !t.chars().any(char::is_whitespace))
    };
    if inner("<|", "|>").is_some() || inner("<\u{ff5c}", "\u{ff5c}>").is_some() {
        return true;
    }
    inner("[", "]").is_some_and(|t| {
        let t = t.strip_prefix('/').unwrap_or(t);
        t.starts_with(|c: char| c.is_ascii_uppercase())
            && t.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}

/// Whether a token the template writes can be a marker: it holds a char
/// other than letters, digits and whitespace (`<think>`, `<tool_call>`).
/// Whitespace runs (Gemma-3's `\n\n`) and words added to a vocabulary are
/// plain text even where a template writes them.
fn is_markup(text: &str) -> bool {
    text.chars()
        .any(|c| !c.is_alphanumeric() && !c.is_whitespace())
        && !text.chars().all(|c| c.is_whitespace() || c == '\u{2581}')
}

/// The texts [`SpecialText::new`] finds, in pattern order, before its tables are built.
struct Collected {
    texts: Vec<String>,
    ids: Vec<u32>,
    /// Per text: made ordinary vocabulary by [`ControlTokens::with_text`].
    parsed: Vec<bool>,
    /// The ids of the non-special markers, sorted.
    plain_markers: Vec<u32>,
}

/// The marker texts of `backend` under `templates` and `control`, first occurrence first (see
/// [`SpecialText::new`]).
fn collect(
    backend: &dyn backend::Tokenizer,
    templates: &[&str],
    control: &ControlTokens,
) -> Collected {
    let specials = backend.special_tokens();
    let as_text = |t: &str| control.text().iter().any(|x| x == t);
    let mut seen: FxHashSet<String> = FxHashSet::default();
    let mut texts: Vec<String> = Vec::new();
    let mut ids = Vec::new();
    let mut parsed = Vec::new();
    let mut plain_markers = Vec::new();
    let mut push = |content: &str, id: u32, is_parsed: bool| {
        if !content.is_empty() && seen.insert(content.to_owned()) {
            texts.push(content.to_owned());
            ids.push(id);
            parsed.push(is_parsed);
        }
    };
    let added = backend.added_tokens();
    // A named token that is ordinary vocabulary (a GGUF without BOS
    // ids takes `,`, id 11, as llama.cpp does) is no marker.
    let named = specials
        .named()
        .map(|(_, t)| t)
        .filter(|t| backend.is_special_id(t.id) || added.iter().any(|a| a.id == t.id));
    for t in named.chain(specials.additional.iter()) {
        push(&t.content, t.id, as_text(&t.content));
    }
    for t in &added {
        let c = t.content.as_str();
        let marker = !as_text(c)
            && (control.markers().iter().any(|m| m == c)
                || has_marker_shape(c)
                || (is_markup(c) && templates.iter().any(|src| src.contains(c))));
        if marker {
            push(c, t.id, false);
        }
    }
    // A non-special added token may also be a named one (Command-R+'s
    // eos, `<|END_OF_TURN_TOKEN|>`): every marker among them is kept as
    // text by id.
    for t in &added {
        if let Some(i) = texts.iter().position(|x| *x == t.content)
            && !parsed[i]
        {
            plain_markers.push(t.id);
        }
    }
    plain_markers.sort_unstable();
    plain_markers.dedup();
    Collected {
        texts,
        ids,
        parsed,
        plain_markers,
    }
}

/// The proper prefixes and suffixes of `texts` of at least [`MIN_FRAGMENT_CHARS`] chars.
fn fragments(texts: &[&str]) -> (FxHashSet<Box<str>>, FxHashSet<Box<str>>) {
    let mut prefixes = FxHashSet::default();
    let mut suffixes = FxHashSet::default();
    for t in texts {
        let bounds: Vec<usize> = t.char_indices().map(|(i, _)| i).skip(1).collect();
        for (k, &b) in bounds.iter().enumerate() {
            // `t[..b]` has k + 1 chars, `t[b..]` the rest.
            if k + 1 >= MIN_FRAGMENT_CHARS {
                prefixes.insert(Box::from(&t[..b]));
            }
            if bounds.len() - k >= MIN_FRAGMENT_CHARS {
                suffixes.insert(Box::from(&t[b..]));
            }
        }
    }
    (prefixes, suffixes)
}

impl SpecialText {
    /// The markers of `backend` under `templates` (the sources of its chat
    /// template) and `control`: every special added token, and every
    /// non-special one the templates write literally or shaped as a marker;
    /// `control` adds and removes tokens by text (DESIGN.md invariant
    /// `typed-markers-stay-text`).
    pub(crate) fn new(
        backend: &dyn backend::Tokenizer,
        templates: &[&str],
        control: &ControlTokens,
    ) -> Result<Self> {
        let Collected {
            texts,
            ids,
            parsed,
            plain_markers,
        } = collect(backend, templates, control);
        let matcher = if texts.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&texts)
                    .map_err(|e| Error::config(format!("special-token matcher: {e}")))?,
            )
        };
        let all: Vec<Box<str>> = texts.iter().map(|t| Box::from(t.as_str())).collect();
        // Sentinels and fragments are for markers only.
        let texts: Vec<&str> = texts
            .iter()
            .zip(&parsed)
            .filter(|(_, p)| !**p)
            .map(|(t, _)| t.as_str())
            .collect();
        let mut alphabet: Vec<char> = texts.iter().flat_map(|t| t.chars()).collect();
        alphabet.sort_unstable();
        alphabet.dedup();
        let index = alphabet
            .iter()
            .enumerate()
            .filter_map(|(i, &c)| Some((c, u32::try_from(i).ok()?)))
            .collect();
        let (prefixes, suffixes) = fragments(&texts);
        let max_len = texts.iter().map(|t| t.len()).max().unwrap_or(0);
        let first: FxHashSet<char> = texts.iter().filter_map(|t| t.chars().next()).collect();
        let last: FxHashSet<char> = texts.iter().filter_map(|t| t.chars().next_back()).collect();
        let edge_bytes = first
            .iter()
            .chain(&last)
            .try_fold([false; 128], |mut map, &c| {
                let b = usize::from(u8::try_from(c).ok().filter(u8::is_ascii)?);
                map[b] = true;
                Some(map)
            });
        Ok(Self {
            texts: all,
            parsed,
            plain_markers,
            edge_bytes,
            first,
            last,
            ids,
            matcher,
            alphabet,
            index,
            prefixes,
            suffixes,
            max_len,
        })
    }

    /// Whether pattern `i` is a marker (not a token made ordinary vocabulary).
    pub(crate) fn is_marker(&self, pattern: usize) -> bool {
        !self.parsed.get(pattern).copied().unwrap_or(true)
    }

    /// The markers' leftmost-longest matches in `s`.
    fn marker_matches<'a>(&'a self, s: &'a str) -> impl Iterator<Item = aho_corasick::Match> + 'a {
        self.matcher
            .iter()
            .flat_map(move |m| m.find_iter(s))
            .filter(|m| self.is_marker(m.pattern().as_usize()))
    }

    /// Whether `s` holds a whole marker text.
    pub(crate) fn has_text(&self, s: &str) -> bool {
        self.marker_matches(s).next().is_some()
    }

    /// The first marker text in `s`.
    pub(crate) fn first_text<'s>(&self, s: &'s str) -> Option<&'s str> {
        let m = self.marker_matches(s).next()?;
        s.get(m.start()..m.end())
    }

    /// The markers, in id order.
    pub(crate) fn markers(&self) -> Vec<SpecialToken> {
        let mut out: Vec<SpecialToken> = self
            .texts
            .iter()
            .zip(&self.ids)
            .enumerate()
            .filter(|&(i, _)| self.is_marker(i))
            .map(|(_, (t, &id))| SpecialToken {
                content: t.to_string(),
                id,
            })
            .collect();
        out.sort_by_key(|t| t.id);
        out
    }

    /// The byte ranges of `s` to mark: every special-token text, the longest
    /// prefix of `s` (or of `s` without leading whitespace) that ends a
    /// special-token text, and the longest suffix (of `s` or of `s` without
    /// trailing whitespace) that starts one. Empty when none.
    pub(crate) fn marks(&self, s: &str) -> Vec<std::ops::Range<usize>> {
        let mut out = Vec::new();
        out.extend(self.marker_matches(s).map(|m| m.start()..m.end()));
        if self.max_len < 2 {
            return out;
        }
        let trimmed_start = s.len() - s.trim_start().len();
        for from in [0, trimmed_start] {
            if let Some(end) = self.longest_head(&s[from..]) {
                out.push(from..from + end);
            }
        }
        let trimmed_end = s.trim_end().len();
        for to in [s.len(), trimmed_end] {
            if let Some(start) = self.longest_tail(&s[..to]) {
                out.push(start..to);
            }
        }
        out.sort_unstable_by_key(|r| (r.start, r.end));
        out.dedup();
        out
    }

    /// Whether `s` needs marks at all (no allocation).
    ///
    /// A special-token text starts with one of `first`; a fragment at the
    /// start ends with one of `last`, one at the end starts with one of
    /// `first`: a string with none of those chars needs no marks.
    pub(crate) fn needs_marks(&self, s: &str) -> bool {
        if let Some(map) = &self.edge_bytes
            && !s
                .bytes()
                .any(|b| map.get(usize::from(b)).copied().unwrap_or(false))
        {
            return false;
        }
        if self.has_text(s) {
            return true;
        }
        if self.max_len < 2 {
            return false;
        }
        let t = s.trim_start();
        let e = s.trim_end();
        self.longest_head(s).is_some()
            || self.longest_head(t).is_some()
            || self.longest_tail(s).is_some()
            || self.longest_tail(e).is_some()
    }

    /// The end of the longest prefix of `s` that is a proper suffix of a text.
    fn longest_head(&self, s: &str) -> Option<usize> {
        s.char_indices()
            .take_while(|&(i, _)| i + 1 < self.max_len)
            .filter(|(_, c)| self.last.contains(c))
            .map(|(i, c)| i + c.len_utf8())
            .filter(|&b| self.suffixes.contains(&s[..b]))
            .last()
    }

    /// The start of the longest suffix of `s` that is a proper prefix of a text.
    fn longest_tail(&self, s: &str) -> Option<usize> {
        s.char_indices()
            .rev()
            .take_while(|&(i, _)| s.len() - i < self.max_len)
            .filter(|(_, c)| self.first.contains(c))
            .map(|(i, _)| i)
            .filter(|&i| self.prefixes.contains(&s[i..]))
            .last()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::mock::MockTokenizer;

    #[test]
    fn marks_whole_texts_and_edge_fragments() {
        let st =
            SpecialText::new(&MockTokenizer::default(), &[], &ControlTokens::default()).unwrap();
        assert_eq!(st.marks("a<s>b"), vec![1..4]);
        assert!(st.marks("plain").is_empty());
        // `</` starts `</s>`; `s>` ends `<s>`/`</s>`.
        assert_eq!(st.marks("x </"), vec![2..4]);
        assert_eq!(st.marks("s> y"), vec![0..2]);
        assert_eq!(st.marks("  s> y \n"), vec![2..4]);
        assert!(st.needs_marks("x </  "));
        assert!(!st.needs_marks("x < y"));
    }

    #[test]
    fn marker_shapes_and_markup() {
        for t in [
            "<|im_end|>",
            "<\u{ff5c}User\u{ff5c}>",
            "[INST]",
            "[/INST]",
            "[TOOL_CALLS]",
            "[IMG_BREAK]",
        ] {
            assert!(has_marker_shape(t), "{t}");
        }
        for t in [
            "<think>",
            "<table>",
            "[multimodal]",
            "<| |>",
            "<||>",
            "[]",
            "[Inst]",
            "hello",
            "\n\n",
        ] {
            assert!(!has_marker_shape(t), "{t}");
        }
        for t in ["<think>", "</tool_call>", "<unused0>"] {
            assert!(is_markup(t), "{t}");
        }
        for t in ["\n\n", "\t", "\u{2581}\u{2581}", "assistant", "Ωmega"] {
            assert!(!is_markup(t), "{t}");
        }
    }
}
