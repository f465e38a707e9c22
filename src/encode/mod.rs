//! Lossless parallel encoding of long inputs (LoPT).
//!
//! A long text is cut into overlapping chunks that are encoded on the rayon
//! pool; neighbouring chunks are then stitched at a position where both
//! chunks provably agree with the sequential encoding. The merge rule and the
//! argument for each tokenizer family are in `docs/lopt.md`; in short:
//!
//! 1. chunk edges never fall inside an added/special-token match, nor before
//!    a character a normalizer may combine with its neighbour ([`EdgeRule`]);
//! 2. a cut `p` needs the token before `p` and the token after `p` to be
//!    identical in both chunks (id and byte span), alone on their spans, and
//!    away from the chunk edges;
//! 3. per family ([`SplitFamily`]): `p` is a pre-token boundary in both
//!    chunks (regex, char-local and BERT pre-tokenizers), or lies deep inside
//!    one long pre-token (BPE only), or rule 2 alone (BPE without a
//!    pre-tokenizer). Unigram over unsplit text is never cut.
//!
//! When no cut is found the left chunk grows over the right one and the
//! search goes on; past four chunk lengths the rest is encoded in one piece,
//! and past the retry budget the whole text is encoded sequentially. The
//! result is always the sequential encoding.
//!
//! Module map: the chunk contracts (`SplitSpec`, `EdgeRule`, `ChunkRequest`,
//! `ChunkEncoding`) live below the backends in `contract`, with
//! `contract::family` (classifies tokenizers) and `contract::split` (the pure
//! functions: edges, cut search); `parallel` holds the orchestration and
//! options, `budget` the token-budget searches.

pub(crate) mod budget;
mod counter;
mod options;
pub(crate) mod parallel;

pub(crate) use crate::contract::split;
pub use crate::contract::{ChunkEncoding, ChunkRequest, EdgeRule, SplitFamily, SplitSpec};
pub use budget::Side;
pub use counter::{Chunk, Chunks, TokenCounter};
pub use options::{EncodeOptions, Parallelism};
pub use parallel::{ParallelMode, ParallelOptions, ParallelReport};
