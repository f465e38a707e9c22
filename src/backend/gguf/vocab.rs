//! The tokenizer part of GGUF metadata, read the way llama.cpp's
//! `llama_vocab::impl::load` reads it (src/llama-vocab.cpp at c392e509):
//! vocabulary type and pre-tokenizer profile, tokens, scores, token types,
//! special ids (with llama.cpp's defaults per type), `add_*` flags, the
//! end-of-generation set and the per-model token attributes.

use std::path::Path;

use rustc_hash::FxHashMap;

use super::reader::{Array, Gguf, Value, ValueType};
use crate::error::{Error, ErrorKind, Result};

/// Token attributes (`enum llama_token_attr`).
pub(crate) mod attr {
    pub const UNKNOWN: u16 = 1 << 0;
    pub const UNUSED: u16 = 1 << 1;
    pub const NORMAL: u16 = 1 << 2;
    pub const CONTROL: u16 = 1 << 3;
    pub const USER_DEFINED: u16 = 1 << 4;
    pub const BYTE: u16 = 1 << 5;
    pub const LSTRIP: u16 = 1 << 7;
    pub const RSTRIP: u16 = 1 << 8;
}

/// `tokenizer.ggml.model`: which algorithm the vocabulary runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VocabType {
    /// `llama`: llama.cpp's SentencePiece-style bigram merge by score.
    Spm,
    /// `gpt2`: byte-level BPE with merges and a pre-tokenizer profile.
    Bpe,
    /// `bert`: WordPiece.
    Wpm,
    /// `t5`: Unigram (llama.cpp's UGM) with the precompiled charsmap.
    Ugm,
}

/// The metadata keys (`LLM_KV_TOKENIZER_*`).
pub(crate) mod key {
    pub const MODEL: &str = "tokenizer.ggml.model";
    pub const PRE: &str = "tokenizer.ggml.pre";
    pub const TOKENS: &str = "tokenizer.ggml.tokens";
    pub const SCORES: &str = "tokenizer.ggml.scores";
    pub const TOKEN_TYPE: &str = "tokenizer.ggml.token_type";
    pub const MERGES: &str = "tokenizer.ggml.merges";
    pub const ADD_BOS: &str = "tokenizer.ggml.add_bos_token";
    pub const ADD_EOS: &str = "tokenizer.ggml.add_eos_token";
    pub const ADD_PREFIX: &str = "tokenizer.ggml.add_space_prefix";
    pub const REMOVE_EXTRA_WS: &str = "tokenizer.ggml.remove_extra_whitespaces";
    pub const CHARSMAP: &str = "tokenizer.ggml.precompiled_charsmap";
    pub const CHAT_TEMPLATE: &str = "tokenizer.chat_template";
    pub const GENERAL_NAME: &str = "general.name";
}

/// The vocabulary and everything llama.cpp derives from it at load time.
#[derive(Debug)]
pub(crate) struct Vocab {
    pub kind: VocabType,
    /// `tokenizer.ggml.pre` as written (absent = `None`).
    pub pre: Option<String>,
    /// All token texts, concatenated; `spans[id]` is one token's range.
    text: Vec<u8>,
    spans: Vec<(u32, u32)>,
    pub scores: Vec<f32>,
    pub attrs: Vec<u16>,
    /// llama.cpp's `token_to_id` (a later duplicate wins).
    pub by_text: FxHashMap<Box<[u8]>, u32>,
    pub bos: Option<u32>,
    pub eos: Option<u32>,
    pub eot: Option<u32>,
    pub eom: Option<u32>,
    pub unk: Option<u32>,
    pub sep: Option<u32>,
    pub pad: Option<u32>,
    pub mask: Option<u32>,
    pub add_bos: bool,
    pub add_eos: bool,
    pub add_space_prefix: bool,
    /// `tokenizer.ggml.remove_extra_whitespaces` (UGM normalization).
    pub remove_extra_whitespaces: bool,
    /// `tokenizer.ggml.precompiled_charsmap` as stored (UGM only).
    pub charsmap: Option<Vec<u8>>,
    pub clean_spaces: bool,
    pub ignore_merges: bool,
    /// End-of-generation ids, ascending (llama.cpp's `special_eog_ids`).
    pub eog: Vec<u32>,
    /// CONTROL, USER_DEFINED and UNKNOWN ids, longest text first
    /// (`cache_special_tokens`).
    pub special_cache: Vec<u32>,
    /// `tokenizer.chat_template` (name `None`) and `tokenizer.chat_template.NAME`.
    pub chat_templates: Vec<(Option<String>, String)>,
}

