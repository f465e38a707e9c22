//! Text normalization exactly as sentencepiece's `normalizer.cc` (0.2.x).
//!
//! - The precompiled charsmap is a darts-clone double array (stored
//!   little-endian in the model) plus a blob of NUL-terminated replacement
//!   strings. At each position the longest matching rule among the first 32
//!   matches wins; without a match one UTF-8 character is copied (an invalid
//!   byte becomes U+FFFD and consumes one byte).
//! - User-defined symbols are matched first and copied unnormalized.
//! - `remove_extra_whitespaces` drops leading spaces, collapses runs, and
//!   drops trailing space marks; `add_dummy_prefix` adds one space mark in
//!   front (or at the end with `treat_whitespace_as_suffix`);
//!   `escape_whitespaces` turns `' '` into U+2581.
//! - `norm_to_orig[i]` is the input byte offset of the chunk that produced
//!   normalized byte `i`; it has one extra final entry.
//!
//! [`Flavor::LlamaCpp`] is llama.cpp's `llm_tokenizer_ugm_session::normalize`
//! (GGUF `t5` vocabularies): the same chunks (user-defined symbols, then the
//! charsmap, whose walk stops at a NUL byte and keeps the longest of all
//! matches), but its own whitespace pass: a space mark is written before
//! the first non-space byte of the text when `add_dummy_prefix`, and with
//! `remove_extra_whitespaces` before every run of non-space bytes while
//! spaces themselves are dropped (so the first word gets a mark even without
//! the dummy prefix, and a text of spaces normalizes to nothing).

use super::error::SpmError;
use super::proto::NormalizerSpec;
use super::trie::Trie;
use super::unigram::Flavor;
use super::utf8::{
    REPLACEMENT, SPACE_MARK, char_len_at, three_byte_at, three_byte_index, valid_decode,
};

/// Results of the charsmap trie considered per position (`kMaxTrieResultsSize`).
const MAX_CHARSMAP_RESULTS: usize = 32;
/// Results of the user-defined prefix matcher considered per position.
const MAX_MATCHER_RESULTS: usize = 64;

/// A validated precompiled charsmap.
#[derive(Debug, Clone)]
pub(crate) struct CharsMap {
    units: Vec<u32>,
    normalized: Vec<u8>,
    /// The walk's first step for every ASCII byte but NUL (invariant
    /// `sentencepiece-fast-paths-exact`).
    ascii: Box<[AsciiStep; 128]>,
    /// Bit `cp`: the three-byte char `cp` starts no key and holds none, so
    /// the charsmap leaves it as it is whatever follows (invariant
    /// `sentencepiece-fast-paths-exact`).
    identity3: Box<[u64; 1024]>,
}

/// What the charsmap holds for a key starting with an ASCII byte `b`: the
/// value of the key `b` itself, and which ASCII bytes `c` continue a longer
/// key `b c …`. Where the next byte of the text continues none, the longest
/// match at `b` is `b` alone, so the walk needs no double-array load.
#[derive(Debug, Clone, Copy, Default)]
struct AsciiStep {
    /// The value of the key `b` ([`NO_VALUE`] for none).
    value: u32,
    /// Bit `c`: some key starts with `b c`.
    next: u128,
    /// The table does not settle `b` (NUL): the walk runs.
    walk: bool,
}

const NO_VALUE: u32 = u32::MAX;

#[inline]
fn has_leaf(u: u32) -> bool {
    (u >> 8) & 1 == 1
}
#[inline]
fn unit_value(u: u32) -> u32 {
    u & 0x7FFF_FFFF
}
#[inline]
fn label(u: u32) -> u32 {
    u & (0x8000_0000 | 0xFF)
}
#[inline]
fn offset(u: u32) -> usize {
    ((u >> 10) << ((u & (1 << 9)) >> 6)) as usize
}

