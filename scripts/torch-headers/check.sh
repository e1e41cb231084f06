#!/usr/bin/env bash
# Syntax-checks pfl's native sources (api.cpp, ops.cpp, cuda.cpp, kernels.cpp, dist.cpp,
# host_cache.cpp) against prepared libtorch 2.x header trees, with and without
# -DPFL_WITH_CUDA=1 (the CUDA configs also with -DPFL_WITH_CUDA_KERNELS=1), without a GPU.
# dist.cpp compiles its c10d backends where their headers are: Gloo's (Debian: libgloo-dev,
# through sysinc) in every config, NCCL's (libnccl-dev 2.29, unpacked by setup.sh) in the
# CUDA configs; a backend whose headers are missing is left out with a message. kernels/csrc/*.cu
# need no torch header: scripts/kernels-nvcc-check.sh compiles them with nvcc.
#   usage: check.sh [CSRC_DIR]          (default: this checkout's cuda/csrc)
#   env:   CONFIGS="t214-cuda t214-cpu ..." to run a subset; VERBOSE=1 for full compiler output
# Prepared trees (see setup.sh, under $PFL_HEADERS_DIR): deb214 (Debian sid libtorch-dev 2.14.1),
# deb26 (Debian trixie libtorch-cuda-dev 2.6.0), cuda125 (CUDA 12.5 headers), cuda118 (CUDA
# 11.8: the system's bookworm nvidia-cuda-dev, or the same package unpacked), nccl (NCCL 2.29
# headers), overlay (hand-written generated headers). Nothing is downloaded here: without the
# prepared trees (setup.sh, run once where the network is) the check says so and skips. The
# GPU machine builds against torch 2.11 (CUDA 13), which lies between.
# /usr/include holds Debian's libtorch 1.13 (and may hold CUDA 11.8) headers, so the compiler
# runs with -nostdinc and a filtered copy (sysinc) of /usr/include; every header used is then
# checked to come from the intended tree.
set -uo pipefail
CSRC=$(readlink -f "${1:-$(dirname "$0")/../../cuda/csrc}")
P=${PFL_HEADERS_DIR:-/tmp/pfl-torch-headers}
CONFIGS=${CONFIGS:-"t214-cuda t214-cpu t26-cuda t26-cpu"}
STD_INC=(-isystem /usr/include/c++/12 -isystem /usr/include/x86_64-linux-gnu/c++/12
         -isystem /usr/include/c++/12/backward -isystem /usr/lib/gcc/x86_64-linux-gnu/12/include
         -isystem /usr/include/x86_64-linux-gnu -isystem $P/sysinc)
if [ ! -f $P/blocked.txt ] || [ ! -d $P/sysinc ]; then
  echo "check.sh: skipped: the header trees are not prepared in $P (run scripts/torch-headers/setup.sh once, where deb.debian.org can be reached)"
  exit 0
fi
mkdir -p $P/cuda118/usr/include
[ -e $P/cuda118/usr/include/cuda_runtime_api.h ] || for f in $(cat $P/blocked.txt); do
  case $f in ATen|c10|caffe2|torch|THC) ;; *) [ -e /usr/include/$f ] && ln -sf /usr/include/$f $P/cuda118/usr/include/$f ;; esac
