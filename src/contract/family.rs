//! Tokenizer families, and how a `tokenizer.json` or a tiktoken pattern is classified.
//!
//! Each family has its own lossless cut argument (`docs/lopt.md`). A
//! tokenizer gets a parallel family only when every component is one the
//! argument covers; anything unknown is [`SplitFamily::Sequential`].

use serde_json::Value;

/// Which merge rule lets a backend's encodes be cut into chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SplitFamily {
    /// BPE after a pre-tokenizer of the GPT regex family (GPT-2, cl100k,
    /// Llama-3, Qwen, o200k, gpt-oss, Tekken, DeepSeek), tiktoken included.
    /// A cut is a pre-token boundary both chunks share; inside one long
    /// pre-token, the intra-word rule.
    RegexBpe,
    /// A pre-tokenizer whose boundaries depend only on neighbouring chars
    /// (whitespace, punctuation, digits, a literal delimiter such as
    /// Metaspace's `▁`). Cuts at shared pre-token boundaries; `bpe` also
    /// allows the intra-word rule.
    CharSplit {
        /// The model is BPE.
        bpe: bool,
    },
    /// WordPiece (or WordLevel) after the BERT pre-tokenizer: shared word
    /// boundaries, with the removed whitespace between the two tokens.
    WordPiece,
    /// BPE over whole text segments, no pre-tokenizer (SentencePiece-BPE
    /// conversions such as Mistral-7B and Gemma): one shared token on each
    /// side of the cut suffices.
    WholeTextBpe,
    /// Always encoded sequentially, with the reason.
    Sequential(&'static str),
}

impl SplitFamily {
    /// Whether this family is ever encoded in parallel.
    pub fn is_parallel(self) -> bool {
        !matches!(self, Self::Sequential(_))
    }

    /// A short name for logs and the CLI.
    pub fn name(self) -> &'static str {
        match self {
            Self::RegexBpe => "regex-bpe",
            Self::CharSplit { bpe: true } => "char-split-bpe",
            Self::CharSplit { bpe: false } => "char-split",
            Self::WordPiece => "wordpiece",
            Self::WholeTextBpe => "whole-text-bpe",
            Self::Sequential(_) => "sequential",
        }
    }

    /// Cuts must sit on pre-token boundaries both chunks share.
    pub(crate) fn needs_boundaries(self) -> bool {
        matches!(
            self,
            Self::RegexBpe | Self::CharSplit { .. } | Self::WordPiece
        )
    }

    /// A cut may fall inside one long pre-token.
    pub(crate) fn intra_word(self) -> bool {
        matches!(self, Self::RegexBpe | Self::CharSplit { bpe: true })
    }

    /// The two tokens around a cut may leave a gap (removed whitespace).
    pub(crate) fn allows_gap(self) -> bool {
        matches!(self, Self::WordPiece)
    }
}

impl std::fmt::Display for SplitFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sequential(reason) => write!(f, "sequential ({reason})"),
            other => f.write_str(other.name()),
        }
    }
}

/// Pre-tokenizer regexes the left-to-right argument covers, in the spellings
/// `tokenizer.json` files and tiktoken use (possessive and plain forms).
///
/// Each one is an alternation of: contractions, a letter run with at most one
/// leading non-letter, a digit group, a punctuation run with trailing
/// newlines, and whitespace runs. Every alternative decides its match from the
/// chars up to the end of its own run plus at most three more, except the
/// whitespace ones, which read to the end of the whitespace run (see the
/// guard in `split::region_end`).
pub(crate) const KNOWN_PATTERNS: &[&str] = &[
    // GPT-2 (ByteLevel's regex) and tiktoken's r50k/p50k spelling.
    BYTE_LEVEL_PATTERN,
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s",
    // cl100k / Llama-3 (tokenizer.json), and tiktoken's possessive cl100k.
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s",
    // Qwen2/Qwen3: cl100k with single digits.
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    // o200k / gpt-oss.
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    // Mistral Tekken (Mistral-Nemo).
    TEKKEN_PATTERN,
    // DeepSeek-V3's three splits (applied in sequence).
    r"\p{N}{1,3}",
    "[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+",
    r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"##,
];

