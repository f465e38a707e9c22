//! tiktoken backend: OpenAI's built-in encodings and custom rank files
//! (`*.tiktoken`, Llama-3 style `tokenizer.model`), on `tiktoken-rs`'s `CoreBPE`.
//!
//! `CoreBPE` keeps its vocabulary private and offers no bytes → id lookup, so
//! the backend keeps its own id → bytes table (used for decode, offsets,
//! streaming and `id_to_token`) and splits out special tokens itself with
//! aho-corasick, which also gives their byte spans.

pub(crate) mod encodings;
mod pieces;
pub(crate) mod ranks;

use aho_corasick::{AhoCorasick, MatchKind};
use rustc_hash::FxHashMap;
use std::collections::HashSet;
use std::sync::OnceLock;
use tiktoken_rs::CoreBPE;

use crate::backend::byte_level;
use crate::backend::{DecodeStyle, Decoder, Encoder, Tokenizer};
use crate::encode::family::is_known_pattern;
use crate::encode::{ChunkEncoding, ChunkRequest, EdgeRule, SplitFamily, SplitSpec};
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
    /// The pre-tokenizer regex.
    pub pattern: &'static str,
    /// Which special tokens play which role.
    pub roles: SpecialRoles,
    /// BOS added by `add_special_tokens` (Llama-3 rank files), if any.
    pub add_bos: Option<u32>,
}

/// Role names for special tokens, by content.
#[derive(Default, Clone)]
pub(crate) struct SpecialRoles {
    pub bos: Option<String>,
    pub eos: Option<String>,
    pub unk: Option<String>,
    pub pad: Option<String>,
}

pub(crate) struct TiktokenBackend {
    core: CoreBPE,
    /// Flat token bytes; `spans[id]` indexes into it (`u32::MAX` start = hole).
    bytes: Vec<u8>,
    spans: Vec<(u32, u32)>,
    /// Spelled (byte-level alphabet) token → id, for `token_to_id`.
    by_spelling: FxHashMap<String, u32>,
    special_matcher: Option<AhoCorasick>,
    /// Id of each special-matcher pattern.
    special_pattern_ids: Vec<u32>,
    special_flags: Vec<bool>,
    special_tokens: SpecialTokens,
    policy: SpecialTokenPolicy,
    add_bos: Option<u32>,
    alphabet: [char; 256],
    /// The pre-tokenizer regex, for the chunk encoder.
    pattern: &'static str,
    /// How whitespace runs are cut without the regex (built-in patterns).
    ws_rule: Option<pieces::WsRule>,
    split: SplitSpec,
    /// Built on the first parallel encode: a rank map and regexes of our own
    /// (`CoreBPE` keeps both private).
    chunker: OnceLock<std::result::Result<Chunker, String>>,
}

/// What the chunk encoder needs beyond `CoreBPE`.
struct Chunker {
    ranks: FxHashMap<Vec<u8>, u32>,
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
    fn touches(&self, start: usize, end: usize) -> bool {
        self.all || start < self.head || end > self.tail_from
    }
}

/// Texts with a whitespace run this long (in bytes, counting every byte
/// from 0x80 up as possible whitespace) are encoded by the piece loop of
/// [`pieces`] instead of `CoreBPE::encode`, whose regex fails from about a
/// million whitespace chars; both give the same ids.
const LONG_WS_RUN: usize = 4096;

/// Pieces at least this long go through tiktoken's `byte_pair_encode`
/// (which switches to its heap-based merge there; `byte_pair_split` is quadratic).
const LONG_PIECE: usize = 100;

