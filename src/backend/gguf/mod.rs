//! GGUF backend: the tokenizer stored in a GGUF file's metadata, with the
//! behaviour of llama.cpp's `llama_vocab` (src/llama-vocab.cpp at c392e509).
//!
//! Layout:
//! - `reader`: the container (header and key/values; stops at tensor infos);
//! - `vocab`: tokens, types, special ids and flags as llama.cpp derives them;
//! - `pre`: the `tokenizer.ggml.pre` regex profiles;
//! - `partition`: llama.cpp's special-token split (`tokenizer_st_partition`);
//! - `bpe`: `gpt2` vocabularies as an in-memory `tokenizer.json`, run by the
//!   Hugging Face backend (one byte-level BPE engine for every format);
//! - `wpm`: `bert` vocabularies, likewise on the Hugging Face WordPiece engine;
//! - `ugm`: `t5` vocabularies on the SentencePiece Unigram engine and
//!   normalizer, in their llama.cpp flavor;
//! - `llama` SPM segmentation lives in the SentencePiece engine
//!   (`sentencepiece::llama`).

mod bpe;
mod charmap;
mod partition;
mod pre;
pub mod reader;
mod ugm;
mod vocab;
mod wpm;

use std::path::Path;

use crate::backend::hf::HfBackend;
use crate::backend::sentencepiece::llama::{
    JoinFilter, LlamaSpmScratch, MAX_FRAGMENT_BYTES, segment,
};
use crate::backend::thread_scratch::ThreadScratch;
use crate::backend::{DecodeStyle, Decoder, Encoder, StartRule, Tokenizer};
use crate::encoding::Encoding;
use crate::error::{Error, Result};
use crate::special::{SpecialToken, SpecialTokenPolicy, SpecialTokens};
use partition::{Fragment, Partitioner};
pub(crate) use reader::Gguf;
use vocab::{Vocab, VocabType, attr};

const NAME: &str = "gguf";

/// The segmenter behind a vocabulary type.
enum Engine {
    Spm {
        /// `<0xXX>` (or the single byte) per byte value, for byte fallback.
        byte_tokens: Box<[Option<u32>; 256]>,
        /// Where no token joins two units, so the segmenter cuts there.
        joins: Box<JoinFilter>,
        /// The segmenter's buffers and memo, per thread and for this
        /// vocabulary only (the memo holds its results).
        scratch: Box<ThreadScratch<LlamaSpmScratch>>,
    },
    Bpe(Box<bpe::Bpe>),
    /// `bert`: the in-memory `tokenizer.json` on the HF backend.
    Hf(Box<HfBackend>),
    /// `t5`: the SentencePiece Unigram engine in llama.cpp's flavor.
    Ugm(Box<ugm::Ugm>),
}

/// A GGUF tokenizer.
pub(crate) struct GgufBackend {
    vocab: Vocab,
    engine: Engine,
    partitioner: Partitioner,
    parse_special: bool,
    /// `token_to_piece(id, special = true)` for every id.
    pieces: Vec<Box<[u8]>>,
    special_tokens: SpecialTokens,
    style: DecodeStyle,
}

/// What one encode produces: ids, and spans when asked.
struct Out {
    ids: Vec<u32>,
    offsets: Option<Vec<(usize, usize)>>,
}

impl Out {
    fn push(&mut self, id: u32, span: (usize, usize)) {
        self.ids.push(id);
        if let Some(o) = &mut self.offsets {
            o.push(span);
        }
    }

    /// The BOS token at the start (span `(0, 0)`); an error where the
    /// vocabulary asks for one it does not have.
    fn push_bos(&mut self, v: &Vocab) -> Result<()> {
        let id = v
            .bos
            .ok_or_else(|| Error::backend(NAME, "add_bos is set but the vocabulary has no BOS"))?;
        self.push(id, (0, 0));
        Ok(())
    }

