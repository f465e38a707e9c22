//! Entry points the route-equivalence tests use (not a stable API): a
//! `tokenizer.json` loaded with one of its fast routes on or off.

use std::path::Path;
use std::sync::Arc;

use crate::backend::hf::{HfBackend, Routes};
use crate::config::TokenizerConfig;
use crate::error::{Error, Result};
use crate::load::Format;
use crate::special::SpecialTokenPolicy;
use crate::{PromptCacheOptions, Tokenizer};

/// Loads the `tokenizer.json` at `path` (configs beside it), with the
/// SentencePiece route (DESIGN.md invariant `spm-route-same-merges`) on or off, the L0 cache off.
pub fn hf_json(path: &Path, policy: SpecialTokenPolicy, spm_route: bool) -> Result<Tokenizer> {
    let routes = Routes {
        spm: spm_route,
        ..Routes::default()
    };
    hf_json_routed(path, policy, routes).map(|(tokenizer, _)| tokenizer)
}

/// Loads the `tokenizer.json` at `path` with the assembled BPE pipeline
/// (invariant `assembled-equals-from-json`) allowed or not, the SentencePiece route and the crate's
/// byte-level engine off (so encodes run on the pipeline's model, which is
/// then built); the flag says whether it was assembled.
pub fn hf_json_assembled(
    path: &Path,
    policy: SpecialTokenPolicy,
    assemble: bool,
) -> Result<(Tokenizer, bool)> {
    let routes = Routes {
        assemble,
        spm: false,
        byte_bpe: false,
        ..Routes::default()
    };
    hf_json_routed(path, policy, routes)
}

/// A fast route of the `tokenizer.json` backend that [`hf_json_route`]
/// switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FastRoute {
    /// A lone NFC normalizer run by the crate (DESIGN.md invariant `crate-steps-equal-reference`).
    Nfc,
    /// Added tokens matched on the crate's automaton (invariant `crate-steps-equal-reference`).
    AddedAutomaton,
    /// No pre-tokenizer call where nothing is left to split on (invariant
    /// `crate-steps-equal-reference`).
    WholePieces,
    /// A lone one-char `Replace` normalizer run by the crate (invariant
    /// `crate-steps-equal-reference`).
    LoneReplace,
    /// An interim engine (a BPE's, invariant `interim-equals-built`, or a WordPiece's, invariant
    /// `interim-equals-built`)
    /// encodes while the model builds. Switched on, the model is never built
    /// unless something waits for it, so the encodes stay on that engine.
    Interim,
    /// CJK pre-tokens cut where no merge joins across (invariant `cut-where-no-entry-joins`).
    CharCuts,
    /// A character BPE's whole segments cut where no entry joins (invariant
    /// `cut-where-no-entry-joins`); both loads leave the SentencePiece route off.
    JoinCuts,
    /// A byte-level BPE's words on the crate's engine (`backend::bpe`)
    /// instead of `tokenizers`' model.
    ByteBpe,
}

/// Loads the `tokenizer.json` at `path` with one fast route allowed or
/// not, every other route as a plain load takes it, the L0 cache off; the
/// flag says whether the route applies to the file.
pub fn hf_json_route(
    path: &Path,
    policy: SpecialTokenPolicy,
    route: FastRoute,
    on: bool,
) -> Result<(Tokenizer, bool)> {
    let mut routes = Routes::default();
    match route {
        FastRoute::Nfc => routes.nfc = on,
        FastRoute::AddedAutomaton => routes.added = on,
        FastRoute::WholePieces => routes.whole_pieces = on,
        FastRoute::LoneReplace => routes.lone_replace = on,
        FastRoute::Interim => {
            routes.interim = on;
            routes.hold_model = on;
        }
        FastRoute::CharCuts => routes.cuts = on,
        FastRoute::JoinCuts => {
            // Off the SentencePiece route, where a file it takes (Mistral-7B)
            // runs on the pipeline and the cuts apply.
            routes.joins = on;
            routes.spm = false;
        }
        FastRoute::ByteBpe => routes.byte_bpe = on,
    }
    let (backend, tokenizer) = hf_json_backend(path, policy, routes)?;
    let applies = match route {
        FastRoute::Nfc => backend.nfc_shortcut(),
        FastRoute::AddedAutomaton => backend.added_automaton(),
        FastRoute::WholePieces => backend.whole_pieces(),
        FastRoute::LoneReplace => backend.lone_replace(),
        FastRoute::Interim => backend.interim_active(),
        FastRoute::CharCuts => backend.char_cuts(),
        FastRoute::JoinCuts => backend.join_cuts(),
        FastRoute::ByteBpe => backend.byte_bpe_active(),
    };
    Ok((tokenizer, applies))
}

fn hf_json_routed(
    path: &Path,
    policy: SpecialTokenPolicy,
    routes: Routes,
) -> Result<(Tokenizer, bool)> {
    let (backend, tokenizer) = hf_json_backend(path, policy, routes)?;
    Ok((tokenizer, backend.assembled()))
}

/// The backend (for its flags) and a handle over it.
fn hf_json_backend(
    path: &Path,
    policy: SpecialTokenPolicy,
    routes: Routes,
) -> Result<(Arc<HfBackend>, Tokenizer)> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let config = TokenizerConfig::read_dir(dir)?;
    let backend = Arc::new(HfBackend::from_json_routed(
        path, &text, &config, policy, false, routes,
    )?);
    let tokenizer = Tokenizer::from_engine(backend.clone(), Format::HfJson)
        .with_prompt_cache(PromptCacheOptions::off());
    Ok((backend, tokenizer))
}

/// Whether a `tokenizer.json` text runs on the SentencePiece route: `Ok`,
/// or the reason it stays on `tokenizers`. Errors when it does not load.
pub fn spm_route(json: &str) -> Result<std::result::Result<(), String>> {
    let backend = HfBackend::from_json(
        Path::new("tokenizer.json"),
        json,
        &TokenizerConfig::default(),
        SpecialTokenPolicy::Parse,
        false,
    )?;
    Ok(backend.spm_route().map_err(str::to_owned))
}

/// Whether `tokenizer` encodes on a stand-in engine while its own is built
/// (the interim BPE of invariant `interim-equals-built`).
pub fn interim_active(tokenizer: &Tokenizer) -> bool {
    tokenizer.backend_dyn().building()
}
