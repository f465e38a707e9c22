//! tiktoken backend: OpenAI's built-in encodings and custom rank files
//! (`*.tiktoken`, Llama-3 style `tokenizer.model`).
//!
//! Ordinary text runs on the crate's byte-level BPE engine ([`fast`]: the
//! native pre-tokenizer and `tokenizers`' BPE, with merges derived from the
//! ranks), built in the background. Until it is built, and for segments it
//! must not take (invariant `unicode-classes-are-reference`) or patterns it has no grammar for,
//! text runs on
//! the rank path: pieces from the native grammar where it applies, else from
//! `fancy-regex` ([`pieces`]), each a rank lookup or tiktoken's byte-pair
//! merge ([`merge`], invariant `native-pieces-equal-regex`). The backend keeps its own
//! id → bytes table (decode, offsets, streaming, `id_to_token`) and splits
//! out special tokens itself with aho-corasick, which also gives their spans.

pub(crate) mod encodings;
pub(crate) mod fast;
mod merge;
mod pieces;
pub(crate) mod ranks;

use aho_corasick::{AhoCorasick, MatchKind};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use tokenizers::pipeline::PreTokenizerScratch;

use crate::backend::byte_level;
use crate::backend::{BuildCancel, BuildGuard, DecodeStyle, Decoder, Encoder, Tokenizer};
use crate::contract::family::is_known_pattern;
use crate::contract::{ChunkEncoding, ChunkRequest, EdgeRule, SplitFamily, SplitSpec};
use crate::encoding::{Encoding, EncodingBuilder};
use crate::error::{Error, Result};
use crate::special::SpecialTokenPolicy;
use crate::special::{SpecialToken, SpecialTokens};

const NAME: &str = "tiktoken";

/// What a tiktoken tokenizer is built from.
pub(crate) struct TiktokenSpec {
    /// Ordinary tokens: bytes and rank (= id).
    pub ranks: FxHashMap<Vec<u8>, u32>,
    /// Special tokens: text and id.
    pub specials: Vec<(String, u32)>,
    /// The pre-tokenizer regex (a file's own, for Tekken).
    pub pattern: Cow<'static, str>,
    /// Which special tokens play which role.
    pub roles: SpecialRoles,
    /// BOS added by `add_special_tokens` (Llama-3 rank files, Tekken), if any.
    pub add_bos: Option<u32>,
    /// Decode each run of ordinary ids apart from the specials between them,
    /// as mistral-common's Tekkenizer does (a skipped special then never
    /// joins the bytes on its two sides into one char).
    pub runs_apart: bool,
}

/// Role names for special tokens, by content.
#[derive(Default, Clone)]
pub(crate) struct SpecialRoles {
    pub bos: Option<String>,
    pub eos: Option<String>,
    pub unk: Option<String>,
    pub pad: Option<String>,
}

/// The id of a token spelled in the byte-level alphabet, or of a special
/// token's text; an ordinary token wins where both spell the same.
///
/// Read through the ranks rather than a map of 200,000 spellings: that map
/// took about 30 ms of every o200k load, for a lookup made a few times per
/// tokenizer.
fn spelled_id(
    ranks: &FxHashMap<Vec<u8>, u32>,
    special_ids: &FxHashMap<String, u32>,
    token: &str,
) -> Option<u32> {
    byte_level::unspell(token)
        .and_then(|bytes| ranks.get(&bytes).copied())
        .or_else(|| special_ids.get(token).copied())
}

pub(crate) struct TiktokenBackend {
    /// Ordinary tokens → rank, for the regex path and the engine's build.
    ranks: Arc<FxHashMap<Vec<u8>, u32>>,
    /// The byte-level engine (invariant `background-build-invisible`): built by a background thread
    /// from
    /// load on; `None` inside when the pattern has no grammar or the build
    /// failed. Until it is set, encodes take the regex path.
    fast: Arc<OnceLock<Option<fast::FastBpe>>>,
    /// The pattern on the native grammar, built at load: the engine's
    /// splitter, and the rank path's where the grammar applies (invariant
    /// `native-pieces-equal-regex`).
    /// `None`: no grammar, so no engine.
    native: Option<Arc<fast::NativeSplit>>,
    /// Flat token bytes; `spans[id]` indexes into it (`u32::MAX` start = hole).
    bytes: Vec<u8>,
    spans: Vec<(u32, u32)>,
    /// Special token text → id (the first of a shared id's names wins
    /// nothing here: every name encodes to its id).
    special_ids: FxHashMap<String, u32>,
    special_matcher: Option<AhoCorasick>,
    /// Id of each special-matcher pattern.
    special_pattern_ids: Vec<u32>,
    special_flags: Vec<bool>,
    special_tokens: SpecialTokens,
    policy: SpecialTokenPolicy,
    add_bos: Option<u32>,
    alphabet: [char; 256],
    /// The pre-tokenizer regex, for the chunk encoder.
    pattern: Cow<'static, str>,
    /// See [`TiktokenSpec::runs_apart`].
    runs_apart: bool,
    /// How whitespace runs are cut without the regex (built-in patterns).
    ws_rule: Option<pieces::WsRule>,
    split: SplitSpec,
    /// The regex path's regexes, built on first use.
    chunker: OnceLock<std::result::Result<Chunker, String>>,
    /// Cancels the engine's background build when the backend is dropped
    /// (issue 39); `None` where no thread builds it.
    _build: Option<BuildGuard>,
}

