# Shell helpers of the whole-process benchmarks (benches/scale.sh, benches/fleet.sh,
# benches/diff.sh), sourced by each after `set -euo pipefail`.
#
# Reads from the environment: CARGO_TARGET_DIR (default `target`), TFRS and GEN (default the
# release builds in it). Sets TFRS and GEN to absolute paths. Each script sets W, its work
# directory, before it times anything: `timed` writes the output of what it times to $W/last.log.

TARGET=${CARGO_TARGET_DIR:-target}
TFRS=$(realpath "${TFRS:-$TARGET/release/tfrs}")
GEN=$(realpath "${GEN:-$TARGET/release/examples/gen-scale}")

now() { date +%s.%N; }
# seconds taken by "$@" (stdout and stderr to $W/last.log)
timed() { local t0 t1; t0=$(now); "$@" >"$W/last.log" 2>&1; t1=$(now); echo "$t1 - $t0" | bc -l; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {m=a[int((NR+1)/2)]; printf "%.3f", m}'; }
ratio() { echo "scale=3; $1 / $2" | bc -l | sed 's/^\./0./'; }
# render SPEC OUT [FLAG...]: `tfrs render` with the spec's own master key
render() { "$TFRS" render "$1" --master-key-file "$1/keys/master.key" --out "$2" "${@:3}"; }
# The first line of every script's output: the machine and the date.
machine() {
  echo "# machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%F)"
}
