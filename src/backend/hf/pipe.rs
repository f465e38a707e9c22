//! The `tokenizers` pipeline of a `tokenizer.json`: built during the load,
//! or, where the SentencePiece route encodes (invariant `spm-route-same-merges`) and the
//! pipeline serves only offsets and non-byte-level decode, on a thread of
//! its own started by the load (DESIGN.md invariant `background-build-invisible`); or left to a
//! thread
//! while an interim pipeline encodes: a BPE's model build (invariant `interim-equals-built`), a
//! WordPiece file's whole read (invariant `interim-equals-built`).
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
use crate::backend::{BuildCancel, BuildGuard};
use crate::error::{Error, Result};

/// A built pipeline, and whether [`assemble`] built it (invariant `assembled-equals-from-json`)
/// rather than `tokenizers` reading the file whole.
pub(super) struct Built {
    pub(super) pipe: PipelineTokenizer,
    pub(super) assembled: bool,
}

/// What a pipeline left to a thread is built from.
enum Pending {
    /// The file, read again as the load would have read it (invariants `background-build-invisible`
    /// and `interim-equals-built`); the load that deferred it validated it.
    Read {
        path: PathBuf,
        json: String,
        routes: Routes,
    },
    /// The model build of the parts the load made, from the document it
    /// parsed (invariant `interim-equals-built`).
    Model(Box<Parts>, Arc<Value>),
}

/// A [`Pending`] build, taken by whichever of the build thread and a
/// waiting caller runs it first (`OnceLock` runs one initialiser, so it is
/// always there to take).
type Slot = Arc<Mutex<Option<Pending>>>;

/// Where a build leaves the pipeline, or its error.
type Cell = OnceLock<std::result::Result<Built, Error>>;

/// The pipeline, ready or being built.
pub(super) struct Pipe {
    cell: Arc<Cell>,
    /// Set while a build is left to a thread, or to the first caller of
    /// [`get`](Self::get) if no thread could be had (or none was started).
    pending: Option<Slot>,
    /// What encodes until the build is done.
    interim: Option<Interim>,
    /// Cancels the build thread's work when the pipeline (the backend) is
    /// dropped (issue 39); `None` where no thread was started.
    _build: Option<BuildGuard>,
}

impl Pipe {
    /// A pipeline built during the load.
    pub(super) fn ready(pipe: PipelineTokenizer, assembled: bool) -> Self {
        Self {
            cell: Arc::new(OnceLock::from(Ok(Built { pipe, assembled }))),
            pending: None,
            interim: None,
            _build: None,
        }
    }

    /// A pipeline whose model [`Parts::build`] builds from `document`;
    /// `interim` encodes until it is done. Nothing is started here: the load
    /// calls [`start`](Self::start) once it knows the model is needed, or
    /// [`forgo`](Self::forgo) when it is not; until then the first caller of
    /// [`get`](Self::get) builds it.
    pub(super) fn staged(parts: Parts, interim: Interim, document: Arc<Value>) -> Self {
        let pending = Pending::Model(Box::new(parts), document);
        Self::later(pending, Some(interim), false)
    }

    /// Starts the pending build on a thread of its own (if none runs yet
    /// and one can be had; else the first caller of [`get`](Self::get)
    /// builds it).
    pub(super) fn start(&mut self) {
        if self._build.is_some() || self.cell.get().is_some() {
            return;
        }
        if let Some(slot) = &self.pending {
            self._build = spawn(slot, &self.cell, "rtok-hf-model");
        }
    }

    /// Drops a pending build no encode needs: the byte-level engine
    /// (`backend::bpe`) is the model step of every encode, and decodes read
    /// the vocabulary's byte table, so `tokenizers`' model (about 0.3 s of
    /// CPU and its tables' memory for Llama-3) would serve nothing. The
    /// interim pipeline keeps serving the other stages; [`get`](Self::get)
    /// then errors.
    pub(super) fn forgo(&mut self) {
        if self._build.is_none() && self.cell.get().is_none() {
            self.pending = None;
        }
    }

