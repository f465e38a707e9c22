//! Work-arounds for two fold bugs of `tokenizers` 1.0.0-rc.3: the ids it
//! emits wrongly, with the ids the merges give instead.

use rustc_hash::FxHashMap;

use super::{MergeView, ModelView};
use crate::backend::byte_level;

/// Works around a `tokenizers` 1.0.0-rc.3 bug. Some byte-level vocabularies
/// (Command-R+) hold entries written as plain characters outside the byte-level
/// alphabet, e.g. `☪` (id 320). `tokenizers` 0.x can never produce them, since
/// merges build byte-level spellings; 1.0 stores them as their UTF-8 bytes and
/// its load-time fold proof marks every one-character entry reachable, so a
/// pre-token `☪` comes out as 320 instead of the merged bytes `âĺ`,`ª`. Such an
/// id can only come from that fold, so replacing it with the merge result is
/// exact. Returns those ids with their merge results.
pub(super) fn fold_fixups(
    tokens: &[Option<Box<str>>],
    by_token: &FxHashMap<Box<str>, u32>,
    merges: &[MergeView],
) -> FxHashMap<u32, Vec<u32>> {
    let candidates: Vec<(usize, &str)> = tokens
        .iter()
        .enumerate()
        .filter_map(|(id, token)| Some((id, token.as_deref()?)))
        .filter(|&(_, token)| {
            token.len() >= 2 && token.chars().count() == 1 && byte_level::unspell(token).is_none()
        })
        .collect();
    // Most vocabularies have none: the rank map is built only for them.
    if candidates.is_empty() {
        return FxHashMap::default();
    }
    let ranks: FxHashMap<(&str, &str), usize> = merges
        .iter()
        .enumerate()
        .filter_map(|(rank, m)| Some((m.pair()?, rank)))
        .collect();
    let alphabet = byte_level::byte_to_char_table();
    let mut out = FxHashMap::default();
    for (id, token) in candidates {
        // Plain BPE over the byte-level spelling of the character (2–4 symbols).
        let spelled = byte_level::spell(token.as_bytes(), &alphabet);
        let symbols: Vec<String> = spelled.chars().map(String::from).collect();
        let ids = merged_ids(symbols, by_token, &ranks);
        if let (Some(ids), Ok(id)) = (ids, u32::try_from(id)) {
            out.insert(id, ids);
        }
    }
    out
}

/// Works around a second fold bug of `tokenizers` 1.0.0-rc.3, in BPE models
/// with an `end_of_word_suffix` (CLIP, openai-gpt, `CharBPETokenizer`): its
/// load-time fold proof takes every one-character entry `c` for the encoding
/// of the word `c`, but a word's last character carries the suffix, so the
/// word `a` is `a</w>` (`tokenizers` 0.x, the reference), not `a`. Only a
/// one-character entry can be folded wrongly (a longer entry is proven by
/// merging its own, decorated, text), so the answer for each such character
/// is made here as 0.x's `merge_word` makes it: the entry `c` + suffix; else
/// its `<0xNN>` byte pieces (with `byte_fallback`, when all exist) merged by
/// rank; else `unk` (the model's `unk_token`); else nothing. The chunk walk hands these words
/// to the model never (`chunk::tokenize_spans`).
pub(super) fn suffix_words(
    tokens: &[Option<Box<str>>],
    added: &[bool],
    by_token: &FxHashMap<Box<str>, u32>,
    model: &ModelView<'_>,
    suffix: &str,
    unk: Option<u32>,
) -> FxHashMap<char, Vec<u32>> {
    let ranks: FxHashMap<(&str, &str), usize> = if model.byte_fallback {
        model
            .merges
            .iter()
            .enumerate()
            .filter_map(|(rank, m)| Some((m.pair()?, rank)))
            .collect()
    } else {
        FxHashMap::default()
    };
    let mut out = FxHashMap::default();
    for (id, token) in tokens.iter().enumerate() {
        let Some(token) = token.as_deref() else {
            continue;
        };
        let mut chars = token.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            continue;
        };
        if added.get(id).copied().unwrap_or(true) {
            continue;
        }
        let mut buf = [0u8; 4];
        let decorated = format!("{}{suffix}", c.encode_utf8(&mut buf));
        let ids = if let Some(&id) = by_token.get(decorated.as_str()) {
            vec![id]
        } else if let Some(ids) = model
            .byte_fallback
            .then(|| merged_byte_pieces(c, by_token, &ranks))
            .flatten()
        {
            ids
        } else {
            unk.into_iter().collect()
        };
        out.insert(c, ids);
    }
    out
}

/// The `<0xNN>` pieces of `c`'s UTF-8 bytes merged by rank, as 0.x's BPE
/// merges any symbols; `None` when a piece is missing.
fn merged_byte_pieces(
    c: char,
    by_token: &FxHashMap<Box<str>, u32>,
    ranks: &FxHashMap<(&str, &str), usize>,
) -> Option<Vec<u32>> {
    let mut buf = [0u8; 4];
    let symbols: Vec<String> = c
        .encode_utf8(&mut buf)
        .bytes()
        .map(|b| format!("<0x{b:02X}>"))
        .collect();
    merged_ids(symbols, by_token, ranks)
}

/// Plain BPE over a few symbols (the lowest-ranked pair first, leftmost on
/// ties), then each merged symbol's id; `None` when one has none.
fn merged_ids(
    mut symbols: Vec<String>,
    by_token: &FxHashMap<Box<str>, u32>,
    ranks: &FxHashMap<(&str, &str), usize>,
) -> Option<Vec<u32>> {
    loop {
        let best = symbols
            .windows(2)
            .enumerate()
            .filter_map(|(i, w)| ranks.get(&(w[0].as_str(), w[1].as_str())).map(|&r| (r, i)))
            .min();
        let Some((_, i)) = best else { break };
        let right = symbols.remove(i + 1);
        symbols[i].push_str(&right);
    }
    symbols
        .iter()
        .map(|s| by_token.get(s.as_str()).copied())
        .collect()
}
