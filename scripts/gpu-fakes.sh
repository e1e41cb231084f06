# Fake GPU-machine tools for testing bench/gpu.sh without a GPU, torch or CUDA; sourced by
# scripts/gpu-preflight-test.sh and by `bash bench/gpu.sh rehearse`.
#
# gpu_fakes DIR writes into DIR: nvcc, python3 (a torch that reports its CUDA), cmake, c++,
# ldd, nvidia-smi (a machine whose driver does not answer) and go (which must never run on
# the GPU machine); and beside DIR, as in a CUDA toolkit whose bin/ DIR is, the headers and
# libraries the preflight looks for (DIR/../include/{cublas_v2,cusparse,cusolverDn}.h and
# cccl/, DIR/../lib64/lib{cufft,curand,nvrtc}.so; empty files). What the tools print is
# chosen at run time by these variables:
#   FAKE_NVCC          nvcc's CUDA release (e.g. 13.0)
#   FAKE_TORCH_CUDA    torch.version.cuda ("none": a CPU torch)
#   FAKE_CMAKE         cmake's version
#   FAKE_GLIBC         glibc's version as ldd prints it
# and, for the rehearsal's build step (cmake used for more than --version):
#   FAKE_CMAKE_LOG     every cmake invocation's arguments are appended here
#   FAKE_CMAKE_LIB     `cmake --build DIR` copies this library to DIR/libpfltorch.so, as
#                      the CUDA build would produce it
#   FAKE_CMAKE_FAIL    "configure": configuring fails (after writing its log, as CMake
#                      does); "kernels": building fails while the custom CUDA kernels are on
#                      (-DPFL_CUDA_KERNELS=OFF builds)
#   FAKE_GO_MARK       a call of go creates this file (and fails loudly)
# Configuring writes into the build folder what CMake and CMakeLists.txt would:
# CMakeFiles/CMakeConfigureLog.yaml, CMakeCache.txt (the -D values) and pfl-features.txt
# (cuda ON; cuda_kernels as -DPFL_CUDA_KERNELS, gloo and nccl as -DPFL_DIST, ON by default).
gpu_fakes() {
  local dir=$1
  mkdir -p "$dir"
  _fake() { # name, body (a sh script)
    printf '#!/bin/sh\n%s\n' "$2" >"$dir/$1"
    chmod +x "$dir/$1"
  }
  _fake nvcc 'echo "nvcc: NVIDIA (R) Cuda compiler driver"
echo "Cuda compilation tools, release $FAKE_NVCC, V$FAKE_NVCC.99"'
  # one answer for every question asked of python3: the preflight's is the one that counts
  _fake python3 'cat <<EOF
version 2.6.0+fake
cuda $FAKE_TORCH_CUDA
prefix /fake/torch/share/cmake
include /fake/torch/include
lib /fake/torch/lib
EOF'
  _fake cmake 'if [ "$1" = --version ]; then echo "cmake version $FAKE_CMAKE"; exit 0; fi
[ -n "${FAKE_CMAKE_LOG:-}" ] && echo "cmake $*" >>"$FAKE_CMAKE_LOG"
if [ "$1" = --build ]; then
  if [ "${FAKE_CMAKE_FAIL:-}" = kernels ] && grep -qx "cuda_kernels ON" "$2/pfl-features.txt"; then
    echo "kernels/csrc/image_batch.cu(1): error: fake nvcc error (FAKE_CMAKE_FAIL=kernels)"
    exit 1
  fi
  [ -n "${FAKE_CMAKE_LIB:-}" ] || { echo "fake cmake: FAKE_CMAKE_LIB is not set" >&2; exit 1; }
  cp "$FAKE_CMAKE_LIB" "$2/libpfltorch.so"
else
  # configure: the build folder and what CMake and CMakeLists.txt write there
  b="" prev="" kernels=ON dist=ON
  for a in "$@"; do
    case $prev in -B) b=$a ;; esac
    case $a in -DPFL_CUDA_KERNELS=*) kernels=${a#*=} ;; -DPFL_DIST=*) dist=${a#*=} ;; esac
    prev=$a
  done
  [ -n "$b" ] || { echo "fake cmake: no -B" >&2; exit 1; }
  mkdir -p "$b/CMakeFiles"
  printf -- "---\nevents:\n  - kind: fake-configure\n    args: \"%s\"\n" "$*" >>"$b/CMakeFiles/CMakeConfigureLog.yaml"
  for a in "$@"; do case $a in -D*=*) a=${a#-D}; echo "${a%%=*}:STRING=${a#*=}" ;; esac; done >"$b/CMakeCache.txt"
  if [ "${FAKE_CMAKE_FAIL:-}" = configure ]; then
    echo "CMake Error: fake configure failure (FAKE_CMAKE_FAIL=configure)" >&2
    exit 1
  fi
  printf "cuda ON\ncuda_kernels %s\ngloo %s\nnccl %s\n" "$kernels" "$dist" "$dist" >"$b/pfl-features.txt"
fi'
  # the toolkit beside bin/: what the preflight looks for
  mkdir -p "$dir/../include/cccl" "$dir/../lib64"
  : >"$dir/../include/cublas_v2.h"
  : >"$dir/../include/cusparse.h"
  : >"$dir/../include/cusolverDn.h"
  : >"$dir/../lib64/libcufft.so"
  : >"$dir/../lib64/libcurand.so"
  : >"$dir/../lib64/libnvrtc.so"
  _fake c++ 'echo "c++ (fake) 12.2.0"'
  _fake ldd 'echo "ldd (fake GLIBC) $FAKE_GLIBC"'
  _fake nvidia-smi 'echo "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver (fake)" >&2; exit 9'
  _fake go 'echo "go: called with \"$*\": Go must not be needed on the GPU machine" >&2
[ -n "${FAKE_GO_MARK:-}" ] && echo "go $*" >>"$FAKE_GO_MARK"
exit 97'
  unset -f _fake
}
