#!/usr/bin/env bash
# Tests bench/gpu.sh's preflight without a GPU, torch or CUDA: fake nvcc, python3, cmake,
# c++ and ldd on PATH print chosen versions (and a fake toolkit beside the fake nvcc holds
# the headers and libraries it looks for), and each case checks the exit status and the
# message: it refuses what cannot build (another CUDA major version, a CPU torch, no nvcc,
# CMake before 3.18, no compiler, old glibc) and warns of what may (another CUDA minor
# version, an older CMake for CUDA 13, a toolkit missing cuBLAS/cuSPARSE/cuSOLVER headers
# or cuFFT/cuRAND/NVRTC libraries). Then checks that the Dockerfile's CUDA base image and
# torch wheel agree.
# Takes about a second; scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the fake nvcc, python3, cmake, c++ and ldd (FAKE_* choose their versions)
source scripts/gpu-fakes.sh
gpu_fakes "$tmp/bin"
# a second toolkit without the cuSPARSE headers and NVRTC
gpu_fakes "$tmp/bare/bin"
rm "$tmp/bare/include/cusparse.h" "$tmp/bare/lib64/libnvrtc.so"

fails=0
# check NAME WANT_RC PATTERN VAR=VALUE...: runs the preflight with the fakes and the
# variables, and wants its exit status to be 0 (WANT_RC 0) or not (1), and PATTERN in
# its output (with a leading "!": not in its output).
check() {
  local name=$1 want=$2 pattern=$3 out rc=0 found=1
  shift 3
  out=$(env -u CUDACXX -u CUDA_HOME -u PFL_PYTHON -u CXX PATH="$tmp/bin:$PATH" \
    FAKE_NVCC=12.4 FAKE_TORCH_CUDA=12.4 FAKE_CMAKE=3.22.1 FAKE_GLIBC=2.35 "$@" \
    bash bench/gpu.sh --preflight-only 2>&1) || rc=$?
  if [ "${pattern:0:1}" = "!" ]; then
    ! grep -qF -- "${pattern:1}" <<<"$out" || found=0
  else
    grep -qF -- "$pattern" <<<"$out" || found=0
  fi
  if { [ "$want" = 0 ] && [ $rc -ne 0 ]; } || { [ "$want" = 1 ] && [ $rc -eq 0 ]; } || [ $found = 0 ]; then
    echo "FAIL $name: exit $rc, want $([ "$want" = 0 ] && echo 0 || echo non-zero), output with(out) \"$pattern\":"
    sed 's/^/    /' <<<"$out"
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}

