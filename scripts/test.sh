#!/usr/bin/env bash
# The test command named in README.md: formatting, lints, the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
shared="${RTOK_SHARED_DIR:-$(pwd)/../shared}"
if [ -d "$shared/hf-cache/hub" ]; then
  export RTOK_SHARED_DIR="$(cd "$shared" && pwd)"
  export HF_HOME="${HF_HOME:-$RTOK_SHARED_DIR/hf-cache}"
  export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
fi
# `tools` builds the harness programs in tools/ (scripts/ runs them) with the
# rest, so they are linted and linked and cannot rot; every step takes the
# same features, so the crate is built once.
features=(--features tools)
cargo fmt --all -- --check
cargo clippy --all-targets "${features[@]}" --locked -- -D warnings
cargo test --lib --bins --tests --examples "${features[@]}" --locked
cargo test --doc "${features[@]}" --locked
# The API documentation builds without a broken link or a warning.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --lib "${features[@]}" --locked
# The examples run offline against the shared data, so they cannot rot.
for example in long_prompt metrics router_loop; do
  cargo run --locked --quiet "${features[@]}" --example "$example" >/dev/null
done
