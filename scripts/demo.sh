#!/usr/bin/env bash
# The demo: build everything, describe the machine, then run the main job on its embedded
# default, configs/demo-fmnist.yaml: FedTP, FedPerfix, TransFed, FedAvg and Local on
# Fashion-MNIST (10 clients, 2 classes each), a results table and one plot with all five
# curves in runs/demo-fmnist/. Re-running it replaces that folder
# (--overwrite); without the flag, pfl refuses to replace a finished run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bin/pfl doctor
bin/pfl train --overwrite