    /// The encoding, with offsets where they were asked for.
    fn finish(self) -> Result<Encoding> {
        Ok(match self.offsets {
            Some(o) => Encoding::with_offsets(self.ids, o)
                .ok_or_else(|| Error::backend(NAME, "offsets and ids differ in length"))?,
            None => Encoding::from_ids(self.ids),
        })
    }
}

impl GgufBackend {
    /// Builds the tokenizer from parsed metadata; `path` names the file in errors.
    pub(crate) fn new(path: &Path, gguf: &Gguf<'_>, policy: SpecialTokenPolicy) -> Result<Self> {
        let vocab = Vocab::read(path, gguf)?;
        let engine = match vocab.kind {
            VocabType::Spm => {
                let mut byte_tokens = Box::new([None; 256]);
                for (b, slot) in byte_tokens.iter_mut().enumerate() {
                    let name = format!("<0x{b:02X}>");
                    *slot = vocab
                        .text_to_token(name.as_bytes())
                        .or_else(|| vocab.text_to_token(&[b as u8]));
                }
                let joins = Box::new(JoinFilter::new(
                    (0..vocab.len() as u32).map(|id| vocab.token(id)),
                ));
                Engine::Spm {
                    byte_tokens,
                    joins,
                    scratch: Box::default(),
                }
            }
            VocabType::Bpe => Engine::Bpe(Box::new(bpe::build(path, gguf, &vocab)?)),
            VocabType::Wpm => Engine::Hf(Box::new(wpm::build(path, &vocab)?)),
            VocabType::Ugm => Engine::Ugm(Box::new(ugm::Ugm::build(path, &vocab)?)),
        };
        let pieces = (0..vocab.len() as u32)
            .map(|id| piece(&vocab, id).into_boxed_slice())
            .collect();
        let special_tokens = special_tokens(&vocab);
        let style = decode_style(&vocab);
        Ok(Self {
            partitioner: Partitioner::new(&vocab),
            vocab,
            engine,
            parse_special: policy == SpecialTokenPolicy::Parse,
            pieces,
            special_tokens,
            style,
        })
    }

    /// The end-of-generation ids, eos first (llama.cpp's `special_eog_ids`).
    pub(crate) fn eog_ids(&self) -> Vec<u32> {
        let mut out: Vec<u32> = self.vocab.eos.into_iter().collect();
        out.extend(
            self.vocab
                .eog
                .iter()
                .filter(|&&id| Some(id) != self.vocab.eos),
        );
        out
    }

    /// `tokenizer.chat_template` (name `None`) and the named templates.
    pub(crate) fn chat_templates(&self) -> &[(Option<String>, String)] {
        &self.vocab.chat_templates
    }

    fn encode_impl(&self, text: &str, add_special: bool, offsets: bool) -> Result<Encoding> {
        self.encode_with(text, add_special, offsets, self.parse_special, &[])
    }

