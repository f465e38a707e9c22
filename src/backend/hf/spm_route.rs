//! `tokenizer.json` files converted from a SentencePiece BPE model
//! (Llama-2, Mistral-7B) encoded on the native SentencePiece engine.
//!
//! Such a file has no pre-tokenizer, so `tokenizers` runs BPE over each
//! whole text segment; the SentencePiece engine cuts the same text at safe
//! boundaries and memoizes chunks (invariants `sentencepiece-fast-paths-exact`,
//! `cut-where-no-entry-joins` and `cache-transparent`): 11–13× faster on English
//! and code (`docs/perf/design_log/tokenizer_json.md` (entry 238)). The ids are
//! the same when the file has exactly the shape recognised here and its
//! merges pass [`check_merges`]; DESIGN.md invariant `spm-route-same-merges` give the
//! argument. Anything else stays on the general path.

use crate::backend::special_scan::SpecialScan;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::backend::sentencepiece::synth::{self, SynthPiece};
use crate::backend::sentencepiece::{PieceType, SentencePieceModel, window_chunk};
use crate::contract::{ChunkEncoding, ChunkRequest};

const SPACE_MARK: &str = "\u{2581}";

/// Longest NORMAL piece (in characters) the merge check accepts.
const MAX_PIECE_CHARS: usize = 128;

/// The engine for a recognised file, and its added tokens.
pub(crate) struct SpmRoute {
    pub(crate) model: SentencePieceModel,
    /// Added tokens (all special, matched on the raw text) and their ids.
    added: Option<SpecialScan>,
}

/// Why a file stays on the general path.
pub(crate) type Refusal = String;

impl SpmRoute {
    /// Recognises a canonical (version 2.0) `tokenizer.json` and builds the
    /// model it was converted from; `Err` says why not. `value` may be the
    /// skeleton (without `model.vocab` and `model.merges`): those two are
    /// read from `tables`, the model object as the file has it, so the load
    /// recognises the route before it puts the document back together
    /// (invariant `background-build-invisible`).
    pub(crate) fn recognise(value: &Value, tables: &Value) -> Result<Self, Refusal> {
        check_normalizer(value.get("normalizer"))?;
        match value.get("pre_tokenizer") {
            None | Some(Value::Null) => {}
            Some(_) => return Err("a pre-tokenizer".into()),
        }
        check_decoder(value.get("decoder"))?;
        let model = value.get("model").ok_or("no model")?;
        check_model_options(model)?;
        let vocab = read_vocab(tables)?;
        let by_piece: FxHashMap<&str, u32> = vocab
            .iter()
            .enumerate()
            .map(|(id, p)| (p.as_str(), id as u32))
            .collect();
        let mut kinds = vec![PieceType::Normal; vocab.len()];
        for b in 0..=255u8 {
            let id = *by_piece
                .get(format!("<0x{b:02X}>").as_str())
                .ok_or("a byte piece missing")?;
            kinds[id as usize] = PieceType::Byte;
        }
        let (added_texts, added_ids) = read_added(value, &vocab, &mut kinds)?;
        let unk = match model.get("unk_token") {
            None | Some(Value::Null) => None,
            Some(Value::String(unk)) => {
                let id = *by_piece
                    .get(unk.as_str())
                    .ok_or("unk_token not in the vocab")?;
                if !added_ids.contains(&id) {
                    return Err("unk_token is not an added special token".into());
                }
                kinds[id as usize] = PieceType::Unknown;
                Some(unk.as_str())
            }
            Some(_) => return Err("unk_token is not a string".into()),
        };
        let merges = read_merges(tables, &by_piece)?;
        let scores = check_merges(&vocab, &kinds, &by_piece, &merges)?;
        let pieces: Vec<SynthPiece<'_>> = vocab
            .iter()
            .zip(&kinds)
            .zip(&scores)
            .map(|((piece, &kind), &score)| SynthPiece { piece, score, kind })
            .collect();
        let model = synth::bpe_byte_fallback(&pieces, unk).map_err(|e| e.to_string())?;
        let added = SpecialScan::new(
            added_texts
                .iter()
                .map(String::as_str)
                .zip(added_ids.iter().copied()),
        )
        .map_err(|e| format!("added-token matcher: {e}"))?;
        Ok(Self { model, added })
    }