impl CharsMap {
    /// Decodes and validates `<trie size u32 LE><double array><NUL-terminated strings>`
    /// with the checks of sentencepiece 0.2.3 (`DecodePrecompiledCharsMap` and
    /// darts-clone `validate`).
    pub(crate) fn from_blob(blob: &[u8], spec: &'static str) -> Result<Self, SpmError> {
        let err = |reason| SpmError::Charsmap { spec, reason };
        if blob.len() <= 4 {
            return Err(err("blob is shorter than its 4-byte header"));
        }
        let mut head = [0u8; 4];
        head.copy_from_slice(&blob[..4]);
        let trie_size = u32::from_le_bytes(head) as usize;
        if trie_size >= blob.len() - 4 {
            return Err(err("trie size exceeds the blob"));
        }
        if trie_size < 1024 || trie_size & 0x3FF != 0 {
            return Err(err("trie size is not a positive multiple of 1024"));
        }
        let trie = &blob[4..4 + trie_size];
        let normalized = blob[4 + trie_size..].to_vec();
        if normalized.last() != Some(&0) {
            return Err(err("replacement block is not NUL-terminated"));
        }
        let units: Vec<u32> = trie
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if !validate(&units, normalized.len()) {
            return Err(err("double array failed validation"));
        }
        let mut map = Self {
            units,
            normalized,
            ascii: Box::new([AsciiStep::default(); 128]),
            identity3: Box::new([0; 1024]),
        };
        map.ascii = Box::new(std::array::from_fn(|b| map.ascii_step(b as u8)));
        map.identity3 = map.identity3();
        Ok(map)
    }

    /// The walk's step from `node_pos` along `b`: `None` where the array
    /// ends (on which [`Self::longest_prefix`] gives up: no match at all),
    /// else the next node position and the edge's unit if the edge exists.
    fn step(&self, node_pos: usize, b: u8) -> Option<Option<(usize, u32)>> {
        let pos = node_pos ^ usize::from(b);
        let unit = *self.units.get(pos)?;
        Some((label(unit) == u32::from(b)).then_some((pos ^ offset(unit), unit)))
    }

    /// [`AsciiStep`] of `b`, read off the double array (NUL, which
    /// llama.cpp's walk stops at, gets none).
    fn ascii_step(&self, b: u8) -> AsciiStep {
        let none = AsciiStep {
            value: NO_VALUE,
            next: 0,
            walk: true,
        };
        let Some(root) = self.units.first().map(|&u| offset(u)) else {
            return none;
        };
        if b == 0 {
            return none;
        }
        let (pos, unit) = match self.step(root, b) {
            Some(Some(edge)) => edge,
            Some(None) => {
                return AsciiStep {
                    value: NO_VALUE,
                    next: 0,
                    walk: false,
                };
            }
            None => return none,
        };
        let value = if has_leaf(unit) {
            match self.units.get(pos) {
                Some(&v) => unit_value(v),
                None => return none,
            }
        } else {
            NO_VALUE
        };
        let mut next = 0u128;
        for c in 0..128u8 {
            match self.step(pos, c) {
                Some(Some(_)) => next |= 1 << c,
                Some(None) => {}
                // A walk that runs off the array finds nothing, even `b`.
                None => return none,
            }
        }
        AsciiStep {
            value,
            next,
            walk: false,
        }
    }

    /// [`Self::identity3`], read off the double array: the walk of a
    /// three-byte char that leaves the trie before its last byte, passing
    /// no value, finds no match at it whatever follows.
    fn identity3(&self) -> Box<[u64; 1024]> {
        let mut bits = Box::new([0u64; 1024]);
        let Some(root) = self.units.first().map(|&u| offset(u)) else {
            return bits;
        };
        // The walk one byte on from `at`: `Some(None)` once it has left
        // the trie (no key goes on), `Some(Some(pos))` inside it past no
        // value, `None` where it passes a value or the array ends (a match
        // may start here).
        let next = |at: Option<usize>, b: u8| -> Option<Option<usize>> {
            let Some(pos) = at else {
                return Some(None);
            };
            match self.step(pos, b)? {
                None => Some(None),
                Some((p, unit)) if !has_leaf(unit) && self.units.get(p).is_some() => Some(Some(p)),
                Some(_) => None,
            }
        };
        for b0 in 0xE0..=0xEFu8 {
            let Some(n1) = next(Some(root), b0) else {
                continue;
            };
            for b1 in 0x80..=0xBFu8 {
                let Some(n2) = next(n1, b1) else {
                    continue;
                };
                for b2 in 0x80..=0xBFu8 {
                    let cp = three_byte_at(b0, b1, b2);
                    // Overlong forms and surrogates decode to code points
                    // outside these; `valid_decode` does not copy them.
                    let valid = cp >= 0x800 && !(0xD800..0xE000).contains(&cp);
                    if valid
                        && next(n2, b2) == Some(None)
                        && let Some(w) = bits.get_mut(cp / 64)
                    {
                        *w |= 1 << (cp % 64);
                    }
                }
            }
        }
        bits
    }