/// GPT-2's pattern as `tokenizers` spells it (a splitting `ByteLevel`'s
/// regex, `byte_level.rs`); GGUF profiles spell it so too.
pub(crate) const BYTE_LEVEL_PATTERN: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// Mistral's Tekken pattern, as `tekken.json` and Mistral-Nemo's
/// `tokenizer.json` write it: o200k's letters without contractions, one
/// digit a piece.
pub(crate) const TEKKEN_PATTERN: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// tiktoken's spelling of the o200k pattern (its alternatives joined as
/// `tiktoken-rs` joins them; a test checks they are the same).
pub(crate) const O200K_TIKTOKEN_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"\p{N}{1,3}",
    "|",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
    "|",
    r"\s*[\r\n]+",
    "|",
    r"\s+(?!\S)",
    "|",
    r"\s+",
);

/// Whether `pattern` is one of [`KNOWN_PATTERNS`] (or tiktoken's own o200k
/// spelling). Literal CR and LF (as JSON files often write them) count as
/// their escapes.
pub(crate) fn is_known_pattern(pattern: &str) -> bool {
    let pattern = escaped(pattern);
    KNOWN_PATTERNS.contains(&pattern.as_ref()) || pattern == O200K_TIKTOKEN_PATTERN
}

/// `pattern` with literal CR and LF written as their escapes.
fn escaped(pattern: &str) -> std::borrow::Cow<'_, str> {
    if pattern.contains(['\r', '\n']) {
        pattern.replace('\r', "\\r").replace('\n', "\\n").into()
    } else {
        pattern.into()
    }
}

/// What a pre-tokenizer does, for classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PreKind {
    /// No pre-tokenizer, or one that never splits the normalized text.
    None,
    /// Regex splits from the known family (possibly after char-local ones).
    Regex,
    /// Only char-local splitters.
    CharLocal,
    /// The BERT pre-tokenizer (char-local, whitespace removed).
    Bert,
    /// Anything else.
    Unknown(&'static str),
}

/// Normalizer facts from the `normalizer` slot.
struct NormFacts {
    /// The chain rewrites some text.
    rewrites: bool,
    /// Every step is one whose effect is local (see `docs/lopt.md`).
    local: bool,
    /// `(pattern, content)` of every string `Replace` step.
    replaces: Vec<(String, String)>,
}

fn normalizer_facts(value: Option<&Value>) -> NormFacts {
    let mut facts = NormFacts {
        rewrites: false,
        local: true,
        replaces: Vec::new(),
    };
    fn walk(v: &Value, facts: &mut NormFacts) {
        let Some(kind) = v.get("type").and_then(Value::as_str) else {
            if !v.is_null() {
                facts.local = false;
            }
            return;
        };
        match kind {
            "Sequence" => {
                for n in v
                    .get("normalizers")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    walk(n, facts);
                }
            }
            "Replace" => {
                facts.rewrites = true;
                let pattern = v
                    .get("pattern")
                    .and_then(|p| p.get("String"))
                    .and_then(Value::as_str);
                let content = v.get("content").and_then(Value::as_str);
                match (pattern, content) {
                    (Some(p), Some(c)) => facts.replaces.push((p.to_owned(), c.to_owned())),
                    // A regex Replace can reach arbitrarily far: not local.
                    _ => facts.local = false,
                }
            }
            // Char-local steps (NFC & co. act within runs of marks after a
            // starter), which the chunk windows re-apply piece by piece.
            "NFC" | "NFD" | "NFKC" | "NFKD" | "Lowercase" | "Prepend" | "StripAccents"
            | "BertNormalizer" | "Precompiled" | "Nmt" | "ByteLevel" => {
                facts.rewrites = true;
            }
            // Steps whose output for a piece depends on where it sits (segment
            // ends, whitespace runs): no exact piecewise map.
            "Strip" | "MetaspaceNormalizer" => {
                facts.rewrites = true;
                facts.local = false;
            }
            _ => {
                facts.rewrites = true;
                facts.local = false;
            }
        }
    }
    if let Some(v) = value {
        walk(v, &mut facts);
    }
    facts
}

