#!/usr/bin/env bash
# Build (once per machine) a real, current kube-apiserver and etcd from their Go modules, for the
# tests that apply rendered trees to a real API server (tests/apiserver.rs, tests/reconcile.rs)
# and for .ci/run.
#
#   scripts/kube-apiserver.sh build   # build if missing; prints the apiserver's path
#   scripts/kube-apiserver.sh path    # prints the apiserver's path if built, else exits 1
#   scripts/kube-apiserver.sh etcd    # prints etcd's path if built, else exits 1
#
# kube-apiserver comes from the k8s.io/kubernetes module at $KUBE_VERSION: a two-line build
# module requires it, and pins every k8s.io staging module to the matching v0.x tag with
# `replace` lines read from that release's own go.mod (its replaces point into ./staging, which
# a dependent module cannot use). etcd comes from go.etcd.io/etcd/server/v3 at $ETCD_VERSION
# through a three-line main that calls etcdmain. Both need only the Go module proxy.
#
# The builds live outside the clone, under $TFRS_KUBE_CACHE (default /var/cache/tfrs-kube), in a
# directory per version, so fresh clones on the same machine reuse them and a version bump
# builds anew. A cold build takes ~10-20 minutes on 2 cores.
set -euo pipefail
KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.0
cache="${TFRS_KUBE_CACHE:-/var/cache/tfrs-kube}"
dir="$cache/kubernetes-$KUBE_VERSION-etcd-$ETCD_VERSION"
apiserver="$dir/bin/kube-apiserver"
etcd="$dir/bin/etcd"
cmd="${1:-build}"

built() { [ -x "$apiserver" ] && [ -x "$etcd" ]; }

case "$cmd" in
  path) built && { echo "$apiserver"; exit 0; }; exit 1 ;;
  etcd) built && { echo "$etcd"; exit 0; }; exit 1 ;;
  build) ;;
  *) echo "usage: $0 build|path|etcd" >&2; exit 2 ;;
esac

if built; then echo "$apiserver"; exit 0; fi
command -v go >/dev/null || { echo "kube-apiserver.sh: Go is needed to build kube-apiserver and etcd" >&2; exit 2; }
command -v openssl >/dev/null || { echo "kube-apiserver.sh: openssl is needed (the tests make service-account keys with it)" >&2; exit 2; }

mkdir -p "$dir/bin" "$dir/apiserver-module" "$dir/etcd-module"
exec 9>"$dir/build.lock"
flock 9
if built; then echo "$apiserver"; exit 0; fi

export GOPATH="$cache/gopath" GOCACHE="$cache/gocache" GOFLAGS="-mod=mod" CGO_ENABLED=0
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

# kube-apiserver.
cd "$dir/apiserver-module"
kube_mod="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
[ -f "$kube_mod" ] || { echo "kube-apiserver.sh: cannot download k8s.io/kubernetes@$KUBE_VERSION" >&2; exit 1; }
staging_version="v0.${KUBE_VERSION#v1.}"
{
  echo "module tfrs.invalid/kube-apiserver-build"
  echo
  echo "go $(sed -n 's/^go \([0-9.]*\)$/\1/p' "$kube_mod")"
  echo
  echo "require k8s.io/kubernetes $KUBE_VERSION"
  echo
  echo "replace ("
  sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*$#\t\1 => \1 '"$staging_version"'#p' "$kube_mod"
  echo ")"
} >go.mod
cat >tools.go <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO
go mod tidy >&2
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2)"
ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
go build -trimpath -ldflags "$ldflags" -o "$apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver >&2
mv "$apiserver.tmp" "$apiserver"

# etcd.
cd "$dir/etcd-module"
cat >go.mod <<MOD
module tfrs.invalid/etcd-build

go 1.25

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
MOD
cat >main.go <<'GO'
// The etcd server, as the etcd release binary runs it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
go mod tidy >&2
go build -trimpath -ldflags "-s -w" -o "$etcd.tmp" . >&2
mv "$etcd.tmp" "$etcd"
echo "$apiserver"
