//! Format detection by content, never by file name.

use crate::backend::tiktoken::ranks::looks_like_rank_file;
pub use crate::contract::Format;

/// Detects the format from the first bytes of a file (a few hundred suffice).
pub(crate) fn detect(head: &[u8]) -> Option<Format> {
    let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        if super::tekken::looks_like_tekken(head) {
            return Some(Format::Tekken);
        }
        return Some(Format::HfJson);
    }
    if head.starts_with(b"GGUF") {
        return Some(Format::Gguf);
    }
    if looks_like_rank_file(head) {
        return Some(Format::Tiktoken);
    }
    if looks_like_sentencepiece(head) {
        return Some(Format::SentencePiece);
    }
    None
}

/// The largest file of a format the loader reads (DESIGN.md invariant `hostile-input-bounded`).
pub(crate) fn max_file_bytes(format: Format) -> u64 {
    use crate::limits;
    match format {
        Format::HfJson | Format::Tekken => limits::MAX_TOKENIZER_JSON,
        Format::Tiktoken => limits::MAX_RANK_FILE,
        Format::SentencePiece => limits::MAX_SPM_MODEL,
        Format::Gguf => limits::MAX_GGUF,
    }
}

/// A `ModelProto` starts with field 1 (`pieces`, length-delimited), whose
/// first field is 1 (`piece`, a string).
fn looks_like_sentencepiece(head: &[u8]) -> bool {
    let [0x0A, rest @ ..] = head else {
        return false;
    };
    let Some((len, used)) = varint(rest) else {
        return false;
    };
    let inner = &rest[used..];
    len > 0 && inner.first() == Some(&0x0A)
}

fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().take(10).enumerate() {
        value |= u64::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_content() {
        assert_eq!(
            detect(b"\xEF\xBB\xBF  \n{\"version\""),
            Some(Format::HfJson)
        );
        assert_eq!(detect(b"GGUF\x03\0\0\0"), Some(Format::Gguf));
        assert_eq!(detect(b"{\n  \"config\": {"), Some(Format::Tekken));
        assert_eq!(detect(b"IQ== 0\nIg== 1\n"), Some(Format::Tiktoken));
        assert_eq!(
            detect(b"\x0a\x0e\x0a\x05<unk>\x15\0\0\0\0"),
            Some(Format::SentencePiece)
        );
        assert_eq!(detect(b""), None);
        assert_eq!(detect(b"hello world"), None);
        assert_eq!(detect(b"\x0a"), None);
    }
}
