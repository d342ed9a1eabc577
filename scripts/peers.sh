#!/usr/bin/env bash
# Build (once per machine) the upstream CLIs that tests/peers.rs uses as peers of our output:
# Bitnami's `kubeseal` opens our SealedSecrets, and `flux build kustomization` builds our Flux
# Kustomizations. Used by tests/peers.rs and .ci/run.
#
#   scripts/peers.sh build           # build both if missing; prints their paths
#   scripts/peers.sh path kubeseal   # prints kubeseal's path if built, else exits 1
#   scripts/peers.sh path flux       # prints flux's path if built, else exits 1
#
# Each tool is built from its Go module at the pinned release: a generated build module requires
# it (plus that release's own `replace` lines, which a dependent module does not inherit) and a
# tools.go imports the command's package, then `go build -trimpath`. Only the Go module proxy is
# needed. Two upstream quirks:
# - sealed-secrets is tagged in github.com/bitnami-labs/sealed-secrets, but its go.mod declares
#   github.com/bitnami/sealed-secrets, so the build module must require that path.
# - flux embeds generated install manifests (cmd/flux/manifests/*.yaml, made by `make` with
#   kustomize) that the module zip lacks, and files beneath GOMODCACHE cannot be added by
#   -overlay. So the build uses a writable copy of the flux2 module (`replace` to ./flux2) with
#   one stub manifest. Only `flux install` and `flux bootstrap` read those files; our tests run
#   `flux build kustomization`.
#
# The builds live outside the clone, under $TFRS_KUBE_CACHE (default /var/cache/tfrs-kube), in a
# directory per tool and version, so fresh clones on the same machine reuse them and a version
# bump builds anew. A cold build of both takes ~5-6 minutes on 2 cores (docs/testing.md).
set -euo pipefail
KUBESEAL_VERSION=v0.38.4
FLUX_VERSION=v2.9.4
cache="${TFRS_KUBE_CACHE:-/var/cache/tfrs-kube}"
kubeseal="$cache/peers-kubeseal-$KUBESEAL_VERSION/bin/kubeseal"
flux="$cache/peers-flux-$FLUX_VERSION/bin/flux"

usage() { echo "usage: $0 build|path kubeseal|path flux" >&2; exit 2; }
case "${1:-build}" in
  path)
    case "${2:-}" in kubeseal) bin="$kubeseal" ;; flux) bin="$flux" ;; *) usage ;; esac
    [ -x "$bin" ] && { echo "$bin"; exit 0; }
    exit 1 ;;
  build) ;;
  *) usage ;;
esac
if [ -x "$kubeseal" ] && [ -x "$flux" ]; then echo "$kubeseal"; echo "$flux"; exit 0; fi
command -v go >/dev/null || { echo "peers.sh: Go is needed to build kubeseal and flux" >&2; exit 2; }
export GOPATH="$cache/gopath" GOCACHE="$cache/gocache" GOFLAGS="-mod=mod" CGO_ENABLED=0
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

# The `go mod download -json` field $3 of module $1 at version $2 (GoMod: its go.mod, Dir: its source).
download() {
  go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"'"$3"'": "\(.*\)",$/\1/p'
}

# build OUTPUT MODULE VERSION PACKAGE LDFLAGS [PREPARE]: builds PACKAGE of MODULE@VERSION into
# OUTPUT, under a lock; PREPARE (a function) may edit the build module before `go mod tidy`.
build() {
  local out=$1 module=$2 version=$3 package=$4 ldflags=$5 prepare=${6:-}
  [ -x "$out" ] && return 0
  local dir
  dir="$(dirname "$(dirname "$out")")"
  mkdir -p "$dir/bin" "$dir/module"
  (
    flock 9
    [ -x "$out" ] && exit 0
    cd "$dir/module"
    gomod="$(download "$module" "$version" GoMod)"
    [ -f "$gomod" ] || { echo "peers.sh: cannot download $module@$version" >&2; exit 1; }
    {
      printf 'module tfrs.invalid/%s-build\n\ngo %s\n\nrequire %s %s\n\n' \
        "$(basename "$out")" "$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod")" "$module" "$version"
      sed -n -e '/^replace (/,/^)/p' -e '/^replace [^(]/p' "$gomod"
    } >go.mod
    printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$package" >tools.go
    [ -z "$prepare" ] || "$prepare" "$module" "$version"
    go mod tidy >&2
    go build -trimpath -ldflags "$ldflags" -o "$out.tmp" "$package" >&2
    mv "$out.tmp" "$out"
  ) 9>"$dir/build.lock"
}

# flux's go:embed of cmd/flux/manifests/*.yaml needs one matching file (see the header).
flux_manifests() {
  rm -rf flux2
  cp -R "$(download "$1" "$2" Dir)" flux2
  chmod -R u+w flux2
  mkdir -p flux2/cmd/flux/manifests
  echo "# Not bundled in this build: flux install and flux bootstrap cannot use it." >flux2/cmd/flux/manifests/not-bundled.yaml
  printf '\nreplace %s => ./flux2\n' "$1" >>go.mod
}

build "$kubeseal" github.com/bitnami/sealed-secrets "$KUBESEAL_VERSION" github.com/bitnami/sealed-secrets/cmd/kubeseal \
  "-s -w -X main.VERSION=$KUBESEAL_VERSION"
build "$flux" github.com/fluxcd/flux2/v2 "$FLUX_VERSION" github.com/fluxcd/flux2/v2/cmd/flux \
  "-s -w -X main.VERSION=${FLUX_VERSION#v}" flux_manifests
echo "$kubeseal"
echo "$flux"
