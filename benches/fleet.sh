#!/usr/bin/env bash
# Whole-process figures of a fleet (docs/performance.md, "Fleet"): K clusters (default 10), each
# holding every tenant and server of the generated platform (default 20 tenants, 200 servers:
# 200 servers per cluster), each naming its own environment.
#   - the whole fleet rendered at once vs. the sum of each cluster rendered alone;
#   - one cluster's environment changed: the re-render of the whole fleet into its memoised
#     tree, vs. the cold fleet render, and which files it touched;
#   - peak memory of the cold fleet render for 1, 2, 5 and K clusters.
#
# usage: benches/fleet.sh [WORKDIR]
#   env: CLUSTERS=10 TENANTS=20 SERVERS=200 RUNS=3 (medians of RUNS),
#        TFRS=target/release/tfrs, GEN=target/release/examples/gen-scale
#   Build first: cargo build --release --bin tfrs --example gen-scale
# Prints one line per figure; ratios are computed in this one run. No figure is asserted.
set -euo pipefail

CLUSTERS=${CLUSTERS:-10}
TENANTS=${TENANTS:-20}
SERVERS=${SERVERS:-200}
RUNS=${RUNS:-3}
# now, timed, median, ratio, render, machine; TFRS and GEN
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
W=$(realpath -m "${1:-${TMPDIR:-/tmp}/tfrs-fleet}")
rm -rf "$W" && mkdir -p "$W"
export TFRS_CACHE_DIR="$W/cache"

sum() { printf '%s\n' "$@" | awk '{s+=$1} END {printf "%.3f", s}'; }
last=$((CLUSTERS - 1))
changed=$((CLUSTERS / 2))
name() { printf 'fleet%02d' "$1"; }

machine
echo "# fleet: $CLUSTERS clusters x ($TENANTS tenants, $SERVERS servers); medians of $RUNS runs; tfrs: $TFRS"
"$GEN" --clusters "$CLUSTERS" --tenants "$TENANTS" --servers "$SERVERS" --out "$W/spec" >/dev/null
"$GEN" --clusters "$CLUSTERS" --tenants "$TENANTS" --servers "$SERVERS" --change-environment "$changed" --out "$W/changed" >/dev/null

# The whole fleet at once vs. each cluster alone (cold, no memo either way). Interleaved (the
# whole fleet, then each cluster, per run): the disk's speed drifts within a run, and running
# all the whole-fleet renders first measured the drift, not the render.
# Every render goes to a directory of its own, removed at the end: a render right after `rm -rf`
# of a large tree is slowed by the kernel still freeing it (docs/performance.md, run H).
whole=()
declare -A single=()
for r in $(seq "$RUNS"); do
  rm -rf "$TFRS_CACHE_DIR"
  whole+=("$(timed render "$W/spec" "$W/whole-$r")")
  for k in $(seq 0 "$last"); do
    rm -rf "$TFRS_CACHE_DIR"
    single[$k]="${single[$k]:-} $(timed render "$W/spec" "$W/alone-$r-$k" --cluster "$(name "$k")")"
  done
done
WHOLE=$(median "${whole[@]}")
FILES=$(find "$W/whole-1" -type f | wc -l)
alone=()
# shellcheck disable=SC2086 # each entry is a list of times
for k in $(seq 0 "$last"); do alone+=("$(median ${single[$k]})"); done
SUM=$(sum "${alone[@]}")
echo "cold render of the whole fleet: ${WHOLE} s ($FILES files)"
echo "sum of each cluster rendered alone: ${SUM} s (${alone[*]})"
echo "ratio whole/sum: $(ratio "$WHOLE" "$SUM") (goal <= 1.1)"

# One cluster's environment changed: re-render the fleet into its memoised tree.
rm -rf "$W/out" "$TFRS_CACHE_DIR"
render "$W/spec" "$W/out" >/dev/null
rerender=()
for i in $(seq "$RUNS"); do
  # NB: a copy of its own per run, removed at the end: removing a large tree right before a
  # timed render slows that render several times over while the kernel frees it.
  cp -a "$W/out" "$W/before-$i"
  # alternate between the changed and the original environment, so every run changes it
  if [ $((i % 2)) -eq 1 ]; then spec="$W/changed"; else spec="$W/spec"; fi
  rm -rf "$W/input" && cp -a "$spec" "$W/input-$i" && mv "$W/input-$i" "$W/input"
  rerender+=("$(timed render "$W/input" "$W/out")")
done
RERENDER=$(median "${rerender[@]}")
TOUCHED=$({ diff -rq "$W/before-$RUNS" "$W/out" || true; } | { grep -v '^Only in' || true; } | awk '{print $2}' | sed "s|$W/before-$RUNS/||" | cut -d/ -f1-2 | sort -u | tr '\n' ' ')
echo "one cluster's environment changed ($(name "$changed")): re-render ${RERENDER} s, $(grep -o '([0-9]* changed' "$W/last.log" | tr -d '('), clusters touched: ${TOUCHED:-none}"
echo "ratio re-render/cold fleet: $(ratio "$RERENDER" "$WHOLE") (goal <= 0.2, only that cluster)"

# Peak memory of the cold fleet render, by number of clusters.
for k in 1 2 5 "$CLUSTERS"; do
  "$GEN" --clusters "$k" --tenants "$TENANTS" --servers "$SERVERS" --out "$W/mem-$k" >/dev/null
  rm -rf "$W/mem-out" "$TFRS_CACHE_DIR"
  /usr/bin/time -f '%M' -o "$W/maxrss" "$TFRS" render "$W/mem-$k" --master-key-file "$W/mem-$k/keys/master.key" --out "$W/mem-out" >/dev/null
  echo "peak memory, $k cluster(s): $(($(cat "$W/maxrss") / 1024)) MB"
done
rm -rf "$W"/whole-* "$W"/alone-* "$W"/before-*