check "versions agree" 0 "preflight passed: cmake gets -DCMAKE_CUDA_COMPILER=$tmp/bin/nvcc -DCUDAToolkit_ROOT=$tmp -DCUDA_TOOLKIT_ROOT_DIR=$tmp"
check "versions agree: no warning" 0 "!warning"
check "the toolkit is complete" 0 "the cuBLAS, cuSPARSE, cuSOLVER headers and cuFFT, cuRAND, NVRTC libraries are there"
check "nvcc minor differs: warns" 0 "warning: nvcc $tmp/bin/nvcc is CUDA 12.1 but torch 2.6.0+fake was built with CUDA 12.4: the major versions agree" FAKE_NVCC=12.1
check "nvcc minor differs: passes" 0 "preflight passed with 1 warning(s)" FAKE_NVCC=12.1
check "CUDA 13.1 nvcc, 13.0 torch" 0 "is CUDA 13.1 but torch 2.6.0+fake was built with CUDA 13.0" FAKE_NVCC=13.1 FAKE_TORCH_CUDA=13.0 FAKE_CMAKE=3.31.8
check "nvcc major differs" 1 "is CUDA 13.0 but torch 2.6.0+fake was built with CUDA 12.4: their major versions must agree" FAKE_NVCC=13.0
check "patch level ignored" 0 "!warning" FAKE_TORCH_CUDA=12.4.1
check "CPU torch" 1 "is a CPU build" FAKE_TORCH_CUDA=none
check "CUDACXX not there" 1 "CUDACXX=/nonexistent/nvcc is not executable" CUDACXX=/nonexistent/nvcc
check "CUDA 13, CMake 3.30: warns" 0 "warning: cmake 3.30.2 is older than CUDA 13 wants" FAKE_NVCC=13.0 FAKE_TORCH_CUDA=13.0 FAKE_CMAKE=3.30.2
check "CUDA 13, CMake 3.30: names the cccl folder" 0 "CMakeLists.txt adds $tmp/include/cccl as a system include" FAKE_NVCC=13.0 FAKE_TORCH_CUDA=13.0 FAKE_CMAKE=3.30.2
check "CUDA 13, CMake 3.31.7" 0 "(3.31.8, or 4.0.3 in the 4.0 series" FAKE_NVCC=13.0 FAKE_TORCH_CUDA=13.0 FAKE_CMAKE=3.31.7
check "CUDA 13, CMake 3.31.8" 0 "!warning" FAKE_NVCC=13.0 FAKE_TORCH_CUDA=13.0 FAKE_CMAKE=3.31.8
check "CUDA 13, CMake 4.0.2" 0 "warning: cmake 4.0.2 is older than CUDA 13 wants" FAKE_NVCC=13.0 FAKE_TORCH_CUDA=13.0 FAKE_CMAKE=4.0.2
check "CUDA 13, CMake 4.0.3" 0 "!warning" FAKE_NVCC=13.0 FAKE_TORCH_CUDA=13.0 FAKE_CMAKE=4.0.3
check "CUDA 13, CMake 4.1.0" 0 "!warning" FAKE_NVCC=13.0 FAKE_TORCH_CUDA=13.0 FAKE_CMAKE=4.1.0
check "CUDA 12, CMake 3.22: no CCCL warning" 0 "!warning"
check "CUDA 12, CMake 3.17" 1 "older than 3.18" FAKE_CMAKE=3.17.5
check "toolkit without cuSPARSE and NVRTC" 0 "warning: the CUDA toolkit at $tmp/bare lacks cusparse.h (cuSPARSE headers), libnvrtc.so (NVRTC)" CUDACXX="$tmp/bare/bin/nvcc"
check "glibc 2.31" 1 "glibc 2.31 is older than 2.34" FAKE_GLIBC=2.31
check "glibc 2.34" 0 "glibc:    2.34" FAKE_GLIBC=2.34
check "no C++ compiler" 1 "no C++ compiler (/nonexistent/g++)" CXX=/nonexistent/g++
check "every problem named: glibc" 1 "glibc 2.31 is older" FAKE_NVCC=11.8 FAKE_GLIBC=2.31
check "every problem named: nvcc" 1 "is CUDA 11.8 but torch" FAKE_NVCC=11.8 FAKE_GLIBC=2.31

# The Dockerfile: the CUDA major.minor of the base image tag equals the torch wheel's
# cuXYZ, and the wheel comes from the index of that cuXYZ.
base=$(sed -n 's/^FROM nvidia\/cuda:\([0-9]*\)\.\([0-9]*\)\.[0-9]*-.*/\1\2/p' Dockerfile | head -1)
wheel=$(sed -n 's/^ARG TORCH_CUDA=cu\([0-9]*\)$/\1/p' Dockerfile | head -1)
if [ -z "$base" ] || [ "$base" != "$wheel" ] || ! grep -q 'download.pytorch.org/whl/${TORCH_CUDA}' Dockerfile ||
  ! grep -q 'torch==${TORCH_VERSION}+${TORCH_CUDA}' Dockerfile; then
  echo "FAIL Dockerfile: base image CUDA '$base' and torch wheel cu'$wheel' disagree, or the wheel is not pinned to them"
  fails=$((fails + 1))
else
  echo "ok   Dockerfile: CUDA image and torch wheel are both cu$wheel"
fi

[ $fails -eq 0 ] || { echo "gpu-preflight-test: $fails failed" >&2; exit 1; }
echo "gpu-preflight-test: all passed"
