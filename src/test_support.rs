//! What the unit tests share.

use std::path::PathBuf;

/// The shared test data (`$RTOK_SHARED_DIR`, default `../shared`; README.md
/// says how to get it).
pub(crate) fn shared_dir() -> PathBuf {
    std::env::var_os("RTOK_SHARED_DIR").map_or_else(|| "../shared".into(), PathBuf::from)
}

/// The bytes of `fixtures/sentencepiece/NAME` in the shared test data.
pub(crate) fn spm_fixture(name: &str) -> Vec<u8> {
    let p = shared_dir().join("fixtures/sentencepiece").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e} (set RTOK_SHARED_DIR)", p.display()))
}