    /// Whether the three bytes at the start of `input` are a char the
    /// charsmap leaves as it is ([`Self::identity3`]).
    #[inline(always)]
    fn is_identity3(&self, input: &[u8]) -> bool {
        three_byte_index(input).is_some_and(|cp| {
            self.identity3
                .get(cp / 64)
                .is_some_and(|w| (w >> (cp % 64)) & 1 != 0)
        })
    }

    /// The longest match at an ASCII byte `input[0]` when the table
    /// settles it: `Some(None)` for no match, `Some(Some(value))` for the
    /// one-byte key; `None` when the walk must run.
    #[inline(always)]
    fn ascii_prefix(&self, input: &[u8]) -> Option<Option<usize>> {
        let &b = input.first()?;
        let step = self.ascii.get(usize::from(b))?;
        let continues = step.walk
            || match input.get(1) {
                None => false,
                Some(&c) if c < 0x80 => step.next & (1 << c) != 0,
                Some(_) => true,
            };
        if continues {
            return None;
        }
        Some((step.value != NO_VALUE).then_some(step.value as usize))
    }

    /// How many bytes at the start of `input` the charsmap leaves as they
    /// are, one char each: ASCII bytes other than `' '` with no rule of
    /// their own that the next byte cannot extend (invariant `sentencepiece-fast-paths-exact`), and
    /// three-byte chars that start no rule (invariant `sentencepiece-fast-paths-exact`).
    #[inline]
    fn identity_run(&self, input: &[u8]) -> usize {
        let mut i = 0;
        while let Some(&b) = input.get(i) {
            if b >= 0x80 {
                if self.is_identity3(input.get(i..).unwrap_or_default()) {
                    i += 3;
                    continue;
                }
                break;
            }
            let Some(step) = self
                .ascii
                .get(usize::from(b))
                .filter(|s| !s.walk && s.value == NO_VALUE && b != b' ')
            else {
                break;
            };
            match input.get(i + 1) {
                Some(&c) if c >= 0x80 || step.next & (1 << c) != 0 => break,
                _ => i += 1,
            }
        }
        i
    }

    /// darts-clone `commonPrefixSearch`, keeping the longest of the first 32
    /// results: returns `(length, value)`. With `llama`, llama.cpp's walk:
    /// it stops at a NUL byte and keeps the longest of all results.
    #[inline]
    fn longest_prefix(&self, key: &[u8], llama: bool) -> Option<(usize, usize)> {
        let limit = if llama {
            usize::MAX
        } else {
            MAX_CHARSMAP_RESULTS
        };
        let units = &self.units;
        let mut node_pos = offset(*units.first()?);
        let mut found = None;
        let mut count = 0usize;
        for (i, &b) in key.iter().enumerate() {
            if llama && b == 0 {
                break;
            }
            node_pos ^= usize::from(b);
            let unit = *units.get(node_pos)?;
            if label(unit) != u32::from(b) {
                break;
            }
            node_pos ^= offset(unit);
            if has_leaf(unit) {
                let v = unit_value(*units.get(node_pos)?) as usize;
                found = Some((i + 1, v));
                count += 1;
                if count == limit {
                    break;
                }
            }
        }
        found
    }

    /// The NUL-terminated replacement string starting at `value`.
    fn replacement(&self, value: usize) -> &[u8] {
        let tail = self.normalized.get(value..).unwrap_or_default();
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        &tail[..end]
    }
}

