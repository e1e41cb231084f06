# Fake GPU-machine tools for testing bench/gpu.sh without a GPU, torch or CUDA; sourced by
# scripts/gpu-preflight-test.sh and by `bash bench/gpu.sh rehearse`.
#
# gpu_fakes DIR writes into DIR: nvcc, python3 (a torch that reports its CUDA), cmake, c++,
# ldd, nvidia-smi (a machine whose driver does not answer) and go (which must never run on
# the GPU machine). What they print is chosen at run time by these variables:
#   FAKE_NVCC          nvcc's CUDA release (e.g. 13.0)
#   FAKE_TORCH_CUDA    torch.version.cuda ("none": a CPU torch)
#   FAKE_CMAKE         cmake's version
#   FAKE_GLIBC         glibc's version as ldd prints it
# and, for the rehearsal's build step (cmake used for more than --version):
#   FAKE_CMAKE_LOG     every cmake invocation's arguments are appended here
#   FAKE_CMAKE_LIB     `cmake --build DIR` copies this library to DIR/libpfltorch.so, as
#                      the CUDA build would produce it
#   FAKE_GO_MARK       a call of go creates this file (and fails loudly)
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
  [ -n "${FAKE_CMAKE_LIB:-}" ] || { echo "fake cmake: FAKE_CMAKE_LIB is not set" >&2; exit 1; }
  cp "$FAKE_CMAKE_LIB" "$2/libpfltorch.so"
else
  # configure: make the build folder as CMake would
  while [ $# -gt 0 ]; do [ "$1" = -B ] && mkdir -p "$2"; shift; done
fi'
  _fake c++ 'echo "c++ (fake) 12.2.0"'
  _fake ldd 'echo "ldd (fake GLIBC) $FAKE_GLIBC"'
  _fake nvidia-smi 'echo "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver (fake)" >&2; exit 9'
  _fake go 'echo "go: called with \"$*\": Go must not be needed on the GPU machine" >&2
[ -n "${FAKE_GO_MARK:-}" ] && echo "go $*" >>"$FAKE_GO_MARK"
exit 97'
  unset -f _fake
}
