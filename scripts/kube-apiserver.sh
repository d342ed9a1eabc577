#!/usr/bin/env bash
# Build (once per machine) a real kube-apiserver v1.20.2 from Debian bookworm's own source
# package `kubernetes`, and install Debian's etcd. Used by the reconcile end-to-end test
# (tests/reconcile.rs) and by .ci/run. See docs/reconcile.md and
# ../shared/reference/kube-testing.md §1.
#
#   scripts/kube-apiserver.sh build   # build if missing; prints the binary path (~10-15 min cold)
#   scripts/kube-apiserver.sh path    # prints the binary path if built, else exits 1
#
# The build lives outside the clone, under $TFRS_KUBE_CACHE (default /var/cache/tfrs-kube),
# so fresh clones on the same machine reuse it.
set -euo pipefail
cache="${TFRS_KUBE_CACHE:-/var/cache/tfrs-kube}"
bin="$cache/bin/kube-apiserver"
cmd="${1:-build}"

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "kube-apiserver.sh: installing Debian packages needs root" >&2
    exit 2
  fi
}

install_debs() {
  local missing=()
  command -v go >/dev/null || missing+=(golang-go)
  command -v rsync >/dev/null || missing+=(rsync)
  command -v jq >/dev/null || missing+=(jq)
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v make >/dev/null || missing+=(make)
  [ -d /usr/share/gocode/src/github.com/modern-go/reflect2 ] || missing+=(golang-github-modern-go-reflect2-dev)
  if [ "${#missing[@]}" -gt 0 ]; then
    need_root
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

case "$cmd" in
  path)
    [ -x "$bin" ] && command -v etcd >/dev/null && { echo "$bin"; exit 0; }
    exit 1
    ;;
  build) ;;
  *) echo "usage: $0 build|path" >&2; exit 2 ;;
esac

if [ -x "$bin" ]; then
  # Built already: only the runtime tools are needed.
  if ! command -v etcd >/dev/null || ! command -v openssl >/dev/null; then
    need_root
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server openssl >/dev/null
  fi
  echo "$bin"
  exit 0
fi
install_debs

mkdir -p "$cache/src" "$cache/bin" "$cache/apt"
exec 9>"$cache/build.lock"
flock 9
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi

# A private apt configuration with a deb-src line, so the system's sources stay untouched.
cat >"$cache/apt/sources.list" <<SRC
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian-security bookworm-security main
deb-src http://deb.debian.org/debian bookworm-updates main
SRC
mkdir -p "$cache/apt/lists/partial" "$cache/apt/archives/partial"
aptopts=(-o "Dir::Etc::SourceList=$cache/apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$cache/apt/lists" -o "Dir::Cache::Archives=$cache/apt/archives")
cd "$cache/src"
if ! ls -d kubernetes-*/cmd/kube-apiserver >/dev/null 2>&1; then
  apt-get "${aptopts[@]}" update -qq
  apt-get "${aptopts[@]}" source -qq kubernetes
fi
src="$(ls -d kubernetes-*/ | head -n1)"
cd "$src"
# reflect2 1.0.1 is known to break on Go >= 1.18: use Debian's 1.0.2.
rsync -a --delete /usr/share/gocode/src/github.com/modern-go/reflect2/ vendor/github.com/modern-go/reflect2/
export GOCACHE="$cache/gocache" GOPATH="$cache/gopath" GOFLAGS="${GOFLAGS:-}"
KUBE_GIT_VERSION=v1.20.2 KUBE_GIT_TREE_STATE=clean CGO_ENABLED=0 make WHAT=cmd/kube-apiserver >&2
built="$(find _output -type f -name kube-apiserver -perm -u+x | head -n1)"
install -m 0755 "$built" "$bin.tmp"
mv "$bin.tmp" "$bin"
echo "$bin"