    /// Whether `text` holds an added token's text.
    pub(crate) fn has_added(&self, text: &str) -> bool {
        self.added.as_ref().is_some_and(|scan| scan.is_match(text))
    }

    /// Appends the ids of `text` to `ids`: added tokens split out first when
    /// `parse` (all of them are special), each segment encoded on its own.
    pub(crate) fn encode(&self, text: &str, parse: bool, ids: &mut Vec<u32>) {
        let encode = |s: &str, ids: &mut Vec<u32>| self.model.encode_append(s, ids);
        let mut pos = 0;
        if parse && let Some(scan) = &self.added {
            for m in scan.find_iter(text) {
                encode(&text[pos..m.start], ids);
                ids.push(m.id);
                pos = m.end;
            }
        }
        encode(&text[pos..], ids);
    }

    /// A parallel-encoder chunk with spans near its ends only, as a `.model`
    /// file's backend gives it; the caller checks it holds no added token.
    pub(crate) fn encode_windows(
        &self,
        text: &str,
        request: &ChunkRequest,
    ) -> Option<ChunkEncoding> {
        window_chunk(&self.model, text, request)
    }
}

fn typed<'a>(v: &'a Value, kind: &str) -> Option<&'a serde_json::Map<String, Value>> {
    let obj = v.as_object()?;
    (obj.get("type")?.as_str()? == kind).then_some(obj)
}

fn string_pattern(v: Option<&Value>) -> Option<&str> {
    v?.get("String")?.as_str()
}

/// `Sequence[Prepend("▁"), Replace(" ", "▁")]`: sentencepiece's dummy
/// prefix and space escaping, applied to each segment between added tokens.
fn check_normalizer(n: Option<&Value>) -> Result<(), Refusal> {
    let list = n
        .and_then(|n| typed(n, "Sequence"))
        .and_then(|s| s.get("normalizers")?.as_array())
        .ok_or("the normalizer is not a Sequence")?;
    let [prepend, replace] = list.as_slice() else {
        return Err("the normalizer is not Prepend + Replace".into());
    };
    let prepend_ok = typed(prepend, "Prepend").is_some_and(|p| {
        p.len() == 2 && p.get("prepend").and_then(Value::as_str) == Some(SPACE_MARK)
    });
    let replace_ok = typed(replace, "Replace").is_some_and(|r| {
        r.len() == 3
            && string_pattern(r.get("pattern")) == Some(" ")
            && r.get("content").and_then(Value::as_str) == Some(SPACE_MARK)
    });
    if prepend_ok && replace_ok {
        Ok(())
    } else {
        Err("the normalizer is not Prepend(\"▁\") + Replace(\" \", \"▁\")".into())
    }
}

/// `Sequence[Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0)]`:
/// what transformers writes for these files. Decoding stays on `tokenizers`;
/// the decoder only confirms where the file came from.
fn check_decoder(d: Option<&Value>) -> Result<(), Refusal> {
    let list = d
        .and_then(|d| typed(d, "Sequence"))
        .and_then(|s| s.get("decoders")?.as_array())
        .ok_or("the decoder is not a Sequence")?;
    let ok = match list.as_slice() {
        [replace, fallback, fuse, strip] => {
            typed(replace, "Replace").is_some_and(|r| {
                string_pattern(r.get("pattern")) == Some(SPACE_MARK)
                    && r.get("content").and_then(Value::as_str) == Some(" ")
            }) && typed(fallback, "ByteFallback").is_some()
                && typed(fuse, "Fuse").is_some()
                && typed(strip, "Strip").is_some_and(|s| {
                    s.get("content").and_then(Value::as_str) == Some(" ")
                        && s.get("start").and_then(Value::as_u64) == Some(1)
                        && s.get("stop").and_then(Value::as_u64) == Some(0)
                })
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err("the decoder is not Replace + ByteFallback + Fuse + Strip".into())
    }
}

/// BPE with byte fallback and nothing that changes how a word merges.
fn check_model_options(model: &Value) -> Result<(), Refusal> {
    check_char_bpe(model)?;
    if model.get("byte_fallback").and_then(Value::as_bool) != Some(true) {
        return Err("no byte fallback".into());
    }
    Ok(())
}

/// A character BPE in which a word's ids are its merges' alone: no byte
/// level, `ignore_merges`, dropout, or word prefix or suffix (what this
/// route and invariant `cut-where-no-entry-joins`'s cuts both need).
pub(super) fn check_char_bpe(model: &Value) -> Result<(), Refusal> {
    let obj = typed(model, "BPE").ok_or("the model is not BPE")?;
    for (key, v) in obj {
        let ok = match key.as_str() {
            "type" | "vocab" | "merges" | "unk_token" | "fuse_unk" | "byte_fallback" => true,
            "dropout" => v.is_null(),
            "continuing_subword_prefix" | "end_of_word_suffix" => {
                v.is_null() || v.as_str() == Some("")
            }
            "ignore_merges" | "byte_level" => v.as_bool() == Some(false),
            _ => false,
        };
        if !ok {
            return Err(format!("model option {key:?} = {v}"));
        }
    }
    Ok(())
}

/// The model vocabulary in id order; ids must be dense.
fn read_vocab(model: &Value) -> Result<Vec<String>, Refusal> {
    let map = model
        .get("vocab")
        .and_then(Value::as_object)
        .ok_or("the vocab is not a map")?;
    let mut vocab = vec![None; map.len()];
    for (piece, id) in map {
        let slot = id
            .as_u64()
            .and_then(|id| vocab.get_mut(usize::try_from(id).ok()?))
            .ok_or("vocab ids are not dense")?;
        if slot.replace(piece.clone()).is_some() {
            return Err("a vocab id used twice".into());
        }
    }
    vocab
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| "vocab ids are not dense".into())
}

