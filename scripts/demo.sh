#!/usr/bin/env bash
# The demo: build everything, describe the machine, and train end to end.
# (Federated experiments on Fashion-MNIST replace the smoke run once the engine lands.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bin/pfl doctor
bin/pfl smoke
bin/pfl models
# Fashion-MNIST over 50 clients with FedTP's per-class Dirichlet skew (alpha 0.3)
bin/pfl partition -data fashion-mnist -method dirichlet -alpha 0.3 -clients 50 -out runs/demo-partition