/// What the regex path needs beyond the ranks.
struct Chunker {
    /// One regex per thread slot, compiled on the slot's first use: clones
    /// of one `fancy_regex::Regex` share the inner matchers' caches, so
    /// threads encoding chunks side by side would serialize on them.
    regexes: Vec<OnceLock<Option<fancy_regex::Regex>>>,
}

/// Regex slots for the chunk encoder: every thread gets its own compiled
/// regex (by a per-thread slot), up to this many threads.
const REGEX_CLONES: usize = 64;

/// A small number fixed per thread, for picking a regex clone.
fn thread_slot() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    SLOT.with(|s| *s)
}

/// The chunk encoder's running state.
struct ChunkState {
    ids: Vec<u32>,
    /// Spans of the ids listed in `known`.
    spans: Vec<(usize, usize)>,
    known: Vec<usize>,
    bounds: Vec<usize>,
    head: usize,
    tail_from: usize,
    all: bool,
}

impl ChunkState {
    /// A state that collects ids only (no spans, no chunk edges).
    fn ids_only(ids: Vec<u32>) -> Self {
        Self {
            ids,
            spans: Vec::new(),
            known: Vec::new(),
            bounds: Vec::new(),
            head: 0,
            tail_from: usize::MAX,
            all: false,
        }
    }

    fn touches(&self, start: usize, end: usize) -> bool {
        self.all || start < self.head || end > self.tail_from
    }
}

/// Rank sets smaller than this build the byte-level engine at load, on the
/// caller's thread (it takes milliseconds); larger ones on a thread of their own.
const SYNC_BUILD_RANKS: usize = 16_384;

/// A segment this long waits for the byte-level engine rather than taking
/// the regex path: at the regex path's 5–20 MB/s it would take longer than
/// the rest of the build (under a second for o200k).
const WAIT_FOR_ENGINE: usize = 8 << 20;

/// From this segment length the rank path remembers each merged piece for
/// the rest of the call (invariant `cache-transparent`).
const PIECE_MEMO_MIN_BYTES: usize = 4 << 10;

/// Pieces merged earlier in one rank-path call, and their ids: a piece's
/// ids depend on its bytes alone, and prose and code repeat their words.
/// Text whose merged pieces do not repeat (Chinese clauses) turns it off:
/// after [`Self::TRIAL`] stored pieces with under one hit in eight, it stops
/// storing and looking up.
struct PieceMemo<'s> {
    on: bool,
    at: FxHashMap<&'s [u8], (usize, usize)>,
    ids: Vec<u32>,
    hits: usize,
}

impl<'s> PieceMemo<'s> {
    const TRIAL: usize = 512;

    fn new(on: bool) -> Self {
        Self {
            on,
            at: FxHashMap::default(),
            ids: Vec::new(),
            hits: 0,
        }
    }

    fn get(&mut self, piece: &[u8]) -> Option<&[u32]> {
        if !self.on {
            return None;
        }
        let &(start, len) = self.at.get(piece)?;
        self.hits += 1;
        self.ids.get(start..start + len)
    }

    fn insert(&mut self, piece: &'s [u8], ids: &[u32]) {
        if !self.on || self.at.contains_key(piece) {
            return;
        }
        if self.at.len() >= Self::TRIAL && self.hits * 8 < self.at.len() {
            self.on = false;
            return;
        }
        self.at.insert(piece, (self.ids.len(), ids.len()));
        self.ids.extend_from_slice(ids);
    }
}

