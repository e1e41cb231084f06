#!/usr/bin/env bash
# Prepares the header trees that check.sh compiles against (run once; needs apt access to
# deb.debian.org). Nothing is installed: packages are downloaded and unpacked under $PFL_HEADERS_DIR (default /tmp/pfl-torch-headers).
#  - libtorch-dev 2.14.1+dfsg-1 (Debian sid): a complete, generated PyTorch 2.14 include tree
#    (ATen/ops/*, torch/csrc/autograd/generated, version.h, cmake_macros.h ...). Its CPU build
#    still ships ATen/cuda/* and c10/cuda/*; only c10/cuda/impl/cuda_cmake_macros.h is missing
#    and is hand-written into overlay/.
#  - libtorch-cuda-dev 2.6.0+dfsg-7+b1 (Debian trixie contrib): PyTorch 2.6 built with CUDA.
#  - nvidia-cuda-dev 12.5 (experimental non-free) + libcu++-dev 2.5 (sid): CUDA 12.5 headers for
#    the 2.14 tree; the 2.6 tree uses CUDA 11.8 headers (bookworm's nvidia-cuda-dev): the
#    system's when that package is installed, else unpacked from it into cuda118/.
#  - libnccl-dev 2.29.7 (sid non-free): nccl.h, for dist.cpp's NCCL path in the CUDA configs
#    (unpacked into nccl/).
# About 1.8 GB is downloaded (the CUDA packages carry static libraries; only headers are kept).
# Why Debian's packages: a PyTorch source tree lacks the generated headers (ATen/ops/*, ...);
# making them means a full clone of github.com/pytorch/pytorch (~4 GB) and a torchgen run,
# which this script avoids by using trees that are generated already. So the check covers
# 2.6 and 2.14, not the Dockerfile's default 2.11.
set -euo pipefail
P=${PFL_HEADERS_DIR:-/tmp/pfl-torch-headers}
mkdir -p $P/apt/{lists/partial,archives/partial,debs}
cat > $P/apt/sources.list <<'S'
deb http://deb.debian.org/debian sid main contrib non-free non-free-firmware
deb http://deb.debian.org/debian experimental main contrib non-free non-free-firmware
deb http://deb.debian.org/debian trixie main contrib non-free non-free-firmware
deb http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware
S
A="-o Dir::Etc::SourceList=$P/apt/sources.list -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists=$P/apt/lists -o Dir::Cache::Archives=$P/apt/archives -o Dir::Cache::pkgcache=$P/apt/pkgcache.bin -o Dir::Cache::srcpkgcache=$P/apt/srcpkgcache.bin"
apt-get $A update -q
cd $P/apt/debs
# (a package already downloaded is not fetched again)
fetch() {
  local p
  for p in "$@"; do
    ls "${p%%=*}_${p#*=}_"*.deb >/dev/null 2>&1 || apt-get $A download "$p"
  done
}
fetch libtorch-dev=2.14.1+dfsg-1 libtorch-cuda-dev=2.6.0+dfsg-7+b1 \
  nvidia-cuda-dev=12.5.39~12.5.0-2+b1 libcu++-dev=2.5.0-1 libnccl-dev=2.29.7-1-1
[ -e /usr/include/cuda_runtime_api.h ] || fetch nvidia-cuda-dev=11.8.89~11.8.0-5~deb12u1
cd $P
rm -rf deb214 deb26 cuda125 nccl && mkdir -p deb214 deb26 cuda125 nccl
dpkg -x apt/debs/libtorch-dev_2.14.1+dfsg-1_amd64.deb deb214
dpkg -x apt/debs/libtorch-cuda-dev_2.6.0+dfsg-7+b1_amd64.deb deb26
dpkg-deb --fsys-tarfile apt/debs/nvidia-cuda-dev_12.5.39~12.5.0-2+b1_amd64.deb | tar -x -C cuda125 --wildcards './usr/include/*'
dpkg-deb --fsys-tarfile apt/debs/libcu++-dev_2.5.0-1_all.deb | tar -x -C cuda125 --wildcards './usr/include/*'
dpkg-deb --fsys-tarfile apt/debs/libnccl-dev_2.29.7-1-1_amd64.deb | tar -x -C nccl --wildcards './usr/include/*'
mkdir -p overlay/c10/cuda/impl
printf '#pragma once\n// Hand-written stand-in for the header a PyTorch CMake build generates\n// from c10/cuda/impl/cuda_cmake_macros.h.in.\n#define C10_CUDA_BUILD_SHARED_LIBS\n' \
  > overlay/c10/cuda/impl/cuda_cmake_macros.h
# /usr/include minus what Debian's libtorch 1.13 and CUDA 11.8 packages put there (sysinc).
for p in libtorch-dev nvidia-cuda-dev libcub-dev libcu++-dev libcupti-dev libnvidia-ml-dev libthrust-dev; do
  { dpkg -L $p 2>/dev/null || true; } | { grep "^/usr/include/" || true; } | sed -E "s#^/usr/include/([^/]+).*#\\1#"
done | sort -u > blocked.txt
rm -rf sysinc cuda118 && mkdir sysinc
for e in /usr/include/*; do n=$(basename $e); grep -qxF "$n" blocked.txt || ln -s $e sysinc/$n; done
# CUDA 11.8: check.sh links the installed package's headers into cuda118/ itself; without
# that package, its headers are unpacked there instead
if [ ! -e /usr/include/cuda_runtime_api.h ]; then
  mkdir -p cuda118
  dpkg-deb --fsys-tarfile apt/debs/nvidia-cuda-dev_11.8.89~11.8.0-5~deb12u1_amd64.deb |
    tar -x -C cuda118 --wildcards './usr/include/*'
fi
echo "prepared; now run scripts/torch-headers/check.sh"
