#!/usr/bin/env bash
# Whole-process comparisons on the scale platform (docs/performance.md):
#   cold `tfrs render` vs `cp -a` of the tree it wrote; vs `kubectl kustomize` at a tenth of the
#   scale; re-render of unchanged specs; one server changed (render + commit, files touched);
#   `tfrs commit` into an empty repository vs `git add -A && git commit`; peak memory; growth
#   from 500 to 2,000 to 8,000 servers.
#
# usage: benches/scale.sh [WORKDIR]
#   env: TENANTS=200 SERVERS=2000 RUNS=3 (medians of RUNS), GROWTH="500 2000 8000" (empty: skip),
#        KUSTOMIZE=1 (0: skip), TFRS=target/release/tfrs, GEN=target/release/examples/gen-scale
#   Build first: cargo build --release --bin tfrs --example gen-scale
# Prints one line per figure; ratios are computed in this one run. No figure is asserted.
set -euo pipefail

TENANTS=${TENANTS:-200}
SERVERS=${SERVERS:-2000}
RUNS=${RUNS:-3}
GROWTH=${GROWTH-500 2000 8000}
KUSTOMIZE=${KUSTOMIZE:-1}
# now, timed, median, ratio, render, machine; TFRS and GEN
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
W=$(realpath -m "${1:-${TMPDIR:-/tmp}/tfrs-scale}")
rm -rf "$W" && mkdir -p "$W"
# The render memo (docs/render.md) of each output directory lives here; cold renders start
# without one.
export TFRS_CACHE_DIR="$W/cache"
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@localhost GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@localhost

machine
echo "# platform: $TENANTS tenants, $SERVERS servers; medians of $RUNS runs; tfrs: $TFRS"
"$GEN" --tenants "$TENANTS" --servers "$SERVERS" --out "$W/spec" >/dev/null

# Cold render vs cp -a of the same tree. Each run writes into directories of its own, removed
# only at the end of the script: on the bench machines a render started right after `rm -rf` of
# a 62,000-file tree took three to five times as long (the kernel still freeing the old tree),
# even after `sync` and 15 s.
cold=() copy=()
for i in $(seq "$RUNS"); do
  rm -rf "$TFRS_CACHE_DIR"
  cold+=("$(timed render "$W/spec" "$W/cold-$i")")
  copy+=("$(timed cp -a "$W/cold-$i" "$W/copy-$i")")
done
COLD=$(median "${cold[@]}") CP=$(median "${copy[@]}")
FILES=$(find "$W/cold-1" -type f | wc -l) BYTES=$(du -sb "$W/cold-1" | cut -f1)
echo "cold render: ${COLD} s ($FILES files, $((BYTES / 1000000)) MB)"
echo "cp -a of the tree: ${CP} s"
echo "ratio render/cp: $(ratio "$COLD" "$CP") (goal <= 3)"

# Peak memory of a cold render.
rm -rf "$W/out" "$TFRS_CACHE_DIR"
/usr/bin/time -f '%M' -o "$W/maxrss" "$TFRS" render "$W/spec" --master-key-file "$W/spec/keys/master.key" --out "$W/out" >/dev/null
echo "peak memory of the cold render: $(($(cat "$W/maxrss") / 1024)) MB (goal < 300)"

# Re-render of unchanged specs into the existing tree.
rm -rf "$W/before" && cp -a "$W/out" "$W/before"
again=()
for _ in $(seq "$RUNS"); do again+=("$(timed render "$W/spec" "$W/out")"); done
AGAIN=$(median "${again[@]}")
CHANGED=$(diff -r "$W/before" "$W/out" | wc -c)
echo "re-render, unchanged: ${AGAIN} s, $(grep -o '([0-9]* changed' "$W/last.log" | tr -d '('), diff -r: $CHANGED bytes"
echo "ratio re-render/cold: $(ratio "$AGAIN" "$COLD") (goal <= 0.3, 0 changed bytes)"
nomemo=()
for _ in $(seq "$RUNS"); do nomemo+=("$(timed render "$W/spec" "$W/out" --no-memo)"); done
NOMEMO=$(median "${nomemo[@]}")
echo "re-render without the memo (--no-memo): ${NOMEMO} s, ratio to cold $(ratio "$NOMEMO" "$COLD")"

# tfrs commit of the full tree into an empty (bare) repository vs git add -A && git commit.
tc=() gc=()
for _ in $(seq "$RUNS"); do
  rm -rf "$W/repo.git" "$W/plain" && git init -q --bare -b main "$W/repo.git"
  tc+=("$(timed "$TFRS" commit "$W/spec" --master-key-file "$W/spec/keys/master.key" --repo "$W/repo.git" --author 'bench <bench@localhost>')")
  git init -q -b main "$W/plain" && cp -a "$W/out/clusters" "$W/plain/"
  # gc.auto=0: git's automatic repack after the commit is not counted against git.
  gc+=("$(timed sh -c "cd '$W/plain' && git add -A && git -c gc.auto=0 commit -q -m render")")
