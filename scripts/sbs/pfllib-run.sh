#!/usr/bin/env bash
# pfl side by side with PFLlib on identical data: for every seed, exports the partition a
# run of configs/sbs-pfllib-fmnist.yaml trains on, writes it in PFLlib's layout
# (pfllib-data.py), then runs PFLlib's algorithms on it (pfllib-run.py, one process per
# algorithm) and the config's pfl suite, --jobs processes at a time; finally prints the
# table (pfllib-summary.py). Build pfl first (scripts/build.sh).
#
# Usage: scripts/sbs/pfllib-run.sh --checkout DIR [--device cpu|cuda] [--seeds "1 2"]
#          [--algos "fedavg ditto ..."] [--out DIR] [--jobs N] [--threads N] [--nice N]
#   --checkout  a PFLlib checkout (TsingZ0/PFLlib; read, never written)
#   --device    cpu (default) or cuda, for both sides
#   --seeds     pfl seeds; each makes its own partition (default "1 2")
#   --algos     pfl names of the suite's members to run (default all ten)
#   --out       where everything goes (default runs/sbs-pfllib)
#   --jobs      processes at once (default 2)
#   --threads   OMP_NUM_THREADS and torch threads per process; pfl gets train.workers 1
#               (default 1)
#   --nice      niceness of every process (default 10)
#   --side      pfl, pfllib or both (default): which side's runs to make (the other
#               side's results, if any, stay in --out and are tabulated)
#   --pfedme-theta  also run PFLlib's pFedMe evaluating each client's θ (a diagnostic:
#               PFLlib's own pFedMe evaluation reads the global model; docs/fidelity.md)
#   --pfedme-theta-only  run PFLlib's pFedMe evaluating θ only (not its global evaluation)
#   --fixed-torch-seed  leave PFLlib's torch seed at its own 0 in every run; by default each
#               seed S also seeds PFLlib's torch with S (pfllib-run.py --torch-seed S), so that
#               a pair varies both sides' training randomness with the partition
set -euo pipefail
cd "$(dirname "$0")/../.."

side=both theta="" plain=1 tseed=1 checkout="" device=cpu seeds="1 2" out=runs/sbs-pfllib jobs=2 threads=1 niceness=10
# the costliest first, so that the last jobs are short ones
algos="pfedme fedbabu ditto apfl fedrep fedrod perfedavg fedavg fedper fedbn"
config=configs/sbs-pfllib-fmnist.yaml
while [ $# -gt 0 ]; do
  case "$1" in
    --checkout) checkout="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --algos) algos="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --nice) niceness="$2"; shift 2 ;;
    --side) side="$2"; shift 2 ;;
    --pfedme-theta) theta=1; shift ;;
    --pfedme-theta-only) theta=1; plain=""; shift ;;
    --fixed-torch-seed) tseed=""; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "pfllib-run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$checkout" ] || { echo "pfllib-run.sh: --checkout DIR (a PFLlib checkout) is required" >&2; exit 2; }
[ -f "$checkout/system/main.py" ] || { echo "pfllib-run.sh: --checkout $checkout: no system/main.py" >&2; exit 2; }
case "$device" in cpu|cuda) ;; *) echo "pfllib-run.sh: --device $device: want cpu or cuda" >&2; exit 2 ;; esac
case "$side" in pfl|pfllib|both) ;; *) echo "pfllib-run.sh: --side $side: want pfl, pfllib or both" >&2; exit 2 ;; esac
[ -x bin/pfl ] || { echo "pfllib-run.sh: bin/pfl missing; run scripts/build.sh" >&2; exit 2; }
py=/usr/bin/python3
[ -x "$py" ] || py=python3
export OMP_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads" PYTHONDONTWRITEBYTECODE=1
mkdir -p "$out"
out=$(cd "$out" && pwd)

