//! [`Backend`]: the trait a tokenizer of your own implements to be wrapped
//! by [`Tokenizer::from_backend`](crate::Tokenizer::from_backend), and the
//! adapter that puts it behind the crate's internal backend traits.
//!
//! The crate's own backends implement the internal traits
//! ([`Encoder`], [`Decoder`], [`Tokenizer`]) directly, with their
//! fast paths: chunk encodes for parallel encoding, plain-text encodes for
//! chat requests, memo hints, background builds. Those hooks stay private,
//! so they can change without breaking a user's backend; a plugged-in
//! backend gets their defaults: it is always encoded sequentially
//! ([`SplitFamily::Sequential`](crate::SplitFamily::Sequential)), and chat
//! requests whose special-token text must stay text are refused rather
//! than parsed.

use std::sync::Arc;

use super::{DecodeStyle, Decoder, Encoder, Tokenizer};
use crate::encoding::Encoding;
use crate::error::{Error, Result};
use crate::special::{SpecialToken, SpecialTokens};

/// A tokenizer of your own, for [`Tokenizer::from_backend`](crate::Tokenizer::from_backend):
/// encode one text, decode ids, answer vocabulary queries.
///
/// Six methods are required; the others have defaults that suit a backend
/// with no special tokens and no byte-level decoder. The handle adds
/// metrics, prompt caches, chat templates, token budgets and streaming on
/// top, so a backend only tokenizes. It is never cut into parallel chunks.
///
/// ```
/// use router_tokenizer::traits::Backend;
/// use router_tokenizer::{Encoding, Format, Result, Tokenizer};
///
/// /// One id per byte.
/// struct Bytes;
///
/// impl Backend for Bytes {
///     fn backend_name(&self) -> &'static str {
///         "bytes"
///     }
///     fn encode(&self, text: &str, _add_special_tokens: bool) -> Result<Encoding> {
///         Ok(Encoding::from_ids(text.bytes().map(u32::from).collect()))
///     }
///     fn decode(&self, ids: &[u32], _skip_special_tokens: bool) -> Result<String> {
///         let bytes: Vec<u8> = ids.iter().filter_map(|&id| u8::try_from(id).ok()).collect();
///         Ok(String::from_utf8_lossy(&bytes).into_owned())
///     }
///     fn vocab_size(&self) -> usize {
///         256
///     }
///     fn token_to_id(&self, token: &str) -> Option<u32> {
///         match token.as_bytes() {
///             [b] => Some(u32::from(*b)),
///             _ => None,
///         }
///     }
///     fn id_to_token(&self, id: u32) -> Option<String> {
///         u8::try_from(id).ok().map(|b| char::from(b).to_string())
///     }
/// }
///
/// let tok = Tokenizer::from_backend(std::sync::Arc::new(Bytes), Format::HfJson);
/// assert_eq!(tok.encode("hi", false)?.ids(), &[104, 105]);
/// assert_eq!(tok.decode(&[104, 105], false)?, "hi");
/// # Ok::<(), router_tokenizer::Error>(())
/// ```
pub trait Backend: Send + Sync {
    /// Which backend this is: the `backend` label of its metrics, and the
    /// `tokenizer` label too (a plugged-in backend has no source).
    fn backend_name(&self) -> &'static str;

    /// Encodes `text`. With `add_special_tokens`, BOS/EOS (or whatever the
    /// model wraps a sequence in) are added around it.
    fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Encoding>;

    /// Decodes `ids`. Unknown ids are an error
    /// ([`ErrorKind::UnknownTokenId`](crate::ErrorKind::UnknownTokenId)),
    /// never a panic.
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String>;

    /// Number of ids, added tokens included (one past the largest id).
    fn vocab_size(&self) -> usize;

    /// The id of a token, in the tokenizer's own spelling.
    fn token_to_id(&self, token: &str) -> Option<u32>;

    /// The token of an id, in the tokenizer's own spelling.
    fn id_to_token(&self, id: u32) -> Option<String>;

    /// Like [`encode`](Self::encode), with one byte span per id
    /// ([`Encoding::with_offsets`]): `[start, end)` into `text`, never going
    /// backwards; tokens of one character share its span or split it by
    /// byte. The default fails with
    /// [`ErrorKind::Backend`](crate::ErrorKind::Backend): offsets (and the
    /// chat layer's per-message ranges) are then unavailable.
    fn encode_with_offsets(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        let _ = (text, add_special_tokens);
        Err(Error::backend(
            self.backend_name(),
            "this backend computes no offsets",
        ))
    }

