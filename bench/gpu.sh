#!/usr/bin/env bash
# Everything pfl checks on a GPU machine: builds the CUDA native library, runs the CUDA
# tests and the benchmarks.
#
#   bash bench/gpu.sh prepare        where Go is (not necessarily the GPU machine): builds
#                                    the Go test and benchmark binaries and bin/pfl into
#                                    bin/gpu/ (they do not link libtorch, so they run on any
#                                    x86-64 Linux)
#   bash bench/gpu.sh run [stage...] on the GPU machine (python3 with a CUDA torch, nvcc,
#                                    cmake; no Go and no network needed), the stages in
#                                    order (default: all of them):
#       build      build-cuda/libpfltorch.so against that torch (skipped when up to date)
#       tests      the CUDA tests: cuda package (graphs, reseeded generators, bf16), the
#                  round loop (captured steps equal eager ones, no growth), the smoke run
#       kernels    go test -bench in bench/ (models at K=1 and K=8, kernels, matmul peak)
#       workloads  pfl bench at full size, every workload in each of PFL_BENCH_PRECISIONS
#                  (default "bf16 fp32"), then the first workload eager, for the graphs' gain
#       scaling    the first workload at K = 1 and K = 8 clients per round (the stacking gain)
#   bash bench/gpu.sh                both, on a GPU machine that has Go
#
# On a GPU machine without Go: run `prepare` where Go is, copy the whole tree (with bin/gpu/)
# to the GPU machine, and run `bash bench/gpu.sh run` there.
#
# The full run takes a while (the workloads stage longest). Where a machine's jobs have a
# time limit, split the stages over several invocations, e.g. `run build tests`, then
# `run kernels`, then `run workloads scaling`: a later stage reuses the library the build
# stage made, and the build stage rebuilds nothing that is up to date.
#
# Output: logs, device description and benchmark JSON go to bench/out/. At the end of a run
# (and when the build fails) they are also packed into gpu-logs.tgz in the folder
# $PFL_GPU_OUT (default bench/gpu-out; if PFL_GPU_OUT is unset and $OUT is set, $OUT), one
# file to carry back. Record the tables in bench/RESULTS.md with the date, the device and
# the command.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
[ $# -gt 0 ] && shift
out=bench/out
mkdir -p "$out"
status=0
workloads="fedtp-c100-50 fedtp-c100-100 fedperfix-vits transfed-c100"
first=${workloads%% *}
precisions=${PFL_BENCH_PRECISIONS:-"bf16 fp32"}
p0=${precisions%% *}

# dest is where gpu-logs.tgz goes (see the header).
dest=${PFL_GPU_OUT:-${OUT:-bench/gpu-out}}

pack() {
  mkdir -p "$dest" && tar czf "$dest/gpu-logs.tgz" --exclude=gpu-logs.tgz -C "$(dirname "$out")" "$(basename "$out")" &&
    echo "gpu.sh: logs packed into $dest/gpu-logs.tgz" || true
}

prepare() {
  export PATH="/usr/local/go/bin:$PATH"
  mkdir -p bin/gpu
  go test -c -ldflags="-s -w" -o bin/gpu/cuda.test ./cuda
  go test -c -ldflags="-s -w" -o bin/gpu/fl.test ./engine/fl
  go test -c -ldflags="-s -w" -o bin/gpu/smoke.test ./engine/smoke
  go test -c -ldflags="-s -w" -o bin/gpu/bench.test ./bench
  go build -ldflags="-s -w" -o bin/gpu/pfl ./cmd/pfl
  echo "gpu.sh: built bin/gpu/{cuda.test,fl.test,smoke.test,bench.test,pfl}"
}

stage_build() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt" || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' | tee -a "$out/device.txt"
  local gen=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  cmake -S . -B build-cuda "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DPFL_TORCH_FROM_PYTHON=ON >"$out/cmake.log" 2>&1 ||
    { tail -40 "$out/cmake.log"; pack; exit 1; }
  cmake --build build-cuda -j"$(nproc)" >>"$out/cmake.log" 2>&1 || { grep -E 'error|Error' "$out/cmake.log" | head -40; pack; exit 1; }
  echo "gpu.sh: built build-cuda/libpfltorch.so"
}