impl TiktokenBackend {
    pub(crate) fn new(spec: TiktokenSpec, policy: SpecialTokenPolicy) -> Result<Self> {
        let TiktokenSpec {
            ranks,
            specials,
            pattern,
            roles,
            add_bos,
            runs_apart,
        } = spec;
        let max_id = ranks
            .values()
            .copied()
            .chain(specials.iter().map(|(_, id)| *id))
            .max()
            .ok_or_else(|| Error::backend(NAME, "empty vocabulary"))?;
        // Tables are sized by the largest id: it must be in proportion with the entries.
        if u64::from(max_id) > crate::limits::id_bound(ranks.len() + specials.len()) {
            return Err(Error::backend(
                NAME,
                format!(
                    "token id {max_id} is out of range for {} entries",
                    ranks.len() + specials.len()
                ),
            ));
        }
        let vocab_size = usize::try_from(max_id)
            .map_err(|_| Error::backend(NAME, "id out of range"))?
            .saturating_add(1);
        let mut spans = vec![(u32::MAX, 0u32); vocab_size];
        let mut bytes = Vec::with_capacity(ranks.len() * 7);
        let alphabet = byte_level::byte_to_char_table();
        let mut special_ids =
            FxHashMap::with_capacity_and_hasher(specials.len(), Default::default());
        let mut special_flags = vec![false; vocab_size];
        let mut push = |id: u32, token: &[u8], bytes: &mut Vec<u8>| -> Result<()> {
            let slot = &mut spans[id as usize];
            if slot.0 != u32::MAX {
                return Err(Error::backend(NAME, format!("two tokens share id {id}")));
            }
            let start = u32::try_from(bytes.len())
                .map_err(|_| Error::backend(NAME, "vocabulary too large"))?;
            let len =
                u32::try_from(token.len()).map_err(|_| Error::backend(NAME, "token too long"))?;
            *slot = (start, len);
            bytes.extend_from_slice(token);
            Ok(())
        };
        for (token, &id) in &ranks {
            push(id, token, &mut bytes)?;
        }
        for (text, id) in &specials {
            // Two special names may share an id (o200k_harmony's `<|endofprompt|>`
            // and `<|reserved_200018|>`): both encode to it; the first decodes it.
            if !special_flags[*id as usize] {
                push(*id, text.as_bytes(), &mut bytes)?;
            }
            special_ids.entry(text.clone()).or_insert(*id);
            special_flags[*id as usize] = true;
        }
        let (special_matcher, special_pattern_ids) = if specials.is_empty() {
            (None, Vec::new())
        } else {
            let matcher = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(specials.iter().map(|(t, _)| t.as_str()))
                .map_err(|e| Error::backend(NAME, format!("special-token matcher: {e}")))?;
            (Some(matcher), specials.iter().map(|(_, id)| *id).collect())
        };
        let find = |content: &Option<String>| -> Option<SpecialToken> {
            let content = content.as_ref()?;
            let id = spelled_id(&ranks, &special_ids, content)?;
            Some(SpecialToken {
                content: content.clone(),
                id,
            })
        };
        let mut special_tokens = SpecialTokens {
            bos: find(&roles.bos),
            eos: find(&roles.eos),
            unk: find(&roles.unk),
            pad: find(&roles.pad),
            ..SpecialTokens::default()
        };
        let mut additional: Vec<SpecialToken> = specials
            .iter()
            .map(|(content, id)| SpecialToken {
                content: content.clone(),
                id: *id,
            })
            .collect();
        additional.sort_by_key(|t| t.id);
        special_tokens.additional = additional;

        let mut edges = EdgeRule::default();
        for (text, _) in &specials {
            edges.add_token(text);
        }
        let family = if is_known_pattern(&pattern) {
            SplitFamily::RegexBpe
        } else {
            SplitFamily::Sequential("pre-tokenizer regex without a lossless cut argument")
        };
        let max_token_bytes = ranks.keys().map(Vec::len).max().unwrap_or(0);
        let split = SplitSpec::new(
            family,
            add_bos.into_iter().collect(),
            Vec::new(),
            max_token_bytes,
            edges,
        )
        // On the byte-level engine tiktoken encodes at the byte-level
        // `tokenizer.json` speed, so it takes that path's threshold; the
        // regex path (5–20 MB/s) pays from a few pages on (`rtok bench`).
        .with_min_bytes(32 << 10);
        // Patterns without a grammar, and rank files the byte-level engine
        // cannot hold (hostile ones: a byte missing, a huge token), keep the
        // regex path, which gives the same ids.
        let ranks = Arc::new(ranks);
        let fast: Arc<OnceLock<Option<fast::FastBpe>>> = Arc::new(OnceLock::new());
        let native = fast::NativeSplit::new(&pattern).ok().map(Arc::new);
        let mut build = None;
        let split = if let Some(grammar) = &native {
            if ranks.len() < SYNC_BUILD_RANKS {
                let engine = fast::FastBpe::new(&ranks, Arc::clone(grammar), &BuildCancel::never());
                let _ = fast.set(engine.ok());
            } else {
                let (guard, cancel) = BuildGuard::new();
                build = Some(guard);
                let (cell, ranks, grammar) =
                    (Arc::clone(&fast), Arc::clone(&ranks), Arc::clone(grammar));
                // If no thread can be had, the first encode that needs the
                // engine (or `warm_up`) builds it. Once the backend is gone
                // the build stops at its next stage: the cell it fills then
                // holds `None`, read by no one.
                let _ = std::thread::Builder::new()
                    .name("rtok-tiktoken-bpe".into())
                    .spawn(move || {
                        if cancel.cancelled() {
                            return;
                        }
                        cell.get_or_init(|| fast::FastBpe::new(&ranks, grammar, &cancel).ok());
                    });
            }
            // Re-measured once the chunk encoder recorded only its windows
            // (`docs/perf/design_log/lopt.md` (entry 304)): below this some runs were slower.
            split.with_min_bytes(256 << 10)
        } else {
            let _ = fast.set(None);
            split
        };
        Ok(Self {
            ranks,
            fast,
            bytes,
            spans,
            special_ids,
            special_matcher,
            special_pattern_ids,
            special_flags,
            special_tokens,
            policy,
            add_bos,
            alphabet,
            ws_rule: pieces::ws_rule(&pattern),
            pattern,
            runs_apart,
            split,
            chunker: OnceLock::new(),
            native,
            _build: build,
        })
    }

