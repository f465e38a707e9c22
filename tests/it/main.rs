//! The integration tests, one binary (issue #42): each module is what was
//! a test binary of its own under `tests/`, and `common`, `spm_common`,
//! `gguf_writer` and `hub_server` are the helpers they share. One binary
//! links once where 56 each linked the whole crate and its dependencies
//! (a fresh-clone CI run filled its disk doing that).
//!
//! Run one file's tests with `cargo test --test it parity::`. The tests of
//! every module run on the threads of one process: a test that needs the
//! process to itself (an RSS figure, a memory cap) re-runs this binary as a
//! child for just that test (`drop_rss`, `hostile`, `chat_bombs`), and
//! `tests/sentencepiece_hostile.rs` stays a binary of its own for its
//! counting global allocator (see Cargo.toml). What a module's tests share
//! that is big (tokenizers built with a route on and off: 8 GB for
//! `interim`) is a [`common::Lease`], held while they run, not a `static`
//! kept under every later module's tests: the process would outgrow a
//! 24 GB machine.

mod common;
mod gguf_writer;
mod hub_server;
mod spm_common;

mod added_route;
mod aliases;
mod bert_punctuation;
mod budget;
mod char_cuts;
mod chat_api;
mod chat_bare_model;
mod chat_bombs;
mod chat_cli;
mod chat_compat;
mod chat_encode;
mod chat_fuzz_smoke;
mod chat_golden;
mod chat_hostile;
mod chat_public_golden;
mod cli;
mod components;
mod drop_rss;
mod empty_vocab;
mod gguf_convert;
mod gguf_corpus;
mod gguf_loader;
mod gguf_vectors;
mod harmony;
mod hf_assemble;
mod hostile;
mod hub_download;
mod interim;
mod join_cuts;
mod loader;
mod mistral_common;
mod nfc_route;
mod openai_api;
mod parallel;
mod parity;
mod pipeline_walk;
mod prefix_cache;
mod prompt_cache;
mod roundtrip;
mod sentencepiece_facade;
mod sentencepiece_hf_compat;
mod sentencepiece_offsets;
mod sentencepiece_parity;
mod sentencepiece_variants;
mod space_routes;
mod spm_json_route;
mod stream;
mod stream_router;
mod tekken;
mod tiktoken_fast;
mod tiktoken_whitespace;
mod unicode17;
mod user_backend;
mod wordpiece_fast;
