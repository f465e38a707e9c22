//! The tokenizer layer of an LLM inference router.
//!
//! One [`Tokenizer`] handle over every format a router meets: Hugging Face
//! `tokenizer.json`, tiktoken (OpenAI encodings, model names and rank files),
//! SentencePiece `.model`, GGUF and Mistral's `tekken.json`. The format is
//! detected from the file's content, hub ids resolve through the standard
//! Hugging Face cache, and every backend matches its reference implementation
//! id for id.
//!
//! # Example
//!
//! ```
//! use router_tokenizer::{EncodeOptions, create_tokenizer};
//!
//! // Built into the binary: works offline.
//! let tok = create_tokenizer("o200k_base")?;
//! let enc = tok.encode("Hello, world!", false)?;
//! assert_eq!(enc.ids(), &[13225, 11, 2375, 0]);
//! assert_eq!(tok.decode(enc.ids(), false)?, "Hello, world!");
//!
//! // Byte offsets into the input, one span per id.
//! let enc = tok.encode_with("Hello, world!", &EncodeOptions::new().with_offsets(true))?;
//! assert_eq!(enc.offsets(), Some(&[(0, 5), (5, 6), (6, 12), (12, 13)][..]));
//! # Ok::<(), router_tokenizer::Error>(())
//! ```
//!
//! Loading a hub model uses the cache first and the network only for what is
//! missing (never with `HF_HUB_OFFLINE=1`):
//!
//! ```no_run
//! let tok = router_tokenizer::create_tokenizer("meta-llama/Llama-3.2-1B-Instruct")?;
//! println!("eos ids: {:?}", tok.eos_token_ids());
//! # Ok::<(), router_tokenizer::Error>(())
//! ```
//!
//! # The API at a glance
//!
//! | to … | call | with |
//! |---|---|---|
//! | load a tokenizer (hub id, file, folder, OpenAI name) | [`create_tokenizer`], [`create_tokenizer_async`] | [`LoadOptions`] (revision, token, offline, cache folder, special tokens, parallelism), [`ModelAliases`] |
//! | encode a prompt | [`Tokenizer::encode`], [`Tokenizer::encode_with`], [`Tokenizer::encode_batch`], [`Tokenizer::encode_async`] | [`EncodeOptions`] (offsets, [`Parallelism`]); the result is an [`Encoding`] |
//! | count or fit a budget | [`Tokenizer::count`], [`Tokenizer::token_counter`], [`Tokenizer::truncate`] | [`TokenCounter`], [`Side`] |
//! | render and encode a chat request | [`Tokenizer::encode_chat`] | [`chat::ChatRequest`], [`EncodeChatOptions`], [`ChatFormat`] (the model's Jinja template, mistral-common's Mistral formats, [`harmony`] for gpt-oss), [`ChatSpecialTokens`] |
//! | decode | [`Tokenizer::decode`], [`Tokenizer::token_text`] | [`TokenText`] |
//! | stream text out of a generation | [`DecodeStream`], [`Sequence`] | [`UnknownIds`] |
//! | stop on tokens or strings | [`StopSequenceDecoder`] | [`StopConfig`], [`Output`], [`StopReason`] |
//! | answer `/tokenize` and `/detokenize` | [`Tokenizer::tokenize`], [`Tokenizer::detokenize`] | [`TokenizeRequest`], [`DetokenizeRequest`] |
//! | cache re-sent prompts | on by default | [`PromptCacheOptions`] (L0 exact, L1 prefix) |
//! | plug in a tokenizer of your own | [`Tokenizer::from_backend`] | [`traits::Backend`] |
//! | handle errors | every call returns [`Result`] | [`Error`], [`ErrorKind`] (`#[non_exhaustive]`) |
//!
//! # Long inputs
//!
//! Above a measured size, [`Tokenizer::encode`] cuts the text into chunks,
//! encodes them on the rayon pool and stitches them where the chunks provably
//! agree with the sequential encoding, so the result is always exactly
//! [`Parallelism::Sequential`]'s (see [`Tokenizer::encode_with`]).
//! [`ParallelOptions`] tunes it;
//! [`Tokenizer::split_family`] tells which tokenizers are cut and why others
//! are not.
//!
//! # Chat requests
//!
//! [`Tokenizer::encode_chat`] renders a [`chat::ChatRequest`] and encodes it
//! in one call; special-token text that came from the request is plain text
//! by default ([`ChatSpecialTokens`]), so a user cannot forge control tokens.
//! Repeated long prompts are answered from an exact L0 cache; with the L1
//! prefix cache on, a prompt that extends or edits a cached one (the next
//! turn) reuses its ids up to a provably safe cut ([`PromptCacheOptions`]).
//!
//! # Metrics
//!
//! Loads, encodes, decodes, chat requests, streams and prompt caches report
//! through the [`metrics`](::metrics) crate to the recorder the application
//! installs (with none, nothing is recorded and a call pays one check). Every
//! series is described (HELP text and unit) and labelled `tokenizer`, the
//! source the tokenizer was loaded from (a hub id, path or encoding name; for
//! an alias, the source it resolved to; for [`Tokenizer::from_backend`], the
//! backend name), and `backend` (`hf`, `tiktoken`, `sentencepiece`, …):
//!
//! | name | type, unit | counts or measures |
//! |---|---|---|
//! | `rtok_loads_total` | counter | tokenizers loaded (not registry hits) |
//! | `rtok_load_duration_seconds` | histogram, seconds | one load: resolve, read, parse, build |
//! | `rtok_load_errors_total{kind}` | counter | failed loads, by [`ErrorKind`] in snake case (`not_found`, `hub`, …); `tokenizer` only, no `backend` |
//! | `rtok_encode_requests_total`, `rtok_encode_errors_total` | counters | encodes (every `encode*` method) and their failures |
//! | `rtok_encode_duration_seconds` | histogram, seconds | one encode, **sampled** (below) |
//! | `rtok_encode_tokens` | histogram, count | ids per encode |
//! | `rtok_decode_requests_total`, `rtok_decode_errors_total` | counters | decodes and their failures |
//! | `rtok_decode_duration_seconds` | histogram, seconds | one decode, **sampled** |
//! | `rtok_render_requests_total`, `rtok_render_errors_total` | counters | [`Tokenizer::encode_chat`] calls (also through `count_chat` and `tokenize`) and their failures |
//! | `rtok_render_duration_seconds` | histogram, seconds | one chat request, render and encode |
//! | `rtok_render_tokens` | histogram, count | prompt ids per chat request |
//! | `rtok_stream_steps_total` | counter | ids fed to [`DecodeStream`]s and [`StopSequenceDecoder`]s |
//! | `rtok_stream_unknown_ids_total` | counter | ids outside the vocabulary a stream skipped |
//! | `rtok_stops_total{reason}` | counter | generations a [`StopSequenceDecoder`] stopped: `eos`, `token`, `string`, `token_sequence` ([`MatchedStop`]'s variants) |
//! | `rtok_parallel_encodes_total` | counter | encodes cut into parallel chunks |
//! | `rtok_parallel_retries_total{reason}`, `rtok_parallel_fallbacks_total{reason}` | counters | chunk growths, and parallel encodes that fell back to sequential |
//! | `rtok_cache_hits_total{cache}`, `rtok_cache_misses_total{cache}`, `rtok_cache_evictions_total{cache}` | counters | prompt-cache lookups and evictions, `cache` = `l0` or `l1` |
//! | `rtok_cache_bytes_reused_total{cache}` | counter, bytes | text whose ids came from a cache |
//! | `rtok_cache_l1_tokens_reencoded_total`, `rtok_cache_l1_fallbacks_total` | counters | the L1 prefix cache's overlap work and failed cuts |
//!
//! **Sampling.** Encode and decode durations are timed on one call in 16 per
//! thread (the first call on each thread, then every 16th): two clock reads
//! cost more than 1% of a short encode. The counters and the token
//! histograms see every call, so a histogram's count of durations is about
//! 1/16 of its requests. Loads and chat requests are timed on every call.
//!
//! **When to install the recorder.** Any time: a tokenizer loaded before a
//! recorder existed registers its series on its first call after one is
//! installed, and later loads of its source (which share its handle) report
//! with it; only the load itself, counted as it happens, went unrecorded. A
//! tokenizer stays with the first recorder it registers with. A
//! `metrics::with_local_recorder` closure counts as installed for the calls
//! inside it. `metrics` cannot be asked whether a recorder is installed, so
//! the crate takes a zero-sized recorder (as `metrics`' own no-op one is) for
//! none; give a recorder of your own at least one field.
//!
//! A failed load's `tokenizer` label is cut to 128 bytes, and after 64
//! distinct failing sources the rest share `tokenizer="other"`, so model names
//! taken from clients cannot grow the series without bound.

