//! The built-in OpenAI encodings, the OpenAI model → encoding table, and the
//! rank-file families recognised without a config (by their rank count).

use rustc_hash::FxHashMap;
#[cfg(test)]
use tiktoken_rs::CoreBPE;

use super::{SpecialRoles, TiktokenSpec};
use crate::error::{Error, Result};

/// r50k/p50k pre-tokenizer.
pub(crate) const GPT2_PATTERN: &str =
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s";
/// cl100k pre-tokenizer.
pub(crate) const CL100K_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";
/// o200k pre-tokenizer, as tiktoken writes it.
pub(crate) const O200K_PATTERN: &str = crate::contract::family::O200K_TIKTOKEN_PATTERN;
/// Mistral's Tekken pre-tokenizer, as `tekken.json` files write it.
pub(crate) const TEKKEN_PATTERN: &str = crate::contract::family::TEKKEN_PATTERN;
/// Every pattern the tiktoken backend knows, for the tests that check
/// each against its regex.
#[cfg(test)]
pub(crate) const PATTERNS: [&str; 5] = [
    GPT2_PATTERN,
    CL100K_PATTERN,
    O200K_PATTERN,
    LLAMA3_PATTERN,
    TEKKEN_PATTERN,
];
/// Llama-3's pre-tokenizer, as written in its `tokenizer.json`.
pub(crate) const LLAMA3_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// A tiktoken encoding shipped inside the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BuiltinEncoding {
    /// GPT-3 (`davinci`, …), a.k.a. `gpt2`.
    R50kBase,
    /// Codex and `text-davinci-002/003`.
    P50kBase,
    /// `p50k_base` plus FIM specials, for edit models.
    P50kEdit,
    /// GPT-3.5, GPT-4, `text-embedding-3`.
    Cl100kBase,
    /// GPT-4o, GPT-4.1, GPT-5, o-series.
    O200kBase,
    /// gpt-oss's harmony format.
    O200kHarmony,
}

impl BuiltinEncoding {
    /// Every built-in encoding.
    pub const ALL: [Self; 6] = [
        Self::R50kBase,
        Self::P50kBase,
        Self::P50kEdit,
        Self::Cl100kBase,
        Self::O200kBase,
        Self::O200kHarmony,
    ];

