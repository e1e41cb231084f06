#!/usr/bin/env bash
# Everything pfl checks on a GPU machine: builds the CUDA native library, runs the CUDA
# tests and the benchmarks. The GPU machine needs python3 with a CUDA torch, nvcc and cmake;
# no Go and no network. The Go binaries are built where Go is and travel as one archive.
# The plan for one 10-minute call on a 16-core H100 (its steps, order, time bounds, what a
# second call takes, and the exact call) is docs/gpu.md; `day1` runs it.
#
#   bash bench/gpu.sh prepare        where Go is: builds the Go test and benchmark binaries
#                                    and bin/pfl into bin/gpu/ (stripped, -trimpath; they do
#                                    not link libtorch and run on x86-64 Linux with glibc
#                                    2.34 or newer when built on Debian bookworm) and packs
#                                    them into one archive, bin/gpu.tar.xz (xz -9: its 64 MiB
#                                    window reaches across the six binaries, which share
#                                    most of their code); prints its size and the size of what
#                                    travels (the files git would send, tracked and
#                                    untracked-not-ignored, plus the archive) and fails above
#                                    40 MiB. Reuses both when no Go input changed
#                                    (PFL_GPU_REBUILD=1 rebuilds).
#   bash bench/gpu.sh day1           on the GPU machine, the one-call plan: build, tests,
#                                    FedTP bf16 and fp32, K = 1 and K = 8, ViT-S, then the
#                                    optional official-code step and the kernel benchmarks,
#                                    each under its own timeout, all within PFL_GPU_BUDGET
#                                    seconds (default 560); prints what a second call takes
#   bash bench/gpu.sh day2           the second call's steps (docs/gpu.md)
#   bash bench/gpu.sh plan STEP[=SECONDS]...
#                                    those steps, the same way (build first if not named);
#                                    =SECONDS overrides a step's bound
#   bash bench/gpu.sh steps [day1|day2]
#                                    lists a plan's steps with their bounds
#   bash bench/gpu.sh run [stage|step...]
#                                    the stages in order without timeouts or budget (default
#                                    all of them):
#       build      build-cuda/libpfltorch.so against that torch (cmake rebuilds nothing that
#                  is up to date); if that fails, once more without the custom kernels and
#                  the Gloo/NCCL paths, which the benchmarks do not need
#       tests      first the CUDA tests, by name, reported test by test: cuda package
#                  (graphs, reseeded generators, bf16), the round loop (captured steps equal
#                  eager ones, no growth), the custom kernels of kernels/ (CUDA equals the
#                  CPU reference bit for bit and the libtorch path within the tests' bounds),
#                  the smoke run on CUDA; then the other tests, reported apart
#       kernels    go test -bench in bench/ (models at K=1 and K=8, kernels, matmul peak)
#                  and in kernels/ (each custom kernel beside its libtorch path)
#       workloads  pfl bench at full size, every workload in each of PFL_BENCH_PRECISIONS
#                  (default "bf16 fp32"), then the first workload eager, for the graphs' gain
#       scaling    the first workload at K = 1 and K = 8 clients per round (the stacking gain)
#       dist       a short run across every GPU of the machine (pfl launch, c10d's NCCL), one
#                  rank per GPU, beside the same run on one GPU; skipped with one GPU
#       official   FedTP's official code on the same GPU, when PFL_FEDTP_OFFICIAL names a
#                  checkout of it (docs/gpu.md); skipped otherwise
#   bash bench/gpu.sh rehearse       where Go is, no GPU: prepare, copy exactly what travels
#                                    into an empty folder and run `day1` there with fake
#                                    nvcc, python3 and cmake and CPU stand-ins for the GPU
#                                    commands, without Go, the checkout or HOME (what it
#                                    proves: docs/gpu.md); scripts/test.sh runs it
#   bash bench/gpu.sh                prepare and run, on a GPU machine that has Go
#   bash bench/gpu.sh --preflight-only
#                                    only the checks every GPU mode starts with (also
#                                    `preflight`)
#
# A step (day1, day2, plan, run) is a stage or a benchmark named WORKLOAD:PRECISION, with
# :eager (no CUDA graphs) or :kN (N clients per round) after it, e.g. fedtp-c100-50:bf16:k8.
#
# Before any step: bin/gpu.tar.xz, when there, is unpacked into bin/gpu/ (unless bin/gpu/
# already holds that archive; with tar and xz, else with python3's tarfile); then the
# preflight; and after the build, `pfl doctor` must see a CUDA device, else the GPU steps are
# not started.
#
# Preflight: it refuses only what cannot build or run: torch must be a CUDA build; nvcc
# (CUDACXX, else PATH, $CUDA_HOME/bin, /usr/local/cuda/bin) must be of the CUDA major version
# that torch was built with (torch.version.cuda); CMake must be 3.18 or newer; a C++
# compiler must be there; glibc must be 2.34 or newer (the binaries of `prepare`, built on
# Debian bookworm, need GLIBC_2.34). It warns, and goes on, where the build may still work:
# nvcc of another minor version than torch's (PyTorch's own extension builder allows that
# too); for CUDA 13 a CMake older than 3.31.8 (4.0.3 in the 4.0 series: from those on
# FindCUDAToolkit lists the include folders nvcc reports, where CUDA 13 put its CCCL
# headers, include/cccl; CMakeLists.txt adds that folder itself for an older one); a
# toolkit without the cuBLAS, cuSPARSE or cuSOLVER headers or the cuFFT, cuRAND or NVRTC
# libraries that torch's CMake config looks for (it names each one missing). The build
# then gets that nvcc and its toolkit as CMAKE_CUDA_COMPILER, CUDAToolkit_ROOT and
# CUDA_TOOLKIT_ROOT_DIR (the last for torch's older CMake code), with the toolkit's bin/
# first on PATH, since torch's CMake config takes the nvcc it finds there. PFL_PYTHON picks
# the python.
#
# Output: logs, device description, benchmark JSON and summary.txt (each step's status and
# seconds) go to bench/out/. After every step they are packed into gpu-logs.tgz in the folder
# $PFL_GPU_OUT (default bench/gpu-out; if PFL_GPU_OUT is unset and $OUT is set, $OUT), one
# file to carry back even when the call is cut short. Record the tables in bench/RESULTS.md
# with the date, the device and the command.
#
# PFL_GPU_REHEARSE=1 (set by `rehearse` only) swaps the GPU commands for CPU stand-ins of
# the same commands: benchmarks at -device cpu -size small with 8 clients (fp32 for bf16,
# which takes seconds a step on the CPU), CUDA tests that skip, no benchmark loops, and no
# CUDA device required.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mode=${1:-all}
[ $# -gt 0 ] && shift
out=bench/out
mkdir -p "$out"
bundle=bin/gpu.tar.xz
binaries="cuda.test fl.test smoke.test kernels.test bench.test pfl"
max_travel=$((40 << 20)) # bytes: the copy to a lent machine may be 64 MiB; leave room
status=0
workloads="fedtp-c100-50 fedtp-c100-100 fedperfix-vits transfed-c100"
first=${workloads%% *}
precisions=${PFL_BENCH_PRECISIONS:-"bf16 fp32"}
p0=${precisions%% *}

# dest is where gpu-logs.tgz goes (see the header).
dest=${PFL_GPU_OUT:-${OUT:-bench/gpu-out}}

# The GPU commands' device and size; CPU stand-ins in a rehearsal (see the header).
rehearsal=${PFL_GPU_REHEARSE:-0}
dev=cuda size=full benchsel=. smokedev=cuda precision_swap=0
bench_extra=()
if [ "$rehearsal" = 1 ]; then
  # 8 clients: the small workloads' 4 would refuse -per-round 8
  dev=cpu size=small benchsel='^$' smokedev=cpu bench_extra=(-clients 8)
  # bf16 on the CPU takes seconds a step: fp32 stands in (the flags are checked all the same)
  precision_swap=1
fi

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
# sets nvcc and cuda_root for the build stage; it prints every finding, warns of what may
# still build, and fails with all the problems it found.
nvcc="" cuda_root=""
preflight() {
  local py=${PFL_PYTHON:-python3} problems=() warnings=() info="" want="" got="" cm="" cxx="" glibc="" k v c p
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
    elif [ -n "$want" ] && [ "${got%%.*}" != "${want%%.*}" ]; then
      problems+=("nvcc $nvcc is CUDA $got but torch ${torch[version]} was built with CUDA ${torch[cuda]}: their major versions must agree (put a CUDA ${want%%.*} toolkit first on PATH or set CUDACXX to its nvcc, or install a torch built for CUDA ${got%%.*})")
    elif [ -n "$want" ] && [ "$got" != "$want" ]; then
      warnings+=("nvcc $nvcc is CUDA $got but torch ${torch[version]} was built with CUDA ${torch[cuda]}: the major versions agree, so the build goes on (as PyTorch's extension builder does); the CUDA libraries torch loads stay its own (docs/gpu.md)")
    fi
    toolkit_check
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
    c="its include/cccl (none found under $cuda_root)"
    for p in "$cuda_root/include/cccl" "$cuda_root"/targets/*/include/cccl; do [ -d "$p" ] && c=$p; done
    warnings+=("cmake $cm is older than CUDA $cuda_major wants (3.31.8, or 4.0.3 in the 4.0 series, the first to list the include folders nvcc reports, where CUDA 13 moved its CCCL headers): CMakeLists.txt adds $c as a system include itself; pip install cmake gives a current one")
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

  for p in "${warnings[@]}"; do echo "gpu.sh: preflight: warning: $p"; done
  if [ ${#problems[@]} -gt 0 ]; then
    for p in "${problems[@]}"; do echo "gpu.sh: preflight: $p" >&2; done
    return 1
  fi
  echo "preflight passed${warnings[0]:+ with ${#warnings[@]} warning(s)}: cmake gets -DCMAKE_CUDA_COMPILER=$nvcc -DCUDAToolkit_ROOT=$cuda_root -DCUDA_TOOLKIT_ROOT_DIR=$cuda_root"
}

# toolkit_check (inside preflight: adds to its warnings) looks in the toolkit of nvcc for
# what torch's CMake config (its CUDA targets) and torch's CUDA headers need beside the
# runtime: the cuBLAS, cuSPARSE and cuSOLVER headers and the cuFFT, cuRAND and NVRTC
# libraries. Each missing one is named: a toolkit without them fails at configure or at the
# first file that includes ATen/cuda/CUDAContext.h.
toolkit_check() {
  local f d found missing=()
  local -a incs=("$cuda_root/include" "$cuda_root"/targets/*/include)
  local -a libs=("$cuda_root/lib64" "$cuda_root/lib" "$cuda_root"/targets/*/lib)
  for f in cublas_v2.h:cuBLAS cusparse.h:cuSPARSE cusolverDn.h:cuSOLVER; do
    found=""
    for d in "${incs[@]}"; do [ -e "$d/${f%%:*}" ] && found=$d; done
    [ -n "$found" ] || missing+=("${f%%:*} (${f#*:} headers)")
  done
  for f in cufft:cuFFT curand:cuRAND nvrtc:NVRTC; do
    found=""
    for d in "${libs[@]}"; do [ -e "$d/lib${f%%:*}.so" ] && found=$d; done
    [ -n "$found" ] || missing+=("lib${f%%:*}.so (${f#*:})")
  done
  [ ${#missing[@]} -eq 0 ] && { echo "toolkit:  the cuBLAS, cuSPARSE, cuSOLVER headers and cuFFT, cuRAND, NVRTC libraries are there"; return 0; }
  warnings+=("the CUDA toolkit at $cuda_root lacks $(printf '%s, ' "${missing[@]}" | sed 's/, $//') (looked in $cuda_root/include, lib64, lib and targets/*/): torch's CMake config or its CUDA headers need them, so the build will likely fail (configuring or compiling); install the toolkit's development packages for them (e.g. cuda-libraries-dev-${got%%.*}-${got#*.}) or point CUDACXX at a complete toolkit")
}

pack() {
  mkdir -p "$dest" && tar czf "$dest/gpu-logs.tgz" --exclude=gpu-logs.tgz -C "$(dirname "$out")" "$(basename "$out")" &&
    echo "gpu.sh: logs packed into $dest/gpu-logs.tgz" || true
}

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
sum_of() { sha256sum "$1" | cut -d' ' -f1; }

# travel_list prints, NUL-separated, the files a copy of the working tree takes: what git
# tracks and what it does not ignore (files deleted from the tree left out). bin/ is
# ignored, so the archive travels only when named (carried) beside them.
travel_list() {
  local f
  git ls-files -z -co --exclude-standard | while IFS= read -r -d '' f; do
    if [ -f "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
  done
}

travel_bytes() { travel_list | xargs -0 -r stat -c %s -- | awk '{ s += $1 } END { print s + 0 }'; }

goflags=(-trimpath "-ldflags=-s -w")

# source_stamp hashes every input of the Go builds (sources, the embedded configs, the cgo
# header, the Go version and flags), so that prepare rebuilds only when one changed.
source_stamp() {
  local f
  {
    go version
    echo "${goflags[*]}"
    git ls-files -z -co --exclude-standard -- '*.go' go.mod go.sum 'configs/*.yaml' '*.h' '*.c' |
      while IFS= read -r -d '' f; do
        if [ -f "$f" ]; then sha256sum "$f"; fi
      done
  } | sha256sum | cut -d' ' -f1
}

prepare() {
  export PATH="/usr/local/go/bin:$PATH"
  command -v go >/dev/null 2>&1 || { echo "gpu.sh: prepare needs Go (go.mod's version or newer)" >&2; return 1; }
  git rev-parse --git-dir >/dev/null 2>&1 || { echo "gpu.sh: prepare needs a git checkout (it measures what travels with git ls-files)" >&2; return 1; }
  local stamp b
  stamp=$(source_stamp)
  if [ "${PFL_GPU_REBUILD:-0}" != 1 ] && [ -f "$bundle" ] && [ -f bin/gpu/STAMP ] &&
    [ "$(sed -n 1p bin/gpu/STAMP)" = "$stamp" ] && [ "$(cat bin/gpu/BUNDLE 2>/dev/null)" = "$(sum_of "$bundle")" ]; then
    echo "gpu.sh: $bundle is up to date (no Go input changed; PFL_GPU_REBUILD=1 rebuilds)"
  else
    rm -rf bin/gpu && mkdir -p bin/gpu
    # -trimpath: no path of this checkout in the binaries (the rehearsal checks it)
    go test -c "${goflags[@]}" -o bin/gpu/cuda.test ./cuda
    go test -c "${goflags[@]}" -o bin/gpu/fl.test ./engine/fl
    go test -c "${goflags[@]}" -o bin/gpu/smoke.test ./engine/smoke
    go test -c "${goflags[@]}" -o bin/gpu/kernels.test ./kernels
    go test -c "${goflags[@]}" -o bin/gpu/bench.test ./bench
    go build "${goflags[@]}" -o bin/gpu/pfl ./cmd/pfl
    printf '%s\n%s\n%s\n' "$stamp" "$(go version)" "$(git describe --always --dirty 2>/dev/null || echo '?')" >bin/gpu/STAMP
    echo "gpu.sh: built bin/gpu/{${binaries// /,}}; packing them (xz -9, a minute or more)"
    # one xz block (-T1) with a 64 MiB window (-9): the six binaries compress together to
    # about a seventh of their size, since most of their code is the same packages
    tar -cf - -C bin --owner=0 --group=0 --numeric-owner --sort=name gpu | xz -9 -T1 >"$bundle.tmp"
    mv "$bundle.tmp" "$bundle"
    sum_of "$bundle" >bin/gpu/BUNDLE
  fi
  b=$(($(travel_bytes) + $(stat -c %s "$bundle")))
  echo "gpu.sh: $bundle: $(mib "$(stat -c %s "$bundle")") (unpacked: $(mib "$(du -sb bin/gpu | cut -f1)"))"
  echo "gpu.sh: what travels: $(mib "$b"): the files git would send ($(mib "$(travel_bytes)")) and $bundle; bound $(mib $max_travel)"
  if [ "$b" -gt "$max_travel" ]; then
    echo "gpu.sh: what travels is over $(mib $max_travel): leave large files out of the tree (ignore them) or make the binaries smaller" >&2
    return 1
  fi
  echo "gpu.sh: on the GPU machine: bash bench/gpu.sh day1 (carry $bundle; docs/gpu.md)"
}

# unpack makes bin/gpu/ from bin/gpu.tar.xz unless it already holds that archive (bin/gpu/
# BUNDLE is the archive's sha256). Without an archive, bin/gpu/ is used as it is.
unpack() {
  [ -f "$bundle" ] || return 0
  local sum
  sum=$(sum_of "$bundle")
  [ "$(cat bin/gpu/BUNDLE 2>/dev/null)" = "$sum" ] && return 0
  rm -rf bin/gpu.new && mkdir -p bin/gpu.new
  if command -v xz >/dev/null 2>&1; then
    tar -xJf "$bundle" -C bin/gpu.new
  else # python3's tarfile reads xz without the xz tool
    "${PFL_PYTHON:-python3}" -c 'import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    try:
        t.extractall(sys.argv[2], filter="data")
    except TypeError:  # a Python without extraction filters (before 3.12)
        t.extractall(sys.argv[2])' "$bundle" bin/gpu.new
  fi
  rm -rf bin/gpu && mv bin/gpu.new/gpu bin/gpu && rmdir bin/gpu.new
  echo "$sum" >bin/gpu/BUNDLE
  echo "gpu.sh: unpacked $bundle into bin/gpu/ ($(sed -n 3p bin/gpu/STAMP), $(sed -n 2p bin/gpu/STAMP))"
}

require_binaries() {
  local b
  for b in $binaries; do
    [ -x "bin/gpu/$b" ] || { echo "gpu.sh: bin/gpu/$b missing: run 'bash bench/gpu.sh prepare' where Go is, and carry $bundle" >&2; exit 1; }
  done
}

# step_build configures and builds build-cuda/libpfltorch.so against this machine's torch
# with the preflight's nvcc; if that fails, it tries once more without the custom CUDA
# kernels and dist.cpp's Gloo/NCCL paths (-DPFL_CUDA_KERNELS=OFF -DPFL_DIST=OFF), which
# neither the benchmarks nor the other tests need. Each try's cmake output, CMake's
# configure log and cache and pfl-features.txt (what the build has) go to the logs, and the
# run path's choice of CUDA libraries (ldd) after a build.
step_build() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt" || true
  "${PFL_PYTHON:-python3}" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' | tee -a "$out/device.txt" || true
  # (a warm machine's logs may hold an earlier call's second try)
  rm -rf "$out/build-fallback.txt" "$out/cmake-retry" "$out/cmake-retry.log"
  if ! build_try "" ON; then
    echo "gpu.sh: build failed; trying once more without the custom CUDA kernels and the Gloo/NCCL paths (-DPFL_CUDA_KERNELS=OFF -DPFL_DIST=OFF): the benchmarks need only the core library"
    echo "built without the custom CUDA kernels and the Gloo/NCCL paths: the first build failed ($out/cmake.log)" >"$out/build-fallback.txt"
    build_try -retry OFF || return 1
  fi
  ldd build-cuda/libpfltorch.so >"$out/ldd.txt" 2>&1 || true
  echo "gpu.sh: built build-cuda/libpfltorch.so ($(paste -sd' ' build-cuda/pfl-features.txt 2>/dev/null))"
  grep -E 'libcudart|libcublas\.|libnvrtc|libc10_cuda' "$out/ldd.txt" || true
}

# build_try TAG ON|OFF: one configure and build of build-cuda with the custom kernels and
# the dist paths ON or OFF; its logs go to $out/cmake$TAG.log and $out/cmake$TAG/.
build_try() {
  local tag=$1 parts=$2 log=$out/cmake$1.log rc=0
  local -a gen=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  # torch's CMake config takes the nvcc it finds on PATH: make that the preflight's
  PATH="$cuda_root/bin:$PATH" CUDACXX=$nvcc cmake -S . -B build-cuda "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DPFL_TORCH_FROM_PYTHON=ON -DPFL_PYTHON="$(command -v "${PFL_PYTHON:-python3}")" \
    -DPFL_CUDA_KERNELS="$parts" -DPFL_DIST="$parts" -DCMAKE_CUDA_COMPILER="$nvcc" \
    -DCUDAToolkit_ROOT="$cuda_root" -DCUDA_TOOLKIT_ROOT_DIR="$cuda_root" >"$log" 2>&1 || rc=$?
  configure_logs "$out/cmake$tag"
  if [ $rc -ne 0 ]; then
    echo "gpu.sh: cmake could not configure build-cuda (exit $rc; $log, CMake's own logs in $out/cmake$tag/):"
    tail -40 "$log"
    # nothing of a failed configure is worth keeping for the next try
    rm -rf build-cuda
    return 1
  fi
  PATH="$cuda_root/bin:$PATH" cmake --build build-cuda -j"$(nproc)" >>"$log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    echo "gpu.sh: the build failed (exit $rc; $log):"
    grep -E 'error|Error' "$log" | head -40
    return 1
  fi
}

# configure_logs DIR copies what CMake wrote about configuring build-cuda into DIR: its
# configure log (CMakeConfigureLog.yaml from CMake 3.26 on, CMakeError.log and
# CMakeOutput.log before), its cache and pfl-features.txt.
configure_logs() {
  local f
  rm -rf "$1" && mkdir -p "$1"
  for f in build-cuda/CMakeFiles/CMakeConfigureLog.yaml build-cuda/CMakeFiles/CMakeError.log \
    build-cuda/CMakeFiles/CMakeOutput.log build-cuda/CMakeCache.txt build-cuda/pfl-features.txt; do
    [ -f "$f" ] && cp "$f" "$1/"
  done
  return 0
}

# has_feature NAME: the library in build-cuda was built with NAME (cuda_kernels, gloo, nccl:
# pfl-features.txt, which CMakeLists.txt writes); without that file, assumed so.
has_feature() {
  [ -f build-cuda/pfl-features.txt ] || return 0
  grep -qx "$1 ON" build-cuda/pfl-features.txt
}

# in_pkg DIR BINARY ARGS...: a test binary runs in its package's folder, as go test runs it.
in_pkg() { (cd "$1" && "$root/bin/gpu/$2" "${@:3}"); }

# step_tests runs the CUDA tests first, by name, and reports them (each test's status, then
# the counts) before anything else runs: the cuda package's ^TestCUDA tests (device
# queries, graph replay against eager, reseeded generators, bf16 autocast), the round
# loop's (^TestCUDA in engine/fl: captured rounds equal eager ones) and the custom kernels'
# (every test of kernels/ runs the CUDA version beside the CPU reference), then pfl smoke
# on CUDA. Then the rest, reported apart: the cuda package's other tests, which meet this
# torch's CPU side (allocator, threads, Gloo) for the first time here, and the smoke tests.
# A library built without the custom kernels skips kernels/; one without Gloo skips the
# process-group tests. The full output of each part is in tests-cuda.log and
# tests-other.log.
step_tests() {
  local cuda_log=$out/tests-cuda.log other_log=$out/tests-other.log skip='^TestCUDA'
  : >"$cuda_log"
  : >"$other_log"
  echo "== CUDA tests, by name =="
  test_run "$cuda_log" cuda cuda.test -test.run '^TestCUDA'
  test_run "$cuda_log" engine/fl fl.test -test.run '^TestCUDA'
  if has_feature cuda_kernels; then
    test_run "$cuda_log" kernels kernels.test
  else
    echo "kernels tests skipped: the library was built without the custom CUDA kernels (build-cuda/pfl-features.txt)" | tee -a "$cuda_log"
  fi
  test_report "CUDA tests" "$cuda_log"
  bin/gpu/pfl smoke -device "$smokedev" | tee "$out/smoke-$smokedev.txt" || status=1
  echo
  echo "== other tests =="
  if ! has_feature gloo; then
    skip+='|^TestProcessGroup'
    echo "process-group tests skipped: the library was built without Gloo (build-cuda/pfl-features.txt)" | tee -a "$other_log"
  fi
  test_run "$other_log" cuda cuda.test -test.skip "$skip"
  test_run "$other_log" engine/smoke smoke.test
  test_report "other tests" "$other_log"
}

# test_run LOG DIR BINARY ARGS...: a test binary, verbose, from its package folder; its
# output goes to LOG, and an exit without a failed test (a crash) or a run in which no test
# matched is recorded there too.
test_run() {
  local log=$1 rc=0 part=$out/tests-part.log
  echo "=== $3 ${*:4}" >>"$log"
  in_pkg "$2" "$3" -test.v -test.count=1 "${@:4}" 2>&1 | tee "$part" >>"$log" || rc=$?
  if grep -q '^testing: warning: no tests to run' "$part"; then
    echo "gpu.sh: $3 ${*:4}: no test matched" >>"$log"
    status=1
  fi
  [ $rc -eq 0 ] || { echo "gpu.sh: $3 exited $rc" >>"$log"; status=1; }
  rm -f "$part"
}

# test_report NAME LOG prints each top-level test of LOG with its status, the failures'
# output, the problems test_run recorded (a binary that ended badly, a run in which no test
# matched), and the counts.
test_report() {
  local log=$2
  grep -E '^--- (PASS|FAIL|SKIP): ' "$log" | sed -E 's/ \([0-9.]+s\)$//' || true
  grep -B2 -A12 -- '--- FAIL' "$log" | head -60 || true
  grep -E '^gpu\.sh: ' "$log" || true
  echo "$1: passed: $(grep -c -- '^--- PASS' "$log")  failed: $(grep -c -- '^--- FAIL' "$log")  skipped: $(grep -c -- '^--- SKIP' "$log")  problems: $(grep -c '^gpu\.sh: ' "$log")"
}

step_kernels() {
  # BenchmarkWorkloads measures what `pfl bench` runs: skipped here to spend the device
  # time once
  in_pkg bench bench.test -test.run '^$' -test.bench "$benchsel" -test.skip Workloads -test.benchtime 2s >"$out/bench.log" 2>&1 || status=1
  if has_feature cuda_kernels; then
    in_pkg kernels kernels.test -test.run '^$' -test.bench "$benchsel" -test.benchtime 2s >>"$out/bench.log" 2>&1 || status=1
  else
    echo "kernels/ benchmarks skipped: the library was built without the custom CUDA kernels" | tee -a "$out/bench.log"
  fi
  echo
  echo "== benchmarks =="
  grep -E '^Benchmark' "$out/bench.log" || tail -20 "$out/bench.log"
}

# step_bench WORKLOAD:PRECISION[:eager|:kN]: pfl bench at full size, one workload per call,
# so that one failing (say, out of memory) leaves the others.
step_bench() {
  local w p m args=() name=${1//:/-}
  IFS=: read -r w p m <<<"$1"
  [ "$precision_swap" = 1 ] && [ "$p" = bf16 ] && p=fp32
  case "$m" in
    eager) args=(-eager) ;;
    k*) args=(-per-round "${m#k}" -eval-chunk 25) ;;
  esac
  bin/gpu/pfl bench -device "$dev" -size "$size" -json "$out/workload-$name.json" -precision "$p" \
    "${args[@]}" "${bench_extra[@]}" "$w" >"$out/workload-$name.txt" 2>&1 || status=1
  echo
  cat "$out/workload-$name.txt"
}

# The dist step's run: a toy ViT on synthetic images, FedAvg, 8 clients per round (each
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

step_dist() {
  echo
  echo "== across GPUs (pfl launch, NCCL) =="
  local n
  n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') || n=0
  if [ "$n" -lt 2 ]; then
    echo "gpu.sh: $n GPU(s): the dist step needs 2 or more; skipped"
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

# step_official times FedTP's official main.py on this GPU in the shape of the
# fedtp-c100-50 workload (tiny ViT depth 6, 50 clients, 10% per round, 5 local epochs,
# batch 64, lr 0.01, momentum 0.9, the 150-wide hypernetwork), on the CIFAR-100 of
# PFL_FEDTP_OFFICIAL_DATA or else on synthetic CIFAR-100-shaped data as pfl bench uses
# (bench/fedtp-official.py). The checkout is not part of pfl: it travels as an ignored,
# carried folder (docs/gpu.md).
step_official() {
  local dir=${PFL_FEDTP_OFFICIAL:-} rounds=${PFL_FEDTP_OFFICIAL_ROUNDS:-5}
  if [ -z "$dir" ]; then
    echo "official: skipped: PFL_FEDTP_OFFICIAL is not set (a checkout of FedTP's official code, carried beside the tree; docs/gpu.md)"
    return 0
  fi
  [ -f "$dir/main.py" ] || { echo "official: $dir/main.py not found (PFL_FEDTP_OFFICIAL=$dir)"; return 1; }
  mkdir -p "$out/official"
  "${PFL_PYTHON:-python3}" bench/fedtp-official.py --checkout "$dir" --data "${PFL_FEDTP_OFFICIAL_DATA:-}" \
    --work "$out/official" -- \
    --model=vit --dataset=cifar100 --alg=FedTP --depth=6 --hyper_hid=150 --n-hidden=3 --client_embed_size=128 \
    --n_parties=50 --sample=0.1 --epochs=5 --batch-size=64 --lr=0.01 --rho=0.9 --reg=1e-5 \
    --partition=noniid-labeldir --beta=0.5 --comm_round="$rounds" --eval_step=5 --test_round=2 \
    --init_seed=0 --device=cuda:0 --logdir="$out/official/logs" 2>&1 | tee "$out/official/run.txt" || status=1
}

# The plans (docs/gpu.md): day1 is one 10-minute call in order of value; day2 what a second
# call adds once day1 has run through.
day1_steps="build tests fedtp-c100-50:bf16 fedtp-c100-50:fp32 fedtp-c100-50:bf16:k1 fedtp-c100-50:bf16:k8 fedperfix-vits:bf16 official kernels"
day2_steps="build fedtp-c100-50:bf16:eager fedtp-c100-50:tf32 fedtp-c100-100:bf16 transfed-c100:bf16 fedperfix-vits:fp32 dist"

# bound_of STEP: the step's timeout in seconds (docs/gpu.md gives the reasons).
bound_of() {
  case "$1" in
    build | kernels) echo 240 ;;
    tests | official) echo 120 ;;
    dist) echo 180 ;;
    fedperfix-vits:fp32*) echo 300 ;;
    fedperfix-vits:*) echo 150 ;;
    *:k1) echo 60 ;;
    *:k8) echo 75 ;;
    fedtp-c100-50:bf16) echo 90 ;;
    *) echo 120 ;;
  esac
}