#![deny(missing_docs)]
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod backend;
mod cache;
pub mod chat;
mod config;
mod contract;
mod decode;
mod encode;
mod encoding;
mod error;
#[cfg(test)]
mod layers;
mod limits;
mod load;
mod metrics;
mod offload;
mod request;
mod serving;
mod special;
#[cfg(test)]
mod test_support;
mod tokenizer;

pub use backend::tiktoken::encodings::BuiltinEncoding;
pub use cache::PromptCacheOptions;
pub use decode::{
    BatchOutput, DecodeStream, MatchedStop, Output, Sequence, StopConfig, StopReason,
    StopSequenceDecoder, TokenText, UnknownIds,
};
pub use encode::{
    Chunk, Chunks, EncodeOptions, ParallelMode, ParallelOptions, ParallelReport, Parallelism, Side,
    SplitFamily, TokenCounter,
};
pub use encoding::Encoding;
pub use error::{Error, ErrorKind, Result};
pub use load::{
    Format, HubTimeouts, LoadOptions, ModelAliases, create_tokenizer, create_tokenizer_async,
};
pub use offload::OFFLOAD_MIN_BYTES;
pub use request::{ChatEncoding, ChatFormat, ChatSpecialTokens, EncodeChatOptions};

/// gpt-oss's Harmony format: prompts rendered as `openai-harmony` renders
/// them (through [`Tokenizer::encode_chat`] with [`ChatFormat::Harmony`]),
/// and generations split into channels as they stream.
pub mod harmony {
    pub use crate::request::harmony::{HarmonyEvent, HarmonyHeader, HarmonyStream, render_text};
}
pub use serving::{
    DetokenizeRequest, DetokenizeResponse, TokenizeChatRequest, TokenizeCompletionRequest,
    TokenizeRequest, TokenizeResponse,
};
pub use special::{ControlTokens, SpecialToken, SpecialTokenPolicy, SpecialTokens};
pub use tokenizer::Tokenizer;