/// Whether a regex `Split` with this behaviour keeps every match as its
/// own pre-token. `Removed` + `invert` keeps the matches and drops the
/// gaps, which for the known patterns (total: every char matches
/// something) is `Isolated`.
fn isolates(behavior: &str, invert: bool) -> bool {
    (behavior == "Isolated" && !invert) || (behavior == "Removed" && invert)
}

fn split_kind(v: &Value, norm: &NormFacts) -> PreKind {
    let behavior = v
        .get("behavior")
        .and_then(Value::as_str)
        .unwrap_or("Isolated");
    let invert = v.get("invert").and_then(Value::as_bool).unwrap_or(false);
    let pattern = v.get("pattern");
    if let Some(regex) = pattern.and_then(|p| p.get("Regex")).and_then(Value::as_str) {
        return if is_known_pattern(regex) && isolates(behavior, invert) {
            PreKind::Regex
        } else {
            PreKind::Unknown("pre-tokenizer regex without a lossless cut argument")
        };
    }
    if let Some(literal) = pattern
        .and_then(|p| p.get("String"))
        .and_then(Value::as_str)
    {
        if literal.is_empty() || invert {
            return PreKind::Unknown("inverted or empty literal split");
        }
        // Gemma: `Replace(" ", "▁")` runs first, so a split on " " never fires.
        let erased = norm
            .replaces
            .iter()
            .any(|(p, c)| p == literal && !c.contains(literal));
        if erased {
            return PreKind::None;
        }
        // A split on a literal string decides each boundary from the delimiter
        // occurrence alone; multi-char delimiters are local too (their length).
        return PreKind::CharLocal;
    }
    PreKind::Unknown("split pattern of an unknown form")
}

fn pre_kind(v: Option<&Value>, norm: &NormFacts) -> PreKind {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return PreKind::None;
    };
    let Some(kind) = v.get("type").and_then(Value::as_str) else {
        return PreKind::Unknown("pre-tokenizer without a type");
    };
    match kind {
        "Split" => split_kind(v, norm),
        "Sequence" => {
            let members: Vec<PreKind> = v
                .get("pretokenizers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|m| pre_kind(Some(m), norm))
                .collect();
            if let Some(unknown) = members.iter().find(|k| matches!(k, PreKind::Unknown(_))) {
                return *unknown;
            }
            if members.contains(&PreKind::Bert) {
                return PreKind::Unknown("BERT pre-tokenizer inside a sequence");
            }
            if members.contains(&PreKind::Regex) {
                PreKind::Regex
            } else if members.contains(&PreKind::CharLocal) {
                PreKind::CharLocal
            } else {
                PreKind::None
            }
        }
        "BertPreTokenizer" | "Bert" => PreKind::Bert,
        "Whitespace" | "WhitespaceSplit" | "Punctuation" | "Digits" | "CharDelimiterSplit"
        | "Delimiter" => PreKind::CharLocal,
        _ => PreKind::Unknown("pre-tokenizer without a lossless cut argument"),
    }
}

/// Facts about a `tokenizer.json` the parallel encoder needs beyond the family.
pub(crate) struct HfFacts {
    pub family: SplitFamily,
    /// The normalizer may rewrite text (edges need stable chars).
    pub normalizes: bool,
}

