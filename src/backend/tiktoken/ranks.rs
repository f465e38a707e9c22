//! Reading tiktoken rank files: one `base64(token) SP rank` per line.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rustc_hash::FxHashMap;
use std::path::Path;

use crate::error::{Error, Result};

/// Parses a rank file. Every line must hold a valid token and a rank below
/// 2^31, tokens and ranks must be unique; the error names the line.
pub(crate) fn parse(path: &Path, text: &[u8]) -> Result<FxHashMap<Vec<u8>, u32>> {
    let mut ranks = FxHashMap::with_capacity_and_hasher(text.len() / 12, Default::default());
    let mut seen_ranks = rustc_hash::FxHashSet::default();
    for (index, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let lineno = index + 1;
        let mut parts = line.split(|&b| b == b' ');
        let (Some(token), Some(rank), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Error::parse(
                path,
                format!("line {lineno}: expected `<base64 token> <rank>`"),
            ));
        };
        let token = STANDARD
            .decode(token)
            .map_err(|e| Error::parse(path, format!("line {lineno}: invalid base64 token: {e}")))?;
        let rank: u32 = std::str::from_utf8(rank)
            .ok()
            .and_then(|r| r.parse().ok())
            .filter(|&r: &u32| r < (1 << 31))
            .ok_or_else(|| Error::parse(path, format!("line {lineno}: invalid rank")))?;
        if !seen_ranks.insert(rank) {
            return Err(Error::parse(
                path,
                format!("line {lineno}: duplicate rank {rank}"),
            ));
        }
        if ranks.insert(token, rank).is_some() {
            return Err(Error::parse(
                path,
                format!("line {lineno}: duplicate token"),
            ));
        }
    }
    if ranks.is_empty() {
        return Err(Error::parse(path, "no ranks in file"));
    }
    // Tables are sized by the largest rank: it must be in proportion with the file.
    let max_rank = ranks.values().copied().max().unwrap_or(0);
    crate::limits::check_id(path, "rank", u64::from(max_rank), ranks.len())?;
    Ok(ranks)
}

/// Whether `head` looks like the start of a rank file (a base64 token, a space, digits).
pub(crate) fn looks_like_rank_file(head: &[u8]) -> bool {
    let Some(line) = head.split(|&b| b == b'\n').next() else {
        return false;
    };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Some(space) = line.iter().position(|&b| b == b' ') else {
        return false;
    };
    let (token, rank) = (&line[..space], &line[space + 1..]);
    !token.is_empty()
        && token
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        && !rank.is_empty()
        && rank.iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let p = Path::new("x.tiktoken");
        let ok = parse(p, b"IQ== 0\nIg== 1\n").unwrap();
        assert_eq!(ok.get(&b"!"[..]), Some(&0));
        for bad in [
            &b"IQ==\n"[..],
            b"!!! 0\n",
            b"IQ== x\n",
            b"IQ== 0\nIQ== 1\n",
            b"IQ== 0\nIg== 0\n",
            b"",
            b"IQ== 0\nIg== 2147483647\n",
        ] {
            let err = parse(p, bad).unwrap_err();
            assert!(
                matches!(
                    err.kind(),
                    crate::ErrorKind::Parse { .. } | crate::ErrorKind::Refused { .. }
                ),
                "{err}"
            );
        }
        assert!(looks_like_rank_file(b"IQ== 0\n"));
        assert!(!looks_like_rank_file(b"\n\x0a\x05<unk>"));
    }
}