stage_tests() {
  bin/gpu/pfl doctor | tee "$out/doctor.txt" || status=1
  bin/gpu/cuda.test -test.v -test.count=1 >"$out/cuda-tests.log" 2>&1 || status=1
  bin/gpu/fl.test -test.v -test.count=1 -test.run 'CUDA' >>"$out/cuda-tests.log" 2>&1 || status=1
  bin/gpu/smoke.test -test.v -test.count=1 >"$out/smoke-tests.log" 2>&1 || status=1
  bin/gpu/pfl smoke -device cuda | tee "$out/smoke-cuda.txt" || status=1
  echo
  echo "== CUDA tests =="
  grep -E '^(--- |ok|FAIL|PASS)' "$out/cuda-tests.log" | grep -E 'CUDA|Autocast|Reseed|FAIL|^ok|^PASS' || true
  grep -B2 -A12 -- '--- FAIL' "$out/cuda-tests.log" | head -60 || true
  echo "passed: $(grep -c -- '--- PASS' "$out/cuda-tests.log")  failed: $(grep -c -- '--- FAIL' "$out/cuda-tests.log")  skipped: $(grep -c -- '--- SKIP' "$out/cuda-tests.log")"
}

stage_kernels() {
  # BenchmarkWorkloads measures what `pfl bench` runs: skipped here to spend the device
  # time once
  bin/gpu/bench.test -test.run '^$' -test.bench . -test.skip Workloads -test.benchtime 2s >"$out/bench.log" 2>&1 || status=1
  echo
  echo "== benchmarks =="
  grep -E '^Benchmark' "$out/bench.log" || tail -20 "$out/bench.log"
}

bench_one() { # name, then pfl bench flags and workload
  local name=$1
  shift
  bin/gpu/pfl bench -device cuda -size full -json "$out/workload-$name.json" "$@" >"$out/workload-$name.txt" 2>&1 || status=1
  echo
  cat "$out/workload-$name.txt"
}

stage_workloads() {
  echo
  echo "== workloads (pfl bench, full size) =="
  # one call per workload, so that one failing (say, out of memory) leaves the others
  for w in $workloads; do
    for p in $precisions; do
      bench_one "$w-$p" -precision "$p" "$w"
    done
  done
  bench_one "$first-$p0-eager" -precision "$p0" -eager "$first"
}

stage_scaling() {
  echo
  echo "== stacking (the first workload at K = 1 and K = 8) =="
  for k in 1 8; do
    bench_one "$first-$p0-K$k" -precision "$p0" -per-round "$k" -eval-chunk 25 "$first"
  done
}

run() {
  local stages=("$@")
  [ ${#stages[@]} -eq 0 ] && stages=(build tests kernels workloads scaling)
  for b in cuda.test fl.test smoke.test bench.test pfl; do
    [ -x "bin/gpu/$b" ] || { echo "gpu.sh: bin/gpu/$b missing: run 'bash bench/gpu.sh prepare' where Go is, and carry bin/gpu" >&2; exit 1; }
  done
  export PFL_NATIVE_LIB="$PWD/build-cuda/libpfltorch.so"
  export PFL_BENCH_DEVICE=cuda
  for s in "${stages[@]}"; do
    case "$s" in
      build | tests | kernels | workloads | scaling) "stage_$s" ;;
      *) echo "gpu.sh: unknown stage $s (build, tests, kernels, workloads, scaling)" >&2; exit 2 ;;
    esac
  done
  pack
  return $status
}

case "$mode" in
  prepare) prepare ;;
  run) run "$@" ;;
  all) prepare && run ;;
  *) echo "usage: bash bench/gpu.sh prepare | run [build|tests|kernels|workloads|scaling]..." >&2; exit 2 ;;
esac
