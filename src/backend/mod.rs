//! The traits every backend implements, and the backends themselves.
//!
//! A backend is one tokenizer format (`tokenizer.json`, tiktoken ranks, …)
//! behind three object-safe traits, private to the crate so their fast-path
//! hooks can change. The public [`Tokenizer`](crate::Tokenizer) handle holds
//! an `Arc<dyn Tokenizer>` and adds metrics, parallel encoding and metadata
//! on top, so a backend only does tokenization. A user's tokenizer
//! implements the small public [`plugin::Backend`] instead, which
//! [`plugin::Plugged`] puts behind these traits.

pub(crate) mod ascii_split;
pub(crate) mod bpe;
pub(crate) mod byte_level;
pub(crate) mod byte_memo;
pub(crate) mod char_cuts;
pub(crate) mod divergence;
pub(crate) mod gguf;
pub(crate) mod hf;
pub(crate) mod huge_pages;
pub(crate) mod join_cuts;
#[cfg(any(test, feature = "test-util"))]
pub(crate) mod mock;
pub(crate) mod plugin;
pub(crate) mod prefetch;
pub(crate) mod sentencepiece;
pub(crate) mod special_scan;
pub(crate) mod thread_scratch;
pub(crate) mod tiktoken;
pub(crate) mod word_cuts;

use crate::contract::{ChunkEncoding, ChunkRequest, SplitSpec};
use crate::encoding::Encoding;
use crate::error::{Error, Result};
use crate::special::{SpecialToken, SpecialTokens};

/// Word-cache slots per encoding thread for the BPE models this crate builds
/// (`tokenizer.json` BPEs and tiktoken encodings; DESIGN.md invariant `caches-bounded`): four
/// times `tokenizers`' default of 65,536, which a multi-megabyte prompt's
/// distinct words overflow, so the cache thrashes and encode time grows
/// faster than the text (`docs/perf/design_log/tokenizer_json.md` (entry 248)). 32 bytes a slot: 8
/// MiB per thread that
/// encodes.
pub(crate) const BPE_WORD_CACHE_SLOTS: usize = 1 << 18;

/// The backend's end of a build a load left to a background thread (the
/// tiktoken engine, a `tokenizer.json` pipeline or model): dropped with the
/// backend, it cancels the build, which stops at its next stage and frees
/// what it held (issue 39: a hundred dropped loads kept a hundred builds
/// running, and the allocator kept the memory they had touched).
pub(crate) struct BuildGuard(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl BuildGuard {
    /// A guard and the flag the build thread reads.
    pub(crate) fn new() -> (Self, BuildCancel) {
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        (Self(std::sync::Arc::clone(&flag)), BuildCancel(Some(flag)))
    }
}

impl Drop for BuildGuard {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// The build thread's end of a [`BuildGuard`]: whether every handle of the
/// backend is gone, so the build should stop. Read between stages (and
/// between items of the long ones), never on an encode path.
#[derive(Clone, Default)]
pub(crate) struct BuildCancel(Option<std::sync::Arc<std::sync::atomic::AtomicBool>>);

impl BuildCancel {
    /// A flag never set: builds run on the caller's thread (or for a live
    /// handle) always finish.
    pub(crate) fn never() -> Self {
        Self(None)
    }

    /// Whether the backend that wanted the build is gone.
    pub(crate) fn cancelled(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::Acquire))
    }
}

/// Text to ids.
pub(crate) trait Encoder: Send + Sync {
    /// Encodes `text`. With `add_special_tokens`, BOS/EOS (or the
    /// post-processor's template) are added around the sequence.
    fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Encoding>;

    /// Like [`encode`](Encoder::encode), with one byte span per id.
    ///
    /// Spans are `[start, end)` byte offsets into `text`. Consecutive spans never
    /// go backwards; tokens of one character (byte fallback, byte-level pieces)
    /// share that character's span or split it by byte.
    fn encode_with_offsets(&self, text: &str, add_special_tokens: bool) -> Result<Encoding>;

    /// Whether [`encode`](Encoder::encode) parses special-token text as
    /// special tokens (the load-time
    /// [`SpecialTokenPolicy`](crate::SpecialTokenPolicy)). The default, `true`,
    /// is `Parse`.
    fn parses_special_text(&self) -> bool {
        true
    }

