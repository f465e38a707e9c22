//! Shared helpers for the SentencePiece tests: locating the shared data and
//! the adversarial corpus.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The five fixture models.
pub const MODELS: [&str; 5] = [
    "mistral-tokenizer.model.v1",
    "mistral_instruct_tokenizer_240323.model.v3",
    "mistral_instruct_tokenizer_241114.model.v7",
    "spm-test_model.model",
    "spm-test_ja_model.model",
];

const HOWTO: &str = "\
The SentencePiece tests need the shared test data (fixtures + corpus).
Set RTOK_SHARED_DIR to the directory that holds `fixtures/sentencepiece/` and
`corpus/` (default: `../shared` next to the crate root). See
tests/golden/sentencepiece/README.md for how the data and goldens are made.";

/// The shared data directory: `$RTOK_SHARED_DIR`, else `<crate>/../shared`,
/// Panics with a how-to when missing.
pub fn shared_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let mut tried = Vec::new();
        if let Ok(d) = std::env::var("RTOK_SHARED_DIR") {
            let p = PathBuf::from(d);
            if p.join("fixtures/sentencepiece").is_dir() {
                return p;
            }
            panic!(
                "RTOK_SHARED_DIR={} has no fixtures/sentencepiece/.\n{HOWTO}",
                p.display()
            );
        }
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let p = crate_dir.join("../shared");
        if p.join("fixtures/sentencepiece").is_dir() && p.join("corpus").is_dir() {
            return p;
        }
        tried.push(p);
        panic!("shared test data not found (tried {tried:?}).\n{HOWTO}");
    })
    .clone()
}

/// Bytes of a fixture model.
pub fn model_bytes(name: &str) -> Vec<u8> {
    let p = shared_dir().join("fixtures/sentencepiece").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}\n{HOWTO}", p.display()))
}

/// The golden file.
pub fn golden() -> serde_json::Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/sentencepiece/expected.json");
    let text =
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
    serde_json::from_str(&text).expect("expected.json is valid JSON")
}

/// Directory with the 18 adversarial files, generated once with
/// `python3 corpus/make_adversarial.py` into `target/spm-adversarial/`
/// (written to a temporary directory first and renamed into place, so
/// concurrent test binaries never see a half-written set). The parity test
/// checks every file's sha256 against the goldens.
pub fn adversarial_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
        let out = target.join("spm-adversarial");
        if out.join("index.tsv").is_file() {
            return out;
        }
        let tmp = target.join(format!("spm-adversarial.tmp-{}", std::process::id()));
        let script = shared_dir().join("corpus/make_adversarial.py");
        let status = Command::new("python3")
            .arg(&script)
            .arg(&tmp)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap_or_else(|e| {
                panic!("cannot run python3 {} ({e}); the adversarial corpus needs python3 (stdlib only)", script.display())
            });
        assert!(status.success(), "{} failed", script.display());
        if std::fs::rename(&tmp, &out).is_err() {
            // Another process won the race; use its copy.
            let _ = std::fs::remove_dir_all(&tmp);
        }
        assert!(out.join("index.tsv").is_file(), "adversarial corpus missing in {}", out.display());
        out
    })
    .clone()
}

/// Reads a golden file key (`corpus/...` or `adversarial/...`).
pub fn read_input(key: &str) -> Vec<u8> {
    let p = if let Some(rest) = key.strip_prefix("corpus/") {
        shared_dir().join("corpus").join(rest)
    } else if let Some(rest) = key.strip_prefix("adversarial/") {
        adversarial_dir().join(rest)
    } else {
        panic!("unknown golden key {key}")
    };
    std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}\n{HOWTO}", p.display()))
}

/// Every corpus file (relative keys), as the golden script lists them.
pub fn corpus_keys() -> Vec<String> {
    let g = golden();
    g["files"].as_object().unwrap().keys().cloned().collect()
}

/// sha256 hex.
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(data);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha256 of ids as little-endian u32.
pub fn ids_sha256(ids: &[u32]) -> String {
    let mut buf = Vec::with_capacity(ids.len() * 4);
    for id in ids {
        buf.extend_from_slice(&id.to_le_bytes());
    }
    sha256_hex(&buf)
}
