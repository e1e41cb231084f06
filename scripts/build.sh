#!/usr/bin/env bash
# Installs what pfl needs on Debian (bookworm) and builds the native library and bin/pfl.
# Safe to re-run: installs only what is missing, and CMake and Go rebuild only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: libtorch (CPU, 1.13), OpenBLAS with OpenMP (without it libtorch falls
# back to reference BLAS, ~15x slower), gloo's headers (libtorch's c10d Gloo backend, for training
# across processes), the build tools, and Fashion-MNIST for the demos.
pkgs=(libtorch-dev libgloo-dev libopenblas0-openmp cmake g++ make dataset-fashion-mnist)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "pfl: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi

# Go 1.26 or newer (go.mod); the official toolchain usually lives in /usr/local/go.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "pfl: Go not found; install Go 1.26 or newer (https://go.dev/dl) and re-run" >&2
  exit 1
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
go build -o bin/pfl ./cmd/pfl
echo "pfl: built build/libpfltorch.so and bin/pfl"