    /// `encode_impl` with CONTROL/UNKNOWN text parsed or not.
    fn encode_with(
        &self,
        text: &str,
        add_special: bool,
        offsets: bool,
        parse_special: bool,
        markers: &[u32],
    ) -> Result<Encoding> {
        let mut out = Out {
            ids: Vec::with_capacity(text.len() / 3 + 2),
            offsets: offsets.then(Vec::new),
        };
        let fragments = self
            .partitioner
            .split(&self.vocab, text, parse_special, markers);
        let v = &self.vocab;
        match &self.engine {
            Engine::Spm {
                byte_tokens,
                joins,
                scratch,
            } => {
                if add_special && v.add_bos {
                    out.push_bos(v)?;
                }
                let mut prev_special = true;
                for f in &fragments {
                    match *f {
                        Fragment::Text(s, e) => {
                            self.spm_fragment(
                                text,
                                (s, e),
                                prev_special,
                                (byte_tokens, joins, scratch),
                                &mut out,
                            )?;
                            prev_special = false;
                        }
                        Fragment::Token(id, s, e) => {
                            out.push(id, (s, e));
                            prev_special = true;
                        }
                    }
                }
            }
            Engine::Bpe(b) => {
                if add_special && v.add_bos {
                    out.push_bos(v)?;
                }
                for f in &fragments {
                    match *f {
                        Fragment::Text(s, e) => {
                            b.encode(text, s, e, &mut out.ids, out.offsets.as_mut())?;
                        }
                        Fragment::Token(id, s, e) => out.push(id, (s, e)),
                    }
                }
            }
            Engine::Ugm(u) => {
                if add_special && v.add_bos {
                    out.push_bos(v)?;
                }
                for f in &fragments {
                    match *f {
                        Fragment::Text(s, e) => {
                            u.encode(v, text, s, e, &mut out.ids, out.offsets.as_mut())?;
                        }
                        Fragment::Token(id, s, e) => out.push(id, (s, e)),
                    }
                }
            }
            Engine::Hf(hf) => {
                // WPM adds BOS (CLS) whenever special tokens are asked for.
                if add_special {
                    out.push_bos(v)?;
                }
                for f in &fragments {
                    match *f {
                        Fragment::Text(s, e) => wpm_fragment(hf, text, (s, e), &mut out)?,
                        Fragment::Token(id, s, e) => out.push(id, (s, e)),
                    }
                }
                if add_special {
                    let sep = v
                        .sep
                        .ok_or_else(|| Error::backend(NAME, "the vocabulary has no SEP"))?;
                    out.push(sep, (text.len(), text.len()));
                }
            }
        }
        if add_special && v.add_eos && self.vocab.kind != VocabType::Wpm {
            let eos = v.eos.ok_or_else(|| {
                Error::backend(NAME, "add_eos is set but the vocabulary has no EOS")
            })?;
            out.push(eos, (text.len(), text.len()));
        }
        out.finish()
    }

    /// One raw-text fragment of an SPM vocabulary: spaces escaped to `▁`, a
    /// `▁` in front after a special token (or at the start) when
    /// `add_space_prefix`, then llama.cpp's segmentation and byte fallback.
    fn spm_fragment(
        &self,
        text: &str,
        (start, end): (usize, usize),
        prev_special: bool,
        (byte_tokens, joins, scratch): (
            &[Option<u32>; 256],
            &JoinFilter,
            &ThreadScratch<LlamaSpmScratch>,
        ),
        out: &mut Out,
    ) -> Result<()> {
        const MARK: &[u8] = "\u{2581}".as_bytes();
        let raw = &text.as_bytes()[start..end];
        let mut esc = Vec::with_capacity(raw.len() + raw.len() / 2 + 3);
        // Original offset of each escaped byte (and one past the end).
        let mut map: Vec<usize> = Vec::new();
        let want_map = out.offsets.is_some();
        if self.vocab.add_space_prefix && prev_special {
            esc.extend_from_slice(MARK);
            if want_map {
                map.extend([start; 3]);
            }
        }
        for (i, &b) in raw.iter().enumerate() {
            if b == b' ' {
                esc.extend_from_slice(MARK);
                if want_map {
                    map.extend([start + i; 3]);
                }
            } else {
                esc.push(b);
                if want_map {
                    map.push(start + i);
                }
            }
        }
        map.push(end);
        if esc.len() > MAX_FRAGMENT_BYTES {
            return Err(Error::backend(
                NAME,
                format!(
                    "a text fragment of {} bytes (escaped) is over the 4 GiB the SPM segmenter takes",
                    esc.len()
                ),
            ));
        }
        let v = &self.vocab;
        let mut symbols = Vec::new();
        let score = |t: &[u8]| v.text_to_token(t).map(|id| v.scores[id as usize]);
        scratch.with(LlamaSpmScratch::default, |scratch| {
            segment(&esc, score, joins, scratch, &mut symbols)
        });
        for (s, len) in symbols {
            let span = if want_map {
                (map[s], map[s + len].max(map[s]))
            } else {
                (0, 0)
            };
            let piece = &esc[s..s + len];
            if let Some(id) = v.text_to_token(piece) {
                out.push(id, span);
                continue;
            }
            for &b in piece {
                let id = byte_tokens[b as usize].ok_or_else(|| {
                    Error::backend(
                        NAME,
                        format!("byte 0x{b:02X} has no token (no <0x{b:02X}> in the vocabulary)"),
                    )
                })?;
                out.push(id, span);
            }
        }
        Ok(())
    }
}

