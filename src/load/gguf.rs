//! Loading a GGUF file: sniffed by its magic, memory-mapped, metadata only.
//!
//! The file is mapped, never read whole: a multi-gigabyte model file costs
//! the pages of its metadata (a few MB), and the tensors are never touched.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::LoadOptions;
use super::detect::Format;
use crate::backend::gguf::{Gguf, GgufBackend};
use crate::error::{Error, ErrorKind, Result};
use crate::tokenizer::{Tokenizer, TokenizerInfo};

/// Whether `file` starts with the GGUF magic (read errors are left to the caller).
pub(crate) fn is_gguf(file: &Path) -> bool {
    let mut magic = [0u8; 4];
    // Never opens a FIFO or a device: the capped reader refuses those later.
    crate::limits::open_regular(file)
        .ok()
        .and_then(|mut f| f.read_exact(&mut magic).ok())
        .is_some_and(|()| &magic == b"GGUF")
}

/// The `.gguf` files directly in `dir`, sorted.
pub(crate) fn gguf_files(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "gguf"))
        .collect();
    found.sort();
    found
}

/// A folder or hub repo with several `.gguf` files and no other tokenizer
/// is ambiguous: the caller must name one (`org/name/file.gguf`).
pub(crate) fn check_unambiguous(dir: &Path, source: &str) -> Result<()> {
    let files = gguf_files(dir);
    if files.len() > 1 {
        let names: Vec<String> = files
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        return Err(Error::new(ErrorKind::InvalidSource {
            given: source.to_owned(),
            reason: format!(
                "{} holds {} GGUF files; name one (e.g. `{}/{}`): {}",
                dir.display(),
                names.len(),
                source.trim_end_matches('/'),
                names[0],
                names.join(", ")
            ),
        }));
    }
    Ok(())
}

/// `file` inside a resolved hub snapshot, or NotFound listing the GGUF files there.
pub(crate) fn file_in_snapshot(dir: &Path, repo: &str, file: &str) -> Result<PathBuf> {
    let path = dir.join(file);
    if path.is_file() {
        return Ok(path);
    }
    let names: Vec<String> = gguf_files(dir)
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    Err(Error::new(ErrorKind::NotFound {
        what: format!(
            "{repo}/{file} (GGUF files in the repo: {})",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ),
    }))
}

impl LoadOptions {
    /// Loads the tokenizer in a GGUF file's metadata.
    pub(crate) fn load_gguf(&self, file: &Path, source: &str) -> Result<Tokenizer> {
        let f = crate::limits::open_regular(file)?;
        // SAFETY: the map is read-only and dropped before this function
        // returns; everything kept is copied out. A file truncated by another
        // process meanwhile can fault, as with any mmap reader (llama.cpp's too).
        let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| Error::io(file, e))?;
        let gguf =
            Gguf::parse(&map).map_err(|e| Error::parse(file, e.to_string()).with_source(e))?;
        let backend = GgufBackend::new(file, &gguf, self.special_tokens)?;
        let context_length = context_length(&gguf);
        drop(gguf);
        drop(map);
        let eos = backend.eog_ids();
        let config = chat_config(&backend);
        let tokenizer = Tokenizer::build(
            Arc::new(backend),
            TokenizerInfo {
                source: source.to_owned(),
                format: Format::Gguf,
                dir: file.parent().map(Path::to_path_buf),
                eos_token_ids: eos,
                config: config.map(Arc::new),
                chat_template_override: self.chat_template.clone(),
                tekken_version: None,
            },
        );
        // The model's own figure wins over a config.json that sits beside it.
        Ok(match context_length {
            Some(tokens) => tokenizer.with_context_length(tokens),
            None => tokenizer,
        })
    }
}

/// `{general.architecture}.context_length`, the length the model was trained
/// for (llama.cpp's `n_ctx_train`); absent, zero or negative counts as unknown.
fn context_length(gguf: &Gguf<'_>) -> Option<usize> {
    use crate::backend::gguf::reader::Value;
    let Some(Value::String(arch)) = gguf.get("general.architecture") else {
        return None;
    };
    let key = format!("{}.context_length", std::str::from_utf8(arch).ok()?);
    let tokens = match gguf.get(&key)? {
        Value::U32(n) => u64::from(*n),
        Value::U64(n) => *n,
        Value::I32(n) => u64::try_from(*n).ok()?,
        Value::I64(n) => u64::try_from(*n).ok()?,
        _ => return None,
    };
    usize::try_from(tokens).ok().filter(|&n| n > 0)
}

/// The GGUF chat templates and bos/eos, shaped like `tokenizer_config.json`
/// for the chat template loader.
fn chat_config(backend: &GgufBackend) -> Option<serde_json::Value> {
    use crate::backend::Tokenizer as _;
    let templates = backend.chat_templates();
    if templates.is_empty() {
        return None;
    }
    let mut config = serde_json::Map::new();
    let entry = if let [(None, text)] = templates {
        serde_json::Value::from(text.as_str())
    } else {
        templates
            .iter()
            .map(|(name, text)| {
                serde_json::json!({"name": name.as_deref().unwrap_or("default"), "template": text})
            })
            .collect()
    };
    config.insert("chat_template".into(), entry);
    let specials = backend.special_tokens();
    for (role, token) in specials.named() {
        config.insert(format!("{role}_token"), token.content.clone().into());
    }
    Some(serde_json::Value::Object(config))
}
