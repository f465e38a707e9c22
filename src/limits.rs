//! Hard limits on what is read and built from a file. A hostile file must
//! fail with a typed error naming it, never exhaust memory, block or abort
//! (DESIGN.md invariant `hostile-input-bounded`).

use std::io::Read;
use std::path::Path;

pub(crate) use crate::error::short_quotes;
use crate::error::{Error, ErrorKind, Result};

/// Largest `tokenizer.json` read (the largest real ones, Gemma-3's, are ~33 MiB).
pub(crate) const MAX_TOKENIZER_JSON: u64 = 512 << 20;
/// Largest tiktoken rank file (o200k_base is 3.6 MiB).
pub(crate) const MAX_RANK_FILE: u64 = 64 << 20;
/// Largest SentencePiece `.model` (Gemma-3's is 4.5 MiB).
pub(crate) const MAX_SPM_MODEL: u64 = 64 << 20;
/// Largest GGUF file read whole (a vocab-only GGUF is a few MiB).
pub(crate) const MAX_GGUF: u64 = 1 << 30;
/// Largest `tokenizer_config.json`, `config.json`, `special_tokens_map.json`,
/// `generation_config.json` (Gemma-3's `tokenizer_config.json` is 1.2 MiB).
pub(crate) const MAX_CONFIG_JSON: u64 = 64 << 20;
/// Longest vocabulary entry in bytes (`tokenizers` 1.0 stores lengths in a `u16`).
pub(crate) const MAX_TOKEN_BYTES: usize = u16::MAX as usize;
/// Ids may leave holes, but never more than this beyond twice the entry count.
pub(crate) const ID_SLACK: u64 = 1 << 16;

/// The largest id a file with `entries` tokens may use: tables are sized by
/// the largest id, so it must stay proportional to what the file holds.
pub(crate) fn id_bound(entries: usize) -> u64 {
    (entries as u64)
        .saturating_mul(2)
        .saturating_add(ID_SLACK)
        .min(u64::from(i32::MAX as u32))
}

/// Refuses `max_id` when it is out of proportion with `entries` (see [`id_bound`]).
pub(crate) fn check_id(path: &Path, what: &str, max_id: u64, entries: usize) -> Result<()> {
    let bound = id_bound(entries);
    if max_id > bound {
        return Err(refused(
            path,
            format!(
                "{what} id {max_id} is out of range for a file with {entries} entries (ids must stay below {bound})"
            ),
        ));
    }
    Ok(())
}

pub(crate) fn refused(path: &Path, reason: impl Into<String>) -> Error {
    Error::new(ErrorKind::Refused {
        path: path.to_path_buf(),
        reason: reason.into(),
    })
}

/// Reads a whole regular file of at most `limit` bytes. Devices, FIFOs and
/// sockets are refused before they are opened (a FIFO with no writer would
/// block the open, `/dev/zero` never ends).
pub(crate) fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>> {
    read_capped_by(path, 0, |_| limit)
}

/// [`read_capped`] with the limit chosen from the first `head` bytes (the
/// file kind is detected from content).
pub(crate) fn read_capped_by(
    path: &Path,
    head: usize,
    limit_for: impl FnOnce(&[u8]) -> u64,
) -> Result<Vec<u8>> {
    let mut file = open_regular(path)?;
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut bytes = Vec::with_capacity(head);
    (&mut file)
        .take(head as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    let limit = limit_for(&bytes);
    if len > limit {
        return Err(too_large(path, limit));
    }
    bytes.reserve(
        usize::try_from(len)
            .unwrap_or(0)
            .saturating_sub(bytes.len()),
    );
    (&mut file)
        .take(limit.saturating_add(1).saturating_sub(bytes.len() as u64))
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(path, limit));
    }
    Ok(bytes)
}

/// [`read_capped`] for an optional file: `None` when it does not exist.
pub(crate) fn read_optional(path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    match read_capped(path, limit) {
        Err(e) if matches!(e.kind(), ErrorKind::NotFound { .. }) => Ok(None),
        other => other.map(Some),
    }
}

fn too_large(path: &Path, limit: u64) -> Error {
    refused(
        path,
        format!(
            "larger than the {} MiB limit for this kind of file",
            limit >> 20
        ),
    )
}

pub(crate) fn open_regular(path: &Path) -> Result<std::fs::File> {
    // Checked before opening: opening a FIFO with no writer blocks.
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(not_regular(path));
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    // And after: the path may have been replaced in between.
    if !file.metadata().map_err(|e| Error::io(path, e))?.is_file() {
        return Err(not_regular(path));
    }
    Ok(file)
}

fn not_regular(path: &Path) -> Error {
    refused(
        path,
        "not a regular file (a device, FIFO or socket is never read)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_cut() {
        let long = format!("invalid type: string \"{}\", expected u32", "S".repeat(100));
        let short = short_quotes(&long);
        assert!(short.len() < 80, "{short}");
        assert!(short.ends_with("…\", expected u32"), "{short}");
        assert_eq!(short_quotes("a \"b\" c"), "a \"b\" c");
    }

    #[test]
    fn id_bound_grows_with_entries() {
        assert_eq!(id_bound(0), ID_SLACK);
        assert!(id_bound(200_000) >= 200_000);
        assert!(id_bound(usize::MAX) < u64::from(u32::MAX));
    }
}
