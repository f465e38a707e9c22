//! What the unit tests share.

use std::path::PathBuf;

/// The shared test data (`$RTOK_SHARED_DIR`, default `../shared`; README.md
/// says how to get it).
pub(crate) fn shared_dir() -> PathBuf {
    std::env::var_os("RTOK_SHARED_DIR").map_or_else(|| "../shared".into(), PathBuf::from)
}