impl Vocab {
    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    /// One token's text (empty for an out-of-range id).
    pub(crate) fn token(&self, id: u32) -> &[u8] {
        self.spans
            .get(id as usize)
            .and_then(|&(s, e)| self.text.get(s as usize..e as usize))
            .unwrap_or_default()
    }

    pub(crate) fn attr(&self, id: u32) -> u16 {
        self.attrs.get(id as usize).copied().unwrap_or(0)
    }

    pub(crate) fn text_to_token(&self, text: &[u8]) -> Option<u32> {
        self.by_text.get(text).copied()
    }

    /// Reads the vocabulary from `gguf`; `path` names the file in errors.
    pub(crate) fn read(path: &Path, gguf: &Gguf<'_>) -> Result<Self> {
        let meta = Meta { path, gguf };
        let model = meta.string(key::MODEL)?.ok_or_else(|| {
            Error::parse(
                path,
                format!("GGUF has no {:?} key (not a tokenizer)", key::MODEL),
            )
        })?;
        let pre = meta.string(key::PRE)?;
        let mut v = Self::with_defaults(path, &model, pre)?;
        v.read_settings(&meta)?;
        let n = v.read_tokens(&meta)?;
        let mut fim = v.read_special_ids(&meta, n)?;
        v.detect_by_text(&mut fim);
        v.collect_eog(&fim);
        v.special_cache = (0..n as u32)
            .filter(|&id| v.attr(id) & (attr::CONTROL | attr::USER_DEFINED | attr::UNKNOWN) != 0)
            .collect();
        // llama.cpp's std::sort is not stable; ties keep id order here.
        let mut cache = std::mem::take(&mut v.special_cache);
        cache.sort_by_key(|&id| std::cmp::Reverse(v.token(id).len()));
        v.special_cache = cache;
        v.per_model_attrs(meta.string(key::GENERAL_NAME)?.as_deref());
        v.chat_templates = chat_templates(&meta)?;
        Ok(v)
    }

    /// An empty vocabulary of the `tokenizer.ggml.model` type `model`, with
    /// llama.cpp's default special ids for that type.
    fn with_defaults(path: &Path, model: &str, pre: Option<String>) -> Result<Self> {
        let none = None;
        // llama.cpp's default special ids per type.
        let (kind, bos, eos, unk, sep, pad, mask) = match model {
            "llama" => (VocabType::Spm, Some(1), Some(2), Some(0), none, none, none),
            "bert" => (
                VocabType::Wpm,
                Some(101),
                none,
                Some(100),
                Some(102),
                Some(0),
                Some(103),
            ),
            "gpt2" => (VocabType::Bpe, Some(11), Some(11), none, none, none, none),
            "t5" => (VocabType::Ugm, none, Some(1), Some(2), none, Some(0), none),
            other => {
                return Err(unsupported(
                    path,
                    format!("GGUF vocabulary type {other:?} (supported: llama, gpt2, bert, t5)"),
                ));
            }
        };
        Ok(Self {
            kind,
            pre,
            text: Vec::new(),
            spans: Vec::new(),
            scores: Vec::new(),
            attrs: Vec::new(),
            by_text: FxHashMap::default(),
            bos,
            eos,
            eot: None,
            eom: None,
            unk,
            sep,
            pad,
            mask,
            add_bos: false,
            add_eos: false,
            add_space_prefix: false,
            remove_extra_whitespaces: false,
            charsmap: None,
            clean_spaces: false,
            ignore_merges: false,
            eog: Vec::new(),
            special_cache: Vec::new(),
            chat_templates: Vec::new(),
        })
    }

