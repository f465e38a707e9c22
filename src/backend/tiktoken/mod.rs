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

mod chunk;
pub(crate) mod encodings;
pub(crate) mod fast;
mod merge;
mod pieces;
mod rank_path;
pub(crate) mod ranks;
#[cfg(test)]
mod tests;

use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use crate::backend::byte_level;
use crate::backend::special_scan::SpecialScan;
use crate::backend::{BuildCancel, BuildGuard, DecodeStyle, Decoder, Encoder, Tokenizer};
use crate::contract::family::is_known_pattern;
use crate::contract::{ChunkEncoding, ChunkRequest, EdgeRule, SplitFamily, SplitSpec};
use crate::encoding::{Encoding, EncodingBuilder};
use crate::error::{Error, Result};
use crate::special::SpecialTokenPolicy;
use crate::special::{SpecialToken, SpecialTokens};
use chunk::ChunkState;
use rank_path::Chunker;

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
    special_scan: Option<SpecialScan>,
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

/// Rank sets smaller than this build the byte-level engine at load, on the
/// caller's thread (it takes milliseconds); larger ones on a thread of their own.
const SYNC_BUILD_RANKS: usize = 16_384;

/// A segment this long waits for the byte-level engine rather than taking
/// the regex path: at the regex path's 5–20 MB/s it would take longer than
/// the rest of the build (under a second for o200k).
const WAIT_FOR_ENGINE: usize = 8 << 20;

/// The tables of each id's bytes and of which ids are special, as `new`
/// builds them from the ranks and the specials.
struct TokenTable {
    bytes: Vec<u8>,
    spans: Vec<(u32, u32)>,
    special_ids: FxHashMap<String, u32>,
    special_flags: Vec<bool>,
}

/// One more than the largest id, refused where the largest id is out of
/// proportion with the entries (the tables are sized by it).
fn vocab_size(ranks: &FxHashMap<Vec<u8>, u32>, specials: &[(String, u32)]) -> Result<usize> {
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
    Ok(usize::try_from(max_id)
        .map_err(|_| Error::backend(NAME, "id out of range"))?
        .saturating_add(1))
}

/// Lays every token's bytes out flat, refusing two tokens on one id (but for
/// special names sharing one), and marks the special ids.
fn token_table(
    ranks: &FxHashMap<Vec<u8>, u32>,
    specials: &[(String, u32)],
    vocab_size: usize,
) -> Result<TokenTable> {
    let mut spans = vec![(u32::MAX, 0u32); vocab_size];
    let mut bytes = Vec::with_capacity(ranks.len() * 7);
    let mut special_ids = FxHashMap::with_capacity_and_hasher(specials.len(), Default::default());
    let mut special_flags = vec![false; vocab_size];
    let mut push = |id: u32, token: &[u8], bytes: &mut Vec<u8>| -> Result<()> {
        let slot = &mut spans[id as usize];
        if slot.0 != u32::MAX {
            return Err(Error::backend(NAME, format!("two tokens share id {id}")));
        }
        let start =
            u32::try_from(bytes.len()).map_err(|_| Error::backend(NAME, "vocabulary too large"))?;
        let len = u32::try_from(token.len()).map_err(|_| Error::backend(NAME, "token too long"))?;
        *slot = (start, len);
        bytes.extend_from_slice(token);
        Ok(())
    };
    for (token, &id) in ranks {
        push(id, token, &mut bytes)?;
    }
    for (text, id) in specials {
        // Two special names may share an id (o200k_harmony's `<|endofprompt|>`
        // and `<|reserved_200018|>`): both encode to it; the first decodes it.
        if !special_flags[*id as usize] {
            push(*id, text.as_bytes(), &mut bytes)?;
        }
        special_ids.entry(text.clone()).or_insert(*id);
        special_flags[*id as usize] = true;
    }
    Ok(TokenTable {
        bytes,
        spans,
        special_ids,
        special_flags,
    })
}

