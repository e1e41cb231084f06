# A GPU image for pfl: CUDA, a PyTorch install (whose libtorch the native library is built
# against), Go, and the project built inside. It has not been built or tested yet. Build
# and run it on a machine with the NVIDIA container toolkit:
#   docker build -t pfl .
#   docker run --gpus all pfl pfl doctor
#
# The agreement rule: the CUDA major.minor of the base image (its nvcc, which compiles
# kernels/csrc/*.cu and whose toolkit CMake's FindCUDAToolkit uses) must equal the CUDA
# the torch wheel was built with (torch.version.cuda, the wheel's +cuXYZ). Change both
# together: nvidia/cuda:X.Y.* goes with a torch wheel +cuXY from the index
# download.pytorch.org/whl/cuXY. bench/gpu.sh's preflight checks it during the build, and
# scripts/gpu-preflight-test.sh checks this file.
FROM nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04

# torch 2.6.0 is one of the two header trees scripts/torch-headers/check.sh compiles against.
ARG TORCH_VERSION=2.6.0
ARG TORCH_CUDA=cu124

# Ubuntu 22.04: Python 3.10, CMake 3.22 (CUDA 12 needs 3.18; CUDA 13 would need 3.31.8),
# glibc 2.35 (the Go binaries built on Debian bookworm need 2.34).
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-pip cmake ninja-build g++ make git ca-certificates curl \
    && rm -rf /var/lib/apt/lists/*

# PyTorch for that CUDA; its share/cmake is found by CMakeLists.txt (PFL_TORCH_FROM_PYTHON=ON).
RUN python3 -m pip install --no-cache-dir --index-url "https://download.pytorch.org/whl/${TORCH_CUDA}" \
        "torch==${TORCH_VERSION}+${TORCH_CUDA}"

# Go from the official toolchain image (same version as go.mod or newer).
COPY --from=golang:1.26 /usr/local/go /usr/local/go
ENV PATH=/usr/local/go/bin:$PATH

WORKDIR /src/pfl
COPY . .
RUN bash bench/gpu.sh --preflight-only \
    && cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DPFL_TORCH_FROM_PYTHON=ON \
        -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCUDAToolkit_ROOT=/usr/local/cuda \
    && cmake --build build-cuda \
    && go build -o /usr/local/bin/pfl ./cmd/pfl \
    && cp build-cuda/libpfltorch.so /usr/local/bin/

# pfl finds libpfltorch.so next to its executable.
CMD ["pfl", "doctor"]
