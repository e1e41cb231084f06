#!/usr/bin/env bash
# Side by side with the official pFedHN on the repacked Fashion-MNIST: repacks the data,
# exports each seed's partition from the official code, runs the official trainer and pfl
# on it (one seed at a time, the two sides at once, one thread each), and prints the table.
# Needs bin/pfl (scripts/build.sh) and an AvivSham/pFedHN checkout.
#
#   scripts/sbs/run.sh PFEDHN_CHECKOUT [cpu|cuda] [--seeds "1 2"] [--eval-every 50] [--out DIR]
#                      [--partition-seed P]
#
# --eval-every evaluates both sides more often (each side's evaluation reads the test sets
# only, so its training is unchanged); the result JSONs keep every evaluation's per-client
# accuracies (client_acc_per_eval). --partition-seed P keeps seed P's partition for every run
# and makes each of --seeds a training seed only (the official side re-seeds after drawing the
# partition, pfl reads the partition file), to tell a partition's luck from the training
# streams' (give each setting its own --out).
set -euo pipefail
cd "$(dirname "$0")/../.."
usage="usage: scripts/sbs/run.sh PFEDHN_CHECKOUT [cpu|cuda] [--seeds \"1 2\"] [--eval-every N] [--out DIR] [--partition-seed P]"
hn=${1:?$usage}; shift
dev=cpu
if [ $# -gt 0 ] && [[ $1 != --* ]]; then dev=$1; shift; fi
seeds="1 2"; every=50; out=runs/sbs/pfedhn; pseed=
while [ $# -gt 0 ]; do
  case $1 in
    --seeds) seeds=$2; shift 2 ;;
    --eval-every) every=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --partition-seed) pseed=$2; shift 2 ;;
    *) echo "run.sh: unknown argument $1; $usage" >&2; exit 2 ;;
  esac
done
py=/usr/bin/python3
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
mkdir -p "$out"
[ -d runs/sbs/fmnist/cifar-10-batches-py ] || $py scripts/sbs/repack_fmnist.py --out runs/sbs/fmnist --train 20000 --test 5000
# the official trainer's defaults but for the size: 5 clients, 100 steps
hn_args=(--checkout "$hn" --data runs/sbs/fmnist --device "$dev" --num-nodes 5 --num-steps 100 --eval-every "$every")
for p in ${pseed:-$seeds}; do
  $py scripts/sbs/pfedhn_official.py "${hn_args[@]}" --seed "$p" --export "$out/partition-seed$p.json"
done
for s in $seeds; do
  p=${pseed:-$s}
  retrain=()
  [ -z "$pseed" ] || retrain=(--train-seed "$s")
  nice -n 10 $py scripts/sbs/pfedhn_official.py "${hn_args[@]}" --seed "$p" "${retrain[@]}" \
    --partition "$out/partition-seed$p.json" --out "$out/official-seed$s.json" > "$out/official-seed$s.log" 2>&1 &
  nice -n 10 $py scripts/sbs/pfl_side.py --config configs/sbs-pfedhn-fmnist.yaml --device "$dev" --seed "$s" \
    --set "train.eval_every=$every" --runs "$out/pfl-runs" \
    --partition "$out/partition-seed$p.json" --out "$out/pfl-seed$s.json" > "$out/pfl-seed$s.log" 2>&1 &
  wait
done
$py scripts/sbs/summary.py --runs "$(dirname "$out")" --per-seed