    fn chunker(&self) -> Result<&Chunker> {
        let built = self.chunker.get_or_init(|| {
            // Fail early on a bad pattern.
            let regex = fancy_regex::Regex::new(&self.pattern).map_err(|e| e.to_string())?;
            let regexes: Vec<OnceLock<Option<fancy_regex::Regex>>> =
                (0..REGEX_CLONES).map(|_| OnceLock::new()).collect();
            if let Some(first) = regexes.first() {
                let _ = first.set(Some(regex));
            }
            Ok(Chunker { regexes })
        });
        built
            .as_ref()
            .map_err(|e| Error::backend(NAME, format!("chunk encoder: {e}")))
    }

    /// This thread's regex clone.
    fn chunk_regex<'c>(&self, chunker: &'c Chunker) -> Result<&'c fancy_regex::Regex> {
        let slot = thread_slot() % chunker.regexes.len().max(1);
        chunker
            .regexes
            .get(slot)
            .and_then(|r| {
                r.get_or_init(|| fancy_regex::Regex::new(&self.pattern).ok())
                    .as_ref()
            })
            .ok_or_else(|| Error::backend(NAME, "no chunk regex"))
    }

    /// The chunk encoder: `CoreBPE::encode`'s loop (regex pieces, then a rank
    /// lookup or byte-pair merge), keeping piece boundaries and token spans
    /// near both ends.
    fn encode_chunk_impl(&self, text: &str, request: &ChunkRequest) -> Result<ChunkEncoding> {
        let len = text.len();
        let (head, tail_from, all) = if request.all_offsets {
            (len, 0, true)
        } else {
            (
                request.head.min(len),
                len.saturating_sub(request.tail),
                false,
            )
        };
        let mut st = ChunkState {
            // The sequential encode's estimate.
            ids: Vec::with_capacity(len.max(request.reserve_bytes) / 3 + 1),
            spans: Vec::new(),
            known: Vec::new(),
            bounds: vec![0, len],
            head,
            tail_from,
            all,
        };
        let mut start = 0;
        if self.policy == SpecialTokenPolicy::Parse
            && let Some(matcher) = &self.special_matcher
        {
            for m in matcher.find_iter(text) {
                self.chunk_ordinary(&text[start..m.start()], start, &mut st)?;
                let id = self.special_pattern_ids[m.pattern().as_usize()];
                if st.touches(m.start(), m.end()) {
                    st.known.push(st.ids.len());
                    st.spans.push((m.start(), m.end()));
                    st.bounds.extend([m.start(), m.end()]);
                }
                st.ids.push(id);
                start = m.end();
            }
        }
        self.chunk_ordinary(&text[start..], start, &mut st)?;
        let ChunkState {
            ids,
            spans,
            known,
            mut bounds,
            ..
        } = st;
        bounds.sort_unstable();
        bounds.dedup();
        if all {
            return Ok(ChunkEncoding::from_spans(ids, spans, len, request, bounds));
        }
        let n = ids.len();
        let head_n = known
            .iter()
            .enumerate()
            .take_while(|&(k, &i)| k == i)
            .count();
        let tail_n = known
            .iter()
            .rev()
            .enumerate()
            .take_while(|&(k, &i)| i + k + 1 == n)
            .count();
        Ok(ChunkEncoding {
            head: spans[..head_n].to_vec(),
            tail_first: n - tail_n,
            tail: spans[spans.len() - tail_n..].to_vec(),
            ids,
            boundaries: bounds,
            offsets: None,
        })
    }

    /// One run of ordinary text at chunk position `base`: the byte-level
    /// engine when it takes the segment, else the regex path.
    fn chunk_ordinary(&self, segment: &str, base: usize, st: &mut ChunkState) -> Result<()> {
        if segment.is_empty() {
            return Ok(());
        }
        if let Some(fast) = self.engine(segment.len()) {
            let first = st.ids.len();
            let (head, tail_from, bounds) = (st.head, st.tail_from, &mut st.bounds);
            // Pre-tokens touching a window are a prefix (start before `head`)
            // and a suffix (end after `tail_from`) of the segment's.
            let taken = fast
                .encode_with_pieces(segment, &mut st.ids, |pieces| {
                    let lo = pieces.partition_point(|p| base + (p.start as usize) < head);
                    let hi = pieces
                        .partition_point(|p| base + (p.end as usize) <= tail_from)
                        .max(lo);
                    for p in pieces[..lo].iter().chain(&pieces[hi..]) {
                        bounds.extend([base + p.start as usize, base + p.end as usize]);
                    }
                })
                .map_err(|e| Error::backend(NAME, e))?;
            if taken {
                self.window_spans(base, base + segment.len(), first, st);
                return Ok(());
            }
        }
        self.regex_ordinary(segment, base, st)
    }

    /// Spans of the tokens `st.ids[first..]` that touch a window, the
    /// tokens covering `[start, end)` exactly (byte-level BPE): summed
    /// forward from `start` through the head window and backward from `end`
    /// through the tail window, so the middle of a chunk costs no lookups.
    fn window_spans(&self, start: usize, end: usize, first: usize, st: &mut ChunkState) {
        let len = |id: u32| self.bytes_of(id).map_or(0, <[u8]>::len);
        let n = st.ids.len();
        let (mut i, mut p) = (first, start);
        while i < n && (st.all || p < st.head) {
            let q = p + len(st.ids[i]);
            st.known.push(i);
            st.spans.push((p, q));
            (i, p) = (i + 1, q);
        }
        // The tail's first token, found backwards; recorded in id order, and
        // never one the head walk took (short chunks: the windows overlap).
        let (mut j, mut q) = (n, end);
        while j > i && q > st.tail_from {
            q = q.saturating_sub(len(st.ids[j - 1]));
            j -= 1;
        }
        for k in j..n {
            let r = q + len(st.ids[k]);
            st.known.push(k);
            st.spans.push((q, r));
            q = r;
        }
    }

    /// The regex path: `fancy-regex` pieces (whitespace runs cut without
    /// it), then a rank lookup or tiktoken's byte-pair merge per piece.
    fn regex_ordinary(&self, segment: &str, base: usize, st: &mut ChunkState) -> Result<()> {
        // The native grammar's pieces where it applies (invariants `native-pieces-equal-regex` and
        // `unicode-classes-are-reference`: the
        // regex's pieces), else the regex's.
        let mut memo = PieceMemo::new(segment.len() >= PIECE_MEMO_MIN_BYTES);
        if let Some(native) = &self.native {
            let mut spans = Vec::new();
            if native
                .spans(segment, &mut PreTokenizerScratch::default(), &mut spans)
                .map_err(|e| Error::backend(NAME, format!("pre-tokenizing: {e}")))?
            {
                for span in &spans {
                    let (start, end) = (span.start as usize, span.end as usize);
                    self.rank_piece(segment, start, end, base, st, &mut memo)?;
                }
                return Ok(());
            }
        }
        let chunker = self.chunker()?;
        let regex = self.chunk_regex(chunker)?;
        for m in pieces::Pieces::new(regex, segment, self.ws_rule) {
            let (start, end) =
                m.map_err(|e| Error::backend(NAME, format!("regex error while tokenizing: {e}")))?;
            self.rank_piece(segment, start, end, base, st, &mut memo)?;
        }
        Ok(())
    }

    /// tiktoken's merge of one piece `segment[start..end]` (the whole piece
    /// when it is a token), its ids appended to `st`; a piece that is not a
    /// token is merged once per call (`memo`).
    fn rank_piece<'s>(
        &self,
        segment: &'s str,
        start: usize,
        end: usize,
        base: usize,
        st: &mut ChunkState,
        memo: &mut PieceMemo<'s>,
    ) -> Result<()> {
        let piece = segment
            .as_bytes()
            .get(start..end)
            .ok_or_else(|| Error::backend(NAME, "a piece out of the segment"))?;
        let (ps, pe) = (base + start, base + end);
        let first = st.ids.len();
        let mut merged = false;
        if let Some(&id) = self.ranks.get(piece) {
            st.ids.push(id);
        } else if piece.len() < 2 {
            return Err(Error::backend(NAME, "a single byte missing from the ranks"));
        } else if let Some(ids) = memo.get(piece) {
            st.ids.extend_from_slice(ids);
        } else {
            merged = true;
            merge::byte_pair_encode_into(piece, &self.ranks, &mut st.ids)
                .ok_or_else(|| Error::backend(NAME, "a byte missing from the ranks"))?;
        }
        if merged {
            memo.insert(piece, &st.ids[first..]);
        }
        if st.touches(ps, pe) {
            st.bounds.extend([ps, pe]);
            let mut p = ps;
            for k in first..st.ids.len() {
                let l = self.bytes_of(st.ids[k]).map_or(0, <[u8]>::len);
                st.known.push(k);
                st.spans.push((p, p + l));
                p += l;
            }
        }
        Ok(())
    }

    /// The byte-level engine for a segment of `len` bytes: when built; a
    /// segment of at least [`WAIT_FOR_ENGINE`] bytes waits for the build.
    fn engine(&self, len: usize) -> Option<&fast::FastBpe> {
        match self.fast.get() {
            Some(engine) => engine.as_ref(),
            None if len >= WAIT_FOR_ENGINE => self.build_engine(),
            None => None,
        }
    }

    /// Builds the engine here, or waits for the thread building it.
    fn build_engine(&self) -> Option<&fast::FastBpe> {
        self.fast
            .get_or_init(|| {
                let grammar = Arc::clone(self.native.as_ref()?);
                fast::FastBpe::new(&self.ranks, grammar, &BuildCancel::never()).ok()
            })
            .as_ref()
    }

    fn bytes_of(&self, id: u32) -> Option<&[u8]> {
        let &(start, len) = self.spans.get(id as usize)?;
        if start == u32::MAX {
            return None;
        }
        self.bytes.get(start as usize..(start + len) as usize)
    }

    /// Ordinary (no specials) encode of one segment, appended to `out`.
    fn encode_segment(&self, text: &str, out: &mut Vec<u32>) -> Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        if let Some(fast) = self.engine(text.len())
            && fast
                .encode(text, out)
                .map_err(|e| Error::backend(NAME, e))?
        {
            return Ok(());
        }
        let mut st = ChunkState::ids_only(std::mem::take(out));
        let result = self.regex_ordinary(text, 0, &mut st);
        *out = st.ids;
        result
    }

    /// Encodes `text` into `ids`, calling `on_special(start, end)` for each special match.
    fn encode_into(
        &self,
        text: &str,
        ids: &mut Vec<u32>,
        on_segment: impl FnMut(&[u32], Option<(usize, usize)>),
    ) -> Result<()> {
        self.encode_into_with(
            text,
            self.policy == SpecialTokenPolicy::Parse,
            ids,
            on_segment,
        )
    }

    /// [`encode_into`](Self::encode_into) with special tokens parsed or not.
    fn encode_into_with(
        &self,
        text: &str,
        parse: bool,
        ids: &mut Vec<u32>,
        mut on_segment: impl FnMut(&[u32], Option<(usize, usize)>),
    ) -> Result<()> {
        let mut start = 0;
        if parse && let Some(matcher) = &self.special_matcher {
            for m in matcher.find_iter(text) {
                let before = ids.len();
                self.encode_segment(&text[start..m.start()], ids)?;
                on_segment(&ids[before..], None);
                let id = self.special_pattern_ids[m.pattern().as_usize()];
                ids.push(id);
                on_segment(&[], Some((m.start(), m.end())));
                start = m.end();
            }
        }
        let before = ids.len();
        self.encode_segment(&text[start..], ids)?;
        on_segment(&ids[before..], None);
        Ok(())
    }

    /// `encode_with_offsets` with special tokens parsed or not.
    fn encode_offsets_with(
        &self,
        text: &str,
        add_special_tokens: bool,
        parse: bool,
    ) -> Result<Encoding> {
        let mut out = EncodingBuilder::new(
            self.add_bos.as_slice(),
            &[],
            add_special_tokens,
            text.len() / 3 + 1,
            true,
        );
        let mut offsets = out.offsets.take().unwrap_or_default();
        let mut pos = 0usize;
        self.encode_into_with(text, parse, &mut out.ids, |segment, special| {
            if let Some((s, e)) = special {
                offsets.push((s, e));
                pos = e;
                return;
            }
            for &id in segment {
                let len = self.bytes_of(id).map_or(0, <[u8]>::len);
                offsets.push((pos, pos + len));
                pos += len;
            }
        })?;
        out.offsets = Some(offsets);
        out.finish(text.len(), NAME)
    }
}