# pfl runs each member named in --algos on its own (suite=[] and the member's keys as
# --set), so that --jobs can spread the members over processes
pfl_sets() { # the --set flags of member $1 in $config
  local line
  line=$(grep -E "^  - (\"$1:|$1$)" "$config" | head -1 | sed -E 's/^  - "?//; s/"$//')
  [ -n "$line" ] || { echo "pfllib-run.sh: --algos: $1 is not a member of $config" >&2; exit 2; }
  if [[ "$line" == *:* ]]; then
    echo "${line#*:}" | tr ';' '\n' | sed -E 's/^ +//; s/ +$//' | grep . | sed 's/^/--set /' | paste -sd' ' -
  else
    echo "--set algorithm.name=$line"
  fi
}
for a in $algos; do pfl_sets "$a" >/dev/null; done
# PFLlib's rounds, evaluation gap and clients: the config's
key() { grep -E "^  $1: " "$config" | head -1 | awk '{print $2}'; }
rounds=$(key rounds) gap=$(key eval_every) clients=$(key clients) tail=$(key tail_rounds)

jobfile="$out/jobs.txt"
: >"$jobfile"
for s in $seeds; do
  part="$out/partition-s$s" data="$out/data-s$s/FMNIST-pfl"
  bin/pfl partition -c "$config" --set "seed=$s" -out "$part"
  "$py" scripts/sbs/pfllib-data.py --export "$part" --out "$data"
  # FedBN's network, PFLlib's Digit5CNN, reads 3×32×32 images from a folder named Digit5…
  data32="$out/data-s$s/Digit5-fashion-pfl"
  if [[ " $algos " == *" fedbn "* ]] && [ "$side" != pfl ]; then
    "$py" scripts/sbs/pfllib-data.py --export "$part" --out "$data32" --pad-to 32 --channels 3
  fi
  for a in $algos; do
    [ "$side" = pfllib ] || printf '%s\n' "nice -n $niceness bin/pfl train -c $config --set seed=$s --set suite=[] $(pfl_sets "$a") --set name=sbs-pfllib-fmnist-s$s-$a --set out=$out/pfl --set device=$device --set train.workers=1 >$out/pfl-s$s-$a.log 2>&1" >>"$jobfile"
    [ "$side" = pfl ] && continue
    ts=""
    [ -z "$tseed" ] || ts="--torch-seed $s"
    common="--checkout $checkout --seed $s $ts --device $device --threads $threads --rounds $rounds --eval-gap $gap --clients $clients"
    if [ "$a" = fedbn ]; then
      # PFLlib's own BatchNorm network for FedBN: its Digit5CNN, on the same images padded
      # to 32×32×3 (pfllib-run.py --digit5)
      printf '%s\n' "nice -n $niceness $py scripts/sbs/pfllib-run.py $common --data $data32 --digit5 --algo $a --work $out/pfllib-work-s$s-$a --out $out/pfllib/s$s/$a.json" >>"$jobfile"
      continue
    fi
    if [ "$a" != pfedme ] || [ -n "$plain" ]; then
      printf '%s\n' "nice -n $niceness $py scripts/sbs/pfllib-run.py $common --data $data --algo $a --work $out/pfllib-work-s$s-$a --out $out/pfllib/s$s/$a.json" >>"$jobfile"
    fi
    if [ "$a" = pfedme ] && [ -n "$theta" ]; then
      printf '%s\n' "nice -n $niceness $py scripts/sbs/pfllib-run.py $common --data $data --algo $a --work $out/pfllib-work-s$s-$a-theta --out $out/pfllib/s$s/$a-theta.json --pfedme-theta" >>"$jobfile"
    fi
  done
done
echo "pfllib-run.sh: $(wc -l <"$jobfile") jobs, $jobs at a time (OMP_NUM_THREADS=$threads): $jobfile"
start=$(date +%s)
# a job that fails is reported and the rest go on; the summary marks what is missing
xargs -P "$jobs" -I{} -d '\n' sh -c '{} || echo "pfllib-run.sh: failed: {}" >&2' <"$jobfile"
echo "pfllib-run.sh: done in $(( $(date +%s) - start )) s"
"$py" scripts/sbs/pfllib-summary.py --out "$out" --seeds "$seeds" --algos "$algos" --rounds "$rounds" --tail "$tail" --per-seed
