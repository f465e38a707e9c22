//! Streaming detokenization: [`DecodeStream`], [`Sequence`], [`StopSequenceDecoder`].

mod kmp;
mod logprob;
mod sequence;
mod stop;
mod stream;

pub use logprob::TokenText;
pub(crate) use logprob::token_raw_bytes;
pub use sequence::Sequence;
pub use stop::{BatchOutput, MatchedStop, Output, StopConfig, StopReason, StopSequenceDecoder};
pub use stream::{DecodeStream, UnknownIds};