/// The roles' tokens (where their text is a token) and every special token,
/// by id.
fn special_tokens(
    ranks: &FxHashMap<Vec<u8>, u32>,
    special_ids: &FxHashMap<String, u32>,
    roles: &SpecialRoles,
    specials: &[(String, u32)],
) -> SpecialTokens {
    let find = |content: &Option<String>| -> Option<SpecialToken> {
        let content = content.as_ref()?;
        let id = spelled_id(ranks, special_ids, content)?;
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
    special_tokens
}

/// The split contract for the regex path: the family the pattern allows,
/// edges at the specials, the regex path's parallel threshold.
fn split_spec(
    ranks: &FxHashMap<Vec<u8>, u32>,
    specials: &[(String, u32)],
    pattern: &str,
    add_bos: Option<u32>,
) -> SplitSpec {
    let mut edges = EdgeRule::default();
    for (text, _) in specials {
        edges.add_token(text);
    }
    let family = if is_known_pattern(pattern) {
        SplitFamily::RegexBpe
    } else {
        SplitFamily::Sequential("pre-tokenizer regex without a lossless cut argument")
    };
    let max_token_bytes = ranks.keys().map(Vec::len).max().unwrap_or(0);
    SplitSpec::new(
        family,
        add_bos.into_iter().collect(),
        Vec::new(),
        max_token_bytes,
        edges,
    )
    // On the byte-level engine tiktoken encodes at the byte-level
    // `tokenizer.json` speed, so it takes that path's threshold; the
    // regex path (5–20 MB/s) pays from a few pages on (`rtok bench`).
    .with_min_bytes(32 << 10)
}

/// Builds the byte-level engine into `cell` (invariant
/// `background-build-invisible`): here for a small rank set, else on a thread
/// of its own; with no grammar, never. Gives the split contract with the
/// engine's threshold where there is one, and the guard that cancels the
/// thread's build.
fn start_engine(
    ranks: &Arc<FxHashMap<Vec<u8>, u32>>,
    cell: &Arc<OnceLock<Option<fast::FastBpe>>>,
    native: Option<&Arc<fast::NativeSplit>>,
    split: SplitSpec,
) -> (SplitSpec, Option<BuildGuard>) {
    let Some(grammar) = native else {
        let _ = cell.set(None);
        return (split, None);
    };
    let mut build = None;
    if ranks.len() < SYNC_BUILD_RANKS {
        let engine = fast::FastBpe::new(ranks, Arc::clone(grammar), &BuildCancel::never());
        let _ = cell.set(engine.ok());
    } else {
        let (guard, cancel) = BuildGuard::new();
        build = Some(guard);
        let (cell, ranks, grammar) = (Arc::clone(cell), Arc::clone(ranks), Arc::clone(grammar));
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
    (split.with_min_bytes(256 << 10), build)
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
        let vocab_size = vocab_size(&ranks, &specials)?;
        let alphabet = byte_level::byte_to_char_table();
        let TokenTable {
            bytes,
            spans,
            special_ids,
            special_flags,
        } = token_table(&ranks, &specials, vocab_size)?;
        let special_scan = SpecialScan::new(specials.iter().map(|(t, id)| (t.as_str(), *id)))
            .map_err(|e| Error::backend(NAME, format!("special-token matcher: {e}")))?;
        let special_tokens = special_tokens(&ranks, &special_ids, &roles, &specials);
        let split = split_spec(&ranks, &specials, &pattern, add_bos);
        // Patterns without a grammar, and rank files the byte-level engine
        // cannot hold (hostile ones: a byte missing, a huge token), keep the
        // regex path, which gives the same ids.
        let ranks = Arc::new(ranks);
        let fast: Arc<OnceLock<Option<fast::FastBpe>>> = Arc::new(OnceLock::new());
        let native = fast::NativeSplit::new(&pattern).ok().map(Arc::new);
        let (split, build) = start_engine(&ranks, &fast, native.as_ref(), split);
        Ok(Self {
            ranks,
            fast,
            bytes,
            spans,
            special_ids,
            special_scan,
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
        if parse && let Some(scan) = &self.special_scan {
            for m in scan.find_iter(text) {
                let before = ids.len();
                self.encode_segment(&text[start..m.start], ids)?;
                on_segment(&ids[before..], None);
                ids.push(m.id);
                on_segment(&[], Some((m.start, m.end)));
                start = m.end;
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