/// One raw-text fragment `text[s..e]` of a `bert` vocabulary: llama.cpp's
/// NFD, then the WordPiece engine; spans mapped back to the original text.
fn wpm_fragment(hf: &HfBackend, text: &str, (s, e): (usize, usize), out: &mut Out) -> Result<()> {
    let mapped = wpm::llama_nfd(&text[s..e]);
    let piece = mapped.as_ref().map_or(&text[s..e], |m| m.0.as_str());
    if out.offsets.is_some() {
        let (ids, offs) = hf.encode_with_offsets(piece, false)?.into_parts();
        let offs = offs.unwrap_or_default();
        let orig = |x: usize| match &mapped {
            Some((_, map)) => map.get(x).copied().unwrap_or(e - s),
            None => x,
        };
        for (i, id) in ids.into_iter().enumerate() {
            let (a, b) = offs.get(i).copied().unwrap_or((0, 0));
            out.push(id, (s + orig(a), s + orig(b)));
        }
    } else {
        out.ids.extend_from_slice(hf.encode(piece, false)?.ids());
    }
    Ok(())
}

/// llama.cpp's `token_to_piece(id, special = true)`.
fn piece(v: &Vocab, id: u32) -> Vec<u8> {
    let a = v.attr(id);
    let text = v.token(id);
    if a & (attr::UNKNOWN | attr::CONTROL | attr::USER_DEFINED) != 0 {
        return text.to_vec();
    }
    match v.kind {
        VocabType::Spm | VocabType::Wpm | VocabType::Ugm => {
            if a & attr::NORMAL != 0 {
                return unescape_spaces(text);
            }
            if a & attr::BYTE != 0 {
                // `<0xXX>`: llama.cpp parses the two hex digits at 3..5.
                let hex = text.get(3..5).and_then(|h| std::str::from_utf8(h).ok());
                return vec![
                    hex.and_then(|h| u8::from_str_radix(h, 16).ok())
                        .unwrap_or(0),
                ];
            }
            Vec::new()
        }
        VocabType::Bpe => {
            if a & attr::NORMAL != 0 {
                return byte_level_decode(text);
            }
            Vec::new()
        }
    }
}

fn unescape_spaces(text: &[u8]) -> Vec<u8> {
    const MARK: &[u8] = "\u{2581}".as_bytes();
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with(MARK) {
            out.push(b' ');
            i += MARK.len();
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    out
}

/// `llama_decode_text`: byte-level characters back to bytes; a character
/// outside the byte-level alphabet becomes `[UNK_BYTE_0x…]` as in llama.cpp.
fn byte_level_decode(text: &[u8]) -> Vec<u8> {
    let s = String::from_utf8_lossy(text);
    let mut out = Vec::with_capacity(text.len());
    for c in s.chars() {
        match crate::backend::byte_level::char_to_byte(c) {
            Some(b) => out.push(b),
            None => {
                out.extend_from_slice(b"[UNK_BYTE_0x");
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.extend_from_slice(format!("{b:02x}").as_bytes());
                }
                out.extend_from_slice(text);
                out.push(b']');
            }
        }
    }
    out
}

fn special_tokens(v: &Vocab) -> SpecialTokens {
    let tok = |id: Option<u32>| {
        id.map(|id| SpecialToken {
            content: String::from_utf8_lossy(v.token(id)).into_owned(),
            id,
        })
    };
    let named = [v.bos, v.eos, v.unk, v.pad, v.sep, v.mask];
    SpecialTokens {
        bos: tok(v.bos),
        eos: tok(v.eos),
        unk: tok(v.unk),
        pad: tok(v.pad),
        sep: tok(v.sep),
        cls: None,
        mask: tok(v.mask),
        additional: (0..v.len() as u32)
            .filter(|&id| v.attr(id) & attr::CONTROL != 0 && !named.contains(&Some(id)))
            .filter_map(|id| tok(Some(id)))
            .collect(),
    }
}

