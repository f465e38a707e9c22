//! [`EncodeOptions`]: what one [`Tokenizer::encode_with`](crate::Tokenizer::encode_with)
//! call asks for, in place of one method per combination.

/// Which path one encode takes: the handle's policy (with its prompt
/// caches), the calling thread alone, or a forced split that reports what
/// it did.
///
/// Every path returns the same ids (and offsets): they differ in speed,
/// in what they reuse, and in what they report. Per call, where
/// [`ParallelMode`](crate::ParallelMode) is the handle's policy that
/// [`Parallelism::Auto`] follows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Parallelism {
    /// What [`Tokenizer::encode`](crate::Tokenizer::encode) does: the
    /// handle's [`ParallelOptions`](crate::ParallelOptions) decide whether a
    /// long text is cut into chunks, and an encode without offsets goes
    /// through the handle's L0/L1 prompt caches when they are on and apply.
    #[default]
    Auto,
    /// On the calling thread, straight to the backend: never cut into
    /// chunks, and never through the prompt caches (neither read nor
    /// filled). The reference encoding every other path equals, and what a
    /// benchmark of the backend itself times.
    Sequential,
    /// The parallel path whatever the text's size, with the handle's chunk
    /// plan (when its family allows and its mode is not
    /// [`ParallelMode::Never`](crate::ParallelMode::Never)), bypassing the
    /// prompt caches. The encoding carries a [`ParallelReport`](crate::ParallelReport)
    /// ([`Encoding::parallel_report`](crate::Encoding::parallel_report)):
    /// for tests, benchmarks and diagnosis.
    Split,
    /// [`Split`](Self::Split) with chunks starting at the allowed edges
    /// nearest these byte positions instead of at even intervals (positions
    /// at 0 or past the end are ignored); the encoding carries the report.
    SplitAt(Vec<usize>),
}

/// What one [`Tokenizer::encode_with`](crate::Tokenizer::encode_with) call
/// asks for: special tokens, offsets and the encode path.
///
/// The default is [`Tokenizer::encode`](crate::Tokenizer::encode)`(text,
/// false)`: no BOS/EOS, ids only, [`Parallelism::Auto`]. Non-exhaustive, so
/// options can be added without breaking callers: build it with the
/// `with_…` setters.
///
/// ```
/// use router_tokenizer::{EncodeOptions, Parallelism};
/// let tok = router_tokenizer::create_tokenizer("o200k_base")?;
/// let options = EncodeOptions::new().with_offsets(true);
/// let enc = tok.encode_with("Hello, world!", &options)?;
/// assert_eq!(enc.offsets(), Some(&[(0, 5), (5, 6), (6, 12), (12, 13)][..]));
/// let sequential = options.with_parallelism(Parallelism::Sequential);
/// assert_eq!(tok.encode_with("Hello, world!", &sequential)?, enc);
/// # Ok::<(), router_tokenizer::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct EncodeOptions {
    add_special_tokens: bool,
    offsets: bool,
    parallelism: Parallelism,
}

impl EncodeOptions {
    /// The defaults: no special tokens, no offsets, [`Parallelism::Auto`].
    pub fn new() -> Self {
        Self::default()
    }

    /// With BOS/EOS (or the post-processor's template) added around the
    /// sequence as the model expects, or not.
    pub fn with_add_special_tokens(mut self, on: bool) -> Self {
        self.add_special_tokens = on;
        self
    }

    /// With one byte span per id ([`Encoding::offsets`](crate::Encoding::offsets)),
    /// or not. Encodes with offsets never use the prompt caches, which
    /// keep ids only.
    pub fn with_offsets(mut self, on: bool) -> Self {
        self.offsets = on;
        self
    }

    /// Taking another encode path (see [`Parallelism`]).
    pub fn with_parallelism(mut self, parallelism: Parallelism) -> Self {
        self.parallelism = parallelism;
        self
    }

    /// Whether BOS/EOS are added.
    pub fn add_special_tokens(&self) -> bool {
        self.add_special_tokens
    }

    /// Whether offsets are computed.
    pub fn offsets(&self) -> bool {
        self.offsets
    }

    /// The encode path.
    pub fn parallelism(&self) -> &Parallelism {
        &self.parallelism
    }
}
