//! The load's checks of the vocabulary and merges: what `tokenizers` 1.0
//! would panic on or size a table by (DESIGN.md invariant
//! `hostile-input-bounded`), refused before any table is built.

use rustc_hash::FxHashMap;
use std::path::Path;

use super::MergeView;
use crate::error::{Error, Result};
use crate::limits;

/// Token lengths and ids within what `tokenizers` stores and what the tables
/// built from them may cost (DESIGN.md invariant `hostile-input-bounded`); checked before either is
/// built.
pub(super) fn check_entries(path: &Path, entries: &[(&str, u32)]) -> Result<()> {
    check_entry_iter(path, entries.iter().copied())
}

/// What `tokenizers`' BPE build needs to neither panic nor size a table by a
/// hostile id, on the tables [`super::super::assemble`] hands to
/// `PipelineBPE::from_config`: [`check_entries`], and for each merge the two
/// slice bounds its build relies on (the right side at least as long as
/// `continuing_subword_prefix`, the product no longer than the longest
/// entry). A side or product missing from the vocabulary is an error there,
/// not a panic, and [`super::Vocab::read`] reports it first (invariant `assembled-equals-from-json`). No
/// hashing:
/// this runs on the load's critical path.
pub(in crate::backend::hf) fn check_bpe_tables(
    path: &Path,
    vocab: &tokenizers::models::bpe::Vocab,
    merges: &[(String, String)],
    prefix: Option<&str>,
) -> Result<()> {
    if vocab.is_empty() {
        return Err(Error::parse(
            path,
            "the BPE model has an empty vocabulary, which tokenizers 1.0 cannot load",
        ));
    }
    check_entry_iter(path, vocab.iter().map(|(t, id)| (t.as_str(), *id)))?;
    let longest = vocab.keys().map(String::len).max().unwrap_or(0);
    let prefix_len = prefix.map_or(0, str::len);
    for (rank, (a, b)) in merges.iter().enumerate() {
        let fits = b
            .len()
            .checked_sub(prefix_len)
            .is_some_and(|rest| a.len() + rest <= longest);
        if !fits {
            return Err(Error::parse(
                path,
                format!("merge {rank} ({a:?} {b:?}): the merged token is not in the vocabulary"),
            ));
        }
    }
    Ok(())
}

fn check_entry_iter<'a>(
    path: &Path,
    entries: impl Iterator<Item = (&'a str, u32)> + Clone,
) -> Result<()> {
    if let Some((token, _)) = entries
        .clone()
        .find(|(t, _)| t.len() > limits::MAX_TOKEN_BYTES)
    {
        return Err(limits::refused(
            path,
            format!(
                "a vocabulary token is {} bytes long (the limit is {})",
                token.len(),
                limits::MAX_TOKEN_BYTES
            ),
        ));
    }
    let count = entries.clone().count();
    let max_id = entries.map(|(_, id)| u64::from(id)).max().unwrap_or(0);
    limits::check_id(path, "token", max_id, count)
}

/// Every merge must join two vocabulary entries into a third: `tokenizers`
/// 1.0.0-rc.3 slices the right side past `continuing_subword_prefix` and
/// copies the result into a buffer sized by the longest entry before it looks
/// the result up, so a bad merge panics there instead of failing.
pub(super) fn check_merges(
    path: &Path,
    model_entries: &[(&str, u32)],
    merges: &[MergeView],
    prefix: Option<&str>,
) -> Result<Vec<[u32; 3]>> {
    if merges.is_empty() {
        return Ok(Vec::new());
    }
    let vocab: FxHashMap<&str, u32> = model_entries.iter().copied().collect();
    let prefix_len = prefix.map_or(0, str::len);
    let mut merged = String::new();
    let mut ids = Vec::with_capacity(merges.len());
    for (rank, merge) in merges.iter().enumerate() {
        let Some((a, b)) = merge.pair() else {
            return Err(Error::parse(
                path,
                format!("merge {rank} is not a pair of tokens"),
            ));
        };
        let bad = |why: &str| Error::parse(path, format!("merge {rank} ({a:?} {b:?}): {why}"));
        let (Some(&left), Some(&right)) = (vocab.get(a), vocab.get(b)) else {
            return Err(bad("a side is not in the vocabulary"));
        };
        let rest = b
            .get(prefix_len..)
            .ok_or_else(|| bad("the right side is shorter than continuing_subword_prefix"))?;
        merged.clear();
        merged.push_str(a);
        merged.push_str(rest);
        let Some(&joined) = vocab.get(merged.as_str()) else {
            return Err(bad("the merged token is not in the vocabulary"));
        };
        ids.push([left, right, joined]);
    }
    Ok(ids)
}