/// The streaming style of `decode` below: concatenated pieces, read as lossy
/// UTF-8, once a leading space is stripped from the first id when
/// `add_space_prefix`. `clean_spaces` rewrites across pieces, and an `eos`
/// that is dropped only at the end (`add_eos`) but not hidden elsewhere
/// depends on what follows, so both keep the windowed stream.
fn decode_style(v: &Vocab) -> DecodeStyle {
    let hidden = |id: u32| v.attr(id) & (attr::UNKNOWN | attr::CONTROL) != 0;
    let eos_ok = !v.add_eos || v.eos.is_none_or(hidden);
    if v.clean_spaces || !eos_ok {
        DecodeStyle::Windowed
    } else if v.add_space_prefix {
        DecodeStyle::ByteConcatWithStart(StartRule::FirstIdStripSpace)
    } else {
        DecodeStyle::ByteConcat
    }
}

/// llama.cpp's `clean_spaces` passes over detokenized bytes.
fn clean_spaces(text: &mut Vec<u8>) {
    // " ?", " !", " .", " ,": drop the space.
    let mut out: Vec<u8> = Vec::with_capacity(text.len());
    for (i, &x) in text.iter().enumerate() {
        if i > 0 && text[i - 1] == b' ' && matches!(x, b'?' | b'!' | b'.' | b',') {
            out.pop();
        }
        out.push(x);
    }
    // " ' " between spaces: drop both spaces.
    // llama.cpp overwrites the skipped space with NUL, which a following
    // apostrophe then sees as its left neighbour.
    let mut t = std::mem::take(&mut out);
    let mut i = 0;
    while i < t.len() {
        let x = t[i];
        if i > 0 && x == b'\'' && i + 1 < t.len() && t[i - 1] == b' ' && t[i + 1] == b' ' {
            out.pop();
            out.push(x);
            t[i + 1] = 0;
            i += 2;
            continue;
        }
        out.push(x);
        i += 1;
    }
    // " 's", " 'm", " 're", " 've": drop the space.
    let t = std::mem::take(&mut out);
    for (i, &x) in t.iter().enumerate() {
        if i > 0 && t[i - 1] == b' ' && x == b'\'' && i + 1 < t.len() {
            let x1 = t[i + 1];
            let drop = matches!(x1, b's' | b'm')
                || (i + 2 < t.len() && matches!((x1, t[i + 2]), (b'r', b'e') | (b'v', b'e')));
            if drop {
                out.pop();
            }
        }
        out.push(x);
    }
    *text = out;
}

impl Encoder for GgufBackend {
    fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        self.encode_impl(text, add_special_tokens, false)
    }

    fn encode_with_offsets(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        self.encode_impl(text, add_special_tokens, true)
    }

    fn parses_special_text(&self) -> bool {
        self.parse_special
    }

    fn encode_plain(
        &self,
        text: &str,
        with_offsets: bool,
        markers: &[u32],
    ) -> Option<Result<Encoding>> {
        Some(self.encode_with(text, false, with_offsets, false, markers))
    }
}