done
TC=$(median "${tc[@]}") GC=$(median "${gc[@]}")
echo "tfrs commit, full tree, empty repo (render included): ${TC} s"
echo "git add -A && git commit of the same files: ${GC} s"
echo "ratio tfrs commit/git: $(ratio "$TC" "$GC") (goal <= 1.0; tfrs commit renders in memory and writes only the pack)"

# One server changed: render into the existing tree, and commit.
"$GEN" --tenants "$TENANTS" --servers "$SERVERS" --change 0 --out "$W/spec1" >/dev/null
# Each run goes back to the unchanged specs first (untimed), then times the change; the memo's
# records need 2 s to be trusted (docs/render.md), so each timed step waits that out.
commit() { "$TFRS" commit "$1" --master-key-file "$1/keys/master.key" --repo "$W/repo.git" --author 'bench <bench@localhost>'; }
one=() onec=()
for _ in $(seq "$RUNS"); do
  render "$W/spec" "$W/out" >/dev/null; sleep 2.1
  one+=("$(timed render "$W/spec1" "$W/out")")
  line=$(grep -o '([0-9]* changed.*)' "$W/last.log" | tr -d '()')
  commit "$W/spec" >/dev/null
  onec+=("$(timed commit "$W/spec1")")
  cline=$(head -1 "$W/last.log")
done
R1=$(median "${one[@]}") C1=$(median "${onec[@]}")
echo "one server changed, render into the tree of the unchanged specs: ${R1} s, $line"
echo "ratio one-server render / cold render: $(ratio "$R1" "$COLD") (goal <= 0.1)"
echo "one server changed, commit: ${C1} s: $cline"
echo "ratio one-server commit / cold render: $(ratio "$C1" "$COLD") (goal <= 0.15)"
TOUCHED=$(git --git-dir="$W/repo.git" diff --name-only HEAD~1 HEAD)
OTHERS=$(grep -cv '/servers/robot00000/' <<<"$TOUCHED" || true)
echo "one server changed, commit: ${C1} s, $(wc -l <<<"$TOUCHED") files touched, $OTHERS outside servers/robot00000/"
sed 's/^/  /' <<<"$TOUCHED"

# kubectl kustomize on the same tree at a tenth of the scale (every component directory).
if [ "$KUSTOMIZE" = 1 ]; then
  T10=$((TENANTS / 10)) S10=$((SERVERS / 10))
  "$GEN" --tenants "$T10" --servers "$S10" --out "$W/spec10" >/dev/null
  tenth=()
  for _ in $(seq "$RUNS"); do
    rm -rf "$W/out10" "$TFRS_CACHE_DIR"
    tenth+=("$(timed render "$W/spec10" "$W/out10")")
  done
  TENTH=$(median "${tenth[@]}")
  root="$W/out10/clusters/scale"
  { echo "apiVersion: kustomize.config.k8s.io/v1beta1"; echo "kind: Kustomization"; echo "resources:"
    (cd "$root" && find components gitops -name kustomization.yaml -printf '  - %h\n' | sort); } >"$W/all.yaml"
  cp "$W/all.yaml" "$root/kustomization.yaml"
  K=$(timed kubectl kustomize "$root")
  echo "kubectl kustomize, $T10 tenants / $S10 servers: ${K} s ($(grep -c '^kind:' "$W/last.log") objects)"
  echo "cold render, $T10 tenants / $S10 servers: ${TENTH} s"
  echo "ratio cold render / kustomize, both at a tenth of the scale: $(ratio "$TENTH" "$K") (goal <= 0.05)"
  echo "ratio cold render at full scale / kustomize at a tenth: $(ratio "$COLD" "$K")"
fi

# Growth: cold render at several sizes (tenants grow with servers, one per ten).
for s in $GROWTH; do
  "$GEN" --tenants $((s / 10)) --servers "$s" --out "$W/spec-$s" >/dev/null
  times=()
  for _ in $(seq "$RUNS"); do rm -rf "$W/out-$s" "$TFRS_CACHE_DIR"; times+=("$(timed render "$W/spec-$s" "$W/out-$s")"); done
  t=$(median "${times[@]}")
  echo "growth: $s servers: ${t} s, $(echo "scale=2; 1000 * $t / $s" | bc -l) ms per server"
  rm -rf "$W/out-$s" "$W/spec-$s"
done
rm -rf "$W"/cold-* "$W"/copy-*
