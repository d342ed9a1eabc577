#!/usr/bin/env bash
# Whole-process figures of `tfrs diff` (docs/performance.md, "Diff"), side by side with
# `git diff --no-index --stat` between the two rendered trees of the same change:
#   (a) one server changed (`gen-scale --change 0`: one `configData` entry);
#   (b) every server changed (`gen-scale --image-tag TAG`: an image bump of the whole platform);
# each with `tfrs diff` in its text, JSON and markdown formats, and `tfrs render` of the changed
# specs (into a fresh directory, and `--check` against the base tree), so a reader sees how
# much of the diff is rendering. The specs are in a Git work tree, so `tfrs diff` also reads the
# base's specs back at their commit and traces each change to its cause, as it does in CI.
#
# usage: benches/diff.sh [WORKDIR]
#   env: TENANTS=200 SERVERS=2000 RUNS=3 (medians of RUNS), TAG=v2.0.0 (the image tag of (b)),
#        TFRS=target/release/tfrs, GEN=target/release/examples/gen-scale
#   Build first: cargo build --release --bin tfrs --example gen-scale
# Prints one line per figure; ratios are computed in this one run. No figure is asserted.
set -euo pipefail

TENANTS=${TENANTS:-200}
SERVERS=${SERVERS:-2000}
RUNS=${RUNS:-3}
TAG=${TAG:-v2.0.0}
# now, timed, median, ratio, render, machine; TFRS and GEN
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
W=$(realpath -m "${1:-${TMPDIR:-/tmp}/tfrs-diff}")
rm -rf "$W" && mkdir -p "$W"
# Fairness. `tfrs diff` renders every unit in full: it does not use the render memo (the memo
# belongs to an output directory, and a diff has none; its previous tree is a Git commit), so
# it never reads TFRS_CACHE_DIR. The renders timed beside it are made as cold: the memo
# directory is emptied first and `--no-memo` keeps them from reading or saving one. Sealing is
# comparable too: `tfrs diff` seals against the committed tree, reusing every ciphertext whose
# value did not change, as `tfrs render --check` does against the directory it checks; only
# the render into a fresh directory seals every Secret anew (and writes every file).
export TFRS_CACHE_DIR="$W/cache"
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@localhost GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@localhost

# `git diff` and `tfrs diff` exit 1 when they find differences, and here they always should:
# `differs` runs "$@" and keeps its status in $W/status (a status inside `timed` is otherwise
# lost), `expect_differences` stops the script unless it was 1.
differs() { local status=0; "$@" || status=$?; echo "$status" >"$W/status"; }
expect_differences() {
  [ "$(cat "$W/status")" = 1 ] && return
  { echo "error: $1 exited with $(cat "$W/status"), not 1 (differences found):"; cat "$W/last.log"; } >&2
  exit 2
}
tfrs_diff() { "$TFRS" diff "$1" --master-key-file "$1/keys/master.key" --repo "$W/repo.git" "${@:2}"; }

machine
echo "# platform: $TENANTS tenants, $SERVERS servers; medians of $RUNS runs; tfrs: $TFRS; $(git --version)"
"$GEN" --tenants "$TENANTS" --servers "$SERVERS" --out "$W/spec" >/dev/null
"$GEN" --tenants "$TENANTS" --servers "$SERVERS" --change 0 --out "$W/one" >/dev/null
"$GEN" --tenants "$TENANTS" --servers "$SERVERS" --image-tag "$TAG" --out "$W/all" >/dev/null

