#!/usr/bin/env bash
# The tests: build everything, then vet, run every test, run every fuzz target briefly,
# and run each benchmark a few times so that benchmarks cannot rot (their numbers come from
# `go test -bench` runs and bench/gpu.sh, recorded in bench/RESULTS.md). build.sh installs
# Fashion-MNIST, so here a test that needs it fails rather than skips when it is missing.
# bench/gpu.sh's preflight and the Dockerfile's CUDA pins are tested with fake tools, and
# the GPU call is rehearsed with them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# the report tests render pages in headless Chromium; here a missing browser is a failure
if ! command -v chromium-headless-shell >/dev/null 2>&1 && ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q chromium-headless-shell
fi
export PATH="/usr/local/go/bin:$PATH"
go vet ./...
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
bash scripts/gpu-preflight-test.sh
# the GPU call rehearsed on the CPU: the Go binaries' archive (rebuilt only when a Go input
# changed), then day1 from a copy of what travels, without Go (docs/gpu.md)
bash bench/gpu.sh rehearse
export PFL_REQUIRE_TEST_DATA=1
# the tests run as on a user's machine, where no thread count is set
unset OMP_NUM_THREADS MKL_NUM_THREADS OPENBLAS_NUM_THREADS
# OpenBLAS's pthreads build, unpacked (not installed) for the threading test: Debian's
# alternatives prefer it to the OpenMP build whenever both are installed.
blas_root="${XDG_CACHE_HOME:-$HOME/.cache}/pfl/openblas-pthread"
if ! blas_lib=$(find "$blas_root" -path '*/openblas-pthread/libblas.so.3' 2>/dev/null | head -n 1) || [ -z "$blas_lib" ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  deb_dir=$(mktemp -d)
  (cd "$deb_dir" && { apt-get download -q libopenblas0-pthread || { $sudo apt-get update -q && apt-get download -q libopenblas0-pthread; }; })
  mkdir -p "$blas_root"
  dpkg -x "$deb_dir"/libopenblas0-pthread_*.deb "$blas_root"
  rm -rf "$deb_dir"
  blas_lib=$(find "$blas_root" -path '*/openblas-pthread/libblas.so.3' | head -n 1)
fi
export PFL_TEST_OPENBLAS_PTHREAD="$(dirname "$blas_lib")"
# The timeout guards against a hang, not a slow machine: cmd/pfl takes about 9 minutes on
# an idle 2-core machine and took over 30 under two busy loops plus other jobs' training.
go test -count=1 -timeout 75m ./...
bash scripts/fuzz.sh
# benchmarks: quiet when they pass, their failures shown when they do not
bench_log=$(mktemp)
if ! go test -count=1 -run '^$' -bench . -benchtime 3x ./... >"$bench_log" 2>&1; then
  grep -v '^Benchmark' "$bench_log" | tail -40 >&2
  rm -f "$bench_log"
  echo "pfl: a benchmark failed" >&2
  exit 1
fi
rm -f "$bench_log"
echo "pfl: benchmarks ran"