about() {
  local w p m
  case "$1" in
    build) echo "the CUDA library against this machine's torch (cmake, -j\$(nproc); once more without kernels and dist if that fails)" ;;
    tests) echo "the CUDA tests by name and pfl smoke on CUDA, then the other tests" ;;
    kernels) echo "go test -bench: models at K = 1 and 8, custom kernels, matmul peak" ;;
    official) echo "FedTP's official main.py in the fedtp-c100-50 shape (skipped unless PFL_FEDTP_OFFICIAL)" ;;
    dist) echo "pfl launch across the machine's GPUs (skipped with one)" ;;
    *)
      IFS=: read -r w p m <<<"$1"
      case "$m" in
        eager) m=", eager (no CUDA graphs)" ;;
        k*) m=", K = ${m#k} clients per round" ;;
      esac
      echo "pfl bench $w, $p$m"
      ;;
  esac
}

# valid_step NAME: a stage of its own or WORKLOAD:PRECISION[:eager|:kN].
valid_step() {
  local w p m
  case "$1" in
    build | tests | kernels | dist | official) return 0 ;;
  esac
  IFS=: read -r w p m <<<"$1"
  [[ " $workloads " == *" $w "* ]] && [[ "$p" =~ ^(fp32|tf32|bf16)$ ]] && [[ "$m" =~ ^(|eager|k[1-9][0-9]*)$ ]]
}