    /// Encodes `text` with every special-token text as ordinary text,
    /// whatever the load-time policy, with no BOS/EOS (and one span per id
    /// when `with_offsets`): what `encode` gives under
    /// [`SpecialTokenPolicy::PlainText`](crate::SpecialTokenPolicy::PlainText).
    /// The non-special added tokens whose ids are in `markers` (sorted; see
    /// [`Tokenizer::added_tokens`]) are text too, skipped as the specials
    /// are: the chat layer's control markers (DESIGN.md invariant `typed-markers-stay-text`).
    ///
    /// `None`, the default, says the backend cannot; then
    /// [`Tokenizer::encode_chat`](crate::Tokenizer::encode_chat) refuses a
    /// request whose special-token text it would have to encode as text
    /// (it never parses it instead).
    fn encode_plain(
        &self,
        text: &str,
        with_offsets: bool,
        markers: &[u32],
    ) -> Option<Result<Encoding>> {
        let _ = (text, with_offsets, markers);
        None
    }

    /// How this backend's encodes may be cut into chunks and encoded in
    /// parallel (see [`SplitSpec`]); `None`, the default, keeps it sequential.
    ///
    /// Declaring a family is a claim that the family's cut argument holds for
    /// this backend (`docs/lopt.md`); the differential tests check it.
    fn split_spec(&self) -> Option<&SplitSpec> {
        None
    }

    /// Encodes one chunk of a longer text for the parallel encoder: ids with
    /// no BOS/EOS, spans and pre-token boundaries near both ends.
    ///
    /// Called only when [`split_spec`](Encoder::split_spec) declares a
    /// parallel family, so implementations need not check it again.
    ///
    /// `text` is a slice of the whole input starting and ending at allowed
    /// edges ([`EdgeRule`](crate::encode::EdgeRule)); the ids must be exactly
    /// what [`encode`](Encoder::encode) without special tokens returns for it.
    /// The default derives everything from
    /// [`encode_with_offsets`](Encoder::encode_with_offsets) and knows no
    /// pre-token boundaries, which suits [`WholeTextBpe`](crate::SplitFamily::WholeTextBpe)
    /// backends; families that cut at boundaries must override it.
    fn encode_chunk(&self, text: &str, request: &ChunkRequest) -> Result<ChunkEncoding> {
        chunk_from_offsets(self, text, request)
    }

    /// Builds whatever this backend builds in the background (the tiktoken
    /// backend's byte-level engine, the `tokenizers` pipeline of a file on
    /// the SentencePiece route, a `tokenizer.json` model an interim engine
    /// stands in for), blocking until it is ready. Encodes never
    /// need it (they give the same ids before), but run at full speed, or
    /// without a wait for offsets and decode, after it. The default does
    /// nothing.
    fn warm_up(&self) {}

    /// Whether encodes run on a stand-in engine while the backend's own is
    /// built (invariant `interim-equals-built`); [`warm_up`](Self::warm_up) ends it. The default
    /// is `false`.
    fn building(&self) -> bool {
        false
    }
}

/// Whether the eight bytes at `i` are all ASCII (`false` past the end):
/// scans over mostly-ASCII text skip a word at a time.
#[inline]
pub(crate) fn ascii_word_at(bytes: &[u8], i: usize) -> bool {
    bytes.get(i..i + 8).is_some_and(|word| {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        u64::from_ne_bytes(w) & 0x8080_8080_8080_8080 == 0
    })
}

/// [`Encoder::encode_chunk`]'s default: every span from
/// [`Encoder::encode_with_offsets`], no pre-token boundaries.
pub(crate) fn chunk_from_offsets<E: Encoder + ?Sized>(
    encoder: &E,
    text: &str,
    request: &ChunkRequest,
) -> Result<ChunkEncoding> {
    let (ids, offsets) = encoder.encode_with_offsets(text, false)?.into_parts();
    let offsets = offsets
        .ok_or_else(|| Error::backend("chunk", "encode_with_offsets returned no offsets"))?;
    Ok(ChunkEncoding::from_spans(
        ids,
        offsets,
        text.len(),
        request,
        Vec::new(),
    ))
}