# The specs live in a Git work tree, as in a pull request's CI: the base commit then records
# the specs' commit (`Tfrs-Source-Commit`), and `tfrs diff` reads the base's specs back at it
# to trace every changed object to the spec field that changed it. A change is the changed
# `servers.yaml` over that work tree, uncommitted.
git init -q -b main "$W/src" && cp -a "$W/spec/." "$W/src/"
git -C "$W/src" add -A && git -C "$W/src" commit -qm "base specs"
# The base: the unchanged specs committed into a bare repository (what `tfrs diff --repo`
# compares with) and rendered into A (what `git diff` compares with). Both hold the same files;
# only the ciphertexts of sealed values differ, since each seals them anew.
git init -q --bare -b main "$W/repo.git"
"$TFRS" commit "$W/src" --master-key-file "$W/src/keys/master.key" --repo "$W/repo.git" --author 'bench <bench@localhost>' >/dev/null
git --git-dir="$W/repo.git" log -1 --format=%B main | grep -q '^Tfrs-Source-Commit: ' || { echo "error: the base commit records no source commit" >&2; exit 2; }
render "$W/src" "$W/A" --no-memo >/dev/null
FILES=$(find "$W/A" -type f -not -name .tfrs-output | wc -l)
echo "base: $FILES files in A and in the commit $(git --git-dir="$W/repo.git" rev-parse --short main)"

for change in one all; do
  case $change in
    one) what="one server changed (--change 0)" goal=2 ;;
    all) what="every server's image bumped (--image-tag $TAG)" goal=5 ;;
  esac
  cp "$W/$change/servers.yaml" "$W/src/servers.yaml"
  spec="$W/src"
  # B: the changed specs rendered over a copy of A, so every sealed value that did not change
  # keeps A's ciphertext and `git diff` sees only what changed (as `tfrs diff` reports it).
  rm -rf "$W/B" && cp -a "$W/A" "$W/B"
  render "$spec" "$W/B" --no-memo >/dev/null
  gd=() text=() json=() markdown=() fresh=() check=()
  # One round runs every command once, so a drift of the machine hits all of them alike.
  for _ in $(seq "$RUNS"); do
    gd+=("$(timed differs git diff --no-index --stat "$W/A" "$W/B")")
    expect_differences "git diff"
    STAT=$(tail -n 1 "$W/last.log" | xargs)
    for format in text json markdown; do
      declare -n times=$format
      times+=("$(timed differs tfrs_diff "$spec" --format "$format")")
      expect_differences "tfrs diff --format $format"
      cp "$W/last.log" "$W/$change.$format"
      if grep -q 'causes name the spec objects only' "$W/last.log"; then
        { echo "error: tfrs diff could not read the base's specs:"; grep 'causes name' "$W/last.log"; } >&2
        exit 2
      fi
      unset -n times
    done
    rm -rf "$W/fresh" "$TFRS_CACHE_DIR"
    fresh+=("$(timed render "$spec" "$W/fresh" --no-memo)")
    check+=("$(timed differs render "$spec" "$W/A" --no-memo --check --quiet)")
    expect_differences "tfrs render --check"
  done
  GD=$(median "${gd[@]}") TEXT=$(median "${text[@]}") JSON=$(median "${json[@]}") MARKDOWN=$(median "${markdown[@]}")
  FRESH=$(median "${fresh[@]}") CHECK=$(median "${check[@]}")
  echo "## $what"
  echo "git diff --no-index --stat A B: ${GD} s ($STAT)"
  echo "tfrs diff, text: ${TEXT} s ($(tail -n 1 "$W/$change.text"); $(wc -c <"$W/$change.text") bytes)"
  echo "tfrs diff, json: ${JSON} s ($(wc -c <"$W/$change.json") bytes)"
  echo "tfrs diff, markdown: ${MARKDOWN} s ($(wc -c <"$W/$change.markdown") bytes)"
  echo "tfrs render of the changed specs into a fresh directory (--no-memo: templates and seals everything, writes every file): ${FRESH} s"
  echo "tfrs render --check of the changed specs against A (--no-memo: templates everything, reuses sealed values, writes nothing): ${CHECK} s"
  for format in text json markdown; do
    declare -n t=${format^^}
    echo "ratio tfrs diff ($format) / git diff: $(ratio "$t" "$GD") (goal <= $goal)"
    unset -n t
  done
  echo "ratio render --check / tfrs diff (text): $(ratio "$CHECK" "$TEXT"); render into a fresh directory / tfrs diff (text): $(ratio "$FRESH" "$TEXT")"
  git -C "$W/src" checkout -q -- servers.yaml
done