impl Encoder for TiktokenBackend {
    fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        let mut out = EncodingBuilder::new(
            self.add_bos.as_slice(),
            &[],
            add_special_tokens,
            text.len() / 3 + 1,
            false,
        );
        self.encode_into(text, &mut out.ids, |_, _| {})?;
        out.finish(text.len(), NAME)
    }

    fn encode_with_offsets(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        self.encode_offsets_with(
            text,
            add_special_tokens,
            self.policy == SpecialTokenPolicy::Parse,
        )
    }

    fn parses_special_text(&self) -> bool {
        self.policy == SpecialTokenPolicy::Parse
    }

    fn encode_plain(
        &self,
        text: &str,
        with_offsets: bool,
        _markers: &[u32],
    ) -> Option<Result<Encoding>> {
        if with_offsets {
            return Some(self.encode_offsets_with(text, false, false));
        }
        let mut ids = Vec::with_capacity(text.len() / 3 + 1);
        Some(
            self.encode_into_with(text, false, &mut ids, |_, _| {})
                .map(|()| Encoding::from_ids(ids)),
        )
    }

    fn split_spec(&self) -> Option<&SplitSpec> {
        Some(&self.split)
    }

    fn encode_chunk(&self, text: &str, request: &ChunkRequest) -> Result<ChunkEncoding> {
        self.encode_chunk_impl(text, request)
    }

    fn warm_up(&self) {
        let _ = self.build_engine();
    }
}

