//! Streaming detokenization: [`DecodeStream`], [`Sequence`], [`StopSequenceDecoder`].

mod kmp;
mod sequence;
mod stop;
mod stream;

pub use sequence::Sequence;
pub use stop::{BatchOutput, MatchedStop, Output, StopConfig, StopSequenceDecoder};
pub use stream::{DecodeStream, UnknownIds};
