//! [`Encoding`]: the ids of one encode, with optional byte offsets.

/// The result of encoding one text.
///
/// Ids are stored once and lent out as `&[u32]`; offsets are present only when
/// they were asked for ([`EncodeOptions::with_offsets`](crate::EncodeOptions::with_offsets)).
///
/// Two encodings are equal when their ids and offsets are: the
/// [`parallel_report`](Self::parallel_report) says how the ids were found,
/// not what they are, so a split encode equals the sequential one.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Encoding {
    ids: Vec<u32>,
    /// `[[start, end], …]`; left out when not computed.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    offsets: Option<Vec<(usize, usize)>>,
    /// What a forced split did (boxed: every other encoding carries a null
    /// pointer only). Diagnostics, never serialized.
    #[cfg_attr(feature = "serde", serde(skip))]
    report: Option<Box<ParallelReport>>,
}

impl PartialEq for Encoding {
    fn eq(&self, other: &Self) -> bool {
        self.ids == other.ids && self.offsets == other.offsets
    }
}

impl Eq for Encoding {}

impl Encoding {
    /// An encoding with ids only.
    pub fn from_ids(ids: Vec<u32>) -> Self {
        Self {
            ids,
            offsets: None,
            report: None,
        }
    }

    /// An encoding with ids and one byte span per id.
    ///
    /// Returns `None` when the lengths differ.
    pub fn with_offsets(ids: Vec<u32>, offsets: Vec<(usize, usize)>) -> Option<Self> {
        (ids.len() == offsets.len()).then_some(Self {
            ids,
            offsets: Some(offsets),
            report: None,
        })
    }

    /// What the parallel encoder did (chunks, cuts, growths, fallbacks) on
    /// an encode under [`Parallelism::Split`](crate::Parallelism::Split) or
    /// [`SplitAt`](crate::Parallelism::SplitAt); `None` on every other
    /// path, which reports nothing.
    pub fn parallel_report(&self) -> Option<&ParallelReport> {
        self.report.as_deref()
    }

    /// The same encoding carrying `report`.
    pub(crate) fn with_report(mut self, report: ParallelReport) -> Self {
        self.report = Some(Box::new(report));
        self
    }

    /// The token ids.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// Byte spans `[start, end)` into the input, one per id, when computed.
    ///
    /// Special tokens added by the post-processor (BOS, EOS) get an empty span at
    /// the position where they were inserted.
    pub fn offsets(&self) -> Option<&[(usize, usize)]> {
        self.offsets.as_deref()
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no tokens.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Takes the ids out.
    pub fn into_ids(self) -> Vec<u32> {
        self.ids
    }

    /// Takes ids and offsets out.
    pub fn into_parts(self) -> (Vec<u32>, Option<Vec<(usize, usize)>>) {
        (self.ids, self.offsets)
    }

    /// A hash of the ids that is stable across runs, platforms and releases.
    ///
    /// It is 64-bit FNV-1a over the ids as little-endian `u32`s, so a cache key
    /// computed by one process matches another's. Written by hand because the
    /// std and Fx hashers do not promise stability across releases.
    pub fn stable_hash(&self) -> u64 {
        stable_hash(&self.ids)
    }
}

/// Assembles a backend's [`Encoding`]: the ids `add_special_tokens` puts
/// before the sequence (empty spans at 0), the sequence, then the ids after
/// it (empty spans at the end of the text). Every backend wraps its sequence
/// this way, so it is written once.
pub(crate) struct EncodingBuilder<'a> {
    pub(crate) ids: Vec<u32>,
    pub(crate) offsets: Option<Vec<(usize, usize)>>,
    suffix: &'a [u32],
}

impl<'a> EncodingBuilder<'a> {
    /// Starts with `prefix` when `add_special_tokens`; `capacity` is a guess
    /// at the sequence length.
    pub(crate) fn new(
        prefix: &[u32],
        suffix: &'a [u32],
        add_special_tokens: bool,
        capacity: usize,
        with_offsets: bool,
    ) -> Self {
        let (prefix, suffix) = if add_special_tokens {
            (prefix, suffix)
        } else {
            (&[][..], &[][..])
        };
        let capacity = capacity + prefix.len() + suffix.len();
        let mut ids = Vec::with_capacity(capacity);
        ids.extend_from_slice(prefix);
        let offsets = with_offsets.then(|| {
            let mut offsets = Vec::with_capacity(capacity);
            offsets.resize(prefix.len(), (0, 0));
            offsets
        });
        Self {
            ids,
            offsets,
            suffix,
        }
    }

    /// Appends the suffix; `backend` names the culprit if ids and spans disagree.
    pub(crate) fn finish(
        mut self,
        text_len: usize,
        backend: &'static str,
    ) -> crate::Result<Encoding> {
        self.ids.extend_from_slice(self.suffix);
        match self.offsets {
            None => Ok(Encoding::from_ids(self.ids)),
            Some(mut offsets) => {
                offsets.resize(offsets.len() + self.suffix.len(), (text_len, text_len));
                Encoding::with_offsets(self.ids, offsets)
                    .ok_or_else(|| crate::Error::backend(backend, "offsets do not match ids"))
            }
        }
    }
}

/// 64-bit FNV-1a over `ids` as little-endian bytes.
pub(crate) fn stable_hash(ids: &[u32]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for id in ids {
        for b in id.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(PRIME);
        }
    }
    h
}

impl AsRef<[u32]> for Encoding {
    fn as_ref(&self) -> &[u32] {
        &self.ids
    }
}

/// What one parallel encode did: [`Encoding::parallel_report`] of an encode
/// under [`Parallelism::Split`](crate::Parallelism::Split) or
/// [`SplitAt`](crate::Parallelism::SplitAt).
// Defined here, below the parallel encoder, because an `Encoding` carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParallelReport {
    /// Chunks encoded (before any growth).
    pub chunks: usize,
    /// Cuts accepted (merges).
    pub cuts: usize,
    /// Of those, cuts inside one long pre-token.
    pub intra_word_cuts: usize,
    /// Times a chunk grew over its neighbour because no cut was found.
    pub grows: usize,
    /// Whether the rest of the text past four chunk lengths was encoded in one piece.
    pub grow_limit: bool,
    /// Why the whole text was encoded sequentially instead, if it was.
    pub fallback: Option<&'static str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_hash_is_fixed() {
        // FNV-1a of the empty input is the offset basis.
        assert_eq!(stable_hash(&[]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(
            Encoding::from_ids(vec![1, 2, 3]).stable_hash(),
            0xfd1f_0f43_81eb_0395
        );
    }

    #[test]
    fn offsets_must_match_ids() {
        assert!(Encoding::with_offsets(vec![1], vec![]).is_none());
        let e = Encoding::with_offsets(vec![7], vec![(0, 3)]).unwrap();
        assert_eq!(e.offsets(), Some(&[(0, 3)][..]));
    }
}