impl Decoder for TiktokenBackend {
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        let lossy = |bytes: Vec<u8>| match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        let mut out = Vec::with_capacity(ids.len() * 4);
        let mut text = String::new();
        for &id in ids {
            let bytes = self
                .bytes_of(id)
                .ok_or_else(|| Error::unknown_id(id, self.spans.len()))?;
            let special = self.is_special_id(id);
            if self.runs_apart && special {
                text.push_str(&lossy(std::mem::take(&mut out)));
            }
            if skip_special_tokens && special {
                continue;
            }
            out.extend_from_slice(bytes);
            if self.runs_apart && special {
                text.push_str(&lossy(std::mem::take(&mut out)));
            }
        }
        if text.is_empty() {
            return Ok(lossy(out));
        }
        text.push_str(&lossy(out));
        Ok(text)
    }

    fn decode_style(&self) -> DecodeStyle {
        DecodeStyle::ByteConcat
    }

    fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.bytes_of(id)
    }
}

impl Tokenizer for TiktokenBackend {
    fn backend_name(&self) -> &'static str {
        NAME
    }

    fn vocab_size(&self) -> usize {
        self.spans.len()
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        spelled_id(&self.ranks, &self.special_ids, token)
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        let bytes = self.bytes_of(id)?;
        if self.is_special_id(id) {
            return Some(String::from_utf8_lossy(bytes).into_owned());
        }
        Some(byte_level::spell(bytes, &self.alphabet))
    }

    fn is_special_id(&self, id: u32) -> bool {
        self.special_flags
            .get(id as usize)
            .copied()
            .unwrap_or(false)
    }

    fn special_tokens(&self) -> &SpecialTokens {
        &self.special_tokens
    }
}

