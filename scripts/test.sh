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
cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --lib --bins --tests --examples --locked
cargo test --doc --locked
# The examples run offline against the shared data, so they cannot rot.
for example in long_prompt metrics router_loop; do
  cargo run --locked --quiet --example "$example" >/dev/null
done
