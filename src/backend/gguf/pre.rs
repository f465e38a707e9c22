//! `tokenizer.ggml.pre`: the pre-tokenizer profiles of llama.cpp's
//! `llm_tokenizer_bpe` (src/llama-vocab.cpp at c392e509), each a list of
//! regexes applied one after another, every match and every gap between
//! matches kept as its own piece (Hugging Face's `Split` with `Isolated`).
//!
//! The regexes are llama.cpp's own spellings where it adapted the
//! `tokenizer.json` one (`(?:'[sS]|…)` instead of `(?i:'s|…)`), so the
//! pieces are llama.cpp's.

/// GPT-2's pattern, shared by many profiles. llama.cpp's spelling lacks the
/// final `|\s+`, which changes no `Isolated` split (a whitespace run it
/// leaves unmatched becomes a gap piece of its own), so the `tokenizer.json`
/// spelling is used and the Hugging Face pipeline runs it natively.
const GPT2: &str = crate::contract::family::BYTE_LEVEL_PATTERN;

/// llama.cpp spells the contractions `(?:'[sS]|'[tT]|…)`; the `tokenizer.json`
/// spelling `(?i:…)` differs only for `'ſ` (U+017F folds to `s`), and it is
/// the one the Hugging Face pipeline runs natively.
const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

const QWEN2: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// One digit (StarCoder's family splits each off before GPT-2's pattern).
pub(crate) const DIGIT: &str = r"\p{N}";

const CJK: &str = "[一-龥ࠀ-一가-퟿]+";

/// Greek Extended and Letterlike ranges are written as escapes: several of
/// their code points (U+1F7D, U+2126, U+212A, …) are NFC singletons that an
/// editor may silently replace.
const DEEPSEEK_LLM_LETTERS: &str = r"\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅ\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}ⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";

/// Spelled as llama.cpp (and DeepSeek-V3's `tokenizer.json`) do, with real
/// CR/LF characters: the Hugging Face pipeline recognizes this exact
/// spelling of the three-regex composition and runs it natively.
const DEEPSEEK3: &str = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";

const PORO: &str = r" ?[^(\s|.,!?…。，、।۔،)]+";

/// The `tokenizer.json` spelling (llama.cpp's `((?=[\p{L}])([^a-z]))` is its
/// stand-in for the same classes in its collapsed-category regex engine).
const TEKKEN: &str = crate::contract::family::TEKKEN_PATTERN;

const GPT4O: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// A pre-tokenizer profile (`LLAMA_VOCAB_PRE_TYPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Profile {
    Default,
    Llama3,
    DeepseekLlm,
    DeepseekCoder,
    Deepseek3,
    Falcon,
    Mpt,
    Starcoder,
    Gpt2,
    Refact,
    CommandR,
    Qwen2,
    /// `megrez`: Qwen2's regex, but llama.cpp keeps `clean_spaces` on.
    Megrez,
    Stablelm2,
    Olmo,
    Dbrx,
    Smaug,
    Poro,
    Chatglm4,
    Viking,
    Jais,
    Tekken,
    Smollm,
    Codeshell,
    Bloom,
    Gpt3Finnish,
    Exaone,
    Chameleon,
    Minerva,
    Gpt4o,
}

impl Profile {
    /// The profile for a `tokenizer.ggml.pre` value; a missing key is
    /// llama.cpp's fallback, `default`. `None` for a name llama.cpp rejects.
    pub(crate) fn from_name(name: Option<&str>) -> Option<Self> {
        let Some(name) = name else {
            return Some(Self::Default);
        };
        Some(match name {
            "default" => Self::Default,
            "llama3" | "llama-v3" | "llama-bpe" | "falcon3" => Self::Llama3,
            "deepseek-llm" => Self::DeepseekLlm,
            "deepseek-coder" => Self::DeepseekCoder,
            "deepseek-v3" => Self::Deepseek3,
            "falcon" => Self::Falcon,
            "mpt" => Self::Mpt,
            "starcoder" => Self::Starcoder,
            "gpt-2" | "phi-2" | "jina-es" | "jina-de" | "gigachat" | "jina-v1-en"
            | "jina-v2-es" | "jina-v2-de" | "jina-v2-code" | "roberta-bpe" => Self::Gpt2,
            "refact" => Self::Refact,
            "command-r" => Self::CommandR,
            "qwen2" | "deepseek-r1-qwen" => Self::Qwen2,
            "megrez" => Self::Megrez,
            "stablelm2" => Self::Stablelm2,
            "olmo" => Self::Olmo,
            "dbrx" => Self::Dbrx,
            "smaug-bpe" => Self::Smaug,
            "poro-chat" => Self::Poro,
            "chatglm-bpe" => Self::Chatglm4,
            "viking" => Self::Viking,
            "jais" => Self::Jais,
            "tekken" => Self::Tekken,
            "smollm" => Self::Smollm,
            "codeshell" => Self::Codeshell,
            "bloom" => Self::Bloom,
            "gpt3-finnish" => Self::Gpt3Finnish,
            "exaone" => Self::Exaone,
            "chameleon" => Self::Chameleon,
            "minerva-7b" => Self::Minerva,
            "gpt-4o" => Self::Gpt4o,
            _ => return None,
        })
    }