/// darts-clone `DoubleArrayImpl::validate(max_value_limit)`.
fn validate(units: &[u32], max_value: usize) -> bool {
    let size = units.len();
    let Some(&u0) = units.first() else {
        return false;
    };
    if label(u0) != 0 || has_leaf(u0) || offset(u0) == 0 || (offset(u0) | 0xFF) >= size {
        return false;
    }
    let limit = i32::try_from(max_value).ok();
    for (i, &u) in units.iter().enumerate().skip(1) {
        if label(u) <= 0xFF {
            if ((i ^ offset(u)) | 0xFF) >= size {
                return false;
            }
            if has_leaf(u) && units.get(i ^ offset(u)).is_none_or(|&l| label(l) <= 0xFF) {
                return false;
            }
        } else if let Some(limit) = limit
            && unit_value(u) as i64 >= i64::from(limit)
        {
            return false;
        }
    }
    true
}

/// Longest-prefix matcher over user-defined symbols (`PrefixMatcher`).
#[derive(Debug, Clone)]
pub(crate) struct PrefixMatcher {
    trie: Option<Trie>,
}

impl PrefixMatcher {
    /// Builds the matcher; `symbols` yields (piece bytes, piece id).
    pub(crate) fn new<'a>(symbols: impl IntoIterator<Item = (&'a [u8], u32)>) -> Self {
        let trie = Trie::build(symbols);
        Self {
            trie: (trie.len() > 0).then_some(trie),
        }
    }

    /// Whether there is any user-defined symbol.
    pub(crate) fn is_empty(&self) -> bool {
        self.trie.is_none()
    }

    /// `PrefixMatch`: `Some((len, id))` for the longest symbol (among the
    /// first 64 prefix matches) at the start of `w`.
    #[inline]
    pub(crate) fn find(&self, w: &[u8]) -> Option<(usize, u32)> {
        let trie = self.trie.as_ref()?;
        let mut best = None;
        let mut count = 0;
        trie.for_each_prefix(w, |len, id| {
            best = Some((len, id));
            count += 1;
            count < MAX_MATCHER_RESULTS
        });
        best
    }

    /// `PrefixMatch` length: the symbol length if one matches, else the
    /// length of one character (`OneCharLen`, clipped to `w`).
    #[inline]
    pub(crate) fn prefix_len(&self, w: &[u8]) -> (usize, bool) {
        match self.find(w) {
            Some((len, _)) => (len, true),
            None => (char_len_at(w), false),
        }
    }
}

/// The normalizer for one `NormalizerSpec`.
#[derive(Debug, Clone)]
pub(crate) struct Normalizer {
    charsmap: Option<CharsMap>,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    escape_whitespaces: bool,
    treat_whitespace_as_suffix: bool,
    flavor: Flavor,
}

impl Normalizer {
    /// Builds a normalizer; `spec_name` names the spec in errors.
    pub(crate) fn new(
        spec: &NormalizerSpec,
        treat_whitespace_as_suffix: bool,
        spec_name: &'static str,
    ) -> Result<Self, SpmError> {
        let charsmap = if spec.precompiled_charsmap.is_empty() {
            None
        } else {
            Some(CharsMap::from_blob(&spec.precompiled_charsmap, spec_name)?)
        };
        Ok(Self {
            charsmap,
            add_dummy_prefix: spec.add_dummy_prefix,
            remove_extra_whitespaces: spec.remove_extra_whitespaces,
            escape_whitespaces: spec.escape_whitespaces,
            treat_whitespace_as_suffix,
            flavor: Flavor::SentencePiece,
        })
    }

    /// The same normalizer following `flavor`'s rules.
    pub(crate) fn with_flavor(mut self, flavor: Flavor) -> Self {
        self.flavor = flavor;
        self
    }

    /// Whether a charsmap is present (its output may not be UTF-8).
    pub(crate) fn has_charsmap(&self) -> bool {
        self.charsmap.is_some()
    }

