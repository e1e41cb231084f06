#!/usr/bin/env bash
# The demo: build everything, describe the machine, and train end to end.
# (Federated experiments on Fashion-MNIST replace the smoke run once the engine lands.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bin/pfl doctor
bin/pfl smoke
