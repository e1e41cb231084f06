#!/usr/bin/env bash
# Side by side with the official pFedHN on the repacked Fashion-MNIST: repacks the data,
# exports each seed's partition from the official code, runs the official trainer and pfl
# on it (two seeds each side, at most two processes at once, one thread each), and prints
# the table. Needs bin/pfl (scripts/build.sh) and an AvivSham/pFedHN checkout.
#
#   scripts/sbs/run.sh /path/to/pFedHN [cpu|cuda]
set -euo pipefail
cd "$(dirname "$0")/../.."
hn=${1:?usage: scripts/sbs/run.sh PFEDHN_CHECKOUT [cpu|cuda]}
dev=${2:-cpu}
py=/usr/bin/python3
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
out=runs/sbs/pfedhn
mkdir -p "$out"
[ -d runs/sbs/fmnist/cifar-10-batches-py ] || $py scripts/sbs/repack_fmnist.py --out runs/sbs/fmnist --train 20000 --test 5000
# the official trainer's defaults but for the size: 5 clients, 100 steps, evaluation every 50
hn_args=(--checkout "$hn" --data runs/sbs/fmnist --device "$dev" --num-nodes 5 --num-steps 100 --eval-every 50)
for s in 1 2; do
  $py scripts/sbs/pfedhn_official.py "${hn_args[@]}" --seed $s --export $out/partition-seed$s.json
done
for s in 1 2; do
  nice -n 10 $py scripts/sbs/pfedhn_official.py "${hn_args[@]}" --seed $s --partition $out/partition-seed$s.json \
    --out $out/official-seed$s.json > $out/official-seed$s.log 2>&1 &
  nice -n 10 $py scripts/sbs/pfl_side.py --config configs/sbs-pfedhn-fmnist.yaml --device "$dev" --seed $s \
    --partition $out/partition-seed$s.json --out $out/pfl-seed$s.json > $out/pfl-seed$s.log 2>&1 &
  wait
done
$py scripts/sbs/summary.py --runs runs/sbs
