//! `gpt2` vocabularies on the crate's one byte-level BPE engine: the GGUF
//! tokens, merges and the `tokenizer.ggml.pre` profile become a canonical
//! `tokenizer.json` in memory, which the Hugging Face backend loads.
//!
//! The JSON has no added tokens: llama.cpp cuts special tokens out before
//! BPE ([`super::partition`]), so the pipeline only ever sees raw text.
//! Profiles whose regexes the pipeline runs natively (GPT-2, cl100k/Qwen2,
//! o200k, tekken, DeepSeek-V3) get one `Split` (`Isolated`) per regex, then
//! `ByteLevel` without its own regex; StarCoder's family (`\p{N}` then
//! GPT-2's) gets `Digits` then GPT-2's `Split`. `tokenizers` 1.0 runs no
//! other regex in a `Split`, so the remaining profiles (falcon, `default`,
//! deepseek-coder, …), and a text with a code point of invariant
//! `unicode-classes-are-reference`, are split here llama.cpp's way (each
//! regex cuts the pieces of the previous one, matches and gaps kept) on
//! `fancy-regex`, GPT-2's step on the native grammar, and the pieces go to
//! the pipeline's byte-level engine at once.
//!
//! A byte-level vocabulary may lack some bytes (falcon has no token for
//! 0x03, …). `tokenizers` refuses such a vocabulary; llama.cpp drops those
//! bytes. The JSON gives them ids past the vocabulary, which are then dropped.

use std::path::Path;

use fancy_regex::Regex;
use serde_json::{Map, Value, json};
use tokenizers::pipeline::PreTokenizerScratch;

use super::pre::{DIGIT, Profile};
use super::reader::{Array, Gguf};
use super::vocab::{self, Vocab};
use crate::backend::Encoder;
use crate::backend::divergence::UNICODE17;
use crate::backend::hf::HfBackend;
use crate::backend::tiktoken::fast::NativeSplit;
use crate::config::TokenizerConfig;
use crate::contract::family::BYTE_LEVEL_PATTERN;
use crate::error::{Error, ErrorKind, Result};
use crate::special::SpecialTokenPolicy;

/// A `gpt2` vocabulary's segmenter.
pub(crate) struct Bpe {
    hf: HfBackend,
    /// The profile regexes when this layer splits (profiles the pipeline
    /// does not run natively, and texts it must not take).
    split: Option<Vec<Regex>>,
    /// The pipeline runs the profile natively (the regexes above only for
    /// a text holding a code point of invariant `unicode-classes-are-reference`).
    native: bool,
    /// The step of `split` that is GPT-2's pattern, and the native grammar
    /// that cuts it (`fancy-regex`'s backtracking is most of a split's time;
    /// the grammar hands a piece with a Unicode 17 code point back to it).
    gpt2: Option<(usize, NativeSplit)>,
    /// Ids from here on stand for bytes the vocabulary lacks; dropped.
    n_vocab: u32,
}

impl Bpe {
    /// Encodes the raw text `text[start..end]`, pushing ids (and absolute
    /// spans when `spans` is given).
    pub(crate) fn encode(
        &self,
        text: &str,
        start: usize,
        end: usize,
        ids: &mut Vec<u32>,
        mut spans: Option<&mut Vec<(usize, usize)>>,
    ) -> Result<()> {
        let fragment = &text[start..end];
        let regexes = match &self.split {
            Some(regexes) if !self.native || UNICODE17.in_text(fragment) => regexes,
            _ => return self.encode_word(fragment, start, ids, spans),
        };
        let vt = whitespace_as_vt(fragment);
        let subject = vt.as_ref().map_or(fragment, |v| v.0.as_str());
        let pieces = self.pieces(regexes, subject)?;
        let in_fragment = |(s, e): (usize, usize)| match &vt {
            Some((_, map)) => (map[s], map[e]),
            None => (s, e),
        };
        if let (None, Some(engine)) = (&spans, self.hf.byte_bpe()) {
            // Every piece a word of the engine at once (the pipeline would
            // take each whole: its `ByteLevel` does not split).
            let from = ids.len();
            engine.encode_ranges(
                fragment.as_bytes(),
                pieces.into_iter().map(in_fragment),
                ids,
            );
            drop_missing_bytes(ids, from, self.n_vocab);
            return Ok(());
        }
        for piece in pieces {
            let (s, e) = in_fragment(piece);
            self.encode_word(&fragment[s..e], start + s, ids, spans.as_deref_mut())?;
        }
        Ok(())
    }

