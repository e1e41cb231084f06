#!/usr/bin/env bash
# Everything pfl checks on a GPU machine: builds the CUDA native library, runs the CUDA
# tests and the benchmarks.
#
#   bash bench/gpu.sh prepare        where Go is (not necessarily the GPU machine): builds
#                                    the Go test and benchmark binaries and bin/pfl into
#                                    bin/gpu/ (they do not link libtorch, so they run on any
#                                    x86-64 Linux with glibc 2.34 or newer when built on
#                                    Debian bookworm)
#   bash bench/gpu.sh run [stage...] on the GPU machine (python3 with a CUDA torch, nvcc,
#                                    cmake; no Go and no network needed), the stages in
#                                    order (default: all of them):
#       build      build-cuda/libpfltorch.so against that torch (skipped when up to date)
#       tests      the CUDA tests: cuda package (graphs, reseeded generators, bf16), the
#                  custom kernels of kernels/ (CUDA equals the CPU reference bit for bit and
#                  the libtorch path within the tests' bounds), the round loop (captured
#                  steps equal eager ones, no growth), the smoke run
#       kernels    go test -bench in bench/ (models at K=1 and K=8, kernels, matmul peak)
#                  and in kernels/ (each custom kernel beside its libtorch path)
#       workloads  pfl bench at full size, every workload in each of PFL_BENCH_PRECISIONS
#                  (default "bf16 fp32"), then the first workload eager, for the graphs' gain
#       scaling    the first workload at K = 1 and K = 8 clients per round (the stacking gain)
#       dist       a short run across every GPU of the machine (pfl launch, c10d's NCCL), one
#                  rank per GPU, beside the same run on one GPU; skipped with one GPU
#   bash bench/gpu.sh                both, on a GPU machine that has Go
#   bash bench/gpu.sh --preflight-only
#                                    only the checks `run` starts with (also `preflight`)
#
# Preflight (the start of every `run`): torch must be a CUDA build; nvcc (CUDACXX, else
# PATH, $CUDA_HOME/bin, /usr/local/cuda/bin) must be the CUDA major.minor that torch was
# built with (torch.version.cuda); CMake must be new enough for that CUDA (3.18; for CUDA
# 13 3.31.8, or 4.0.3 in the 4.0 series: from those on FindCUDAToolkit reads the include
# folders nvcc reports as SYSTEM_INCLUDES, where CUDA 13 puts its relocated CCCL headers,
# include/cccl); a C++ compiler must be there; glibc must be 2.34 or newer (the binaries of
# `prepare`, built on Debian bookworm, need GLIBC_2.34). The build then gets that nvcc and
# its toolkit as CMAKE_CUDA_COMPILER and CUDAToolkit_ROOT. PFL_PYTHON picks the python.
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

