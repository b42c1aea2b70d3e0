#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60): fuzz/run.sh [SECONDS]
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain; with
# only stable installed, RUSTC_BOOTSTRAP=1 lets stable accept the flags cargo-fuzz passes.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  fuzz=(cargo +nightly fuzz)
else
  export RUSTC_BOOTSTRAP=1
  fuzz=(cargo fuzz)
fi
for target in $("${fuzz[@]}" list); do
  echo "== $target ($seconds s)"
  # The corpus grows in fuzz/corpus/TARGET (not committed); the seeds are read too.
  mkdir -p "fuzz/corpus/$target"
  "${fuzz[@]}" run "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10
done