/// Added tokens: each special, matched on the raw text with no stripping,
/// and the vocab entry of its id. They become CONTROL pieces.
fn read_added(
    value: &Value,
    vocab: &[String],
    kinds: &mut [PieceType],
) -> Result<(Vec<String>, Vec<u32>), Refusal> {
    let mut texts = Vec::new();
    let mut ids = Vec::new();
    let list = value.get("added_tokens").and_then(Value::as_array);
    for t in list.into_iter().flatten() {
        let flag = |k: &str| t.get(k).and_then(Value::as_bool);
        let content = t
            .get("content")
            .and_then(Value::as_str)
            .ok_or("an added token without content")?;
        let id = t
            .get("id")
            .and_then(Value::as_u64)
            .ok_or("an added token without id")?;
        let plain = flag("special") == Some(true)
            && flag("normalized") == Some(false)
            && flag("lstrip") != Some(true)
            && flag("rstrip") != Some(true)
            && flag("single_word") != Some(true);
        if !plain {
            return Err(format!(
                "added token {content:?} is not a plain special token"
            ));
        }
        let slot = usize::try_from(id)
            .ok()
            .filter(|&i| vocab.get(i).is_some_and(|p| p == content));
        let Some(slot) = slot else {
            return Err(format!(
                "added token {content:?} is not the vocab entry of its id"
            ));
        };
        if content.is_empty() || kinds[slot] != PieceType::Normal {
            return Err(format!("added token {content:?} is empty or a byte piece"));
        }
        kinds[slot] = PieceType::Control;
        texts.push(content.to_owned());
        ids.push(slot as u32);
    }
    Ok((texts, ids))
}

/// The merges as `(left, right, product)` ids, in rank order.
fn read_merges(model: &Value, by_piece: &FxHashMap<&str, u32>) -> Result<Vec<[u32; 3]>, Refusal> {
    let list = model
        .get("merges")
        .and_then(Value::as_array)
        .ok_or("no merges")?;
    let mut out = Vec::with_capacity(list.len());
    let mut joined = String::new();
    for m in list {
        let (l, r) = match m {
            Value::Array(pair) => match pair.as_slice() {
                [Value::String(l), Value::String(r)] => (l.as_str(), r.as_str()),
                _ => return Err("a merge is not a pair".into()),
            },
            Value::String(s) => s.split_once(' ').ok_or("a merge is not a pair")?,
            _ => return Err("a merge is not a pair".into()),
        };
        joined.clear();
        joined.push_str(l);
        joined.push_str(r);
        let id = |p: &str| by_piece.get(p).copied();
        match (id(l), id(r), id(&joined)) {
            (Some(l), Some(r), Some(p)) => out.push([l, r, p]),
            _ => return Err("a merge whose parts or product are not in the vocab".into()),
        }
    }
    Ok(out)
}