/// How a backend's ids turn back into text, which decides the streaming algorithm.
///
/// A backend picks the cheapest style that is exact for its decoder; the
/// stream tests (`tests/it/stream.rs`) check `stream == decode(all)` for it.
/// New styles may be added (the enum is non-exhaustive); a backend that
/// declares none of the byte styles still streams correctly as `Windowed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeStyle {
    /// `decode(ids)` is the lossy UTF-8 reading of the concatenated
    /// [`token_bytes`](plugin::Backend::token_bytes) of every id
    /// (byte-level BPE, tiktoken). Streaming needs no re-decoding.
    ByteConcat,
    /// The decoder looks at neighbouring tokens beyond what [`StartRule`]
    /// expresses (cleanup across tokens, unknown decoder steps); streaming
    /// re-decodes a small window.
    Windowed,
    /// `decode(ids)` is the concatenation of
    /// [`token_bytes`](plugin::Backend::token_bytes), except at the start
    /// of the text, where `StartRule` applies (Metaspace and
    /// `Replace ▁` decoders, `Strip`, SentencePiece's dummy prefix,
    /// WordPiece's `##`). Byte-fallback pieces (`<0xNN>`) contribute their
    /// byte. Exact whenever every run of byte pieces is valid UTF-8; a run
    /// that is not may differ in how many U+FFFD it renders (DESIGN.md invariant
    /// `stream-equals-decode`).
    ByteConcatWithStart(StartRule),
}

/// How the start of a decoded text differs from plain concatenation, for
/// [`DecodeStyle::ByteConcatWithStart`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartRule {
    /// No difference: plain concatenation (`Replace ▁` + `ByteFallback` + `Fuse`).
    None,
    /// The text's first byte is dropped when it is a space (`tokenizers`'
    /// `Strip(" ", 1, 0)` after `Fuse`).
    StripSpace,
    /// The first id that renders (skipped specials do not) uses
    /// [`first_token_bytes`](plugin::Backend::first_token_bytes)
    /// (WordPiece: no `##` join, no space before it; Metaspace: no `▁`
    /// becomes a space).
    FirstToken,
    /// The first id of the text, whether it renders or not, loses one
    /// leading space (llama.cpp's detokenizer with `add_space_prefix`: GGUF
    /// vocabularies). Nothing else differs.
    FirstIdStripSpace,
    /// SentencePiece's dummy prefix: while no byte has been produced, every
    /// id that is neither a byte piece nor special uses
    /// [`first_token_bytes`](plugin::Backend::first_token_bytes); with
    /// `repeat == false` only the first such id whose bytes differ, or the
    /// first that produces a byte, does.
    SentencePiece {
        /// `remove_extra_whitespaces`: keep stripping until a byte is produced.
        repeat: bool,
    },
}

/// Ids to text.
pub(crate) trait Decoder: Send + Sync {
    /// Decodes `ids`. Unknown ids are an error, never a panic.
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String>;

    /// How [`decode`](Decoder::decode) combines tokens.
    fn decode_style(&self) -> DecodeStyle;

    /// The bytes one id contributes to a decode, for the byte styles
    /// ([`DecodeStyle::ByteConcat`], [`DecodeStyle::ByteConcatWithStart`]).
    /// `None` for unknown ids, or when the style is `Windowed`.
    fn token_bytes(&self, id: u32) -> Option<&[u8]>;

    /// The bytes of `id` where [`StartRule`] says the start of the text
    /// renders differently. The default is [`token_bytes`](Decoder::token_bytes).
    fn first_token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.token_bytes(id)
    }

    /// The byte a byte-fallback piece (`<0x0D>`) stands for, when
    /// [`decode`](Decoder::decode) reassembles runs of them into UTF-8.
    ///
    /// Windowed streams wait for such a run to end before they emit any of
    /// it: in `tokenizers`, one invalid byte turns every piece of its run
    /// into U+FFFD. Byte styles emit each character once its bytes are complete.
    fn byte_piece(&self, id: u32) -> Option<u8> {
        let _ = id;
        None
    }
}

/// A complete tokenizer: encoder, decoder and vocabulary.
pub(crate) trait Tokenizer: Encoder + Decoder {
    /// Which backend this is, for metrics and `inspect`.
    fn backend_name(&self) -> &'static str;

    /// Number of ids, added tokens included (one past the largest id).
    fn vocab_size(&self) -> usize;

    /// The id of a token, in the tokenizer's own spelling (`Ġhello` for byte-level).
    fn token_to_id(&self, token: &str) -> Option<u32>;

    /// The token of an id, in the tokenizer's own spelling.
    fn id_to_token(&self, id: u32) -> Option<String>;

    /// Whether `id` is a special (control) token, skipped by `skip_special_tokens`.
    fn is_special_id(&self, id: u32) -> bool;

    /// bos/eos/unk/pad/… and additional special tokens.
    fn special_tokens(&self) -> &SpecialTokens;

    /// The added tokens that are not special but that every encode still
    /// matches as one id (`tokenizer.json` added tokens with
    /// `"special": false`, GGUF and SentencePiece user-defined pieces). The
    /// chat layer decides which of them are control markers. The default
    /// is none.
    fn added_tokens(&self) -> Vec<SpecialToken> {
        Vec::new()
    }
}