    /// bos/eos/unk/pad/… and additional special tokens (the handle's
    /// [`eos_token_ids`](crate::Tokenizer::eos_token_ids) is the eos
    /// token's id). The default is none.
    fn special_tokens(&self) -> &SpecialTokens {
        &NO_SPECIAL_TOKENS
    }

    /// Whether `id` is a special (control) token, skipped by
    /// `skip_special_tokens`. The default: whether
    /// [`special_tokens`](Self::special_tokens) names it.
    fn is_special_id(&self, id: u32) -> bool {
        let specials = self.special_tokens();
        specials.named().any(|(_, t)| t.id == id) || specials.additional.iter().any(|t| t.id == id)
    }

    /// The added tokens that are not special but that every encode still
    /// matches as one id; the chat layer decides which of them are control
    /// markers a request may not forge. The default is none.
    fn added_tokens(&self) -> Vec<SpecialToken> {
        Vec::new()
    }

    /// Whether [`encode`](Self::encode) parses special-token text as
    /// special tokens (as [`SpecialTokenPolicy::Parse`](crate::SpecialTokenPolicy::Parse)
    /// does). The default is `true`.
    fn parses_special_text(&self) -> bool {
        true
    }

    /// How [`decode`](Self::decode) combines tokens, which picks the
    /// streaming algorithm. The default, [`DecodeStyle::Windowed`], is
    /// exact for any decoder; a byte style is faster and needs
    /// [`token_bytes`](Self::token_bytes).
    fn decode_style(&self) -> DecodeStyle {
        DecodeStyle::Windowed
    }

    /// The bytes one id contributes to a decode, for the byte styles
    /// ([`DecodeStyle::ByteConcat`], [`DecodeStyle::ByteConcatWithStart`]);
    /// `None` for unknown ids. The default is `None`.
    fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        let _ = id;
        None
    }

    /// The bytes of `id` where the [`StartRule`](crate::traits::StartRule)
    /// says the start of a text renders differently. The default is
    /// [`token_bytes`](Self::token_bytes).
    fn first_token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.token_bytes(id)
    }

    /// The byte a byte-fallback piece (`<0x0D>`) stands for, so windowed
    /// streams wait for a run of them to end. The default is `None`.
    fn byte_piece(&self, id: u32) -> Option<u8> {
        let _ = id;
        None
    }

    /// Builds whatever the backend builds lazily, blocking until it is
    /// ready ([`Tokenizer::warm_up`](crate::Tokenizer::warm_up)). The
    /// default does nothing.
    fn warm_up(&self) {}
}

/// [`Backend::special_tokens`]' default.
static NO_SPECIAL_TOKENS: SpecialTokens = SpecialTokens {
    bos: None,
    eos: None,
    unk: None,
    pad: None,
    sep: None,
    cls: None,
    mask: None,
    additional: Vec::new(),
};

/// A user's [`Backend`] behind the internal traits, with their defaults for
/// every hook it has no counterpart of.
pub(crate) struct Plugged(pub(crate) Arc<dyn Backend>);

impl Encoder for Plugged {
    fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        self.0.encode(text, add_special_tokens)
    }

    fn encode_with_offsets(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        self.0.encode_with_offsets(text, add_special_tokens)
    }

    fn parses_special_text(&self) -> bool {
        self.0.parses_special_text()
    }

    fn warm_up(&self) {
        self.0.warm_up();
    }
}

impl Decoder for Plugged {
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        self.0.decode(ids, skip_special_tokens)
    }

    fn decode_style(&self) -> DecodeStyle {
        self.0.decode_style()
    }

    fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.0.token_bytes(id)
    }

    fn first_token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.0.first_token_bytes(id)
    }

    fn byte_piece(&self, id: u32) -> Option<u8> {
        self.0.byte_piece(id)
    }
}

impl Tokenizer for Plugged {
    fn backend_name(&self) -> &'static str {
        self.0.backend_name()
    }

    fn vocab_size(&self) -> usize {
        self.0.vocab_size()
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.0.token_to_id(token)
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        self.0.id_to_token(id)
    }

    fn is_special_id(&self, id: u32) -> bool {
        self.0.is_special_id(id)
    }

    fn special_tokens(&self) -> &SpecialTokens {
        self.0.special_tokens()
    }

    fn added_tokens(&self) -> Vec<SpecialToken> {
        self.0.added_tokens()
    }
}
