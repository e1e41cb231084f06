# A GPU image for pfl: CUDA, a PyTorch install (whose libtorch the native library is built
# against), Go, and the project built inside. It has not been built or tested yet. Build
# and run it on a machine with the NVIDIA container toolkit:
#   docker build -t pfl .
#   docker run --gpus all pfl pfl doctor
FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04

ARG TORCH_VERSION=2.11.0

RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-pip cmake ninja-build g++ make git ca-certificates curl \
    && rm -rf /var/lib/apt/lists/*

# PyTorch with CUDA; its share/cmake is found by CMakeLists.txt (PFL_TORCH_FROM_PYTHON=ON).
RUN python3 -m pip install --no-cache-dir --break-system-packages "torch==${TORCH_VERSION}"

# Go from the official toolchain image (same version as go.mod or newer).
COPY --from=golang:1.26 /usr/local/go /usr/local/go
ENV PATH=/usr/local/go/bin:$PATH

WORKDIR /src/pfl
COPY . .
RUN cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DPFL_TORCH_FROM_PYTHON=ON \
    && cmake --build build-cuda \
    && go build -o /usr/local/bin/pfl ./cmd/pfl \
    && cp build-cuda/libpfltorch.so /usr/local/bin/

# pfl finds libpfltorch.so next to its executable.
CMD ["pfl", "doctor"]