impl TiktokenBackend {
    pub(crate) fn new(spec: TiktokenSpec, policy: SpecialTokenPolicy) -> Result<Self> {
        let TiktokenSpec {
            ranks,
            specials,
            pattern,
            roles,
            add_bos,
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
        let mut by_spelling =
            FxHashMap::with_capacity_and_hasher(ranks.len() + specials.len(), Default::default());
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
            by_spelling.insert(byte_level::spell(token, &alphabet), id);
        }
        for (text, id) in &specials {
            // Two special names may share an id (o200k_harmony's `<|endofprompt|>`
            // and `<|reserved_200018|>`): both encode to it; the first decodes it.
            if !special_flags[*id as usize] {
                push(*id, text.as_bytes(), &mut bytes)?;
            }
            by_spelling.entry(text.clone()).or_insert(*id);
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
            let id = by_spelling.get(content.as_str()).copied()?;
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
        let family = if is_known_pattern(pattern) {
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
        // tiktoken encodes at 5–20 MB/s: two cores pay from a few pages on
        // (`rtok bench`).
        .with_min_bytes(32 << 10);
        let core = CoreBPE::new(ranks, specials.into_iter().collect(), pattern)
            .map_err(|e| Error::backend(NAME, format!("building the BPE: {e}")))?;
        Ok(Self {
            core,
            bytes,
            spans,
            by_spelling,
            special_matcher,
            special_pattern_ids,
            special_flags,
            special_tokens,
            policy,
            add_bos,
            alphabet,
            pattern,
            split,
            ws_rule: pieces::ws_rule(pattern),
            chunker: OnceLock::new(),
        })
    }

    fn chunker(&self) -> Result<&Chunker> {
        let built = self.chunker.get_or_init(|| {
            // Fail early on a bad pattern (CoreBPE compiled it already).
            let regex = fancy_regex::Regex::new(self.pattern).map_err(|e| e.to_string())?;
            let regexes: Vec<OnceLock<Option<fancy_regex::Regex>>> =
                (0..REGEX_CLONES).map(|_| OnceLock::new()).collect();
            if let Some(first) = regexes.first() {
                let _ = first.set(Some(regex));
            }
            let mut ranks =
                FxHashMap::with_capacity_and_hasher(self.spans.len(), Default::default());
            for id in 0..self.spans.len() {
                let Ok(id) = u32::try_from(id) else { break };
                if self.is_special_id(id) {
                    continue;
                }
                if let Some(bytes) = self.bytes_of(id) {
                    ranks.insert(bytes.to_vec(), id);
                }
            }

            Ok(Chunker { ranks, regexes })
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
                r.get_or_init(|| fancy_regex::Regex::new(self.pattern).ok())
                    .as_ref()
            })
            .ok_or_else(|| Error::backend(NAME, "no chunk regex"))
    }

    /// The chunk encoder: `CoreBPE::encode`'s loop (regex pieces, then a rank
    /// lookup or byte-pair merge), keeping piece boundaries and token spans
    /// near both ends.
    fn encode_chunk_impl(&self, text: &str, request: &ChunkRequest) -> Result<ChunkEncoding> {
        let chunker = self.chunker()?;
        let regex = self.chunk_regex(chunker)?;
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
            ids: Vec::with_capacity(len / 3 + 1),
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
                self.chunk_ordinary(chunker, regex, &text[start..m.start()], start, &mut st)?;
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
        self.chunk_ordinary(chunker, regex, &text[start..], start, &mut st)?;
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

    /// One run of ordinary text at chunk position `base`.
    fn chunk_ordinary(
        &self,
        chunker: &Chunker,
        regex: &fancy_regex::Regex,
        segment: &str,
        base: usize,
        st: &mut ChunkState,
    ) -> Result<()> {
        for m in pieces::Pieces::new(regex, segment, self.ws_rule) {
            let (start, end) =
                m.map_err(|e| Error::backend(NAME, format!("regex error while tokenizing: {e}")))?;
            let piece = &segment.as_bytes()[start..end];
            let (ps, pe) = (base + start, base + end);
            let first = st.ids.len();
            if let Some(&id) = chunker.ranks.get(piece) {
                st.ids.push(id);
            } else if piece.len() < 2 {
                return Err(Error::backend(NAME, "a single byte missing from the ranks"));
            } else if piece.len() < LONG_PIECE {
                for part in tiktoken_rs::byte_pair_split(piece, &chunker.ranks) {
                    let id = chunker.ranks.get(part).ok_or_else(|| {
                        Error::backend(NAME, "byte-pair merge left an unknown piece")
                    })?;
                    st.ids.push(*id);
                }
            } else {
                // tiktoken's own merge for long pieces (a heap, O(n log n)).
                let ids = pieces::byte_pair_encode(piece, &chunker.ranks)
                    .ok_or_else(|| Error::backend(NAME, "a byte missing from the ranks"))?;
                st.ids.extend_from_slice(&ids);
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
        }
        Ok(())
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
        if self.ws_rule.is_some() && pieces::may_have_long_ws_run(text, LONG_WS_RUN) {
            // Long whitespace runs overflow CoreBPE's regex stack: the chunk
            // encoder's loop cuts them without the regex, with the same pieces.
            let chunker = self.chunker()?;
            let regex = self.chunk_regex(chunker)?;
            let mut st = ChunkState {
                ids: std::mem::take(out),
                spans: Vec::new(),
                known: Vec::new(),
                bounds: Vec::new(),
                head: 0,
                tail_from: usize::MAX,
                all: false,
            };
            let result = self.chunk_ordinary(chunker, regex, text, 0, &mut st);
            *out = st.ids;
            return result;
        }
        // `encode` with no allowed specials is `encode_ordinary` that reports
        // regex errors (backtrack limits) instead of panicking.
        let (ids, _) = self
            .core
            .encode(text, &HashSet::new())
            .map_err(|e| Error::backend(NAME, e.message))?;
        out.extend_from_slice(&ids);
        Ok(())
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

    fn encode_plain(&self, text: &str, with_offsets: bool) -> Option<Result<Encoding>> {
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
}

impl Decoder for TiktokenBackend {
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            let bytes = self
                .bytes_of(id)
                .ok_or_else(|| Error::unknown_id(id, self.spans.len()))?;
            if skip_special_tokens && self.is_special_id(id) {
                continue;
            }
            out.extend_from_slice(bytes);
        }
        Ok(match String::from_utf8(out) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
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
        self.by_spelling.get(token).copied()
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