    /// tiktoken's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::R50kBase => "r50k_base",
            Self::P50kBase => "p50k_base",
            Self::P50kEdit => "p50k_edit",
            Self::Cl100kBase => "cl100k_base",
            Self::O200kBase => "o200k_base",
            Self::O200kHarmony => "o200k_harmony",
        }
    }

    /// Looks up an encoding by tiktoken name (`gpt2` is r50k).
    pub fn from_name(name: &str) -> Option<Self> {
        if name == "gpt2" {
            return Some(Self::R50kBase);
        }
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The encoding of an OpenAI model name, as tiktoken's `encoding_for_model`
    /// maps it. gpt-oss is not here: it loads from the hub.
    pub fn for_openai_model(model: &str) -> Option<Self> {
        const PREFIXES: &[(&str, BuiltinEncoding)] = &[
            ("gpt-5", BuiltinEncoding::O200kBase),
            ("gpt-4.1", BuiltinEncoding::O200kBase),
            ("gpt-4.5", BuiltinEncoding::O200kBase),
            ("gpt-4o", BuiltinEncoding::O200kBase),
            ("chatgpt-4o", BuiltinEncoding::O200kBase),
            ("o1", BuiltinEncoding::O200kBase),
            ("o3", BuiltinEncoding::O200kBase),
            ("o4", BuiltinEncoding::O200kBase),
            ("gpt-4", BuiltinEncoding::Cl100kBase),
            ("gpt-3.5", BuiltinEncoding::Cl100kBase),
            ("gpt-35", BuiltinEncoding::Cl100kBase),
            ("text-embedding-ada-002", BuiltinEncoding::Cl100kBase),
            ("text-embedding-3", BuiltinEncoding::Cl100kBase),
            ("text-davinci-edit", BuiltinEncoding::P50kEdit),
            ("code-davinci-edit", BuiltinEncoding::P50kEdit),
            ("text-davinci-002", BuiltinEncoding::P50kBase),
            ("text-davinci-003", BuiltinEncoding::P50kBase),
            ("code-", BuiltinEncoding::P50kBase),
            ("text-davinci-001", BuiltinEncoding::R50kBase),
            ("text-curie", BuiltinEncoding::R50kBase),
            ("text-babbage", BuiltinEncoding::R50kBase),
            ("text-ada", BuiltinEncoding::R50kBase),
            ("davinci", BuiltinEncoding::R50kBase),
            ("curie", BuiltinEncoding::R50kBase),
            ("babbage", BuiltinEncoding::R50kBase),
            ("ada", BuiltinEncoding::R50kBase),
            ("gpt2", BuiltinEncoding::R50kBase),
        ];
        let model = model.strip_prefix("openai/").unwrap_or(model);
        if model.contains('/') || model.starts_with("gpt-oss") {
            return None;
        }
        let (prefix, enc) = PREFIXES.iter().find(|(p, _)| model.starts_with(p))?;
        // o1/o3/o4 must be whole words ("o1", "o1-mini"), not "o100".
        let rest = &model[prefix.len()..];
        let boundary = rest.is_empty() || rest.starts_with(['-', '.', ':', '_']);
        let exact_words = [
            "ada", "babbage", "curie", "davinci", "gpt2", "o1", "o3", "o4",
        ];
        if exact_words.contains(prefix) && !boundary {
            return None;
        }
        Some(*enc)
    }

    /// The pre-tokenizer regex.
    pub(crate) fn pattern(self) -> &'static str {
        match self {
            Self::R50kBase | Self::P50kBase | Self::P50kEdit => GPT2_PATTERN,
            Self::Cl100kBase => CL100K_PATTERN,
            Self::O200kBase | Self::O200kHarmony => O200K_PATTERN,
        }
    }

    /// `tiktoken-rs`' own build of the encoding: the reference in tests.
    #[cfg(test)]
    pub(super) fn core(self) -> Result<CoreBPE> {
        let core = match self {
            Self::R50kBase => tiktoken_rs::r50k_base(),
            Self::P50kBase => tiktoken_rs::p50k_base(),
            Self::P50kEdit => tiktoken_rs::p50k_edit(),
            Self::Cl100kBase => tiktoken_rs::cl100k_base(),
            Self::O200kBase => tiktoken_rs::o200k_base(),
            Self::O200kHarmony => tiktoken_rs::o200k_harmony(),
        };
        core.map_err(|e| {
            Error::backend(
                "tiktoken",
                format!("embedded {} failed to load: {e}", self.name()),
            )
        })
    }

    /// One past the largest ordinary rank (p50k's ranks skip 50256, its `<|endoftext|>`).
    fn rank_bound(self) -> u32 {
        match self {
            Self::R50kBase => 50256,
            Self::P50kBase | Self::P50kEdit => 50281,
            Self::Cl100kBase => 100256,
            Self::O200kBase | Self::O200kHarmony => 199998,
        }
    }

    /// The embedded rank table (invariant `ids-equal-reference`; `scripts/make_embedded_ranks.py`).
    fn table(self) -> &'static [u8] {
        match self {
            Self::R50kBase => include_bytes!("embedded/r50k_base.ranks"),
            Self::P50kBase | Self::P50kEdit => include_bytes!("embedded/p50k_base.ranks"),
            Self::Cl100kBase => include_bytes!("embedded/cl100k_base.ranks"),
            Self::O200kBase | Self::O200kHarmony => include_bytes!("embedded/o200k_base.ranks"),
        }
    }

    /// The special tokens, as tiktoken (and `tiktoken-rs`) define them.
    fn special_tokens(self) -> Vec<(String, u32)> {
        const ENDOFTEXT: &str = "<|endoftext|>";
        let fim = [
            ("<|fim_prefix|>", 1),
            ("<|fim_middle|>", 2),
            ("<|fim_suffix|>", 3),
        ];
        let named = |list: &[(&str, u32)]| -> Vec<(String, u32)> {
            list.iter().map(|&(t, id)| (t.to_owned(), id)).collect()
        };
        match self {
            Self::R50kBase | Self::P50kBase => named(&[(ENDOFTEXT, 50256)]),
            Self::P50kEdit => {
                let mut out = named(&[(ENDOFTEXT, 50256)]);
                out.extend(fim.iter().map(|&(t, k)| (t.to_owned(), 50280 + k)));
                out
            }
            Self::Cl100kBase => {
                let mut out = named(&[(ENDOFTEXT, 100257), ("<|endofprompt|>", 100276)]);
                out.extend(fim.iter().map(|&(t, k)| (t.to_owned(), 100257 + k)));
                out
            }
            Self::O200kBase => named(&[(ENDOFTEXT, 199999), ("<|endofprompt|>", 200018)]),
            Self::O200kHarmony => {
                let mut out = named(&[
                    ("<|startoftext|>", 199998),
                    (ENDOFTEXT, 199999),
                    ("<|return|>", 200002),
                    ("<|constrain|>", 200003),
                    ("<|channel|>", 200005),
                    ("<|start|>", 200006),
                    ("<|end|>", 200007),
                    ("<|message|>", 200008),
                    ("<|call|>", 200012),
                ]);
                let reserved = [200000, 200001, 200004, 200009, 200010, 200011];
                out.extend(
                    reserved
                        .into_iter()
                        .chain(200013..=201087)
                        .map(|id| (format!("<|reserved_{id}|>"), id)),
                );
                // Python tiktoken's harmony keeps o200k_base's specials, so
                // `<|endofprompt|>` shares 200018 with `<|reserved_200018|>`;
                // gpt-oss's tokenizer.json names it `<|endofprompt|>`.
                out.push(("<|endofprompt|>".to_owned(), 200018));
                out
            }
        }
    }

    /// Builds the spec from the embedded rank table (invariant `ids-equal-reference`).
    pub(crate) fn spec(self) -> Result<TiktokenSpec> {
        let mut specials = self.special_tokens();
        specials.sort_by_key(|(text, id)| (*id, text.starts_with("<|reserved_")));
        let table = self.table();
        let bound = self.rank_bound() as usize;
        let broken = || {
            Error::backend(
                "tiktoken",
                format!("the embedded {} table is malformed", self.name()),
            )
        };
        let (lens, body) = (table.get(..bound).ok_or_else(broken)?, &table[bound..]);
        let mut ranks = FxHashMap::with_capacity_and_hasher(bound, Default::default());
        let mut at = 0;
        for (rank, &len) in (0u32..).zip(lens) {
            if len == 0 {
                continue;
            }
            let token = body.get(at..at + usize::from(len)).ok_or_else(broken)?;
            ranks.insert(token.to_vec(), rank);
            at += usize::from(len);
        }
        if at != body.len() {
            return Err(broken());
        }
        let roles = match self {
            Self::O200kHarmony => SpecialRoles {
                bos: Some("<|startoftext|>".into()),
                eos: Some("<|endoftext|>".into()),
                ..SpecialRoles::default()
            },
            _ => SpecialRoles {
                eos: Some("<|endoftext|>".into()),
                ..SpecialRoles::default()
            },
        };
        Ok(TiktokenSpec {
            ranks,
            specials,
            pattern: self.pattern().into(),
            roles,
            add_bos: None,
            runs_apart: false,
        })
    }
}