    #[inline]
    fn space(&self) -> &'static [u8] {
        if self.escape_whitespaces {
            SPACE_MARK
        } else {
            b" "
        }
    }

    /// `NormalizePrefix`: the normalized form of the first chunk of `input`
    /// (non-empty) and the number of input bytes it consumes.
    #[inline]
    fn normalize_prefix<'a>(
        &'a self,
        input: &'a [u8],
        matcher: Option<&PrefixMatcher>,
    ) -> (&'a [u8], usize) {
        if let Some(m) = matcher
            && let Some((len, _)) = m.find(input)
        {
            return (&input[..len], len);
        }
        if let Some(cm) = &self.charsmap {
            if let Some(found) = cm.ascii_prefix(input) {
                return match found {
                    Some(value) if value < cm.normalized.len() => (cm.replacement(value), 1),
                    _ => (&input[..1], 1),
                };
            }
            let llama = self.flavor == Flavor::LlamaCpp;
            if let Some((len, value)) = cm.longest_prefix(input, llama)
                && len <= input.len()
                && value < cm.normalized.len()
            {
                return (cm.replacement(value), len);
            }
        }
        let (valid, len) = valid_decode(input);
        if valid {
            (&input[..len.min(input.len())], len.min(input.len()))
        } else {
            (REPLACEMENT, 1)
        }
    }

    /// Normalizes `input` into `out` (cleared first). With `n2o`, also fills
    /// the normalized-to-input byte offset map (`out.len() + 1` entries, or
    /// none when the output is empty).
    pub(crate) fn normalize(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        mut n2o: Option<&mut Vec<usize>>,
        matcher: Option<&PrefixMatcher>,
    ) {
        out.clear();
        if let Some(m) = n2o.as_deref_mut() {
            m.clear();
        }
        if input.is_empty() {
            return;
        }
        let matcher = matcher.filter(|m| !m.is_empty());
        if self.flavor == Flavor::LlamaCpp {
            self.normalize_llama(input, out, n2o, matcher);
            return;
        }
        // Fast path: without a charsmap every chunk is copied verbatim, and
        // without whitespace removal chunk boundaries do not matter.
        if n2o.is_none() && self.charsmap.is_none() && !self.remove_extra_whitespaces {
            self.normalize_verbatim(input, out);
            return;
        }
        let (input, consumed) = self.skip_leading_spaces(input, matcher);
        if input.is_empty() {
            return;
        }
        out.reserve(input.len() + input.len() / 2);
        if let Some(m) = n2o.as_deref_mut() {
            m.reserve(input.len() + input.len() / 2);
        }
        let space = self.space();
        if !self.treat_whitespace_as_suffix && self.add_dummy_prefix {
            push_space(space, out, &mut n2o, consumed);
        }
        let mut consumed = self.normalize_body(input, consumed, out, &mut n2o, matcher);
        if self.remove_extra_whitespaces {
            while out.ends_with(space) {
                let length = out.len() - space.len();
                if let Some(m) = n2o.as_deref_mut() {
                    consumed = m.get(length).copied().unwrap_or(consumed);
                    m.truncate(length);
                }
                out.truncate(length);
            }
        }
        if self.treat_whitespace_as_suffix && self.add_dummy_prefix {
            push_space(space, out, &mut n2o, consumed);
        }
        if let Some(m) = n2o {
            m.push(consumed);
        }
    }

    /// [`normalize`](Self::normalize) without a charsmap, whitespace removal
    /// or offsets: the input copied with spaces escaped and the dummy prefix
    /// (or suffix) added.
    #[inline]
    fn normalize_verbatim(&self, input: &[u8], out: &mut Vec<u8>) {
        let space = self.space();
        out.reserve(input.len() + input.len() / 4 + 8);
        if !self.treat_whitespace_as_suffix && self.add_dummy_prefix {
            out.extend_from_slice(space);
        }
        if self.escape_whitespaces {
            for &b in input {
                if b == b' ' {
                    out.extend_from_slice(SPACE_MARK);
                } else {
                    out.push(b);
                }
            }
        } else {
            out.extend_from_slice(input);
        }
        if self.treat_whitespace_as_suffix && self.add_dummy_prefix {
            out.extend_from_slice(space);
        }
    }

    /// With whitespace removal, the input after its leading chunks that
    /// normalize to one space, and the bytes skipped.
    #[inline]
    fn skip_leading_spaces<'a>(
        &self,
        mut input: &'a [u8],
        matcher: Option<&PrefixMatcher>,
    ) -> (&'a [u8], usize) {
        let mut consumed = 0usize;
        if self.remove_extra_whitespaces {
            while !input.is_empty() {
                let (sp, n) = self.normalize_prefix(input, matcher);
                if sp != b" " {
                    break;
                }
                input = &input[n..];
                consumed += n;
            }
        }
        (input, consumed)
    }

    /// [`normalize`](Self::normalize)'s chunk loop over `input` (which
    /// starts `consumed` bytes into the original input): each chunk
    /// normalized and appended with spaces escaped (repeated spaces merged
    /// with whitespace removal); returns the bytes consumed in all.
    #[inline]
    fn normalize_body(
        &self,
        mut input: &[u8],
        mut consumed: usize,
        out: &mut Vec<u8>,
        n2o: &mut Option<&mut Vec<usize>>,
        matcher: Option<&PrefixMatcher>,
    ) -> usize {
        let space = self.space();
        let mut is_prev_space = self.remove_extra_whitespaces;
        // Runs the charsmap leaves as they are, copied whole where no
        // user-defined symbol can start inside them.
        let identity = self.charsmap.as_ref().filter(|_| matcher.is_none());
        while !input.is_empty() {
            let run = identity.map_or(0, |cm| cm.identity_run(input));
            if run > 0 {
                out.extend_from_slice(&input[..run]);
                if let Some(m) = n2o.as_deref_mut() {
                    // Every byte of a char maps to the char's start.
                    let mut j = 0;
                    while j < run {
                        let len = if input[j] < 0x80 { 1 } else { 3 };
                        m.extend(std::iter::repeat_n(consumed + j, len));
                        j += len;
                    }
                }
                consumed += run;
                input = &input[run..];
                is_prev_space = false;
                continue;
            }
            let (mut sp, n) = self.normalize_prefix(input, matcher);
            while is_prev_space && sp.first() == Some(&b' ') {
                sp = &sp[1..];
            }
            if !sp.is_empty() {
                for &b in sp {
                    if b == b' ' {
                        push_space(space, out, n2o, consumed);
                    } else {
                        out.push(b);
                        if let Some(m) = n2o.as_deref_mut() {
                            m.push(consumed);
                        }
                    }
                }
                is_prev_space = sp.last() == Some(&b' ');
            }
            consumed += n;
            input = &input[n..];
            if !self.remove_extra_whitespaces {
                is_prev_space = false;
            }
        }
        consumed
    }

    /// llama.cpp's UGM `normalize` (see the module notes); same contract as
    /// [`normalize`](Self::normalize), except that an output with no byte
    /// still gets its final `n2o` entry when the input was not empty.
    fn normalize_llama(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        mut n2o: Option<&mut Vec<usize>>,
        matcher: Option<&PrefixMatcher>,
    ) {
        let space = self.space();
        let prepend = !self.treat_whitespace_as_suffix && self.add_dummy_prefix;
        let append = self.treat_whitespace_as_suffix && self.add_dummy_prefix;
        let merge = self.remove_extra_whitespaces;
        out.reserve(input.len() + input.len() / 2);
        let mut prepended = false;
        let mut in_word = false;
        let mut consumed = 0usize;
        let add_ws = |out: &mut Vec<u8>, n2o: &mut Option<&mut Vec<usize>>, at: usize| {
            out.extend_from_slice(space);
            if let Some(m) = n2o.as_deref_mut() {
                m.extend(std::iter::repeat_n(at, space.len()));
            }
        };
        while consumed < input.len() {
            let (sp, n) = self.normalize_prefix(&input[consumed..], matcher);
            for &c in sp {
                if c != b' ' {
                    if !in_word {
                        in_word = true;
                        if (prepend && !prepended) || merge {
                            add_ws(out, &mut n2o, consumed);
                            prepended = true;
                        }
                    }
                    out.push(c);
                    if let Some(m) = n2o.as_deref_mut() {
                        m.push(consumed);
                    }
                } else {
                    in_word = false;
                    if !merge {
                        add_ws(out, &mut n2o, consumed);
                    }
                }
            }
            consumed += n.max(1);
        }
        if append {
            add_ws(out, &mut n2o, consumed);
        }
        if let Some(m) = n2o {
            m.push(consumed);
        }
    }
}

/// Appends the space symbol `space` to `out`, its offset-map entries all
/// `at`.
#[inline]
fn push_space(space: &[u8], out: &mut Vec<u8>, n2o: &mut Option<&mut Vec<usize>>, at: usize) {
    out.extend_from_slice(space);
    if let Some(m) = n2o.as_deref_mut() {
        m.extend(std::iter::repeat_n(at, space.len()));
    }
}

#[cfg(test)]
mod llama_tests;
#[cfg(test)]
mod tests;