# ver_ge A B: version A >= version B (dotted numbers; missing parts count as 0).
ver_ge() {
  local -a a b
  local i
  IFS=. read -ra a <<<"$1"
  IFS=. read -ra b <<<"$2"
  for ((i = 0; i < ${#a[@]} || i < ${#b[@]}; i++)); do
    ((10#${a[i]:-0} > 10#${b[i]:-0})) && return 0
    ((10#${a[i]:-0} < 10#${b[i]:-0})) && return 1
  done
  return 0
}

# preflight checks what the CUDA build and the carried binaries need (see the header) and
# sets nvcc and cuda_root for the build stage; it prints every finding and fails with all
# the problems it found.
nvcc="" cuda_root=""
preflight() {
  local py=${PFL_PYTHON:-python3} problems=() info="" want="" got="" cm="" cxx="" glibc="" k v c p
  local -A torch=([version]="?" [cuda]="?" [include]="" [lib]="" [prefix]="")
  echo "== preflight =="
  if ! info=$("$py" -c 'import os, torch, torch.utils
d = os.path.dirname(torch.__file__)
print("version", torch.__version__)
print("cuda", torch.version.cuda or "none")
print("prefix", torch.utils.cmake_prefix_path)
print("include", os.path.join(d, "include"))
print("lib", os.path.join(d, "lib"))' 2>&1); then
    problems+=("'$py -c \"import torch\"' failed (set PFL_PYTHON to a python with a CUDA torch): $(tail -1 <<<"$info")")
  else
    while read -r k v; do torch[$k]=$v; done <<<"$info"
  fi
  echo "torch:    ${torch[version]}, built with CUDA ${torch[cuda]} ($py)"
  echo "          include ${torch[include]}"
  echo "          lib     ${torch[lib]}"
  echo "          cmake   ${torch[prefix]}"
  [[ "${torch[cuda]}" =~ ^([0-9]+\.[0-9]+) ]] && want=${BASH_REMATCH[1]}
  [ "${torch[cuda]}" = none ] && problems+=("torch ${torch[version]} is a CPU build (torch.version.cuda is None): install a CUDA torch")

  nvcc=${CUDACXX:-}
  if [ -z "$nvcc" ]; then
    for c in "$(command -v nvcc || true)" "${CUDA_HOME:+$CUDA_HOME/bin/nvcc}" /usr/local/cuda/bin/nvcc; do
      [ -n "$c" ] && [ -x "$c" ] && { nvcc=$c; break; }
    done
  fi
  if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
    problems+=("no nvcc (${CUDACXX:+CUDACXX=$CUDACXX is not executable; }looked on PATH, in \$CUDA_HOME/bin and /usr/local/cuda/bin): install the CUDA $want toolkit or set CUDACXX")
    nvcc=""
  else
    [[ "$("$nvcc" --version 2>/dev/null || true)" =~ release\ ([0-9]+\.[0-9]+) ]] && got=${BASH_REMATCH[1]}
    cuda_root=$(readlink -f "$nvcc")
    cuda_root=${cuda_root%/*/*}
    echo "nvcc:     $nvcc, CUDA ${got:-?} (toolkit $cuda_root)"
    if [ -z "$got" ]; then
      problems+=("could not read the CUDA version from '$nvcc --version'")
    elif [ -n "$want" ] && [ "$got" != "$want" ]; then
      problems+=("nvcc $nvcc is CUDA $got but torch ${torch[version]} was built with CUDA ${torch[cuda]}: their major.minor must agree (put the CUDA $want toolkit first on PATH or set CUDACXX to its nvcc, or install a torch built for CUDA $got)")
    fi
  fi

  [[ "$(cmake --version 2>/dev/null || true)" =~ ^cmake\ version\ ([0-9][0-9.]*[0-9]) ]] && cm=${BASH_REMATCH[1]}
  echo "cmake:    ${cm:-missing}"
  local cuda_major=${want%%.*}
  [ -n "$got" ] && cuda_major=${got%%.*}
  if [ -z "$cm" ]; then
    problems+=("no cmake on PATH")
  elif ! ver_ge "$cm" 3.18; then
    problems+=("cmake $cm is older than 3.18, which CMakeLists.txt needs")
  elif [[ "$cuda_major" =~ ^[0-9]+$ ]] && [ "$cuda_major" -ge 13 ] &&
    { ! ver_ge "$cm" 3.31.8 || { ver_ge "$cm" 4.0 && ! ver_ge "$cm" 4.0.3; }; }; then
    problems+=("cmake $cm is too old for CUDA $cuda_major: CUDA 13 needs CMake 3.31.8 or newer (in the 4.0 series 4.0.3): only those read the include folders nvcc reports as SYSTEM_INCLUDES, where CUDA 13 moved its CCCL headers (include/cccl), so older ones miss headers torch's CUDA headers include (pip install cmake gives a current one)")
  fi

  cxx=${CXX:-c++}
  if command -v "$cxx" >/dev/null 2>&1; then
    v=$("$cxx" --version 2>/dev/null || true)
    echo "c++:      $cxx: ${v%%$'\n'*}"
  else
    problems+=("no C++ compiler ($cxx): install g++ or set CXX")
  fi

  v=$(ldd --version 2>/dev/null || true)
  v=${v%%$'\n'*}
  [[ "$v" =~ ([0-9]+\.[0-9]+)$ ]] && glibc=${BASH_REMATCH[1]}
  echo "glibc:    ${glibc:-?}"
  if [ -z "$glibc" ] || ! ver_ge "$glibc" 2.34; then
    problems+=("glibc ${glibc:-unknown} is older than 2.34: the binaries that 'prepare' builds on Debian bookworm need GLIBC_2.34; build them with Go on this machine (bash bench/gpu.sh prepare) instead")
  fi

  if [ ${#problems[@]} -gt 0 ]; then
    for p in "${problems[@]}"; do echo "gpu.sh: preflight: $p" >&2; done
    return 1
  fi
  echo "preflight passed: cmake gets -DCMAKE_CUDA_COMPILER=$nvcc -DCUDAToolkit_ROOT=$cuda_root"
}

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
  go test -c -ldflags="-s -w" -o bin/gpu/kernels.test ./kernels
  go test -c -ldflags="-s -w" -o bin/gpu/bench.test ./bench
  go build -ldflags="-s -w" -o bin/gpu/pfl ./cmd/pfl
  echo "gpu.sh: built bin/gpu/{cuda.test,fl.test,smoke.test,kernels.test,bench.test,pfl}"
}

stage_build() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt" || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' | tee -a "$out/device.txt"
  local gen=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  cmake -S . -B build-cuda "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DPFL_TORCH_FROM_PYTHON=ON \
    -DPFL_PYTHON="$(command -v "${PFL_PYTHON:-python3}")" -DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$cuda_root" >"$out/cmake.log" 2>&1 ||
    { tail -40 "$out/cmake.log"; pack; exit 1; }
  cmake --build build-cuda -j"$(nproc)" >>"$out/cmake.log" 2>&1 || { grep -E 'error|Error' "$out/cmake.log" | head -40; pack; exit 1; }
  echo "gpu.sh: built build-cuda/libpfltorch.so"
}

stage_tests() {
  bin/gpu/pfl doctor | tee "$out/doctor.txt" || status=1
  bin/gpu/cuda.test -test.v -test.count=1 >"$out/cuda-tests.log" 2>&1 || status=1
  bin/gpu/kernels.test -test.v -test.count=1 >>"$out/cuda-tests.log" 2>&1 || status=1
  bin/gpu/fl.test -test.v -test.count=1 -test.run 'CUDA' >>"$out/cuda-tests.log" 2>&1 || status=1
  bin/gpu/smoke.test -test.v -test.count=1 >"$out/smoke-tests.log" 2>&1 || status=1
  bin/gpu/pfl smoke -device cuda | tee "$out/smoke-cuda.txt" || status=1
  echo
  echo "== CUDA tests =="
  grep -E '^(--- |ok|FAIL|PASS)' "$out/cuda-tests.log" | grep -E 'CUDA|Autocast|Reseed|ImageBatch|WeightedSum|FAIL|^ok|^PASS' || true
  grep -B2 -A12 -- '--- FAIL' "$out/cuda-tests.log" | head -60 || true
  echo "passed: $(grep -c -- '--- PASS' "$out/cuda-tests.log")  failed: $(grep -c -- '--- FAIL' "$out/cuda-tests.log")  skipped: $(grep -c -- '--- SKIP' "$out/cuda-tests.log")"
}

stage_kernels() {
  # BenchmarkWorkloads measures what `pfl bench` runs: skipped here to spend the device
  # time once
  bin/gpu/bench.test -test.run '^$' -test.bench . -test.skip Workloads -test.benchtime 2s >"$out/bench.log" 2>&1 || status=1
  bin/gpu/kernels.test -test.run '^$' -test.bench . -test.benchtime 2s >>"$out/bench.log" 2>&1 || status=1
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

# The dist stage's run: a toy ViT on synthetic images, FedAvg, 8 clients per round (each
# rank trains its share), a few rounds; its metrics should match the one-GPU run within the
# tolerances of cmd/pfl/dist_test.go.
dist_config() {
  cat <<'YAML'
name: dist
device: cuda
seed: 1
data: {dataset: "synthetic:4000:10:1000", clients: 16, min_size: 10, partition: dirichlet, alpha: 1.0}
model: {preset: tiny-vit, depth: 4, patch: 4, dim: 64, heads: 4, head_dim: 16, mlp: 128}
algorithm: {name: fedavg}
train: {rounds: 5, participation: 0.5, epochs: 1, batch: 32, lr: 0.05, momentum: 0.9, eval_every: 1, tail_rounds: 2}
YAML
}

stage_dist() {
  echo
  echo "== across GPUs (pfl launch, NCCL) =="
  local n
  n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') || n=0
  if [ "$n" -lt 2 ]; then
    echo "gpu.sh: $n GPU(s): the dist stage needs 2 or more; skipped"
    return 0
  fi
  dist_config >"$out/dist.yaml"
  bin/gpu/pfl launch -n 1 -- train -c "$out/dist.yaml" --set out="$out/dist-runs" --set name=gpu1 --overwrite \
    >"$out/dist-1.txt" 2>&1 || status=1
  bin/gpu/pfl launch -n "$n" -- train -c "$out/dist.yaml" --set out="$out/dist-runs" --set name="gpu$n" --overwrite \
    >"$out/dist-$n.txt" 2>&1 || status=1
  for k in 1 "$n"; do
    echo "-- $k GPU(s):"
    tail -4 "$out/dist-$k.txt"
  done
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
  [ ${#stages[@]} -eq 0 ] && stages=(build tests kernels workloads scaling dist)
  for b in cuda.test fl.test smoke.test kernels.test bench.test pfl; do
    [ -x "bin/gpu/$b" ] || { echo "gpu.sh: bin/gpu/$b missing: run 'bash bench/gpu.sh prepare' where Go is, and carry bin/gpu" >&2; exit 1; }
  done
  # (not through a pipe: preflight sets nvcc and cuda_root for the build stage)
  if preflight >"$out/preflight.txt" 2>&1; then
    cat "$out/preflight.txt"
  else
    cat "$out/preflight.txt" >&2
    pack
    exit 1
  fi
  export PFL_NATIVE_LIB="$PWD/build-cuda/libpfltorch.so"
  export PFL_BENCH_DEVICE=cuda
  for s in "${stages[@]}"; do
    case "$s" in
      build | tests | kernels | workloads | scaling | dist) "stage_$s" ;;
      *) echo "gpu.sh: unknown stage $s (build, tests, kernels, workloads, scaling, dist)" >&2; exit 2 ;;
    esac
  done
  pack
  return $status
}

case "$mode" in
  prepare) prepare ;;
  run) run "$@" ;;
  all) prepare && run ;;
  preflight | --preflight-only) preflight ;;
  *) echo "usage: bash bench/gpu.sh prepare | run [build|tests|kernels|workloads|scaling|dist]... | --preflight-only" >&2; exit 2 ;;
esac
