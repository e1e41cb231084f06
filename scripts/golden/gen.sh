#!/usr/bin/env bash
# Regenerates the golden files the model and hypernetwork tests compare pfl with (see
# gen.py). Needs Debian's PyTorch and torchvision for Python (installed here if missing;
# torchvision only checks the golden ResNet against its own) and two checkouts, read and never
# written, from which the FedPerfix ViT goldens are computed; the tests need none of it.
#
# Usage: scripts/golden/gen.sh TIMM_DIR FEDPERFIX_DIR
#   TIMM_DIR       huggingface/pytorch-image-models at 7cd4204a289cd0dddad925c076cdb96ae9670e87
#                  (tag v0.6.7, the timm the FedPerfix code pins):
#                    git clone https://github.com/huggingface/pytorch-image-models TIMM_DIR
#                    git -C TIMM_DIR checkout 7cd4204a289cd0dddad925c076cdb96ae9670e87
#   FEDPERFIX_DIR  imguangyu/FedPerfix at 5acbd0c58c43b4b4a06bff51d1f61670917b8a0e:
#                    git clone https://github.com/imguangyu/FedPerfix FEDPERFIX_DIR
#                    git -C FEDPERFIX_DIR checkout 5acbd0c58c43b4b4a06bff51d1f61670917b8a0e
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 2 ] || { sed -n '7,14p' "$0" >&2; exit 2; }
timm=$1 fedperfix=$2
# Debian's python3 (a python3 earlier on the PATH may not see Debian's packages)
py=/usr/bin/python3
if ! $py -c 'import torch, torchvision' 2>/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q python3-torch python3-torchvision python3-numpy
fi
PYTHONDONTWRITEBYTECODE=1 $py scripts/golden/gen.py --timm "$timm" --fedperfix "$fedperfix"
echo "golden: wrote engine/model/testdata/golden and engine/hyper/testdata/golden"
