//! Streaming detokenization: [`DecodeStream`], [`Sequence`], [`StopSequenceDecoder`].

mod sequence;
mod stop;
mod stream;

pub use sequence::Sequence;
pub use stop::{MatchedStop, Output, StopConfig, StopSequenceDecoder};
pub use stream::DecodeStream;
