//! Entry points for the cargo-fuzz targets (`fuzz/`), reached through the
//! hidden `router_tokenizer::__fuzz` module. Each runs one loader path on
//! arbitrary bytes and exercises what it builds; none may panic, abort or
//! allocate out of proportion with its input.

use std::path::Path;
use std::sync::Arc;

use crate::backend::hf::HfBackend;
use crate::backend::tiktoken::encodings::CL100K_PATTERN;
use crate::backend::tiktoken::{SpecialRoles, TiktokenBackend, TiktokenSpec, ranks};
use crate::config::TokenizerConfig;
use crate::special::SpecialTokenPolicy;

const TEXTS: &[&str] = &[
    "Hello world, <s> 日本語 \u{0} ﬁ  ",
    "  a  b \u{3000}\n\n\t x",
    "<|endoftext|>'s 123",
];

fn exercise(backend: Arc<dyn crate::backend::Tokenizer>) {
    for text in TEXTS {
        if let Ok(enc) = backend.encode(text, true) {
            let _ = backend.decode(enc.ids(), false);
        }
        let _ = backend.encode_with_offsets(text, false);
    }
    let n = u32::try_from(backend.vocab_size().min(512)).unwrap_or(0);
    let all: Vec<u32> = (0..n).collect();
    let _ = backend.decode(&all, true);
    let _ = backend.decode(&[u32::MAX, n], false);
}

/// A `tokenizer.json` through the same path the loader takes after reading it.
pub fn tokenizer_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let config = TokenizerConfig::default();
    if let Ok(b) = HfBackend::from_json(
        Path::new("fuzz/tokenizer.json"),
        text,
        &config,
        SpecialTokenPolicy::Parse,
        false,
    ) {
        exercise(Arc::new(b));
    }
}

/// A tiktoken rank file through the loader's checks, then a backend built
/// on its ranks with the cl100k pattern.
pub fn rank_file(data: &[u8]) {
    let path = Path::new("fuzz/x.tiktoken");
    let Ok(ranks) = ranks::parse(path, data) else {
        return;
    };
    if super::check_single_bytes(path, &ranks).is_err() {
        return;
    }
    let next = ranks.values().copied().max().unwrap_or(0).saturating_add(1);
    let spec = |ranks, id| TiktokenSpec {
        ranks,
        specials: vec![("<|endoftext|>".into(), id)],
        pattern: CL100K_PATTERN.into(),
        roles: SpecialRoles::default(),
        add_bos: None,
        runs_apart: false,
    };
    // An id out of proportion with the entries must be refused, never sized.
    assert!(
        TiktokenBackend::new(spec(ranks.clone(), u32::MAX - 1), SpecialTokenPolicy::Parse).is_err()
    );
    if let Ok(b) = TiktokenBackend::new(spec(ranks, next), SpecialTokenPolicy::Parse) {
        exercise(Arc::new(b));
    }
}

/// A `tokenizer_config.json` beside a small rank file (all 256 bytes and a
/// few merges): its `added_tokens_decoder` and roles go through the loader's
/// checks into a tiktoken backend.
pub fn tokenizer_config(data: &[u8]) {
    let path = Path::new("fuzz/tokenizer_config.json");
    let Ok(raw) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let config = TokenizerConfig::from_value(raw);
    let mut ranks: rustc_hash::FxHashMap<Vec<u8>, u32> =
        (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
    for (i, t) in ["  ", "ab", "he", "ll", "hell", "hello"].iter().enumerate() {
        ranks.insert(t.as_bytes().to_vec(), 256 + i as u32);
    }
    let specials: Vec<(String, u32)> = config
        .added_tokens
        .iter()
        .map(|(id, content, _)| (content.clone(), *id))
        .collect();
    if super::check_added_ids(path, &ranks, &specials).is_err() {
        return;
    }
    let roles = SpecialRoles {
        bos: config.special_token("bos"),
        eos: config.special_token("eos"),
        unk: config.special_token("unk"),
        pad: config.special_token("pad"),
    };
    let spec = TiktokenSpec {
        ranks,
        specials,
        pattern: CL100K_PATTERN.into(),
        roles,
        add_bos: None,
        runs_apart: false,
    };
    if let Ok(b) = TiktokenBackend::new(spec, SpecialTokenPolicy::Parse) {
        exercise(Arc::new(b));
    }
}