    /// The regexes, applied in order.
    pub(crate) fn regexes(self) -> &'static [&'static str] {
        match self {
            Self::Llama3 | Self::Dbrx | Self::Smaug | Self::Chatglm4 => &[LLAMA3],
            Self::DeepseekLlm => &[
                r"[\r\n]",
                DEEPSEEK_LLM_LETTERS,
                r"\s?[!-/:-~！-／：-～‘-‟　-。]+",
                r"\s+$",
                CJK,
                r"\p{N}+",
            ],
            Self::Deepseek3 => &[r"\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", DEEPSEEK3],
            Self::DeepseekCoder => &[r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", CJK, r"\p{N}"],
            Self::Falcon => &[r"[\p{P}\$\+<=>\^~\|`]+", GPT2, "[0-9][0-9][0-9]"],
            Self::Starcoder
            | Self::Refact
            | Self::CommandR
            | Self::Smollm
            | Self::Codeshell
            | Self::Exaone
            | Self::Minerva => &[DIGIT, GPT2],
            Self::Gpt2 | Self::Mpt | Self::Olmo | Self::Jais => &[GPT2],
            Self::Stablelm2 | Self::Qwen2 | Self::Megrez => &[QWEN2],
            Self::Poro | Self::Bloom | Self::Gpt3Finnish => &[PORO],
            Self::Viking => &[PORO, r"\p{N}"],
            Self::Tekken => &[TEKKEN],
            Self::Chameleon => &[
                "<sentinel:[0-9]+>",
                "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
                "([\\t\\n]|    |  )",
                r"\p{N}",
                r"[\p{P}!-/:-@\[-`{-~]",
                GPT2,
            ],
            Self::Gpt4o => &[GPT4O],
            Self::Default => &[r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
        }
    }

    /// Whether the profile is `\p{N}` then GPT-2's pattern (StarCoder's
    /// family): the Hugging Face pipeline runs it natively as `Digits`
    /// (each digit alone) then GPT-2's `Split`, the shape of Command-R's
    /// `tokenizer.json`, except on a text with a code point of invariant
    /// `unicode-classes-are-reference` (a digit new in Unicode 17 is one for
    /// `Digits`, not for llama.cpp's tables or `fancy-regex`).
    pub(crate) fn digits_then_gpt2(self) -> bool {
        self.regexes() == [DIGIT, GPT2]
    }

    /// Whether the Hugging Face pipeline runs these regexes natively (GPT-2,
    /// cl100k/Qwen2, o200k, tekken and DeepSeek-V3 grammars), one `Split`
    /// each; [`digits_then_gpt2`](Self::digits_then_gpt2) profiles and the
    /// others are split here with `fancy-regex` before BPE (the former only
    /// on the texts the pipeline must not take).
    pub(crate) fn native(self) -> bool {
        matches!(
            self,
            Self::Gpt2
                | Self::Mpt
                | Self::Olmo
                | Self::Jais
                | Self::Llama3
                | Self::Dbrx
                | Self::Smaug
                | Self::Chatglm4
                | Self::Stablelm2
                | Self::Qwen2
                | Self::Megrez
                | Self::Tekken
                | Self::Gpt4o
                | Self::Deepseek3
        )
    }

    /// Whether detokenize runs llama.cpp's `clean_spaces` passes.
    pub(crate) fn clean_spaces(self) -> bool {
        !matches!(
            self,
            Self::DeepseekLlm
                | Self::DeepseekCoder
                | Self::Deepseek3
                | Self::CommandR
                | Self::Qwen2
                | Self::Poro
                | Self::Viking
                | Self::Tekken
                | Self::Smollm
                | Self::Chameleon
                | Self::Gpt4o
        )
    }

    /// Whether a whole pre-token found in the vocabulary skips the merges.
    pub(crate) fn ignore_merges(self) -> bool {
        matches!(self, Self::Llama3 | Self::Tekken)
    }

    /// Whether the profile turns `add_bos` on (before the metadata key).
    pub(crate) fn add_bos(self) -> bool {
        matches!(self, Self::Llama3 | Self::Tekken | Self::Chameleon)
    }

    /// Whether the profile clears the default BOS id (`chatglm-bpe`).
    pub(crate) fn no_bos(self) -> bool {
        self == Self::Chatglm4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_regex_compiles() {
        let names = [
            "default",
            "llama3",
            "llama-v3",
            "llama-bpe",
            "falcon3",
            "deepseek-llm",
            "deepseek-coder",
            "deepseek-v3",
            "falcon",
            "mpt",
            "starcoder",
            "gpt-2",
            "phi-2",
            "jina-es",
            "jina-de",
            "gigachat",
            "jina-v1-en",
            "jina-v2-es",
            "jina-v2-de",
            "jina-v2-code",
            "roberta-bpe",
            "refact",
            "command-r",
            "qwen2",
            "deepseek-r1-qwen",
            "megrez",
            "stablelm2",
            "olmo",
            "dbrx",
            "smaug-bpe",
            "poro-chat",
            "chatglm-bpe",
            "viking",
            "jais",
            "tekken",
            "smollm",
            "codeshell",
            "bloom",
            "gpt3-finnish",
            "exaone",
            "chameleon",
            "minerva-7b",
            "gpt-4o",
        ];
        for name in names {
            let p = Profile::from_name(Some(name)).unwrap();
            for re in p.regexes() {
                fancy_regex::Regex::new(re).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
        assert_eq!(Profile::from_name(None), Some(Profile::Default));
        assert_eq!(Profile::from_name(Some("no-such-profile")), None);
    }
}