/// Checks the conditions under which `tokenizers`' BPE (lowest merge rank,
/// then leftmost) and sentencepiece's (highest product score, then
/// leftmost) give the same ids on every text, and returns the scores that
/// make them so (DESIGN.md invariant `spm-route-same-merges`):
///
/// 1. every merge joins NORMAL pieces into a NORMAL piece, once;
/// 2. every character of a NORMAL piece is itself a NORMAL piece;
/// 3. for every NORMAL piece `t`, `tokenizers`' merge run on `t` alone ends
///    in `t` exactly when sentencepiece's does (scores below), and through
///    the same last merge.
///
/// The score of `t` is minus the rank of the last merge of `tokenizers`'
/// run on `t` alone; pieces that run never forms score below every rank.
fn check_merges(
    vocab: &[String],
    kinds: &[PieceType],
    by_piece: &FxHashMap<&str, u32>,
    merges: &[[u32; 3]],
) -> Result<Vec<f32>, Refusal> {
    let normal = |id: u32| kinds[id as usize] == PieceType::Normal;
    // f32 holds every integer below 2^24 exactly, so scores stay distinct.
    if merges.len() + vocab.len() >= 1 << 24 {
        return Err("too many merges for exact f32 scores".into());
    }
    let mut rank: FxHashMap<(u32, u32), u32> = FxHashMap::default();
    rank.reserve(merges.len());
    for (i, &[l, r, p]) in merges.iter().enumerate() {
        if !(normal(l) && normal(r) && normal(p)) {
            return Err(format!("merge {i} involves a special or byte piece"));
        }
        if rank.insert((l, r), i as u32).is_some() {
            return Err(format!("merge {i} is listed twice"));
        }
    }
    let pieces = char_ids(vocab, kinds, by_piece)?;
    // tokenizers' run on each piece alone: its last merge's rank, if it forms the piece.
    let hf_key = |l, r| {
        let &k = rank.get(&(l, r))?;
        Some((u64::from(k), merges[k as usize][2]))
    };
    let mut last_rank: Vec<Option<u32>> = vec![None; vocab.len()];
    for (i, (formed, last)) in runs(&pieces, hf_key).into_iter().enumerate() {
        if formed {
            last_rank[pieces.id(i)] = last.and_then(|pair| rank.get(&pair).copied());
        }
    }
    let n_merges = merges.len() as u64;
    let score_key = |id: u32| -> u64 {
        match last_rank[id as usize] {
            Some(k) => u64::from(k),
            None => n_merges + u64::from(id),
        }
    };
    // sentencepiece: any adjacent pair whose concatenation is a NORMAL
    // piece, highest score (lowest key) first. Symbols are NORMAL pieces
    // (characters, by rule 2, or merge products), so every split of every
    // NORMAL piece into two NORMAL pieces is a possible merge.
    // Collected in piece order: of two entries for one pair the later wins,
    // as in a sequential walk.
    let splits: Vec<((u32, u32), u32)> = (0..pieces.len())
        .into_par_iter()
        .flat_map_iter(|i| {
            let id = pieces.id(i);
            let piece = vocab[id].as_str();
            piece.char_indices().skip(1).filter_map(move |(k, _)| {
                let l = *by_piece.get(&piece[..k])?;
                let r = *by_piece.get(&piece[k..])?;
                (normal(l) && normal(r)).then_some(((l, r), id as u32))
            })
        })
        .collect();
    let mut spm_pairs: FxHashMap<(u32, u32), u32> = FxHashMap::default();
    spm_pairs.reserve(splits.len());
    spm_pairs.extend(splits);
    let spm_key = |l, r| {
        let &p = spm_pairs.get(&(l, r))?;
        Some((score_key(p), p))
    };
    for (i, (spm_forms, last)) in runs(&pieces, spm_key).into_iter().enumerate() {
        let id = pieces.id(i);
        let agrees = match (spm_forms, last_rank[id]) {
            (false, None) => true,
            (true, Some(k)) => {
                let [l, r, _] = merges[k as usize];
                last == Some((l, r))
            }
            _ => false,
        };
        if !agrees {
            return Err(format!(
                "piece {id}: tokenizers and sentencepiece would merge it differently"
            ));
        }
    }
    Ok((0..vocab.len() as u32)
        .map(|id| {
            if normal(id) {
                -(score_key(id) as f32)
            } else {
                0.0
            }
        })
        .collect())
}

