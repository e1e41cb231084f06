#!/usr/bin/env bash
# The demo: build everything, describe the machine, then run the main job on its embedded
# default: the Fashion-MNIST quick start (configs/quickstart-fmnist.yaml; runs/quickstart-fmnist/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bin/pfl doctor
bin/pfl smoke
bin/pfl models
bin/pfl train
# Fashion-MNIST over 50 clients with FedTP's per-class Dirichlet skew (alpha 0.3)
bin/pfl partition -data fashion-mnist -method dirichlet -alpha 0.3 -clients 50 -out runs/demo-partition
