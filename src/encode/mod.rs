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
//! Module map: [`family`] classifies tokenizers, `split` holds the pure
//! functions (edges, cut search), `parallel` the orchestration and options.

pub(crate) mod budget;
pub(crate) mod family;
mod options;
pub(crate) mod parallel;
pub(crate) mod split;

pub use budget::{Chunk, Chunks, Side, TokenCounter};
pub use family::SplitFamily;
pub use options::{EncodeOptions, Parallelism};
pub use parallel::{ParallelMode, ParallelOptions, ParallelReport};

/// What a backend declares so its encodes can be cut into chunks.
///
/// Built once when the backend is built; returned by
/// [`Encoder::split_spec`](crate::backend::Encoder::split_spec).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SplitSpec {
    /// Which merge rule applies.
    pub family: SplitFamily,
    /// Ids `add_special_tokens` puts before the sequence (BOS, `[CLS]`), added
    /// once around the merged result.
    pub prefix: Vec<u32>,
    /// Ids `add_special_tokens` puts after the sequence (EOS, `[SEP]`).
    pub suffix: Vec<u32>,
    /// Byte length of the longest ordinary token (the intra-word rule keeps a
    /// cut at least this far from both edges of the overlap).
    pub max_token_bytes: usize,
    /// Where chunk edges may fall.
    pub edges: EdgeRule,
    /// Inputs shorter than this are encoded sequentially by default (bytes):
    /// below it, on two cores, the fork and join cost more than the second
    /// core saves. Measured per backend with `rtok bench`.
    pub min_bytes: usize,
}

impl SplitSpec {
    /// A spec with the given family and special-token ids.
    pub fn new(
        family: SplitFamily,
        prefix: Vec<u32>,
        suffix: Vec<u32>,
        max_token_bytes: usize,
        edges: EdgeRule,
    ) -> Self {
        Self {
            family,
            prefix,
            suffix,
            max_token_bytes,
            edges,
            min_bytes: Self::DEFAULT_MIN_BYTES,
        }
    }

    /// [`min_bytes`](Self::min_bytes) when a backend declares none.
    pub const DEFAULT_MIN_BYTES: usize = 64 * 1024;

    /// The same spec with another default threshold.
    pub fn with_min_bytes(mut self, min_bytes: usize) -> Self {
        self.min_bytes = min_bytes;
        self
    }

    /// A spec that keeps the backend sequential, with the reason.
    pub fn sequential(reason: &'static str) -> Self {
        Self::new(
            SplitFamily::Sequential(reason),
            Vec::new(),
            Vec::new(),
            0,
            EdgeRule::default(),
        )
    }
}

/// Which byte positions may start or end a chunk.
///
/// A position `x` is allowed when it is a char boundary and
/// - no occurrence of any added or special token (overlapping search, so
///   whatever the scan state) straddles `x`: a chunk then finds exactly the
///   leftmost-longest matches the whole text has on its side of `x`;
/// - with a normalizer, the char at `x` is one no normalizer combines with
///   what precedes it (ASCII, or a starter that is NFC- and NFKC-stable);
/// - with `lstrip`/`rstrip` added tokens, neither neighbour is whitespace;
///   with `single_word` ones, neither neighbour is a word char.
#[derive(Clone, Default)]
pub struct EdgeRule {
    /// Bit `a * 256 + b` is set when bytes `a`, `b` occur consecutively inside
    /// an added token: a quick "certainly allowed" test.
    inner_pairs: Option<Box<[u64; 1024]>>,
    /// The added tokens, and an overlapping matcher over them built on first use.
    tokens: Vec<Box<str>>,
    matcher: std::sync::OnceLock<Option<aho_corasick::AhoCorasick>>,
    max_len: usize,
    /// A normalizer may rewrite text.
    pub normalizes: bool,
    /// Some added token strips whitespace around itself.
    pub no_whitespace_edges: bool,
    /// Some added token only matches as a whole word.
    pub no_word_edges: bool,
}

impl std::fmt::Debug for EdgeRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeRule")
            .field("tokens", &self.tokens.len())
            .field("normalizes", &self.normalizes)
            .field("no_whitespace_edges", &self.no_whitespace_edges)
            .field("no_word_edges", &self.no_word_edges)
            .finish()
    }
}

impl EdgeRule {
    /// Forbids edges inside `content` wherever it occurs (an added token).
    pub fn add_token(&mut self, content: &str) {
        let bytes = content.as_bytes();
        if bytes.len() < 2 {
            return;
        }
        let pairs = self
            .inner_pairs
            .get_or_insert_with(|| Box::new([0u64; 1024]));
        for w in bytes.windows(2) {
            let bit = usize::from(w[0]) * 256 + usize::from(w[1]);
            pairs[bit / 64] |= 1 << (bit % 64);
        }
        self.tokens.push(content.into());
        self.max_len = self.max_len.max(bytes.len());
        self.matcher = std::sync::OnceLock::new();
    }

    fn inner_pair(&self, a: u8, b: u8) -> bool {
        self.inner_pairs.as_ref().is_some_and(|pairs| {
            let bit = usize::from(a) * 256 + usize::from(b);
            pairs[bit / 64] & (1 << (bit % 64)) != 0
        })
    }

