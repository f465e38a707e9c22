//! The `tokenizers` pipeline of a `tokenizer.json`: built during the load,
//! or, where the SentencePiece route encodes (claims 230–238) and the
//! pipeline serves only offsets and non-byte-level decode, on a thread of
//! its own started by the load (DESIGN.md claim 306).
//!
//! Performance note: building the pipeline's BPE model (`tokenizers`'
//! `from_config`) was about a third of a Mistral-7B `tokenizer.json` load,
//! for a model the routed encodes never touch.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use tokenizers::pipeline::PipelineTokenizer;

use super::{HfBackend, Routes, assemble};
use crate::error::{Error, Result};

/// A built pipeline, and whether [`assemble`] built it (claims 280–286)
/// rather than `tokenizers` reading the file whole.
pub(super) struct Built {
    pub(super) pipe: PipelineTokenizer,
    pub(super) assembled: bool,
}

/// What a deferred build reads: the file again (it was validated by the
/// load that deferred it).
struct Source {
    path: PathBuf,
    json: String,
    routes: Routes,
}

/// The pipeline, ready or being built.
pub(super) struct Pipe {
    cell: Arc<OnceLock<std::result::Result<Built, Error>>>,
    /// Set when the build was deferred: what the first caller builds from
    /// if the background thread has not started it.
    source: Option<Arc<Source>>,
}

impl Pipe {
    /// A pipeline built during the load.
    pub(super) fn ready(pipe: PipelineTokenizer, assembled: bool) -> Self {
        Self {
            cell: Arc::new(OnceLock::from(Ok(Built { pipe, assembled }))),
            source: None,
        }
    }

    /// A pipeline built from `json` on a thread started here; if no thread
    /// can be had, the first caller of [`get`](Self::get) builds it.
    pub(super) fn deferred(path: &Path, json: &str, routes: Routes) -> Self {
        let source = Arc::new(Source {
            path: path.to_path_buf(),
            json: json.to_owned(),
            routes,
        });
        let cell = Arc::new(OnceLock::new());
        let (thread_cell, thread_source) = (Arc::clone(&cell), Arc::clone(&source));
        let _ = std::thread::Builder::new()
            .name("rtok-hf-pipeline".into())
            .spawn(move || {
                thread_cell.get_or_init(|| build(&thread_source));
            });
        Self {
            cell,
            source: Some(source),
        }
    }

    /// The pipeline, waiting for (or running) a deferred build.
    pub(super) fn get(&self) -> Result<&Built> {
        let built = match &self.source {
            Some(source) => self.cell.get_or_init(|| build(source)),
            None => self
                .cell
                .get()
                .ok_or_else(|| Error::backend(super::NAME, "the pipeline was never built"))?,
        };
        built.as_ref().map_err(|e| Error::new(e.kind().clone()))
    }
}

/// The whole read of a deferred pipeline, as the load would have done it.
fn build(source: &Source) -> std::result::Result<Built, Error> {
    let path = source.path.as_path();
    let guarded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let (value, skeleton, legacy) = HfBackend::prepare(path, &source.json)?;
        if source.routes.assemble
            && let Some(pipe) = assemble::bpe_pipeline(path, &value, &skeleton, legacy)?
        {
            return Ok(Built {
                pipe,
                assembled: true,
            });
        }
        let mut value = assemble::reattach(skeleton, value);
        let pipe = HfBackend::read_whole(path, &source.json, &mut value, legacy)?;
        Ok(Built {
            pipe,
            assembled: false,
        })
    }));
    guarded.unwrap_or_else(|_| {
        Err(Error::parse(
            path,
            "building the tokenizers pipeline: internal panic",
        ))
    })
}
