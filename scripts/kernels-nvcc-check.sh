#!/usr/bin/env bash
# Compiles every kernels/csrc/*.cu with nvcc -c, warnings as errors, as CMake's CUDA
# build would (no GPU, no torch needed): a syntax and type check of the CUDA kernels on a
# machine without a GPU.
#
#   bash scripts/kernels-nvcc-check.sh            uses the nvcc on PATH (or $NVCC)
#   bash scripts/kernels-nvcc-check.sh --install  first installs Debian's nvcc (the
#                                                 nvidia-cuda-toolkit package, CUDA 11.8 on
#                                                 bookworm; it needs the contrib and
#                                                 non-free components, which this adds)
# PFL_NVCC_ARCH picks the architecture (default sm_90, the target machine's Hopper).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --install ] && ! command -v "${NVCC:-nvcc}" >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  $sudo apt-get update -q
  # the package is in non-free and some of its dependencies in contrib
  if ! apt-cache policy nvidia-cuda-toolkit | grep -q 'Candidate: [0-9]'; then
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s %s-updates\nComponents: contrib non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$codename" "$codename" | $sudo tee /etc/apt/sources.list.d/pfl-contrib-nonfree.sources >/dev/null
    $sudo apt-get update -q
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends nvidia-cuda-toolkit
fi
nvcc=${NVCC:-nvcc}
if ! command -v "$nvcc" >/dev/null 2>&1; then
  echo "kernels-nvcc-check: no nvcc; on Debian run this with --install (adds contrib non-free, installs nvidia-cuda-toolkit)" >&2
  exit 1
fi
arch=${PFL_NVCC_ARCH:-sm_90}
"$nvcc" --version | tail -2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for f in kernels/csrc/*.cu; do
  # the flags of CMakeLists.txt's CUDA sources, warnings as errors
  "$nvcc" -c -std=c++17 -arch="$arch" -fmad=false -prec-div=true -prec-sqrt=true -ftz=false \
    -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -Ikernels/csrc "$f" -o "$tmp/$(basename "$f").o"
  echo "ok   $f"
  n=$((n + 1))
done
echo "kernels-nvcc-check: $n files compiled for $arch"
