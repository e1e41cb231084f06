#!/usr/bin/env bash
# pfl's GP against the official pFedGP trainer on the same fixed posterior inputs: runs the
# official code (an IdanAchituve/pFedGP checkout, unmodified, with the stand-ins of
# scripts/sbs/standins/) on fixed features, labels and kernel hyper-parameters and records
# its tree, held-out splits, Gibbs draws ω, losses, gradients and class probabilities
# (pfedgp_fixed_inputs.py, into engine/gp/testdata/pfedgp_official_fixed.json), then
# computes the same with pfl's GP from those inputs and draws and prints the comparison
# (engine/gp: TestOfficialTrainerOnFixedInputs and TestOfficialIPTrainerOnFixedInputs,
# verbose). Without a checkout it only runs the comparison on the fixture in the repository.
#
# Usage: scripts/sbs/pfedgp-fixed.sh [PFEDGP_CHECKOUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -gt 0 ]; then
  [ -f "$1/pFedGP/pFedGP_full_data.py" ] || { echo "pfedgp-fixed.sh: $1: no pFedGP/pFedGP_full_data.py (an IdanAchituve/pFedGP checkout)" >&2; exit 2; }
  PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=1 /usr/bin/python3 scripts/sbs/pfedgp_fixed_inputs.py --checkout "$1"
fi
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
env -u OMP_NUM_THREADS go test -count=1 -v -run 'TestOfficial(IP)?TrainerOnFixedInputs$' ./engine/gp