    /// A pipeline built from `json` on a thread started here (unless
    /// `routes.hold_model` with an interim pipeline: the equivalence tests);
    /// if no thread can be had, the first caller of [`get`](Self::get)
    /// builds it. `interim`, if any, encodes until then (invariant `interim-equals-built`).
    pub(super) fn deferred(
        path: &Path,
        json: &str,
        routes: Routes,
        interim: Option<Interim>,
    ) -> Self {
        let start = interim.is_none() || !routes.hold_model;
        let pending = Pending::Read {
            path: path.to_path_buf(),
            json: json.to_owned(),
            routes,
        };
        Self::later(pending, interim, start)
    }

    fn later(pending: Pending, interim: Option<Interim>, start: bool) -> Self {
        let name = match pending {
            Pending::Read { .. } => "rtok-hf-pipeline",
            Pending::Model(..) => "rtok-hf-model",
        };
        let slot: Slot = Arc::new(Mutex::new(Some(pending)));
        let cell = Arc::new(OnceLock::new());
        let build = if start {
            spawn(&slot, &cell, name)
        } else {
            None
        };
        Self {
            cell,
            pending: Some(slot),
            interim,
            _build: build,
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

    /// The pipeline, waiting for (or running) a build left for later.
    pub(super) fn get(&self) -> Result<&Built> {
        let built = match &self.pending {
            Some(slot) => self.cell.get_or_init(|| run(slot, &BuildCancel::never())),
            None => self
                .cell
                .get()
                .ok_or_else(|| Error::backend(super::NAME, "the pipeline was never built"))?,
        };
        built.as_ref().map_err(|e| Error::new(e.kind().clone()))
    }
}

/// Runs the build in `slot` on a thread named `name`, filling `cell`; the
/// guard that cancels it, or `None` if no thread could be had. Once the
/// pipeline is dropped the build stops at its next stage; the cell then
/// holds an error no one reads.
fn spawn(slot: &Slot, cell: &Arc<Cell>, name: &str) -> Option<BuildGuard> {
    let (guard, cancel) = BuildGuard::new();
    let (thread_cell, thread_slot) = (Arc::clone(cell), Arc::clone(slot));
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            if cancel.cancelled() {
                return;
            }
            thread_cell.get_or_init(|| run(&thread_slot, &cancel));
        })
        .ok()
        .map(|_| guard)
}

/// Between two stages of a background build: an error once its pipeline is
/// gone (the cell it fills is then read by no one).
pub(super) fn stage(cancel: &BuildCancel) -> Result<()> {
    if cancel.cancelled() {
        return Err(Error::backend(
            super::NAME,
            "the pipeline build was cancelled: its tokenizer is gone",
        ));
    }
    Ok(())
}

/// Takes the pending build and runs it, a panic made an error.
fn run(slot: &Slot, cancel: &BuildCancel) -> std::result::Result<Built, Error> {
    let pending = slot
        .lock()
        .map_err(|_| Error::backend(super::NAME, "the pipeline build was poisoned"))?
        .take()
        .ok_or_else(|| Error::backend(super::NAME, "the pipeline build ran twice"))?;
    let path = match &pending {
        Pending::Read { path, .. } => path.clone(),
        Pending::Model(parts, _) => parts.path().to_path_buf(),
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| build(pending, cancel)))
        .unwrap_or_else(|_| {
            Err(Error::parse(
                &path,
                "building the tokenizers pipeline: internal panic",
            ))
        })
}

fn build(pending: Pending, cancel: &BuildCancel) -> std::result::Result<Built, Error> {
    match pending {
        Pending::Model(parts, document) => Ok(Built {
            pipe: parts.build(document.get("model"), cancel)?,
            assembled: true,
        }),
        Pending::Read { path, json, routes } => {
            let path = path.as_path();
            let super::Prepared {
                value,
                skeleton,
                legacy,
                ..
            } = HfBackend::prepare(path, &json)?;
            stage(cancel)?;
            if routes.assemble
                && let Some(pipe) = assemble::bpe_pipeline(path, &value, &skeleton, legacy, cancel)?
            {
                return Ok(Built {
                    pipe,
                    assembled: true,
                });
            }
            let mut value = assemble::reattach(skeleton, value);
            stage(cancel)?;
            let pipe = HfBackend::read_whole(path, &json, &mut value, legacy)?;
            Ok(Built {
                pipe,
                assembled: false,
            })
        }
    }
}