/// Classifies a canonical (version 2.0) `tokenizer.json`.
///
/// `normalized_added` says whether some added token is matched on normalized
/// text; under a rewriting normalizer those matches cannot be located on the
/// raw text, so such tokenizers stay sequential.
pub(crate) fn classify_hf(json: &Value, normalized_added: bool) -> HfFacts {
    let norm = normalizer_facts(json.get("normalizer"));
    let model = json.get("model");
    let model_type = model
        .and_then(|m| m.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("BPE");
    let sequential = |reason| HfFacts {
        family: SplitFamily::Sequential(reason),
        normalizes: norm.rewrites,
    };
    if !norm.local {
        return sequential("normalizer that cannot be re-applied piece by piece");
    }
    if normalized_added && norm.rewrites {
        return sequential("added tokens matched on normalized text under a rewriting normalizer");
    }
    let dropout = model
        .and_then(|m| m.get("dropout"))
        .and_then(Value::as_f64)
        .is_some_and(|d| d > 0.0);
    if dropout {
        return sequential("BPE dropout is random");
    }
    let pre = pre_kind(json.get("pre_tokenizer"), &norm);
    let family = match (model_type, pre) {
        (_, PreKind::Unknown(reason)) => SplitFamily::Sequential(reason),
        ("BPE", PreKind::Regex) => SplitFamily::RegexBpe,
        ("BPE", PreKind::CharLocal) => SplitFamily::CharSplit { bpe: true },
        ("BPE", PreKind::None) => SplitFamily::WholeTextBpe,
        ("BPE", PreKind::Bert) => SplitFamily::CharSplit { bpe: true },
        ("WordPiece" | "WordLevel", PreKind::Bert) => SplitFamily::WordPiece,
        ("WordPiece" | "WordLevel" | "Unigram", PreKind::Regex | PreKind::CharLocal) => {
            SplitFamily::CharSplit { bpe: false }
        }
        ("Unigram", PreKind::Bert) => SplitFamily::CharSplit { bpe: false },
        ("Unigram", PreKind::None) => {
            SplitFamily::Sequential("Unigram (Viterbi) over text not split into words")
        }
        ("WordPiece" | "WordLevel", PreKind::None) => {
            SplitFamily::Sequential("word model over text not split into words")
        }
        _ => SplitFamily::Sequential("unknown model type"),
    };
    HfFacts {
        family,
        normalizes: norm.rewrites,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classifies_the_shapes_we_ship() {
        let llama = json!({
            "model": {"type": "BPE"},
            "pre_tokenizer": {"type": "Split", "pattern": {"Regex": KNOWN_PATTERNS[2]}, "behavior": "Isolated", "invert": false}
        });
        assert_eq!(classify_hf(&llama, false).family, SplitFamily::RegexBpe);
        let mistral = json!({
            "model": {"type": "BPE"},
            "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        });
        let facts = classify_hf(&mistral, false);
        assert_eq!(facts.family, SplitFamily::WholeTextBpe);
        assert!(facts.normalizes);
        let gemma = json!({
            "model": {"type": "BPE"},
            "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
            "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false}
        });
        assert_eq!(classify_hf(&gemma, false).family, SplitFamily::WholeTextBpe);
        let bert = json!({"model": {"type": "WordPiece"}, "normalizer": {"type": "BertNormalizer"}, "pre_tokenizer": {"type": "BertPreTokenizer"}});
        assert_eq!(classify_hf(&bert, false).family, SplitFamily::WordPiece);
        let unigram = json!({"model": {"type": "Unigram"}});
        assert!(!classify_hf(&unigram, false).family.is_parallel());
        let custom = json!({"model": {"type": "BPE"}, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\w+"}, "behavior": "Isolated"}});
        assert!(!classify_hf(&custom, false).family.is_parallel());
        let regex_replace = json!({"model": {"type": "BPE"}, "normalizer": {"type": "Replace", "pattern": {"Regex": " +"}, "content": " "}});
        assert!(!classify_hf(&regex_replace, false).family.is_parallel());
        assert!(!classify_hf(&mistral, true).family.is_parallel());
        let dropout = json!({"model": {"type": "BPE", "dropout": 0.1}});
        assert!(!classify_hf(&dropout, false).family.is_parallel());
    }
}