    /// llama.cpp's pieces of `subject`: each regex cuts the pieces of the
    /// one before, matches and gaps kept; GPT-2's step on the grammar where
    /// it may take the piece.
    fn pieces(&self, regexes: &[Regex], subject: &str) -> Result<Vec<(usize, usize)>> {
        let mut pieces = vec![(0, subject.len())];
        let mut next = Vec::new();
        let (mut scratch, mut cut) = (PreTokenizerScratch::default(), Vec::new());
        for (step, re) in regexes.iter().enumerate() {
            next.clear();
            let native = self.gpt2.as_ref().filter(|(at, _)| *at == step);
            for &(s, e) in &pieces {
                let part = &subject[s..e];
                if let Some((_, grammar)) = native
                    && grammar
                        .spans(part, part.is_ascii(), &mut scratch, &mut cut)
                        .map_err(|e| Error::backend("gguf", format!("pre-tokenizer: {e}")))?
                {
                    next.extend(cut.iter().map(|c| {
                        let r = c.range();
                        (s + r.start, s + r.end)
                    }));
                    continue;
                }
                let mut last = 0;
                for m in re.find_iter(part) {
                    let m =
                        m.map_err(|e| Error::backend("gguf", format!("pre-tokenizer regex: {e}")))?;
                    if m.start() > last {
                        next.push((s + last, s + m.start()));
                    }
                    if m.end() > m.start() {
                        next.push((s + m.start(), s + m.end()));
                    }
                    last = m.end();
                }
                if last < part.len() {
                    next.push((s + last, e));
                }
            }
            std::mem::swap(&mut pieces, &mut next);
        }
        Ok(pieces)
    }

