//! Async calls for a router's tokio runtime: large inputs are encoded on
//! tokio's blocking pool, so an executor thread never spends milliseconds
//! on one request while others wait; small ones run inline, where a hand-off
//! would cost more than the encode. The crate never builds a runtime: these
//! run on the caller's.

use crate::chat::ChatRequest;
use crate::encoding::Encoding;
use crate::error::{Error, Result};
use crate::request::{ChatEncoding, EncodeChatOptions};
use crate::tokenizer::Tokenizer;

/// Inputs of at least this many bytes (a text, or a chat request's strings
/// together) are encoded off the executor by the async calls; shorter ones
/// inline. At ~100 MB/s a 16 KiB text takes ~0.15 ms, a few times what a
/// `spawn_blocking` round trip costs.
pub const OFFLOAD_MIN_BYTES: usize = 16 << 10;

/// Runs `f` on the caller's tokio blocking pool.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::config(format!("blocking task failed: {e}")))?
}

/// The bytes of a request's strings, roughly what its encode costs.
fn request_bytes(request: &ChatRequest) -> usize {
    let mut n = 0;
    crate::request::walk_strings(request, &mut |s| n += s.len());
    n
}

impl Tokenizer {
    /// [`encode`](Self::encode) for async callers: a text of
    /// [`OFFLOAD_MIN_BYTES`] or more is encoded on tokio's blocking pool (a
    /// copy of it travels there), a shorter one inline.
    pub async fn encode_async(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        if text.len() < OFFLOAD_MIN_BYTES {
            return self.encode(text, add_special_tokens);
        }
        let (tok, text) = (self.clone(), text.to_owned());
        blocking(move || tok.encode(&text, add_special_tokens)).await
    }

    /// [`encode_chat`](Self::encode_chat) for async callers: a request whose
    /// strings hold [`OFFLOAD_MIN_BYTES`] or more is rendered and encoded on
    /// tokio's blocking pool, a smaller one inline.
    pub async fn encode_chat_async(
        &self,
        request: &ChatRequest,
        options: &EncodeChatOptions,
    ) -> Result<ChatEncoding> {
        if request_bytes(request) < OFFLOAD_MIN_BYTES {
            return self.encode_chat(request, options);
        }
        let (tok, request, options) = (self.clone(), request.clone(), options.clone());
        blocking(move || tok.encode_chat(&request, &options)).await
    }

    /// [`warm_up`](Self::warm_up) on tokio's blocking pool: builds what the
    /// load left building, and finds and compiles the chat template and the
    /// request path's tables, so the first request pays none of it.
    pub async fn warm_up_async(&self) {
        let tok = self.clone();
        let _ = tokio::task::spawn_blocking(move || tok.warm_up()).await;
    }
}