/// Plugging in a tokenizer of your own: implement [`Backend`](traits::Backend)
/// and wrap it with [`Tokenizer::from_backend`]. [`DecodeStyle`](traits::DecodeStyle)
/// and [`StartRule`](traits::StartRule) say how its ids decode (and
/// [`Tokenizer::decode_style`] returns them for every tokenizer).
pub mod traits {
    pub use crate::backend::plugin::Backend;
    pub use crate::backend::{DecodeStyle, StartRule};
}

/// The native SentencePiece engine, usable on its own: `ModelProto` reader,
/// normalizer, BPE and Unigram segmenters, decoder (parity with sentencepiece 0.2.3).
pub mod sentencepiece {
    pub use crate::backend::sentencepiece::{
        ModelType, PieceType, SentencePieceModel, SpmError, SpmSettings,
    };
}

/// The GGUF container reader behind the GGUF backend: header and metadata
/// key/values, borrowed from the bytes, every length checked.
pub mod gguf {
    pub use crate::backend::gguf::reader::{Array, Gguf, GgufError, Value, ValueType};
}

/// Fuzzing entry points (not a stable API).
#[doc(hidden)]
pub mod __fuzz {
    /// Loads `data` as a SentencePiece model and exercises it; never panics.
    pub fn sentencepiece_model(data: &[u8]) {
        crate::backend::sentencepiece::fuzz_model(data);
    }
    /// A `tokenizer.json` through the loader's HF path; never panics.
    pub fn tokenizer_json(data: &[u8]) {
        crate::load::fuzz::tokenizer_json(data);
    }
    /// A tiktoken rank file through the loader's checks; never panics.
    pub fn rank_file(data: &[u8]) {
        crate::load::fuzz::rank_file(data);
    }
    /// A `tokenizer_config.json` beside a small rank file; never panics.
    pub fn tokenizer_config(data: &[u8]) {
        crate::load::fuzz::tokenizer_config(data);
    }

    /// Reads `data` as GGUF and, when it holds a tokenizer, exercises it; never panics.
    pub fn gguf(data: &[u8]) {
        crate::backend::gguf::fuzz_gguf(data);
    }
}

/// Internals the route-equivalence tests compare (not a stable API).
#[doc(hidden)]
pub mod __testing {
    pub use crate::load::testing::{
        FastRoute, hf_json, hf_json_assembled, hf_json_route, interim_active, spm_route,
    };
    pub use crate::request::mistral::MistralVersion;

    /// `request` encoded as mistral_common's `encode_chat_completion` does
    /// for `version` (until `encode_chat` dispatches to it).
    pub fn encode_mistral(
        tok: &crate::Tokenizer,
        request: &crate::chat::ChatRequest,
        version: MistralVersion,
    ) -> crate::Result<crate::ChatEncoding> {
        crate::request::mistral::encode_mistral(tok, request, version)
    }
}

/// Test helpers (feature `test-util`).
#[cfg(feature = "test-util")]
pub mod testing {
    pub use crate::backend::mock::MockTokenizer;
}
