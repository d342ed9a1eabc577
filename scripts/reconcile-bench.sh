#!/usr/bin/env bash
# Benchmark: `tfrs reconcile` wall time on the demo plan (64 components) against the in-process
# API simulator with recorded readiness delays (100-900 ms per component), compared with the
# critical path (the least any rollout can take) and with a level-by-level rollout of the same
# graph. Prints the ratios; asserts nothing about time. TFRS_BENCH_CONCURRENCY (default 64)
# bounds the parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tfrs-target}"
cargo test --test reconcile bench_wall_time_vs_critical_path -- --ignored --nocapture 2>&1 |
  grep -E '^(components|critical path|level-by-level|reconcile wall|wall/critical|level/critical)'