    /// The per-type settings (the BPE pre-tokenizer profile's among them),
    /// then the keys that override them.
    fn read_settings(&mut self, meta: &Meta<'_, '_>) -> Result<()> {
        match self.kind {
            VocabType::Bpe => {
                self.clean_spaces = true;
                let pre = self.pre.as_deref();
                let profile = super::pre::Profile::from_name(pre).ok_or_else(|| {
                    unsupported(
                        meta.path,
                        format!(
                            "GGUF pre-tokenizer {:?} (not a tokenizer.ggml.pre profile llama.cpp knows)",
                            pre.unwrap_or_default()
                        ),
                    )
                })?;
                self.clean_spaces = profile.clean_spaces();
                self.ignore_merges = profile.ignore_merges();
                self.add_bos = profile.add_bos();
                if profile.no_bos() {
                    self.bos = None;
                }
            }
            VocabType::Spm => {
                self.add_space_prefix = true;
                self.add_bos = true;
            }
            VocabType::Wpm => {
                self.clean_spaces = true;
                self.add_bos = true;
            }
            VocabType::Ugm => {
                // add_space_prefix keeps llama.cpp's member default (false).
                self.add_eos = true;
                self.charsmap = meta.bytes(key::CHARSMAP)?;
            }
        }
        if let Some(b) = meta.bool(key::ADD_PREFIX)? {
            self.add_space_prefix = b;
        }
        if let Some(b) = meta.bool(key::REMOVE_EXTRA_WS)? {
            self.remove_extra_whitespaces = b;
        }
        Ok(())
    }

    /// Token texts, scores and types; gives the token count.
    fn read_tokens(&mut self, meta: &Meta<'_, '_>) -> Result<usize> {
        let tokens = meta.array(key::TOKENS, ValueType::String)?.ok_or_else(|| {
            Error::parse(meta.path, format!("GGUF has no {:?} array", key::TOKENS))
        })?;
        let n = tokens.len();
        if u32::try_from(n).is_err() {
            return Err(Error::parse(
                meta.path,
                format!("{n} tokens (more than u32 ids)"),
            ));
        }
        let scores = meta.array(key::SCORES, ValueType::F32)?;
        let types = meta.array(key::TOKEN_TYPE, ValueType::I32)?;
        for (name, a) in [(key::SCORES, &scores), (key::TOKEN_TYPE, &types)] {
            if let Some(a) = a
                && a.len() != n
            {
                return Err(Error::parse(
                    meta.path,
                    format!(
                        "GGUF offset {}: {name:?} has {} entries for {n} tokens",
                        a.offset(),
                        a.len()
                    ),
                ));
            }
        }
        self.spans.reserve_exact(n);
        self.by_text.reserve(n);
        let mut empty_name;
        // `strings()` is Some for a string array (checked by `meta.array`).
        for (i, word) in tokens.strings().into_iter().flatten().enumerate() {
            let word = if word.is_empty() {
                // llama.cpp names empty tokens so they stay distinct.
                empty_name = format!("[EMPTY_{i}]").into_bytes();
                empty_name.as_slice()
            } else {
                word
            };
            let start = self.text.len();
            self.text.extend_from_slice(word);
            self.spans.push((start as u32, self.text.len() as u32));
            self.by_text.insert(word.into(), i as u32);
        }
        if self.text.len() > u32::MAX as usize {
            return Err(Error::parse(meta.path, "token texts exceed 4 GiB"));
        }
        self.scores = match scores.and_then(|a| a.f32s().map(Iterator::collect)) {
            Some(s) => s,
            None => vec![0.0; n],
        };
        self.attrs = match types.and_then(|a| a.i32s().map(|t| t.map(type_to_attr).collect())) {
            Some(a) => a,
            None => vec![attr::NORMAL; n],
        };
        Ok(n)
    }

