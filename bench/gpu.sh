#!/usr/bin/env bash
# Everything pfl checks on a GPU machine, in one run.
#
#   bash bench/gpu.sh prepare   where Go is (not the GPU machine): builds the Go test and
#                               benchmark binaries and bin/pfl into bin/gpu/ (they do not
#                               link libtorch, so they run anywhere on x86-64 Linux)
#   bash bench/gpu.sh run       on the GPU machine (python3 with a CUDA torch, nvcc, cmake;
#                               no Go needed): builds build-cuda/libpfltorch.so against that
#                               torch, runs the CUDA tests (graph replay, bf16 autocast,
#                               devices), the smoke run, the benchmarks and the full-size
#                               workloads of `pfl bench`, prints their tables
#   bash bench/gpu.sh           both, on a GPU machine that has Go
#
# Logs go to bench/out/; where $OUT is set (the device tool), they are also packed into
# $OUT/gpu-logs.tgz, as that tool returns only a few files. Record the table in
# bench/RESULTS.md with the date, the device and this command.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
out=bench/out
mkdir -p "$out"
pack() { [ -n "${OUT:-}" ] && tar czf "$OUT/gpu-logs.tgz" -C bench out || true; }

prepare() {
  export PATH="/usr/local/go/bin:$PATH"
  mkdir -p bin/gpu
  go test -c -o bin/gpu/cuda.test ./cuda
  go test -c -o bin/gpu/fl.test ./engine/fl
  go test -c -o bin/gpu/smoke.test ./engine/smoke
  go test -c -o bin/gpu/bench.test ./bench
  go build -o bin/gpu/pfl ./cmd/pfl
  echo "gpu.sh: built bin/gpu/{cuda.test,smoke.test,bench.test,pfl}"
}

run() {
  for b in cuda.test fl.test smoke.test bench.test pfl; do
    [ -x "bin/gpu/$b" ] || { echo "gpu.sh: bin/gpu/$b missing: run 'bash bench/gpu.sh prepare' where Go is" >&2; exit 1; }
  done
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt" || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' | tee -a "$out/device.txt"

  local gen=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  cmake -S . -B build-cuda "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DPFL_TORCH_FROM_PYTHON=ON >"$out/cmake.log" 2>&1 ||
    { tail -40 "$out/cmake.log"; pack; exit 1; }
  cmake --build build-cuda -j"$(nproc)" >>"$out/cmake.log" 2>&1 || { grep -E 'error|Error' "$out/cmake.log" | head -40; pack; exit 1; }
  export PFL_NATIVE_LIB="$PWD/build-cuda/libpfltorch.so"
  export PFL_BENCH_DEVICE=cuda

  local status=0
  bin/gpu/pfl doctor | tee "$out/doctor.txt" || status=1
  bin/gpu/cuda.test -test.v -test.count=1 >"$out/cuda-tests.log" 2>&1 || status=1
  # the round loop on the GPU: captured steps equal eager ones, no growth (CUDA-only tests)
  bin/gpu/fl.test -test.v -test.count=1 -test.run 'CUDA' >>"$out/cuda-tests.log" 2>&1 || status=1
  bin/gpu/smoke.test -test.v -test.count=1 >"$out/smoke-tests.log" 2>&1 || status=1
  bin/gpu/pfl smoke -device cuda | tee "$out/smoke-cuda.txt" || status=1
  # BenchmarkWorkloads measures what `pfl bench` runs below: skipped here to spend the
  # device time once
  bin/gpu/bench.test -test.run '^$' -test.bench . -test.skip Workloads -test.benchtime 2s >"$out/bench.log" 2>&1 || status=1
  # one call per workload, so that one failing (say, out of memory) leaves the others
  # (the targets are for bf16; fp32 is the reference). PFL_BENCH_PRECISIONS overrides.
  local workloads="fedtp-c100-50 fedtp-c100-100 fedperfix-vits transfed-c100"
  local precisions=${PFL_BENCH_PRECISIONS:-"bf16 fp32"}
  for w in $workloads; do
    for p in $precisions; do
      bin/gpu/pfl bench -device cuda -size full -precision "$p" -json "$out/workload-$w-$p.json" "$w" >"$out/workload-$w-$p.txt" 2>&1 || status=1
    done
  done
  # what the CUDA graphs buy: the first workload once more with eager steps
  local first=${workloads%% *} p0=${precisions%% *}
  bin/gpu/pfl bench -device cuda -size full -precision "$p0" -eager -json "$out/workload-$first-$p0-eager.json" "$first" >"$out/workload-$first-$p0-eager.txt" 2>&1 || status=1

  echo
  echo "== CUDA tests (cuda package) =="
  grep -E '^(--- |ok|FAIL|PASS)' "$out/cuda-tests.log" | grep -E 'CUDA|Autocast|FAIL|^ok|^PASS' || true
  echo "passed: $(grep -c -- '--- PASS' "$out/cuda-tests.log")  failed: $(grep -c -- '--- FAIL' "$out/cuda-tests.log")  skipped: $(grep -c -- '--- SKIP' "$out/cuda-tests.log")"
  echo
  echo "== benchmarks =="
  grep -E '^Benchmark' "$out/bench.log" || tail -20 "$out/bench.log"
  echo
  echo "== workloads (pfl bench, full size) =="
  for w in $workloads; do
    for p in $precisions; do
      echo
      cat "$out/workload-$w-$p.txt"
    done
  done
  echo
  cat "$out/workload-$first-$p0-eager.txt"
  pack
  return $status
}

case "$mode" in
  prepare) prepare ;;
  run) run ;;
  all) prepare && run ;;
  *) echo "usage: bash bench/gpu.sh [prepare|run]" >&2; exit 2 ;;
esac