done
fail=0 checked=0 skipped=0
NCCL=$P/nccl/usr/include
for cfg in $CONFIGS; do
  case $cfg in
    # libtorch 2.14 headers #error below C++20; 2.6 (like 2.11) builds as C++17, CMake's
    # CXX_STANDARD 17 with extensions on = -std=gnu++17.
    t214-*) T=$P/deb214/usr/include; STD=-std=gnu++20; CU=$P/cuda125/usr/include; BAD='ATen|c10|torch|caffe2|cu|nv|nccl' ;;
    t26-*)  T=$P/deb26/usr/include;  STD=-std=gnu++17; CU=$P/cuda118/usr/include; BAD='ATen|c10|torch|caffe2|nccl' ;;
    *) echo "unknown config $cfg"; exit 2 ;;
  esac
  if [ ! -e "$T/ATen/ATen.h" ] || { [[ $cfg == *-cuda ]] && [ ! -e "$CU/cuda_runtime_api.h" ]; }; then
    echo "$cfg: skipped: its headers are not prepared ($T, and $CU for CUDA): run scripts/torch-headers/setup.sh once, where deb.debian.org can be reached"
    skipped=$((skipped + 1))
    continue
  fi
  checked=$((checked + 1))
  # What a CMake build against these libtorch packages passes (TORCH_CXX_FLAGS and the
  # torch targets' INTERFACE_COMPILE_DEFINITIONS).
  DEF=(-D_GLIBCXX_USE_CXX11_ABI=1 -DUSE_DISTRIBUTED -DUSE_C10D_GLOO -DUSE_RPC)
  [[ $cfg == *-cuda ]] && DEF+=(-DPFL_WITH_CUDA=1 -DPFL_WITH_CUDA_KERNELS=1 -DUSE_C10D_NCCL)
  INC=(-I"$CSRC" -I"$CSRC/../../kernels/csrc" -isystem $P/overlay -isystem "$T" -isystem "$T/torch/csrc/api/include" -isystem "$CU")
  for f in api ops cuda kernels dist host_cache; do
    # dist.cpp's c10d backends: Gloo where gloo's headers are (Debian: libgloo-dev, through
    # sysinc), NCCL in the CUDA configs where nccl.h is (setup.sh's nccl/, else the CUDA
    # tree); a backend without headers is left out, and said so
    FDEF=() name=$f.cpp
    if [ $f = dist ]; then
      if [ -e $P/sysinc/gloo/algorithm.h ]; then FDEF+=(-DPFL_WITH_GLOO=1) name+=+gloo; else
        echo "  (dist.cpp without its Gloo path: no gloo/algorithm.h in /usr/include; Debian: libgloo-dev)"; fi
      if [[ $cfg == *-cuda ]]; then
        if [ -e "$NCCL/nccl.h" ]; then FDEF+=(-DPFL_WITH_NCCL=1 -isystem "$NCCL") name+=+nccl
        elif [ -e "$CU/nccl.h" ]; then FDEF+=(-DPFL_WITH_NCCL=1) name+=+nccl
        else echo "  (dist.cpp without its NCCL path: no nccl.h in $NCCL or $CU; setup.sh unpacks libnccl-dev)"; fi
      fi
    fi
    out=$(g++ $STD -nostdinc -fsyntax-only -Wall -Wno-unused-parameter ${WDEP:--Wno-deprecated-declarations} \
          "${DEF[@]}" "${FDEF[@]}" "${INC[@]}" "${STD_INC[@]}" "$CSRC/$f.cpp" 2>&1); rc=$?
    # Where did the torch / CUDA headers come from? Nothing may come from /usr/include directly.
    leaks=$(g++ $STD -nostdinc -M "${DEF[@]}" "${FDEF[@]}" "${INC[@]}" "${STD_INC[@]}" "$CSRC/$f.cpp" 2>/dev/null |
            tr ' \\' '\n\n' | grep -E "^/usr/include/($BAD)" | head -3)
    nerr=$(grep -c ' error: ' <<<"$out")
    printf '%-10s %-19s rc=%d errors=%d\n' "$cfg" "$name" $rc "$nerr"
    [ -n "$leaks" ] && { echo "  LEAK: header from the wrong tree:"; echo "$leaks" | sed 's/^/    /'; fail=1; }
    if [ $rc -ne 0 ] || [ -n "${VERBOSE:-}" ]; then
      fail=1
      if [ -n "${VERBOSE:-}" ]; then echo "$out"; else
        grep -E "^$CSRC/.*(error|warning):| error: " <<<"$out" | sort -u | head -40 | sed 's/^/  /'; fi
    fi
  done
done
echo "check.sh: $checked config(s) checked, $skipped skipped$([ $fail = 0 ] || echo ", with errors")"
exit $fail