    /// The special ids' keys over the defaults, the FIM ids, and the `add_*`
    /// flags; gives the FIM ids (`n`: the token count).
    fn read_special_ids(&mut self, meta: &Meta<'_, '_>, n: usize) -> Result<[Option<u32>; 6]> {
        // Special ids: a key overrides the default unless it is out of range.
        let ids: [(&str, &mut Option<u32>); 8] = [
            ("tokenizer.ggml.bos_token_id", &mut self.bos),
            ("tokenizer.ggml.eos_token_id", &mut self.eos),
            ("tokenizer.ggml.eot_token_id", &mut self.eot),
            ("tokenizer.ggml.eom_token_id", &mut self.eom),
            ("tokenizer.ggml.unknown_token_id", &mut self.unk),
            ("tokenizer.ggml.seperator_token_id", &mut self.sep),
            ("tokenizer.ggml.padding_token_id", &mut self.pad),
            ("tokenizer.ggml.mask_token_id", &mut self.mask),
        ];
        for (name, slot) in ids {
            if let Some(id) = meta.u32(name)?
                && (id as usize) < n
            {
                *slot = Some(id);
            }
        }
        let mut fim = [None; 6];
        for (i, name) in [
            "tokenizer.ggml.fim_pre_token_id",
            "tokenizer.ggml.fim_suf_token_id",
            "tokenizer.ggml.fim_mid_token_id",
            "tokenizer.ggml.fim_pad_token_id",
            "tokenizer.ggml.fim_rep_token_id",
            "tokenizer.ggml.fim_sep_token_id",
            "tokenizer.ggml.prefix_token_id",
            "tokenizer.ggml.suffix_token_id",
            "tokenizer.ggml.middle_token_id",
        ]
        .into_iter()
        .enumerate()
        {
            if let Some(id) = meta.u32(name)?
                && (id as usize) < n
            {
                fim[i % 6] = Some(id);
            }
        }
        // Out-of-range defaults (a tiny vocabulary) are no token at all.
        for slot in [
            &mut self.bos,
            &mut self.eos,
            &mut self.unk,
            &mut self.sep,
            &mut self.pad,
            &mut self.mask,
        ] {
            if slot.is_some_and(|id| id as usize >= n) {
                *slot = None;
            }
        }
        if let Some(b) = meta.bool(key::ADD_BOS)? {
            self.add_bos = b;
        }
        if let Some(b) = meta.bool(key::ADD_EOS)? {
            self.add_eos = b;
        }
        Ok(fim)
    }

    /// llama.cpp finds eot/eom/fim tokens by their text when no key names
    /// them, and forces such tokens to CONTROL. It walks an unordered map, so
    /// among several candidates the choice is unspecified; the lowest id wins here.
    fn detect_by_text(&mut self, fim: &mut [Option<u32>; 6]) {
        const EOT: &[&str] = &[
            "<|eot_id|>",
            "<|im_end|>",
            "<|end|>",
            "<end_of_turn>",
            "<|endoftext|>",
            "<EOT>",
            "<｜end▁of▁sentence｜>",
        ];
        const EOM: &[&str] = &["<|eom_id|>"];
        const FIM: [&[&str]; 6] = [
            &["<|fim_prefix|>", "<fim-prefix>", "<｜fim▁begin｜>", "<PRE>"],
            &["<|fim_suffix|>", "<fim-suffix>", "<｜fim▁hole｜>", "<SUF>"],
            &["<|fim_middle|>", "<fim-middle>", "<｜fim▁end｜>", "<MID>"],
            &["<|fim_pad|>", "<fim-pad>", "<PAD>"],
            &["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>"],
            &["<|file_sep|>"],
        ];
        let by_text = &self.by_text;
        let find = |names: &[&str]| -> Option<u32> {
            names
                .iter()
                .filter_map(|t| by_text.get(t.as_bytes()).copied())
                .min()
        };
        let mut forced = Vec::new();
        if self.eot.is_none() {
            self.eot = find(EOT);
            forced.extend(self.eot);
        }
        if self.eom.is_none() {
            self.eom = find(EOM);
            forced.extend(self.eom);
        }
        for (slot, names) in fim.iter_mut().zip(FIM) {
            if slot.is_none() {
                *slot = find(names);
                forced.extend(*slot);
            }
        }
        for id in forced {
            self.force_control(id);
        }
    }

