#!/usr/bin/env bash
# Regenerates the golden files the model and hypernetwork tests compare pfl with (see
# gen.py). Needs Debian's PyTorch and torchvision for Python (installed here if missing;
# torchvision only checks the golden ResNet against its own); the tests need neither.
set -euo pipefail
cd "$(dirname "$0")/../.."
# Debian's python3 (a python3 earlier on the PATH may not see Debian's packages)
py=/usr/bin/python3
if ! $py -c 'import torch, torchvision' 2>/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q python3-torch python3-torchvision python3-numpy
fi
$py scripts/golden/gen.py
echo "golden: wrote engine/model/testdata/golden and engine/hyper/testdata/golden"