/// The NORMAL pieces of two or more characters, each as the ids of its
/// characters (one flat list), looked up once for both runs of
/// [`check_merges`].
struct CharIds {
    /// (piece id, end of its characters in `chars`).
    pieces: Vec<(u32, u32)>,
    chars: Vec<u32>,
}

impl CharIds {
    fn len(&self) -> usize {
        self.pieces.len()
    }

    fn id(&self, i: usize) -> usize {
        self.pieces[i].0 as usize
    }

    fn chars(&self, i: usize) -> &[u32] {
        let start = i.checked_sub(1).map_or(0, |p| self.pieces[p].1 as usize);
        &self.chars[start..self.pieces[i].1 as usize]
    }
}

/// Checks rule 2 of [`check_merges`] (every character of a NORMAL piece is
/// a NORMAL piece) and the length cap, and returns the character ids of
/// the pieces the runs start from.
fn char_ids(
    vocab: &[String],
    kinds: &[PieceType],
    by_piece: &FxHashMap<&str, u32>,
) -> Result<CharIds, Refusal> {
    let normal = |id: u32| kinds[id as usize] == PieceType::Normal;
    // One-character pieces by character: a `char` key hashes and compares
    // in one step where a `&str` key costs a string hash and a `memcmp`.
    let mut by_char: FxHashMap<char, u32> = FxHashMap::default();
    for (piece, &id) in by_piece {
        let mut cs = piece.chars();
        if let (Some(c), None) = (cs.next(), cs.next()) {
            by_char.insert(c, id);
        }
    }
    let mut out = CharIds {
        pieces: Vec::new(),
        chars: Vec::new(),
    };
    for (id, piece) in vocab.iter().enumerate() {
        if !normal(id as u32) {
            continue;
        }
        let start = out.chars.len();
        for c in piece.chars() {
            match by_char.get(&c) {
                Some(&cid) if normal(cid) => out.chars.push(cid),
                _ => return Err(format!("piece {id} has a character that is no piece")),
            }
            // The runs are quadratic in a piece's length; sentencepiece's
            // trainer caps pieces at 16 characters by default.
            if out.chars.len() - start > MAX_PIECE_CHARS {
                return Err(format!(
                    "piece {id} is longer than {MAX_PIECE_CHARS} characters"
                ));
            }
        }
        if out.chars.len() - start >= 2 {
            out.pieces.push((id as u32, out.chars.len() as u32));
        } else {
            out.chars.truncate(start);
        }
    }
    Ok(out)
}

/// Runs the merge rule `key` (see [`run`]) on each piece of `pieces`
/// alone, from its characters, in parallel: for each, in order, whether
/// the run ended in that piece, and its last pair.
fn runs(
    pieces: &CharIds,
    key: impl Fn(u32, u32) -> Option<(u64, u32)> + Sync,
) -> Vec<(bool, Option<(u32, u32)>)> {
    (0..pieces.len())
        .into_par_iter()
        .map_init(Vec::new, |syms, i| {
            syms.clear();
            syms.extend_from_slice(pieces.chars(i));
            let last = run(syms, &key);
            (syms.len() == 1 && syms[0] as usize == pieces.id(i), last)
        })
        .collect()
}

/// Merges `syms` until no pair has a key: at each step the pair with the
/// lowest `key(left, right)` (`(key, product)`), the leftmost among equals.
/// Returns the pair of the last merge. Quadratic; pieces are short.
fn run(syms: &mut Vec<u32>, key: impl Fn(u32, u32) -> Option<(u64, u32)>) -> Option<(u32, u32)> {
    let mut last = None;
    loop {
        let mut best: Option<(u64, usize, u32)> = None;
        for i in 0..syms.len().saturating_sub(1) {
            if let Some((k, p)) = key(syms[i], syms[i + 1])
                && best.is_none_or(|(bk, _, _)| k < bk)
            {
                best = Some((k, i, p));
            }
        }
        let Some((_, i, p)) = best else {
            return last;
        };
        last = Some((syms[i], syms[i + 1]));
        syms[i] = p;
        syms.remove(i + 1);
    }
}