    fn encode_word(
        &self,
        word: &str,
        base: usize,
        ids: &mut Vec<u32>,
        spans: Option<&mut Vec<(usize, usize)>>,
    ) -> Result<()> {
        let n = self.n_vocab;
        match spans {
            None => ids.extend(
                self.hf
                    .encode(word, false)?
                    .ids()
                    .iter()
                    .filter(|&&id| id < n),
            ),
            Some(spans) => {
                let (got, offs) = self.hf.encode_with_offsets(word, false)?.into_parts();
                let offs = offs.unwrap_or_default();
                for (i, id) in got.into_iter().enumerate() {
                    if id < n {
                        let (a, b) = offs.get(i).copied().unwrap_or((0, 0));
                        ids.push(id);
                        spans.push((base + a, base + b));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Drops the ids from `from` on that stand for bytes the vocabulary lacks
/// (at `n_vocab` and past it).
fn drop_missing_bytes(ids: &mut Vec<u32>, from: usize, n_vocab: u32) {
    if !ids
        .get(from..)
        .is_some_and(|new| new.iter().any(|&id| id >= n_vocab))
    {
        return;
    }
    let mut kept = from;
    for at in from..ids.len() {
        if ids[at] < n_vocab {
            ids[kept] = ids[at];
            kept += 1;
        }
    }
    ids.truncate(kept);
}

/// The text llama.cpp's `std::regex` splitter matches: every non-ASCII
/// whitespace character (its White_Space set: NEL, NBSP, U+1680,
/// U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) becomes VT
/// (0x0B), so it matches `\s` but no explicit range (deepseek's CJK range
/// `ࠀ-一` spans U+2028 and U+3000). `None` when there is none; otherwise the
/// text and, for each of its bytes (and one past the end), the byte offset
/// in `text` it came from.
fn whitespace_as_vt(text: &str) -> Option<(String, Vec<usize>)> {
    let wide_space = |c: char| !c.is_ascii() && c.is_whitespace();
    if text.is_ascii() || !text.chars().any(wide_space) {
        return None;
    }
    Some(super::charmap::map_chars(text, |c| {
        if wide_space(c) { '\u{0B}' } else { c }
    }))
}

/// Builds the segmenter for a `gpt2` vocabulary.
pub(crate) fn build(path: &Path, gguf: &Gguf<'_>, v: &Vocab) -> Result<Bpe> {
    let profile = Profile::from_name(v.pre.as_deref()).ok_or_else(|| {
        Error::new(ErrorKind::UnsupportedFormat {
            path: path.to_path_buf(),
            detected: format!(
                "GGUF pre-tokenizer {:?}",
                v.pre.as_deref().unwrap_or_default()
            ),
        })
    })?;
    let merges = vocab::merges(path, gguf)?
        .ok_or_else(|| Error::parse(path, "gpt2 vocabulary without tokenizer.ggml.merges"))?;
    let (tokens, n_vocab) = token_map(v);
    let pairs = merge_pairs(&merges, &tokens);
    let steps = native_steps(profile);
    let native = steps.is_some();
    let doc = tokenizer_json(steps.unwrap_or_default(), v.ignore_merges, tokens, pairs);
    let text = serde_json::to_string(&doc)
        .map_err(|e| Error::parse(path, format!("building tokenizer.json from GGUF: {e}")))?;
    let hf = HfBackend::from_json(
        path,
        &text,
        &TokenizerConfig::default(),
        SpecialTokenPolicy::PlainText,
        false,
    )?;
    let gpt2 = profile
        .regexes()
        .iter()
        .position(|&re| re == BYTE_LEVEL_PATTERN)
        .filter(|_| !native)
        .and_then(|at| Some((at, NativeSplit::new(BYTE_LEVEL_PATTERN).ok()?)));
    let split = if native && !profile.digits_then_gpt2() {
        None
    } else {
        let compiled = profile
            .regexes()
            .iter()
            .map(|re| {
                Regex::new(re).map_err(|e| Error::parse(path, format!("pre-tokenizer regex: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Some(compiled)
    };
    Ok(Bpe {
        hf,
        split,
        native,
        gpt2,
        n_vocab,
    })
}

/// The JSON vocabulary: every UTF-8 token by id, then each byte-level char
/// the vocabulary lacks on an id past it; gives the vocabulary's size too.
fn token_map(v: &Vocab) -> (Map<String, Value>, u32) {
    let mut tokens = Map::with_capacity(v.len());
    for id in 0..v.len() as u32 {
        let t = v.token(id);
        let Ok(t) = std::str::from_utf8(t) else {
            continue;
        };
        tokens.insert(t.to_owned(), Value::from(id));
    }
    let n_vocab = v.len() as u32;
    let table = crate::backend::byte_level::byte_to_char_table();
    let mut extra = n_vocab;
    for c in table {
        tokens.entry(c.to_string()).or_insert_with(|| {
            extra += 1;
            Value::from(extra - 1)
        });
    }
    (tokens, n_vocab)
}

/// The JSON merges, in order.
///
/// A merge is "left right", split at the first space after the first byte
/// (llama.cpp's `find(' ', 1)`). Merges the HF model would reject (a part
/// or the result missing from the vocabulary) can never fire in llama.cpp
/// either, so they are dropped; the rest keep their relative order.
fn merge_pairs(merges: &Array<'_>, tokens: &Map<String, Value>) -> Vec<Value> {
    let mut pairs: Vec<Value> = Vec::with_capacity(merges.len());
    for m in merges.strings().into_iter().flatten() {
        let Ok(m) = std::str::from_utf8(m) else {
            continue;
        };
        let Some(pos) = m
            .as_bytes()
            .iter()
            .skip(1)
            .position(|&b| b == b' ')
            .map(|p| p + 1)
        else {
            continue;
        };
        let (a, b) = (&m[..pos], &m[pos + 1..]);
        let joined = format!("{a}{b}");
        if tokens.contains_key(a) && tokens.contains_key(b) && tokens.contains_key(&joined) {
            pairs.push(Value::from(format!("{a} {b}")));
        }
    }
    pairs
}

/// The pre-tokenizer steps the pipeline runs natively for `profile`: a
/// `Split` (`Isolated`) per regex, or `Digits` (each digit alone) before
/// GPT-2's; `None` when this layer splits with `fancy-regex`.
fn native_steps(profile: Profile) -> Option<Vec<Value>> {
    let split = |re: &str| json!({"type": "Split", "pattern": {"Regex": re}, "behavior": "Isolated", "invert": false});
    if profile.digits_then_gpt2() {
        let gpt2 = profile.regexes().iter().copied().find(|&re| re != DIGIT)?;
        return Some(vec![
            json!({"type": "Digits", "individual_digits": true}),
            split(gpt2),
        ]);
    }
    profile
        .native()
        .then(|| profile.regexes().iter().map(|re| split(re)).collect())
}

/// The canonical `tokenizer.json`: the native pre-tokenizer `steps` (none
/// when this layer splits), then `ByteLevel`, and the BPE model.
fn tokenizer_json(
    steps: Vec<Value>,
    ignore_merges: bool,
    tokens: Map<String, Value>,
    pairs: Vec<Value>,
) -> Value {
    let splits: Vec<Value> = steps
        .into_iter()
        .chain(std::iter::once(json!({
            "type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false
        })))
        .collect();
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": splits},
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
        "model": {
            "type": "BPE",
            "dropout": null,
            "unk_token": null,
            "continuing_subword_prefix": null,
            "end_of_word_suffix": null,
            "fuse_unk": false,
            "byte_fallback": false,
            "ignore_merges": ignore_merges,
            "vocab": Value::Object(tokens),
            "merges": pairs,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::divergence::DIVERGENT;
    use crate::backend::gguf::reader::Gguf;

    fn load(name: &str) -> Bpe {
        let path = crate::test_support::shared_dir()
            .join("fixtures/gguf")
            .join(name);
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let gguf = Gguf::parse(&data).unwrap();
        let vocab = Vocab::read(&path, &gguf).unwrap();
        build(&path, &gguf, &vocab).unwrap()
    }

    /// The profiles' native routes give llama.cpp's way's ids, each regex
    /// on `fancy-regex` (the route a text with a Unicode 17 code point still
    /// takes): StarCoder's family as `Digits` then GPT-2's split, and the
    /// GPT-2 step of a regex-split profile (falcon, `default`) on the
    /// grammar; on corpus slices, hostile strings and every divergent code
    /// point in contexts that split it.
    #[test]
    fn native_routes_equal_the_regex_split() {
        let mut texts: Vec<String> = [
            "x1\u{11DE0}2 y",
            "a\u{11DE0}.",
            "a  \u{11DE0}",
            " 12345 abc",
            "'s 1'll\n\n  3\t",
            "١٢٣ ٤",
            "Ⅻ½ 3²",
            "\u{3000}1\u{2029}2 \u{85}",
            "a  \n 1",
            "",
            " ",
            "0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for &(lo, hi) in DIVERGENT {
            for c in [lo, hi].into_iter().filter_map(char::from_u32) {
                texts.push(format!("a{c}1 {c}. 2{c}  {c}"));
                // Letters before and after it (a new letter joins them on
                // the grammar only), where merges may cross its bytes.
                texts.push(format!("voil{c} th{c}e {c}ing é{c}t x{c}y {c}s"));
            }
        }
        let corpus = crate::test_support::shared_dir().join("corpus");
        for dir in std::fs::read_dir(&corpus)
            .unwrap()
            .flatten()
            .filter(|d| d.path().is_dir())
        {
            for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
                let text = std::fs::read_to_string(file.path()).unwrap();
                let mut end = text.len().min(6000);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                texts.push(text[..end].to_owned());
            }
        }
        for (name, native) in [
            ("ggml-vocab-starcoder.gguf", true),
            ("ggml-vocab-refact.gguf", true),
            ("ggml-vocab-falcon.gguf", false),
            ("ggml-vocab-gpt-neox.gguf", false),
        ] {
            let bpe = load(name);
            assert!(bpe.split.is_some(), "{name}");
            assert_eq!(
                (bpe.native, bpe.gpt2.is_some()),
                (native, !native),
                "{name}"
            );
            let regex_only = Bpe {
                native: false,
                gpt2: None,
                ..load(name)
            };
            let regexes = bpe.split.as_deref().unwrap_or_default();
            for text in &texts {
                if !native {
                    assert_eq!(
                        bpe.pieces(regexes, text).unwrap(),
                        regex_only.pieces(regexes, text).unwrap(),
                        "{name}: {text:?}"
                    );
                }
                let (mut a, mut b) = (Vec::new(), Vec::new());
                bpe.encode(text, 0, text.len(), &mut a, None).unwrap();
                regex_only
                    .encode(text, 0, text.len(), &mut b, None)
                    .unwrap();
                assert!(a == b, "{name}: {text:?}");
            }
        }
    }

    #[test]
    fn wide_whitespace_becomes_vt() {
        assert_eq!(whitespace_as_vt("a b"), None);
        assert_eq!(whitespace_as_vt("é"), None);
        let (s, map) = whitespace_as_vt("é\u{2029} \u{3000}").unwrap();
        assert_eq!(s, "é\u{0B} \u{0B}");
        assert_eq!(map, vec![0, 0, 2, 5, 6, 9]);
    }
}