# expand STAGE|STEP: the steps a stage of `run` stands for.
expand() {
  local w p
  case "$1" in
    workloads)
      for w in $workloads; do
        for p in $precisions; do echo "$w:$p"; done
      done
      echo "$first:$p0:eager"
      ;;
    scaling) printf '%s\n' "$first:$p0:k1" "$first:$p0:k8" ;;
    *) echo "$1" ;;
  esac
}

# cuda_gate: pfl doctor must load the built library and see a CUDA device (in a rehearsal,
# loading the library is enough).
cuda_gate() {
  local rc=0
  timeout -k 5 60 bin/gpu/pfl doctor >"$out/doctor.txt" 2>&1 || rc=$?
  cat "$out/doctor.txt"
  [ $rc -eq 0 ] || { echo "gpu.sh: pfl doctor failed (exit $rc): the GPU steps are not started"; return 1; }
  [ "$rehearsal" = 1 ] && return 0
  grep -qE '^devices: +cpu \+ [1-9][0-9]* CUDA' "$out/doctor.txt" ||
    { echo "gpu.sh: pfl doctor sees no CUDA device: the GPU steps are not started"; return 1; }
}

# steps_run BOUNDED STEP[=SECONDS]...: each step runs in a child process (bash bench/gpu.sh
# step STEP), with BOUNDED=1 under `timeout` at its bound and only while the budget
# (PFL_GPU_BUDGET seconds since this script started) lasts: a step that would start with
# less than 30 s left is not started, and one that starts gets at most what is left. Each
# step's status and seconds go to summary.txt and the logs are packed after every step; at
# the end it prints the summary, the benchmark rows and the steps a second call takes.
steps_run() {
  local bounded=$1 budget=${PFL_GPU_BUDGET:-560} s name b t rc t0 st gate="" block="" shown
  local -a later=() ran=()
  shift
  : >"$out/summary.txt"
  record() { printf '%-26s %-26s %7s %5s\n' "$@" >>"$out/summary.txt"; }
  record step status seconds bound
  for s in "$@"; do
    name=${s%%=*}
    b=$(bound_of "$name")
    [[ "$s" == *=* ]] && b=${s#*=}
    shown=$b
    [ "$bounded" = 1 ] || shown=none
    if [ -z "$block" ] && [ "$bounded" = 1 ] && [ $((budget - SECONDS)) -lt 30 ]; then
      record "$name" "not run (budget)" - "$shown"
      later+=("$s")
      status=1
      continue
    fi
    if [ -z "$block" ] && [ "$name" != build ] && [ -z "$gate" ]; then
      if cuda_gate; then gate=ok; else gate=failed block="not run (no CUDA device)"; fi
    fi
    if [ -n "$block" ]; then
      record "$name" "$block" - "$shown"
      later+=("$s")
      status=1
      continue
    fi
    t=$b
    if [ "$bounded" = 1 ] && [ $((budget - SECONDS)) -lt "$t" ]; then
      t=$((budget - SECONDS))
    fi
    echo
    echo "== $name ($(about "$name"); bound ${t} s) =="
    t0=$SECONDS rc=0
    ran+=("$name")
    if [ "$bounded" = 1 ]; then
      timeout -k 10 "$t" bash bench/gpu.sh step "$name" 2>&1 | tee "$out/step-${name//:/-}.log" || rc=$?
    else
      bash bench/gpu.sh step "$name" 2>&1 | tee "$out/step-${name//:/-}.log" || rc=$?
    fi
    case $rc in
      0)
        st=ok
        # a build that needed its second try: the library lacks the kernels and dist paths
        if [ "$name" = build ] && [ -f "$out/build-fallback.txt" ]; then
          st="ok (no kernels, dist)"
          status=1
        fi
        ;;
      124 | 137)
        st="timed out at $t s"
        # cut by the budget: the same bound next time; at its own bound: twice that
        if [ "$t" -lt "$b" ]; then later+=("$name=$b"); else later+=("$name=$((2 * b))"); fi
        ;;
      *) st="failed (exit $rc)" ;;
    esac
    record "$name" "$st" $((SECONDS - t0)) "$shown"
    [ "$name" = build ] && [ "$rc" -ne 0 ] && block="not run (build failed)"
    [ "$rc" -eq 0 ] || status=1
    pack >/dev/null
  done
  echo
  echo "== summary ($SECONDS s in all; logs in $out/, packed into $dest/gpu-logs.tgz) =="
  cat "$out/summary.txt"
  for name in "${ran[@]}"; do
    # each benchmark's table: its header and its row
    if [[ "$name" == *:* ]] && [ -f "$out/workload-${name//:/-}.txt" ]; then
      awk '/^ +workload +device/ { print; getline; print; exit }' "$out/workload-${name//:/-}.txt"
    fi
  done
  if [ ${#later[@]} -gt 0 ]; then
    echo "second call: bash bench/gpu.sh plan ${later[*]}"
  else
    echo "every step ran; a second call: bash bench/gpu.sh day2"
  fi
  pack
}

# gpu_steps: unpack, preflight, then steps_run BOUNDED STEP...
gpu_steps() {
  local bounded=$1 s
  shift
  for s in "$@"; do
    [[ "$s" != *=* ]] || [[ "${s#*=}" =~ ^[1-9][0-9]*$ ]] || { echo "gpu.sh: $s: want STEP=SECONDS" >&2; exit 2; }
    valid_step "${s%%=*}" || { echo "gpu.sh: unknown step $s (stages: build tests kernels dist official workloads scaling; benchmarks: WORKLOAD:PRECISION[:eager|:kN] of $workloads)" >&2; exit 2; }
  done
  unpack
  require_binaries
  # (not through a pipe: preflight sets nvcc and cuda_root for the build step)
  if preflight >"$out/preflight.txt" 2>&1; then
    cat "$out/preflight.txt"
  else
    cat "$out/preflight.txt" >&2
    pack
    exit 1
  fi
  export PFL_GPU_NVCC=$nvcc PFL_GPU_CUDA_ROOT=$cuda_root
  export PFL_NATIVE_LIB="$root/build-cuda/libpfltorch.so"
  export PFL_BENCH_DEVICE=$dev
  steps_run "$bounded" "$@"
  return $status
}

# rehearse: the GPU call rehearsed on this machine (docs/gpu.md says what it proves). It
# copies exactly what travels into an empty folder and runs `day1` there, in an environment
# with only the fake GPU toolchain (scripts/gpu-fakes.sh) and /usr/bin:/bin on PATH, a fake
# go that records any call, HOME and TMPDIR inside the folder, and, where unshare can make a
# private mount namespace, this checkout and /usr/local/go hidden under empty folders. The
# fake cmake's build copies the CPU library (bash scripts/build.sh) to where the CUDA one
# would be, and the GPU commands run as their CPU stand-ins (PFL_GPU_REHEARSE=1).
rehearse() {
  prepare
  [ -f build/libpfltorch.so ] || { echo "gpu.sh: rehearse needs the CPU library build/libpfltorch.so: bash scripts/build.sh" >&2; return 1; }
  local src=$root tmp tree machine bytes s rc fails=0 hidden=0
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/pfl-rehearse.XXXXXX")
  [ "${PFL_KEEP_REHEARSAL:-0}" = 1 ] && echo "gpu.sh: rehearsal kept in $tmp" || trap "rm -rf '$tmp'" EXIT
  case "$tmp/" in "$src"/*) echo "gpu.sh: rehearse: TMPDIR is inside the checkout" >&2; return 1 ;; esac
  tree=$tmp/tree machine=$tmp/machine
  mkdir -p "$tree/bin" "$tmp/home" "$tmp/tmp" "$tmp/out" "$tmp/empty"
  check() { # WHAT COMMAND...: one check of the rehearsal
    if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
  }

  # what travels, and nothing else: the files git would send and the archive
  travel_list | tar --null -T - -cf - | tar -xf - -C "$tree"
  cp "$bundle" "$tree/bin/"
  bytes=$(find "$tree" \( -type f -o -type l \) -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
  echo "gpu.sh: rehearse: $(mib "$bytes") travel, copied to $tree"
  check "what travels ($(mib "$bytes")) is at most $(mib $max_travel)" [ "$bytes" -le "$max_travel" ]

  # the GPU machine: a CUDA 13.0 torch, nvcc and cmake 3.31.8 (fakes), glibc 2.39, no driver
  # that answers, no Go; the CPU library stands in for the one the CUDA build would make
  source scripts/gpu-fakes.sh
  gpu_fakes "$machine/bin"
  cp build/libpfltorch.so "$machine/libpfltorch.so"
  local -a envs=(env -i PATH="$machine/bin:/usr/bin:/bin" HOME="$tmp/home" TMPDIR="$tmp/tmp" OUT="$tmp/out"
    LANG=C.UTF-8 FAKE_NVCC=13.0 FAKE_TORCH_CUDA=13.0 FAKE_CMAKE=3.31.8 FAKE_GLIBC=2.39
    FAKE_CMAKE_LOG="$tmp/cmake.log" FAKE_CMAKE_LIB="$machine/libpfltorch.so" FAKE_GO_MARK="$tmp/go-called")
  local -a hide=()
  if unshare -rm true 2>/dev/null; then
    hidden=1
    # shellcheck disable=SC2016
    hide=(unshare -rm bash -c 'e=$1 s=$2; shift 2
      mount --bind "$e" "$s" && { [ ! -d /usr/local/go ] || mount --bind "$e" /usr/local/go; } && exec "$@"' _ "$tmp/empty" "$src")
  else
    echo "gpu.sh: rehearse: unshare -rm is not allowed here, so the checkout stays visible: relying on env -i, the fake go and the search for its path"
  fi
  sandbox() { (cd "$tree" && "${hide[@]}" "${envs[@]}" "$@"); }

  # the sandbox itself: go is the fake, and the checkout cannot be read
  check "go in the rehearsal is the fake" sandbox bash -c '[ "$(command -v go)" = "$0/go" ]' "$machine/bin"
  if [ $hidden = 1 ]; then
    check "the checkout is hidden in the rehearsal" sandbox bash -c '[ ! -e "$0/bench/gpu.sh" ]' "$src"
  fi

  # the call: bash bench/gpu.sh day1, with the CPU stand-ins
  rc=0
  sandbox PFL_GPU_REHEARSE=1 bash bench/gpu.sh day1 >"$tmp/day1.txt" 2>&1 || rc=$?
  check "day1 ran through (exit $rc)" [ $rc -eq 0 ]
  for s in $day1_steps; do
    check "day1: $s ok" grep -qE "^$s +ok " "$tree/bench/out/summary.txt"
  done
  check "the archive was unpacked into bin/gpu/" bash -c 'for b in $1; do [ -x "$0/bin/gpu/$b" ] || exit 1; done
    [ "$(cat "$0/bin/gpu/BUNDLE")" = "$(sha256sum "$0/bin/gpu.tar.xz" | cut -d" " -f1)" ]' "$tree" "$binaries"
  check "preflight passed with the machine's nvcc, without warnings" bash -c 'grep -qF "preflight passed: cmake gets -DCMAKE_CUDA_COMPILER=$0/bin/nvcc -DCUDAToolkit_ROOT=$0 -DCUDA_TOOLKIT_ROOT_DIR=$0" "$1" &&
    ! grep -q "preflight: warning" "$1"' "$machine" "$tmp/day1.txt"
  check "cmake configured build-cuda with that nvcc and toolkit, kernels and dist on" \
    grep -qE "^cmake -S \. -B build-cuda .*-DPFL_CUDA_KERNELS=ON -DPFL_DIST=ON -DCMAKE_CUDA_COMPILER=$machine/bin/nvcc -DCUDAToolkit_ROOT=$machine -DCUDA_TOOLKIT_ROOT_DIR=$machine\$" "$tmp/cmake.log"
  check "cmake built build-cuda with -j" grep -qE "^cmake --build build-cuda -j[0-9]+\$" "$tmp/cmake.log"
  check "the first build sufficed" grep -qE "^build +ok +[0-9]+ " "$tree/bench/out/summary.txt"
  check "pfl doctor loaded the library from the copy" grep -qF "native library:  $tree/build-cuda/libpfltorch.so" "$tree/bench/out/doctor.txt"
  check "the CUDA tests reported by name before the other tests ran" awk '
    /^--- (PASS|FAIL|SKIP): TestCUDAGraphReplayMatchesEager$/ && !a { a = NR }
    /^CUDA tests: passed: [0-9]+  failed: 0  skipped: [0-9]+  problems: 0$/ && !b { b = NR }
    /^== other tests ==$/ && !c { c = NR }
    /^--- (PASS|FAIL|SKIP): TestCUDA/ && c { late = 1 }
    /^other tests: passed: [1-9][0-9]*  failed: 0  skipped: [0-9]+  problems: 0$/ && !d { d = NR }
    END { exit !(a && a < b && b < c && c < d && !late) }' "$tree/bench/out/step-tests.log"
  check "the test binaries ran in the copy (kernels and process groups too)" bash -c 'grep -qE "^--- PASS: TestWeightedSumMatchesAverageInto" "$0/tests-cuda.log" &&
    grep -qE "^--- PASS: TestProcessGroupCollectives" "$0/tests-other.log"' "$tree/bench/out"
  check "the official step said why it skipped" grep -qF "official: skipped: PFL_FEDTP_OFFICIAL is not set" "$tree/bench/out/step-official.log"
  check "the logs came back as one file in \$OUT, with CMake's configure log" bash -c '[ "$(ls "$0" | wc -l)" -eq 1 ] && [ -f "$0/gpu-logs.tgz" ] &&
    [ "$(stat -c %s "$0/gpu-logs.tgz")" -le $((16 << 20)) ] && tar -tzf "$0/gpu-logs.tgz" >"$0.list" &&
    grep -qx out/summary.txt "$0.list" && grep -qx out/cmake/CMakeConfigureLog.yaml "$0.list" &&
    grep -qx out/cmake/pfl-features.txt "$0.list" && grep -qx out/cmake.log "$0.list"' "$tmp/out"
  check "day1 printed the second call" grep -qF "every step ran; a second call: bash bench/gpu.sh day2" "$tmp/day1.txt"

  # an nvcc of another minor version than torch's, and an older CMake for CUDA 13: warnings,
  # and the build goes on
  rc=0
  sandbox PFL_GPU_REHEARSE=1 PFL_GPU_OUT="$tmp/out4" FAKE_NVCC=13.1 FAKE_CMAKE=3.30.2 bash bench/gpu.sh plan build >"$tmp/minor.txt" 2>&1 || rc=$?
  check "nvcc 13.1 with a CUDA 13.0 torch warns and builds (exit $rc)" bash -c '[ "$0" -eq 0 ] &&
    grep -qF "warning: nvcc $1/bin/nvcc is CUDA 13.1 but torch 2.6.0+fake was built with CUDA 13.0" "$2" && grep -qE "^build +ok +[0-9]+ " "$3"' \
    "$rc" "$machine" "$tmp/minor.txt" "$tree/bench/out/summary.txt"
  check "... and CMake 3.30.2 for CUDA 13 warns too" grep -qF "warning: cmake 3.30.2 is older than CUDA 13 wants" "$tmp/minor.txt"

  # a first build that fails (an nvcc error in the custom kernels) is tried once more
  # without the kernels and the Gloo/NCCL paths, and the tests and benchmarks run on that
  # library
  rc=0
  sandbox PFL_GPU_REHEARSE=1 PFL_GPU_OUT="$tmp/out5" FAKE_CMAKE_FAIL=kernels FAKE_CMAKE_LOG="$tmp/cmake5.log" \
    bash bench/gpu.sh plan build tests fedtp-c100-50:bf16 kernels >"$tmp/fallback.txt" 2>&1 || rc=$?
  check "a failed build is tried again without kernels and dist (exit $rc)" bash -c 'grep -qE "^cmake -S \. -B build-cuda .*-DPFL_CUDA_KERNELS=ON -DPFL_DIST=ON " "$0" &&
    grep -qE "^cmake -S \. -B build-cuda .*-DPFL_CUDA_KERNELS=OFF -DPFL_DIST=OFF " "$0" && [ "$(grep -c "^cmake --build" "$0")" -eq 2 ] &&
    grep -qE "^build +ok \(no kernels, dist\) " "$1"' "$tmp/cmake5.log" "$tree/bench/out/summary.txt"
  check "... and the benchmarks still run on that library" grep -qE "^fedtp-c100-50:bf16 +ok " "$tree/bench/out/summary.txt"
  check "... the tests skip the kernels and the process groups, and pass" bash -c 'grep -qE "^tests +ok " "$0/summary.txt" &&
    grep -qF "kernels tests skipped: the library was built without the custom CUDA kernels" "$0/step-tests.log" &&
    grep -qF "process-group tests skipped: the library was built without Gloo" "$0/step-tests.log" &&
    ! grep -qE "^(=== RUN|--- [A-Z]+:) +TestProcessGroup" "$0/tests-other.log" && grep -q "^--- PASS: TestABIHasProcessGroups" "$0/tests-other.log"' "$tree/bench/out"
  check "... the kernel benchmarks skip the custom kernels" bash -c 'grep -qE "^kernels +ok " "$0/summary.txt" &&
    grep -qF "kernels/ benchmarks skipped: the library was built without the custom CUDA kernels" "$0/step-kernels.log"' "$tree/bench/out"
  check "... and the logs hold both tries' configure logs" bash -c 'tar -tzf "$0/gpu-logs.tgz" >"$0.list" && grep -qx out/cmake/CMakeConfigureLog.yaml "$0.list" &&
    grep -qx out/cmake-retry/CMakeConfigureLog.yaml "$0.list" && grep -qx out/build-fallback.txt "$0.list"' "$tmp/out5"

  # configuring fails both times: the build is reported failed, nothing else starts, and the
  # logs hold CMake's configure logs of both tries
  rc=0
  sandbox PFL_GPU_REHEARSE=1 PFL_GPU_OUT="$tmp/out6" FAKE_CMAKE_FAIL=configure bash bench/gpu.sh plan build tests >"$tmp/nocfg.txt" 2>&1 || rc=$?
  check "a configure that fails twice stops the plan (exit $rc)" bash -c '[ "$0" -ne 0 ] && grep -qE "^build +failed " "$1" && grep -qE "^tests +not run \(build failed\)" "$1"' \
    "$rc" "$tree/bench/out/summary.txt"
  check "... and its configure logs come back" bash -c 'tar -tzf "$0/gpu-logs.tgz" >"$0.list" && grep -qx out/cmake/CMakeConfigureLog.yaml "$0.list" &&
    grep -qx out/cmake-retry/CMakeConfigureLog.yaml "$0.list" && grep -qx out/cmake-retry.log "$0.list"' "$tmp/out6"

  # without a CUDA device (the stand-ins off), the GPU steps are not started
  rc=0
  sandbox PFL_GPU_OUT="$tmp/out2" bash bench/gpu.sh plan tests fedtp-c100-50:bf16 >"$tmp/gate.txt" 2>&1 || rc=$?
  check "no CUDA device: the GPU steps are not started (exit $rc)" \
    bash -c '[ "$0" -ne 0 ] && grep -qF "pfl doctor sees no CUDA device" "$1"' "$rc" "$tmp/gate.txt"
  check "no CUDA device: the second call names them" grep -qF "second call: bash bench/gpu.sh plan tests fedtp-c100-50:bf16" "$tmp/gate.txt"

  # a step over its bound is killed with its processes and offered again at twice the
  # bound; a spent budget starts nothing
  rc=0
  sandbox PFL_GPU_REHEARSE=1 PFL_GPU_OUT="$tmp/out3" bash bench/gpu.sh plan tests=1 >"$tmp/bound.txt" 2>&1 || rc=$?
  check "a step over its bound is killed (exit $rc)" grep -qE "^tests +timed out at 1 s " "$tree/bench/out/summary.txt"
  check "... and offered again at twice its bound" grep -qF "second call: bash bench/gpu.sh plan tests=2" "$tmp/bound.txt"
  check "... and its test binary is gone" bash -c '! pgrep -f "$0"' "$tree/bin/gpu/[c]uda.test"
  rc=0
  sandbox PFL_GPU_REHEARSE=1 PFL_GPU_OUT="$tmp/out3" PFL_GPU_BUDGET=0 bash bench/gpu.sh plan tests >"$tmp/budget.txt" 2>&1 || rc=$?
  check "a spent budget starts nothing (exit $rc)" grep -qF "second call: bash bench/gpu.sh plan build tests" "$tmp/budget.txt"
  rc=0
  sandbox PFL_NATIVE_LIB="$tmp/none/libpfltorch.so" bin/gpu/pfl doctor >"$tmp/nolib.txt" 2>&1 || rc=$?
  check "pfl without its library fails cleanly (exit $rc)" bash -c '[ "$0" -ne 0 ] && grep -qF "build it with" "$1"' "$rc" "$tmp/nolib.txt"

  # nothing of the checkout was needed: go never ran, and no path of the checkout is in
  # the binaries, the logs or the output
  check "go was never called" [ ! -e "$tmp/go-called" ]
  check "no path of the checkout ($src/) in the binaries, logs or output" \
    bash -c '! grep -rlF -- "$0" "${@}"' "$src/" "$tree/bin/gpu" "$tree/bench/out" "$tmp"/out* "$tmp"/*.txt

  # docs/gpu.md's table has day1's steps with their bounds
  for s in $day1_steps; do
    check "docs/gpu.md lists $s with its bound" grep -qF "| \`$s\` | $(bound_of "$s") s |" docs/gpu.md
  done

  if [ $fails -gt 0 ]; then
    echo "--- day1's output:"
    cat "$tmp/day1.txt"
    for s in minor fallback nocfg gate bound budget nolib; do
      echo "--- $s:"
      cat "$tmp/$s.txt"
    done
    echo "gpu.sh: rehearse: $fails check(s) failed" >&2
    return 1
  fi
  sed -n '/^== summary/,$p' "$tmp/day1.txt"
  echo "gpu.sh: rehearse: all passed"
}

# run_stages [STAGE|STEP...]: `run`, no bounds and no budget (default: every stage).
run_stages() {
  local s steps=()
  [ $# -gt 0 ] || set -- build tests kernels workloads scaling dist
  for s in "$@"; do
    mapfile -t -O ${#steps[@]} steps < <(expand "$s")
  done
  gpu_steps 0 "${steps[@]}"
}

case "$mode" in
  prepare) prepare ;;
  rehearse) rehearse ;;
  day1) gpu_steps 1 $day1_steps ;;
  day2) gpu_steps 1 $day2_steps ;;
  plan)
    [ $# -gt 0 ] || { echo "usage: bash bench/gpu.sh plan STEP[=SECONDS]..." >&2; exit 2; }
    # the library first: a fresh machine has none, and cmake rebuilds nothing up to date
    if [ "${1%%=*}" = build ]; then gpu_steps 1 "$@"; else gpu_steps 1 build "$@"; fi
    ;;
  steps)
    for s in $(if [ "${1:-day1}" = day2 ]; then echo "$day2_steps"; else echo "$day1_steps"; fi); do
      printf '%-26s %4s s  %s\n' "$s" "$(bound_of "$s")" "$(about "$s")"
    done
    ;;
  run) run_stages "$@" ;;
  step) # one step, in the child process steps_run starts (nvcc and the library from it)
    nvcc=${PFL_GPU_NVCC:-} cuda_root=${PFL_GPU_CUDA_ROOT:-}
    valid_step "$1" || exit 2
    case "$1" in
      *:*) step_bench "$1" ;;
      *) "step_$1" ;;
    esac
    exit $status
    ;;
  all) prepare && run_stages ;;
  preflight | --preflight-only) preflight ;;
  *)
    echo "usage: bash bench/gpu.sh prepare | rehearse | day1 | day2 | plan STEP[=SECONDS]... | steps [day1|day2] | run [STAGE|STEP]... | --preflight-only" >&2
    exit 2
    ;;
esac
