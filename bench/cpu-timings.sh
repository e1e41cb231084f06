#!/usr/bin/env bash
# Times the CPU runs whose wall times README.md and bench/RESULTS.md quote, as a user's
# machine runs them: OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS unset.
# Prints one Markdown row per run (wall, user, sys, sys share, peak RSS). Run it on an idle
# machine after `bash scripts/build.sh`; it writes its runs under a temporary folder.
#
#   bash bench/cpu-timings.sh [name...]   names: small small-1cpu small-omp1 small-pthreads
#                                         demo demo-fedtp demo-fedperfix demo-2ranks fedtp-full
#                                         (default: all; fedtp-full takes about 3 minutes)
#
# small-pthreads runs the small config under OpenBLAS's pthreads build (Debian's first
# choice when it is installed), unpacked by scripts/test.sh into ~/.cache/pfl.
set -euo pipefail
cd "$(dirname "$0")/.."
unset OMP_NUM_THREADS MKL_NUM_THREADS OPENBLAS_NUM_THREADS
pfl=$PWD/bin/pfl
[ -x "$pfl" ] || { echo "cpu-timings: bin/pfl missing: run bash scripts/build.sh" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
small=(train -c configs/fedtp-sbs-fmnist.yaml --set 'suite=[fedtp]' --set train.rounds=20)
pthreads=$(find "${XDG_CACHE_HOME:-$HOME/.cache}/pfl/openblas-pthread" -path '*/openblas-pthread/libblas.so.3' 2>/dev/null | head -n 1 || true)

# timed NAME CMD...: runs CMD in its own output folder and prints its row.
timed() {
  local name=$1 f=$tmp/$1.time
  shift
  mkdir -p "$tmp/$name"
  if ! /usr/bin/time -f '%e %U %S %M' -o "$f" "$@" --set out="$tmp/$name" >"$tmp/$name.log" 2>&1; then
    echo "cpu-timings: $name failed; its output:" >&2
    tail -20 "$tmp/$name.log" >&2
    return 1
  fi
  read -r wall user sys rss <"$f"
  awk -v n="$name" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v c="$*" 'BEGIN {
    printf "| %s | %.1f s | %.1f | %.1f (%.1f%%) | %.0f MB | `%s` |\n", n, w, u, s, 100 * s / (u + s), r / 1000, c }'
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(small small-1cpu small-omp1 small-pthreads demo demo-fedtp demo-fedperfix demo-2ranks fedtp-full)
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $("$pfl" doctor | grep -E '^(threads|BLAS):' | tr -s ' ' | paste -sd';')"
echo
echo "| run | wall | user s | sys s | peak RSS | command |"
echo "| --- | --- | --- | --- | --- | --- |"
for n in "${names[@]}"; do
  case $n in
    small) timed "$n" "$pfl" "${small[@]}" ;;
    small-1cpu) timed "$n" taskset -c 0 "$pfl" "${small[@]}" ;;
    small-omp1) timed "$n" env OMP_NUM_THREADS=1 "$pfl" "${small[@]}" ;;
    small-pthreads)
      if [ -z "$pthreads" ]; then
        echo "| $n | skipped: OpenBLAS's pthreads build not unpacked (bash scripts/test.sh does) | | | | |"
      else
        timed "$n" env LD_LIBRARY_PATH="$(dirname "$pthreads")" "$pfl" "${small[@]}"
      fi ;;
    demo) timed "$n" "$pfl" train ;;
    demo-fedtp) timed "$n" "$pfl" train -c configs/demo-fedtp-fmnist.yaml ;;
    demo-fedperfix) timed "$n" "$pfl" train -c configs/demo-fedperfix-fmnist.yaml ;;
    demo-2ranks) timed "$n" "$pfl" launch -n 2 -- train ;;
    fedtp-full) timed "$n" "$pfl" train -c configs/fedtp-default-fmnist.yaml ;;
    *) echo "cpu-timings: unknown run $n" >&2; exit 2 ;;
  esac
done