#[cfg(test)]
mod tests {
    use super::encodings::BuiltinEncoding;
    use super::*;

    /// Every corpus file's first 16 KiB, a special token spliced in near
    /// both ends and in the middle.
    fn corpus_texts() -> Vec<(String, String)> {
        let root = crate::test_support::shared_dir().join("corpus");
        let mut files: Vec<_> = std::fs::read_dir(&root)
            .unwrap_or_else(|e| panic!("{}: {e} (set RTOK_SHARED_DIR)", root.display()))
            .flat_map(|d| std::fs::read_dir(d.unwrap().path()).into_iter().flatten())
            .map(|f| f.unwrap().path())
            .collect();
        files.sort();
        files
            .iter()
            .map(|path| {
                let full = std::fs::read_to_string(path).unwrap();
                let cut = |mut i: usize| {
                    i = i.min(full.len());
                    while !full.is_char_boundary(i) {
                        i -= 1;
                    }
                    i
                };
                let e = cut(16 << 10);
                let (a, b) = (cut(7), cut(e / 2));
                let c = cut(e.saturating_sub(20)).max(b);
                let text = [
                    &full[..a],
                    "<|endoftext|>",
                    &full[a..b],
                    "<|endoftext|>",
                    &full[b..c],
                    "<|endoftext|>",
                    &full[c..e],
                ]
                .concat();
                (path.display().to_string(), text)
            })
            .collect()
    }

    /// The windowed chunk encode against the every-span one: same ids, the
    /// windows' spans are the true ones and cover what `ChunkRequest` asks
    /// for, and the boundaries are true ones holding every one the merge
    /// reads (inside the windows, and the first and last just outside).
    #[test]
    fn chunk_windows_match_the_full_spans() {
        let texts = corpus_texts();
        assert!(texts.len() > 20, "{} corpus files", texts.len());
        for enc in [BuiltinEncoding::O200kBase, BuiltinEncoding::Cl100kBase] {
            let backend =
                TiktokenBackend::new(enc.spec().unwrap(), SpecialTokenPolicy::Parse).unwrap();
            backend.warm_up();
            for (name, text) in &texts {
                let n = text.len();
                // Spans from the sequential offsets path; boundaries from a
                // chunk encode with every span on.
                let seq = backend.encode_offsets_with(text, false, true).unwrap();
                let spans = seq.offsets().unwrap().to_vec();
                let full = backend
                    .encode_chunk_impl(text, &ChunkRequest::new(0, 0, true))
                    .unwrap();
                assert_eq!(full.ids, seq.ids(), "{name}");
                let all = &full.boundaries;
                for (head, tail) in [(0, 0), (1, 3000), (1500, 1500), (n / 2, n / 2 + 9), (n, n)] {
                    let what = format!("{} {name} head {head} tail {tail}", enc.name());
                    let w = backend
                        .encode_chunk_impl(text, &ChunkRequest::new(head, tail, false))
                        .unwrap();
                    assert!(w.is_consistent(n), "{what}");
                    assert_eq!(w.ids, full.ids, "{what}");
                    assert_eq!(w.head[..], spans[..w.head.len()], "{what}");
                    assert_eq!(w.tail[..], spans[w.tail_first..], "{what}");
                    let tail_from = n.saturating_sub(tail);
                    assert!(
                        spans[w.head.len()..].iter().all(|&(s, _)| s >= head),
                        "{what}: head window short"
                    );
                    assert!(
                        spans[..w.tail_first].iter().all(|&(_, e)| e <= tail_from),
                        "{what}: tail window short"
                    );
                    assert!(
                        w.boundaries.iter().all(|b| all.binary_search(b).is_ok()),
                        "{what}"
                    );
                    // (The first chunk asks for no head window, the last for no tail.)
                    let after_head = all.iter().find(|&&b| b >= head).filter(|_| head > 0);
                    let before_tail = all
                        .iter()
                        .rev()
                        .find(|&&b| b <= tail_from)
                        .filter(|_| tail > 0);
                    for b in all
                        .iter()
                        .filter(|&&b| b <= head || b >= tail_from)
                        .chain(after_head)
                        .chain(before_tail)
                    {
                        assert!(
                            w.boundaries.binary_search(b).is_ok(),
                            "{what}: boundary {b}"
                        );
                    }
                }
            }
        }
    }

