#!/usr/bin/env bash
# Side by side with the official pFedGP on the repacked Fashion-MNIST: repacks the data
# (runs/sbs/fmnist-pfedgp: 14,000 training and 2,000 test images), exports each seed's
# partition from the official code, runs the official trainer (pfedgp_official.py, with the
# stand-ins of scripts/sbs/standins/) and pfl (pfl_side.py, configs/sbs-pfedgp-fmnist.yaml)
# on it, the two sides of a seed at once, one thread each, and prints the table (summary.py).
# Needs bin/pfl (scripts/build.sh) and an IdanAchituve/pFedGP checkout.
#
# Usage: scripts/sbs/pfedgp-run.sh --checkout DIR [--method full|ip-data] [--device cpu|cuda]
#          [--seeds "1 2"] [--rounds 100] [--out runs/sbs] [--nice 10]
#   --checkout  an IdanAchituve/pFedGP checkout (read, never written)
#   --method    full: pFedGP-Full (trainer.py, 3 local steps a round; pfl's pfedgp), or
#               ip-data: pFedGP-IP-data (trainer_ip.py --method pFedGP-data --loss-scaler 2,
#               one step a round; pfl's pfedgp-ip). Default full.
#   --device    cpu (default) or cuda, for both sides
#   --seeds     seeds; each draws its own partition (default "1 2")
#   --rounds    rounds on both sides (default 100, the config's); the only evaluation is
#               after the last
#   --out       results: OUT/pfedgp (or OUT/pfedgp-ip)/{official,pfl}-seedS.json and logs,
#               partitions in OUT/pfedgp/partition-seedS.json (default runs/sbs)
#   --nice      niceness of every process (default 10)
set -euo pipefail
cd "$(dirname "$0")/../.."

checkout="" method=full device=cpu seeds="1 2" rounds=100 out=runs/sbs niceness=10
while [ $# -gt 0 ]; do
  case "$1" in
    --checkout) checkout="$2"; shift 2 ;;
    --method) method="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --nice) niceness="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "pfedgp-run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$checkout" ] || { echo "pfedgp-run.sh: --checkout DIR (an IdanAchituve/pFedGP checkout) is required" >&2; exit 2; }
[ -f "$checkout/experiments/heterogeneous_class_dist/trainer.py" ] ||
  { echo "pfedgp-run.sh: --checkout $checkout: no experiments/heterogeneous_class_dist/trainer.py" >&2; exit 2; }
case "$method" in
  full) alg=pfedgp; pfl_sets=() ;;
  ip-data) alg=pfedgp-ip
    pfl_sets=(--set algorithm.name=pfedgp-ip --set algorithm.pfedgp.loss_scaler=2 --set train.epochs=1) ;;
  *) echo "pfedgp-run.sh: --method $method: want full or ip-data" >&2; exit 2 ;;
esac
case "$device" in cpu|cuda) ;; *) echo "pfedgp-run.sh: --device $device: want cpu or cuda" >&2; exit 2 ;; esac
[ -x bin/pfl ] || { echo "pfedgp-run.sh: bin/pfl missing; run scripts/build.sh" >&2; exit 2; }
py=/usr/bin/python3
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 GOMAXPROCS=1 PYTHONDONTWRITEBYTECODE=1
config=configs/sbs-pfedgp-fmnist.yaml
data=runs/sbs/fmnist-pfedgp  # the config's data.dataset
mkdir -p "$out/pfedgp" "$out/$alg"
[ -d $data/cifar-10-batches-py ] || nice -n "$niceness" $py scripts/sbs/repack_fmnist.py --out $data --train 14000 --test 2000
official=(--checkout "$checkout" --data $data --device "$device" --num-clients 10 --num-steps "$rounds" --method "$method")
for s in $seeds; do
  part=$out/pfedgp/partition-seed$s.json
  [ -f "$part" ] || nice -n "$niceness" $py scripts/sbs/pfedgp_official.py "${official[@]}" --seed "$s" --export "$part"
done
for s in $seeds; do
  part=$out/pfedgp/partition-seed$s.json
  # one step a round over all of a client's samples, as the official trainers: the batch is
  # the largest client's count (a larger one only pads)
  batch=$($py -c "import json,sys; print(max(len(t) for t in json.load(open(sys.argv[1]))['train']))" "$part")
  nice -n "$niceness" $py scripts/sbs/pfedgp_official.py "${official[@]}" --seed "$s" --partition "$part" \
    --out "$out/$alg/official-seed$s.json" >"$out/$alg/official-seed$s.log" 2>&1 &
  official_pid=$!
  nice -n "$niceness" $py scripts/sbs/pfl_side.py --config $config --device "$device" --seed "$s" --partition "$part" \
    --runs "$out/pfl-$alg" --out "$out/$alg/pfl-seed$s.json" --set train.batch="$batch" --set train.rounds="$rounds" \
    --set train.eval_every="$rounds" --set train.checkpoint_every="$rounds" "${pfl_sets[@]}" \
    >"$out/$alg/pfl-seed$s.log" 2>&1 &
  pfl_pid=$!
  rc=0
  wait $official_pid || { rc=$?; echo "pfedgp-run.sh: seed $s: the official run failed; see $out/$alg/official-seed$s.log" >&2; }
  wait $pfl_pid || { rc=$?; echo "pfedgp-run.sh: seed $s: pfl's run failed; see $out/$alg/pfl-seed$s.log" >&2; }
  [ $rc -eq 0 ] || exit $rc
done
$py scripts/sbs/summary.py --runs "$out" --per-seed
