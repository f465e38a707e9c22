//! The layer map, and the test that holds the code to it.
//!
//! [`LAYERS`] below is the **source of truth** for which module may import
//! which (DESIGN.md quotes it). Layers run bottom to top; a module may import
//! any module of a lower layer, the modules of its own map entry, and its own
//! descendants (a parent declares and re-exports its children). It may import
//! a peer of its own layer only where the layer says `peers: true`, and a
//! higher layer never, except through an entry of [`ALLOWED`], which names the
//! exact target module and why.
//!
//! The test reads every `.rs` file under `src/` (not `src/bin`), with comments,
//! string literals and `#[cfg(test)]` items blanked out, and collects each
//! `use crate::…` / `use super::…` tree (grouped and multi-line ones too) and
//! each inline `crate::…` / `super::…` path. A path is resolved to the module
//! that defines the item, through the `use` items of the modules it passes
//! (so `crate::Tokenizer` is `tokenizer`, `crate::encode::SplitFamily` is
//! `contract::family`). Every module must have an entry in the map, and the
//! graph of map entries must have no cycle (which `peers: true` layers rely on). The reader is
//! [`scan`].

mod scan;

use scan::{join, read_crate, source_files, violations};

/// One layer of the map: its name, whether its modules may import each other,
/// and its modules (module paths; an entry covers its descendants unless a
/// longer entry names them).
struct Layer {
    name: &'static str,
    peers: bool,
    modules: &'static [&'static str],
}

/// The layer map, bottom to top. The source of truth; DESIGN.md quotes it.
const LAYERS: &[Layer] = &[
    Layer {
        name: "error",
        peers: false,
        modules: &["error"],
    },
    Layer {
        name: "limits",
        peers: false,
        modules: &["limits"],
    },
    Layer {
        // Leaf services: each imports only `error` and `limits`. `chat` is the
        // template engine (it converts its error into `Error` itself).
        name: "foundations",
        peers: false,
        modules: &["config", "special", "encoding", "metrics", "chat"],
    },
    Layer {
        // What the backends declare and the layers above consume: the chunk
        // contracts, split families and patterns, the pure cut functions, `Format`.
        name: "contracts",
        peers: false,
        modules: &["contract"],
    },
    Layer {
        name: "backend traits",
        peers: false,
        modules: &["backend"],
    },
    Layer {
        // Pieces two or more engines share; acyclic among themselves.
        name: "backend shared",
        peers: true,
        modules: &[
            "backend::thread_scratch",
            "backend::byte_level",
            "backend::byte_memo",
            "backend::join_cuts",
            "backend::char_cuts",
            "backend::bpe",
            "backend::word_cuts",
            "backend::divergence",
        ],
    },
    Layer {
        // No engine imports another, but for the edges in `ALLOWED`.
        name: "engines",
        peers: false,
        modules: &[
            "backend::hf",
            "backend::tiktoken",
            "backend::sentencepiece",
            "backend::gguf",
            "backend::mock",
        ],
    },
    Layer {
        // LoPT orchestration and the budget searches (no handle).
        name: "orchestration",
        peers: false,
        modules: &["encode", "encode::parallel", "encode::budget"],
    },
    Layer {
        // What the handle holds besides the backend: the prompt caches and
        // the request path's once-learned facts and tables (acyclic among
        // themselves).
        name: "handle parts",
        peers: true,
        modules: &[
            "cache",
            "request::facts",
            "request::format",
            "request::special_text",
            "request::segments",
            "request::provenance",
        ],
    },
    Layer {
        name: "handle",
        peers: false,
        modules: &["tokenizer"],
    },
    Layer {
        // Modules that take a `Tokenizer` and add `impl Tokenizer` blocks of
        // their own (`split`/`token_counter`, `token_text`, streams, stops).
        name: "handle users",
        peers: false,
        modules: &["encode::counter", "decode"],
    },
    Layer {
        // The request path: `encode_chat` (Jinja, Harmony, mistral-common).
        name: "request",
        peers: false,
        modules: &["request"],
    },
    Layer {
        name: "offload",
        peers: false,
        modules: &["offload"],
    },
    Layer {
        name: "load",
        peers: false,
        modules: &["load"],
    },
    Layer {
        name: "serving",
        peers: false,
        modules: &["serving"],
    },
    Layer {
        // The crate root (public re-exports) and the unit tests' helpers.
        name: "root",
        peers: true,
        modules: &["", "test_support", "layers"],
    },
];

/// Imports the layers forbid that the map allows by name: (importing map
/// entry or module below it, the exact module the path is written through
/// (a facade: what it re-exports from its engine's internals is allowed
/// only through it), why).
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "backend::gguf",
        "backend::hf",
        "gguf is a format adapter: a GGUF BPE/WordPiece vocabulary is built into \
         the hf engine through its facade, `HfBackend`",
    ),
    (
        "backend::gguf",
        "backend::sentencepiece::ugm",
        "gguf is a format adapter: a GGUF Unigram vocabulary runs on the \
         sentencepiece engine through its `ugm` facade",
    ),
    (
        "backend::gguf",
        "backend::sentencepiece::llama",
        "gguf is a format adapter: a GGUF SPM vocabulary runs llama.cpp's \
         SentencePiece BPE, the sentencepiece engine's `llama` module",
    ),
    (
        "backend::gguf",
        "backend::tiktoken::fast",
        "gguf is a format adapter: the GPT-2 step of a regex-split profile is cut \
         by the native grammar's splitter, `NativeSplit`, which the tiktoken engine \
         owns",
    ),
    (
        "backend::hf::spm_route",
        "backend::sentencepiece",
        "a SentencePiece-shaped tokenizer.json is routed to the sentencepiece \
         engine through its public surface (`SentencePieceModel`, `PieceType`, \
         `window_chunk`)",
    ),
    (
        "backend::hf::spm_route",
        "backend::sentencepiece::synth",
        "the route synthesizes the model it hands the sentencepiece engine",
    ),
];

#[test]
fn the_layer_map_holds() {
    let files = source_files();
    assert!(files.len() > 100, "read {} files under src/", files.len());
    let (bad, checked) = violations(&files);
    assert!(
        checked > 500,
        "only {checked} imports checked: the reader misses paths"
    );
    assert!(
        bad.is_empty(),
        "{} import(s) break the layer map (src/layers.rs, LAYERS and ALLOWED):\n  {}",
        bad.len(),
        bad.join("\n  ")
    );
}

#[test]
fn every_allowance_is_used() {
    // An allowance nothing needs any more is a stale hole in the map.
    let files = source_files();
    let c = read_crate(&files);
    for (f, t, _) in ALLOWED {
        let used = c.imports.iter().any(|imp| {
            let from = join(&imp.from);
            (from == *f || from.starts_with(&format!("{f}::"))) && join(&c.written(&imp.path)) == *t
        });
        assert!(used, "ALLOWED ({f} -> {t}) is not needed: remove it");
    }
}