    fn force_control(&mut self, id: u32) {
        if let Some(a) = self.attrs.get_mut(id as usize)
            && *a & attr::CONTROL == 0
        {
            *a = attr::CONTROL;
        }
    }

    /// `special_eog_ids`: fim pad/rep/sep, every token spelled like an
    /// end-of-turn marker, then eos, eot and eom.
    fn collect_eog(&mut self, fim: &[Option<u32>; 6]) {
        const EOG: &[&str] = &[
            "<|eot_id|>",
            "<|im_end|>",
            "<|end|>",
            "<end_of_turn>",
            "<|endoftext|>",
            "<|eom_id|>",
            "<EOT>",
        ];
        let mut eog: Vec<u32> = fim[3..].iter().flatten().copied().collect();
        for name in EOG {
            if let Some(id) = self.text_to_token(name.as_bytes()) {
                eog.push(id);
                self.force_control(id);
            }
        }
        eog.extend(self.eos);
        eog.extend(self.eot);
        eog.extend(self.eom);
        eog.sort_unstable();
        eog.dedup();
        self.eog = eog;
    }

    /// The per-model attributes llama.cpp sets by name (lstrip/rstrip).
    fn per_model_attrs(&mut self, general_name: Option<&str>) {
        let pre = self.pre.clone().unwrap_or_default();
        let name = general_name.unwrap_or_default().to_ascii_lowercase();
        let set = |v: &mut Self, id: Option<u32>, flag: u16, on: bool| {
            if let Some(a) = id.and_then(|id| v.attrs.get_mut(id as usize)) {
                if on {
                    *a |= flag;
                } else {
                    *a &= !flag;
                }
            }
        };
        if ["jina-v2-de", "jina-v2-es", "jina-v2-code"]
            .iter()
            .any(|p| pre.contains(p))
        {
            let id = self.text_to_token(b"<mask>");
            set(self, id, attr::LSTRIP, true);
        } else if name.contains("phi-3") || name.contains("phi3") {
            for id in self.special_cache.clone() {
                set(self, Some(id), attr::RSTRIP, true);
            }
            let id = self.text_to_token(b"</s>");
            set(self, id, attr::RSTRIP, true);
            for t in ["<unk>", "<s>", "<|endoftext|>"] {
                let id = self.text_to_token(t.as_bytes());
                set(self, id, attr::RSTRIP, false);
            }
        }
    }
}

/// `LLAMA_TOKEN_TYPE_*` to attributes (unknown numbers are UNDEFINED, 0).
fn type_to_attr(t: i32) -> u16 {
    match t {
        1 => attr::NORMAL,
        2 => attr::UNKNOWN,
        3 => attr::CONTROL,
        4 => attr::USER_DEFINED,
        5 => attr::UNUSED,
        6 => attr::BYTE,
        _ => 0,
    }
}

