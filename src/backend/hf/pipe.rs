//! The `tokenizers` pipeline of a `tokenizer.json`: built during the load,
//! or, where the SentencePiece route encodes (claims 230–238) and the
//! pipeline serves only offsets and non-byte-level decode, on a thread of
//! its own started by the load (DESIGN.md claim 306), or, for a byte-level
//! BPE, its model built on a thread of its own while an interim pipeline
//! encodes (claim 340).
//!
//! Performance note: building the pipeline's BPE model (`tokenizers`'
//! `from_config`) was about a third of a Mistral-7B `tokenizer.json` load,
//! for a model the routed encodes never touch.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use tokenizers::pipeline::PipelineTokenizer;

use super::assemble::{Interim, Parts};
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

/// The parts of a staged build and the document whose model tables it
/// reads, taken by whichever of the build thread and a waiting caller runs
/// it first.
type Staged = Arc<Mutex<Option<(Parts, Arc<Value>)>>>;

/// The pipeline, ready or being built.
pub(super) struct Pipe {
    cell: Arc<OnceLock<std::result::Result<Built, Error>>>,
    /// Set when the build was deferred: what the first caller builds from
    /// if the background thread has not started it.
    source: Option<Arc<Source>>,
    /// Set when the model build was left to a thread (claim 340).
    staged: Option<Staged>,
    /// What encodes until then.
    interim: Option<Interim>,
}

impl Pipe {
    /// A pipeline built during the load.
    pub(super) fn ready(pipe: PipelineTokenizer, assembled: bool) -> Self {
        Self {
            cell: Arc::new(OnceLock::from(Ok(Built { pipe, assembled }))),
            source: None,
            staged: None,
            interim: None,
        }
    }

    /// A pipeline whose model [`Parts::build`] builds on a thread started
    /// here (unless `start` is false: then the first caller of
    /// [`get`](Self::get) builds it); `interim` encodes until it is done.
    pub(super) fn staged(
        parts: Parts,
        interim: Interim,
        document: Arc<Value>,
        start: bool,
    ) -> Self {
        let staged: Staged = Arc::new(Mutex::new(Some((parts, document))));
        let cell = Arc::new(OnceLock::new());
        if start {
            let (thread_cell, thread_staged) = (Arc::clone(&cell), Arc::clone(&staged));
            let _ = std::thread::Builder::new()
                .name("rtok-hf-model".into())
                .spawn(move || {
                    thread_cell.get_or_init(|| build_staged(&thread_staged));
                });
        }
        Self {
            cell,
            source: None,
            staged: Some(staged),
            interim: Some(interim),
        }
    }

    /// The interim pipeline while the model is being built, or if its build
    /// failed (encodes then stay on it, as exact; only what needs the whole
    /// pipeline returns the error); `None` once it is built, or where there
    /// is none, so callers move to [`get`](Self::get).
    pub(super) fn interim(&self) -> Option<&Interim> {
        match self.cell.get() {
            Some(Ok(_)) => None,
            Some(Err(_)) | None => self.interim.as_ref(),
        }
    }

    /// A pipeline built from `json` on a thread started here (unless
    /// `routes.hold_model` with an interim pipeline: the equivalence tests);
    /// if no thread can be had, the first caller of [`get`](Self::get)
    /// builds it. `interim`, if any, encodes until then (claim 344).
    pub(super) fn deferred(
        path: &Path,
        json: &str,
        routes: Routes,
        interim: Option<Interim>,
    ) -> Self {
        let source = Arc::new(Source {
            path: path.to_path_buf(),
            json: json.to_owned(),
            routes,
        });
        let cell = Arc::new(OnceLock::new());
        if interim.is_none() || !routes.hold_model {
            let (thread_cell, thread_source) = (Arc::clone(&cell), Arc::clone(&source));
            let _ = std::thread::Builder::new()
                .name("rtok-hf-pipeline".into())
                .spawn(move || {
                    thread_cell.get_or_init(|| build(&thread_source));
                });
        }
        Self {
            cell,
            source: Some(source),
            staged: None,
            interim,
        }
    }

    /// The pipeline, waiting for (or running) a deferred build.
    pub(super) fn get(&self) -> Result<&Built> {
        let built = match (&self.source, &self.staged) {
            (Some(source), _) => self.cell.get_or_init(|| build(source)),
            (None, Some(staged)) => self.cell.get_or_init(|| build_staged(staged)),
            (None, None) => self
                .cell
                .get()
                .ok_or_else(|| Error::backend(super::NAME, "the pipeline was never built"))?,
        };
        built.as_ref().map_err(|e| Error::new(e.kind().clone()))
    }
}

/// The model build of a staged pipeline. `OnceLock` runs one initialiser,
/// so the parts are always there to take.
fn build_staged(staged: &Staged) -> std::result::Result<Built, Error> {
    let (parts, document) = staged
        .lock()
        .map_err(|_| Error::backend(super::NAME, "the model build was poisoned"))?
        .take()
        .ok_or_else(|| Error::backend(super::NAME, "the model build ran twice"))?;
    let pipe = parts.build(document.get("model"))?;
    Ok(Built {
        pipe,
        assembled: true,
    })
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