    /// The rank path (what encodes take until the engine is built) cuts on
    /// the native grammar where it applies (invariant `native-pieces-equal-regex`): its ids equal
    /// `tiktoken-rs`' on corpus slices and hostile strings for every
    /// built-in encoding, and equal its own on the regex's pieces.
    #[test]
    fn rank_path_on_native_pieces_matches_tiktoken_rs() {
        // Whole slices (up to 16 KiB, so the piece memo of invariant `cache-transparent` is on).
        let mut texts: Vec<String> = corpus_texts().into_iter().map(|(_, t)| t).collect();
        assert!(texts.iter().any(|t| t.len() >= PIECE_MEMO_MIN_BYTES));
        texts.extend(
            [
                "Hello, world!  It's 2024:\n\tfoo_bar(x) → 中文 \n ",
                "   \n\n  \r\n\t  ",
                "I'VE we'll they'd 12345678 3.14159 ---=== ...",
                "a\u{10940}b \u{1F600}\u{1F3FD} e\u{301} \u{0915}\u{094D}\u{0937}",
                "trailing spaces   ",
                "x\n\n\n   ",
            ]
            .map(str::to_owned),
        );
        for enc in BuiltinEncoding::ALL {
            let core = enc.core().unwrap();
            let mut backend =
                TiktokenBackend::new(enc.spec().unwrap(), SpecialTokenPolicy::Parse).unwrap();
            assert!(backend.native.is_some(), "{}", enc.name());
            for text in &texts {
                let mut native = ChunkState::ids_only(Vec::new());
                backend.regex_ordinary(text, 0, &mut native).unwrap();
                assert_eq!(
                    native.ids,
                    core.encode_ordinary(text),
                    "{}: {text:?}",
                    enc.name()
                );
                let grammar = backend.native.take();
                let mut regex = ChunkState::ids_only(Vec::new());
                backend.regex_ordinary(text, 0, &mut regex).unwrap();
                backend.native = grammar;
                assert_eq!(native.ids, regex.ids, "{}: {text:?}", enc.name());
            }
        }
    }

    /// The memo answers a repeated piece, and turns itself off where stored
    /// pieces do not come back.
    #[test]
    fn piece_memo_stores_and_gives_up() {
        let text: String = (0..600).map(|i| format!("w{i} ")).collect();
        let mut memo = PieceMemo::new(true);
        for piece in text.split(' ').filter(|p| !p.is_empty()) {
            memo.insert(piece.as_bytes(), &[1, 2]);
        }
        assert!(!memo.on, "600 pieces stored, none asked for again");
        let mut memo = PieceMemo::new(true);
        memo.insert(b"ab", &[7, 8]);
        assert_eq!(memo.get(b"ab"), Some(&[7, 8][..]));
        assert_eq!(memo.get(b"abc"), None);
        assert_eq!(PieceMemo::new(false).get(b"ab"), None);
    }

    #[test]
    fn every_builtin_encoding_gets_the_engine() {
        for enc in BuiltinEncoding::ALL {
            let backend =
                TiktokenBackend::new(enc.spec().unwrap(), SpecialTokenPolicy::Parse).unwrap();
            backend.warm_up();
            let engine = backend.engine(0);
            assert!(engine.is_some(), "{}", enc.name());
            // The engine takes ordinary text and gives the regex path's ids;
            // a Unicode 17 letter sends the segment back to the regex path.
            let text = "Hello, world!  It's 2024:\n\tfoo_bar(x) → 中文 \n ";
            let mut fast_ids = Vec::new();
            assert_eq!(
                engine.map(|e| e.encode(text, &mut fast_ids)),
                Some(Ok(true))
            );
            let mut st = ChunkState::ids_only(Vec::new());
            backend.regex_ordinary(text, 0, &mut st).unwrap();
            assert_eq!(fast_ids, st.ids, "{}", enc.name());
            let mut ids = Vec::new();
            assert_eq!(
                engine.map(|e| e.encode("a \u{10940} b", &mut ids)),
                Some(Ok(false))
            );
            assert!(ids.is_empty());
        }
        // A small vocabulary builds it at once; a pattern without a grammar never.
        let ranks: FxHashMap<Vec<u8>, u32> = (0..=255u8)
            .map(|b| (vec![b], u32::from(b)))
            .chain([(b"ab".to_vec(), 256)])
            .collect();
        let spec = |pattern: &'static str| TiktokenSpec {
            ranks: ranks.clone(),
            specials: Vec::new(),
            pattern: pattern.into(),
            roles: SpecialRoles::default(),
            add_bos: None,
            runs_apart: false,
        };
        let small = TiktokenBackend::new(spec(encodings::O200K_PATTERN), SpecialTokenPolicy::Parse)
            .unwrap();
        assert!(small.engine(0).is_some());
        let other = TiktokenBackend::new(spec(r"\S+|\s+"), SpecialTokenPolicy::Parse).unwrap();
        other.warm_up();
        assert!(other.engine(0).is_none());
        assert_eq!(other.encode("ab ab", false).unwrap().ids(), &[256, 32, 256]);
    }
}