    /// Whether some added token occurs across `pos`.
    fn straddled(&self, text: &str, pos: usize) -> bool {
        let bytes = text.as_bytes();
        if !self.inner_pair(bytes[pos - 1], bytes[pos]) {
            return false;
        }
        let matcher = self.matcher.get_or_init(|| {
            aho_corasick::AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::Standard)
                .build(self.tokens.iter().map(|t| t.as_bytes()))
                .ok()
        });
        let Some(matcher) = matcher else {
            return true;
        };
        let lo = pos.saturating_sub(self.max_len - 1);
        let hi = (pos + self.max_len - 1).min(bytes.len());
        let window = &bytes[lo..hi];
        matcher
            .find_overlapping_iter(window)
            .any(|m| lo + m.start() < pos && lo + m.end() > pos)
    }

    /// Byte length of the longest added token (0 when there are none): how
    /// far past a position text can still change whether it is allowed.
    pub(crate) fn max_token_len(&self) -> usize {
        self.max_len
    }

    /// Whether a chunk may start (or end) at byte `pos` of `text`.
    pub fn allows(&self, text: &str, pos: usize) -> bool {
        if pos == 0 || pos >= text.len() || !text.is_char_boundary(pos) {
            return false;
        }
        if self.straddled(text, pos) {
            return false;
        }
        let (Some(before), Some(after)) =
            (text[..pos].chars().next_back(), text[pos..].chars().next())
        else {
            return false;
        };
        if self.normalizes && !split::stable_char(after) {
            return false;
        }
        if self.no_whitespace_edges && (before.is_whitespace() || after.is_whitespace()) {
            return false;
        }
        // The reference's `\w` (what `single_word` tests), and the
        // standard library's alphanumerics besides: never a cut either way.
        let word = |c: char| c.is_alphanumeric() || c == '_' || split::is_word_char(c);
        if self.no_word_edges && (word(before) || word(after)) {
            return false;
        }
        true
    }
}

/// What the parallel encoder asks of one chunk encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChunkRequest {
    /// Report spans and pre-token boundaries for every token that starts
    /// before this many bytes from the chunk start.
    pub head: usize,
    /// ... and for every token that ends after `len - tail`.
    pub tail: usize,
    /// Also return the span of every token ([`ChunkEncoding::offsets`]).
    pub all_offsets: bool,
    /// Size the ids buffer for a text of this many bytes when it is longer
    /// than the chunk (0: the chunk's own length). The merge adopts the
    /// first chunk's buffer as its output, so that chunk asks for the whole
    /// input's room and the other chunks' ids are appended without a move.
    pub reserve_bytes: usize,
}

impl ChunkRequest {
    /// A request for the given head and tail windows.
    pub fn new(head: usize, tail: usize, all_offsets: bool) -> Self {
        Self {
            head,
            tail,
            all_offsets,
            reserve_bytes: 0,
        }
    }

    /// The same request with room for the ids of `bytes` bytes of text.
    pub fn with_reserve(mut self, bytes: usize) -> Self {
        self.reserve_bytes = bytes;
        self
    }
}

/// One chunk's encoding: ids, plus spans and pre-token boundaries near its ends.
///
/// All positions are byte offsets into the chunk's text. Spans follow the
/// rules of [`Encoder::encode_with_offsets`](crate::backend::Encoder::encode_with_offsets)
/// (monotone; tokens of one char share its span). A backend may report more
/// than was asked (a longer head, a longer tail, more boundaries), never less.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChunkEncoding {
    /// Every id of the chunk, without BOS/EOS.
    pub ids: Vec<u32>,
    /// Spans of `ids[..head.len()]`: at least every token starting before `request.head`.
    pub head: Vec<(usize, usize)>,
    /// Index of the first id whose span is in `tail`.
    pub tail_first: usize,
    /// Spans of `ids[tail_first..]`: at least every token ending after `len - request.tail`.
    pub tail: Vec<(usize, usize)>,
    /// Ascending positions where a pre-token, an added token or a text segment
    /// starts or ends: every one inside both windows, plus the last one before
    /// the tail window and the first one after the head window.
    pub boundaries: Vec<usize>,
    /// Every token's span, when `request.all_offsets`.
    pub offsets: Option<Vec<(usize, usize)>>,
}

impl ChunkEncoding {
    /// Builds the windows from a full set of spans (for backends whose
    /// offsets are cheap). `boundaries` are the pre-token boundaries the
    /// backend knows; `keep_offsets` keeps `spans` as [`Self::offsets`].
    pub fn from_spans(
        ids: Vec<u32>,
        spans: Vec<(usize, usize)>,
        len: usize,
        request: &ChunkRequest,
        boundaries: Vec<usize>,
    ) -> Self {
        let head_n = spans.partition_point(|&(s, _)| s < request.head);
        let tail_from = len.saturating_sub(request.tail);
        // Spans are monotone, so tokens ending after `tail_from` are a suffix.
        let tail_first = spans.partition_point(|&(_, e)| e <= tail_from);
        let head = spans[..head_n].to_vec();
        let tail = spans[tail_first..].to_vec();
        Self {
            ids,
            head,
            tail_first,
            tail,
            boundaries,
            offsets: request.all_offsets.then_some(spans),
        }
    }

    /// Whether the fields agree with each other (lengths, order).
    pub(crate) fn is_consistent(&self, len: usize) -> bool {
        let n = self.ids.len();
        let monotone = |s: &[(usize, usize)]| {
            s.iter().all(|&(a, b)| a <= b && b <= len)
                && s.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1)
        };
        self.head.len() <= n
            && self.tail_first <= n
            && self.tail_first + self.tail.len() == n
            && monotone(&self.head)
            && monotone(&self.tail)
            && self.boundaries.windows(2).all(|w| w[0] <= w[1])
            && self.boundaries.last().is_none_or(|&b| b <= len)
            && self.offsets.as_ref().is_none_or(|o| o.len() == n)
    }
}