impl Decoder for GgufBackend {
    /// llama.cpp's `detokenize(remove_special = skip, unparse_special = !skip)`.
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        let v = &self.vocab;
        if let Some(&bad) = ids.iter().find(|&&id| id as usize >= v.len()) {
            return Err(Error::unknown_id(bad, v.len()));
        }
        let mut ids = ids;
        let mut remove_space = v.add_space_prefix;
        if skip_special_tokens && v.add_bos && ids.first().is_some_and(|&f| Some(f) == v.bos) {
            remove_space = false;
            ids = &ids[1..];
        }
        if skip_special_tokens && v.add_eos && ids.last().is_some_and(|&l| Some(l) == v.eos) {
            ids = &ids[..ids.len() - 1];
        }
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            let hidden = skip_special_tokens && v.attr(id) & (attr::UNKNOWN | attr::CONTROL) != 0;
            if !hidden {
                let p = &self.pieces[id as usize];
                let p = if remove_space {
                    p.strip_prefix(b" ").unwrap_or(p)
                } else {
                    p
                };
                out.extend_from_slice(p);
            }
            remove_space = false;
        }
        if v.clean_spaces {
            clean_spaces(&mut out);
        }
        Ok(match String::from_utf8(out) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    fn decode_style(&self) -> DecodeStyle {
        self.style
    }

    fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        if self.style == DecodeStyle::Windowed {
            return None;
        }
        self.pieces.get(id as usize).map(|p| &p[..])
    }

    fn byte_piece(&self, id: u32) -> Option<u8> {
        (matches!(self.vocab.kind, VocabType::Spm | VocabType::Ugm)
            && self.vocab.attr(id) & attr::BYTE != 0)
            .then(|| {
                self.pieces
                    .get(id as usize)
                    .and_then(|p| p.first().copied())
            })
            .flatten()
    }
}

impl Tokenizer for GgufBackend {
    fn backend_name(&self) -> &'static str {
        NAME
    }

    fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.vocab.text_to_token(token.as_bytes())
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        ((id as usize) < self.vocab.len())
            .then(|| String::from_utf8_lossy(self.vocab.token(id)).into_owned())
    }

    fn is_special_id(&self, id: u32) -> bool {
        self.vocab.attr(id) & (attr::UNKNOWN | attr::CONTROL) != 0
    }

    fn special_tokens(&self) -> &SpecialTokens {
        &self.special_tokens
    }

    /// USER_DEFINED tokens: llama.cpp cuts them out whatever `parse_special`.
    fn added_tokens(&self) -> Vec<SpecialToken> {
        let v = &self.vocab;
        (0..u32::try_from(v.len()).unwrap_or(u32::MAX))
            .filter(|&id| v.attr(id) & attr::USER_DEFINED != 0)
            .map(|id| SpecialToken {
                content: String::from_utf8_lossy(v.token(id)).into_owned(),
                id,
            })
            .collect()
    }
}

/// Hook for fuzzing: parses `data` as GGUF and, when it holds a tokenizer,
/// encodes and decodes with it. Never panics.
#[doc(hidden)]
pub fn fuzz_gguf(data: &[u8]) {
    let Ok(gguf) = Gguf::parse(data) else {
        return;
    };
    for (_, v) in gguf.iter() {
        if let reader::Value::Array(a) = v {
            let _ = a.strings().map(Iterator::count);
        }
    }
    if let Ok(t) = GgufBackend::new(Path::new("fuzz.gguf"), &gguf, SpecialTokenPolicy::Parse) {
        let _ = t.encode_with_offsets("Hello world, \u{2581} 日本語 <s> ﬁ  ", true);
        let n = t.vocab_size().min(512) as u32;
        let all: Vec<u32> = (0..n).collect();
        let _ = t.decode(&all, true);
        let _ = t.decode(&all, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_spaces_matches_llama_cpp() {
        let run = |s: &str| {
            let mut b = s.as_bytes().to_vec();
            clean_spaces(&mut b);
            String::from_utf8(b).unwrap()
        };
        assert_eq!(run("Hello , world !"), "Hello, world!");
        assert_eq!(run("a ' b"), "a'b");
        assert_eq!(run("x ' ' y"), "x'' y");
        assert_eq!(
            run("it 's I 'm we 're they 've don 't"),
            "it's I'm we're they've don 't"
        );
        assert_eq!(run(""), "");
    }

    #[test]
    fn byte_level_pieces() {
        assert_eq!(byte_level_decode("Ġhello".as_bytes()), b" hello");
        assert_eq!(byte_level_decode("Ċ".as_bytes()), b"\n");
    }
}