/// A rank-file family recognised by its number of ordinary ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RankFamily {
    Builtin(BuiltinEncoding),
    Llama3,
}

impl RankFamily {
    pub(crate) fn from_rank_count(n: usize) -> Option<Self> {
        Some(match n {
            50256 => Self::Builtin(BuiltinEncoding::R50kBase),
            50280 => Self::Builtin(BuiltinEncoding::P50kBase),
            100256 => Self::Builtin(BuiltinEncoding::Cl100kBase),
            199998 => Self::Builtin(BuiltinEncoding::O200kBase),
            128000 => Self::Llama3,
            _ => return None,
        })
    }

    pub(crate) fn pattern(self) -> &'static str {
        match self {
            Self::Builtin(b) => b.pattern(),
            Self::Llama3 => LLAMA3_PATTERN,
        }
    }

    /// Default special tokens when no config names them.
    pub(crate) fn default_specials(self) -> Result<(Vec<(String, u32)>, SpecialRoles)> {
        match self {
            Self::Builtin(b) => {
                let spec = b.spec()?;
                Ok((spec.specials, spec.roles))
            }
            Self::Llama3 => {
                let named: [(u32, &str); 8] = [
                    (128000, "<|begin_of_text|>"),
                    (128001, "<|end_of_text|>"),
                    (128004, "<|finetune_right_pad_id|>"),
                    (128006, "<|start_header_id|>"),
                    (128007, "<|end_header_id|>"),
                    (128008, "<|eom_id|>"),
                    (128009, "<|eot_id|>"),
                    (128010, "<|python_tag|>"),
                ];
                let mut reserved = 0u32;
                let mut specials = Vec::with_capacity(256);
                for id in 128000..128256u32 {
                    match named.iter().find(|(i, _)| *i == id) {
                        Some((_, text)) => specials.push(((*text).to_owned(), id)),
                        None => {
                            specials.push((format!("<|reserved_special_token_{reserved}|>"), id));
                            reserved += 1;
                        }
                    }
                }
                let roles = SpecialRoles {
                    bos: Some("<|begin_of_text|>".into()),
                    eos: Some("<|eot_id|>".into()),
                    ..SpecialRoles::default()
                };
                Ok((specials, roles))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rank and special token of every embedded encoding equals
    /// `tiktoken-rs`' (which reads tiktoken's own files): the embedded tables
    /// hold the same vocabulary, id for id (invariant `ids-equal-reference`).
    #[test]
    fn the_o200k_pattern_is_tiktokens() {
        assert_eq!(O200K_PATTERN, tiktoken_rs::O200K_BASE_PAT_STR);
    }

    #[test]
    fn embedded_ranks_equal_tiktoken_rs() {
        for enc in BuiltinEncoding::ALL {
            let spec = enc.spec().unwrap();
            let core = enc.core().unwrap();
            let special_ids: Vec<u32> = spec.specials.iter().map(|&(_, id)| id).collect();
            let mut ordinary = 0;
            for id in 0..enc.rank_bound() {
                if special_ids.contains(&id) {
                    continue;
                }
                let want = core.decode_bytes(&[id]).unwrap();
                assert_eq!(spec.ranks.get(&want), Some(&id), "{} rank {id}", enc.name());
                ordinary += 1;
            }
            assert_eq!(spec.ranks.len(), ordinary, "{}", enc.name());
            let mut want: Vec<(String, u32)> = core
                .special_tokens()
                .into_iter()
                .map(|t| {
                    let ids = core.encode_with_special_tokens(t);
                    assert_eq!(ids.len(), 1, "{t}");
                    (t.to_owned(), ids[0])
                })
                .collect();
            if enc == BuiltinEncoding::O200kHarmony {
                want.push(("<|endofprompt|>".to_owned(), 200018));
            }
            want.sort_by_key(|(text, id)| (*id, text.starts_with("<|reserved_")));
            assert_eq!(spec.specials, want, "{}", enc.name());
        }
    }

    #[test]
    fn openai_model_names_map_like_tiktoken() {
        use BuiltinEncoding::*;
        let table = [
            ("gpt-4o", Some(O200kBase)),
            ("gpt-4o-mini-2024-07-18", Some(O200kBase)),
            ("gpt-4.1", Some(O200kBase)),
            ("gpt-5", Some(O200kBase)),
            ("o1", Some(O200kBase)),
            ("o3-mini", Some(O200kBase)),
            ("o4-mini", Some(O200kBase)),
            ("gpt-4", Some(Cl100kBase)),
            ("gpt-4-turbo", Some(Cl100kBase)),
            ("gpt-3.5-turbo", Some(Cl100kBase)),
            ("text-embedding-3-small", Some(Cl100kBase)),
            ("text-davinci-003", Some(P50kBase)),
            ("code-davinci-002", Some(P50kBase)),
            ("text-davinci-edit-001", Some(P50kEdit)),
            ("davinci", Some(R50kBase)),
            ("ada", Some(R50kBase)),
            ("gpt-oss-20b", None),
            ("openai/gpt-oss-20b", None),
            ("o100", None),
            ("adapter", None),
            ("Qwen/Qwen3-8B", None),
        ];
        for (model, want) in table {
            assert_eq!(BuiltinEncoding::for_openai_model(model), want, "{model}");
        }
        assert_eq!(BuiltinEncoding::from_name("gpt2"), Some(R50kBase));
        assert_eq!(
            BuiltinEncoding::from_name("o200k_harmony"),
            Some(O200kHarmony)
        );
    }
}