fn chat_templates(meta: &Meta<'_, '_>) -> Result<Vec<(Option<String>, String)>> {
    let mut out = Vec::new();
    for (k, value) in meta.gguf.iter() {
        let name = if k == key::CHAT_TEMPLATE {
            None
        } else if let Some(name) = k
            .strip_prefix(key::CHAT_TEMPLATE)
            .and_then(|r| r.strip_prefix('.'))
        {
            Some(name.to_owned())
        } else {
            continue;
        };
        let Value::String(s) = value else {
            return Err(meta.wrong_type(k, ValueType::String, value.value_type()));
        };
        let text = std::str::from_utf8(s)
            .map_err(|_| Error::parse(meta.path, format!("{k:?} is not UTF-8")))?;
        out.push((name, text.to_owned()));
    }
    Ok(out)
}

/// The error for a vocabulary this crate does not run (`what` says which).
fn unsupported(path: &Path, what: String) -> Error {
    Error::new(ErrorKind::UnsupportedFormat {
        path: path.to_path_buf(),
        detected: what,
    })
}

/// Typed access to known keys; a wrong type is a parse error naming the key.
struct Meta<'p, 'g> {
    path: &'p Path,
    gguf: &'g Gguf<'g>,
}

impl Meta<'_, '_> {
    fn wrong_type(&self, key: &str, expected: ValueType, found: ValueType) -> Error {
        Error::parse(
            self.path,
            format!("GGUF key `{key}` has type {found}, expected {expected}"),
        )
    }

    fn string(&self, key: &str) -> Result<Option<String>> {
        match self.gguf.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => std::str::from_utf8(s)
                .map(|s| Some(s.to_owned()))
                .map_err(|_| Error::parse(self.path, format!("GGUF key `{key}` is not UTF-8"))),
            Some(v) => Err(self.wrong_type(key, ValueType::String, v.value_type())),
        }
    }

    fn bool(&self, key: &str) -> Result<Option<bool>> {
        match self.gguf.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.wrong_type(key, ValueType::Bool, v.value_type())),
        }
    }

    /// A byte array (`u8` or `i8` elements, as llama.cpp reads the charsmap).
    fn bytes(&self, key: &str) -> Result<Option<Vec<u8>>> {
        match self.gguf.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) if matches!(a.elem_type(), ValueType::U8 | ValueType::I8) => {
                Ok(a.raw().map(<[u8]>::to_vec))
            }
            Some(Value::Array(a)) => Err(Error::parse(
                self.path,
                format!(
                    "GGUF key `{key}` is an array of {}, expected an array of u8",
                    a.elem_type()
                ),
            )),
            Some(v) => Err(self.wrong_type(key, ValueType::Array, v.value_type())),
        }
    }

    fn u32(&self, key: &str) -> Result<Option<u32>> {
        match self.gguf.get(key) {
            None => Ok(None),
            Some(Value::U32(x)) => Ok(Some(*x)),
            Some(v) => Err(self.wrong_type(key, ValueType::U32, v.value_type())),
        }
    }

    fn array(&self, key: &str, elem: ValueType) -> Result<Option<Array<'_>>> {
        match self.gguf.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) if a.elem_type() == elem => Ok(Some(*a)),
            Some(Value::Array(a)) => Err(Error::parse(
                self.path,
                format!(
                    "GGUF key `{key}` is an array of {}, expected an array of {elem}",
                    a.elem_type()
                ),
            )),
            Some(v) => Err(self.wrong_type(key, ValueType::Array, v.value_type())),
        }
    }
}

/// The merges array of `gguf` (a parse error if it has the wrong type).
pub(crate) fn merges<'g>(path: &Path, gguf: &'g Gguf<'g>) -> Result<Option<Array<'g>>> {
    match gguf.get(key::MERGES) {
        None => Ok(None),
        Some(Value::Array(a)) if a.elem_type() == ValueType::String => Ok(Some(*a)),
        Some(v) => {
            Err(Meta { path, gguf }.wrong_type(key::MERGES, ValueType::Array, v.value_type()))
        }
    }
}
