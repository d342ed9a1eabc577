#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (default 60 s each) on its corpus in fuzz/corpus/.
# Needs the nightly toolchain and cargo-fuzz (installed here if missing). A crash fails the run;
# its input is left in fuzz/artifacts/<target>/ to become a regression fixture.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked --quiet
fi
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$HOME/.cache/tfrs-fuzz-target}"
log="$(mktemp)"
for target in spec_loader overlay_merge confz_merge render_strings stored_pieces; do
  echo "fuzz: ${target} for ${seconds}s"
  set +e
  # New inputs go to a scratch corpus; the repository's corpus only seeds the run.
  scratch="$(mktemp -d)"
  cargo +nightly fuzz run "$target" "$scratch" "fuzz/corpus/$target" -- -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 >"$log" 2>&1
  status=$?
  set -e
  rm -rf "$scratch"
  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|==[0-9]+==|SUMMARY|Test unit written|error)" "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "$log"
    echo "fuzz: ${target} failed (exit ${status})"
    exit 1
  fi
done
rm -f "$log"
