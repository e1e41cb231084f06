#!/usr/bin/env bash
# Speed of pfl against each peer the side-by-side harnesses run, on the same data, partition,
# model and hyper-parameters: every process timed whole from outside (/usr/bin/time -v: wall,
# user, sys, peak RSS), medians of --runs interleaved runs, pfl in its own best setting
# (OMP_NUM_THREADS unset, train.workers at its default: one worker per core) and the peer in
# each of 1 and 2 threads (OMP_NUM_THREADS, and PFLlib's --threads), the faster of which is
# its row. Prints the table (speed_table.py) and writes DIR/speed.json.
#
# Each side's command is the one its harness runs (scripts/sbs/pfllib-run.sh, run.sh,
# pfedgp-run.sh, fedperfix-run.sh; for FedTP bench/fedtp-official.py), at the size below
# (larger than the accuracy harnesses' where their runs are dominated by start-up), with one
# change on pfl's side: train.workers=0 (the default) where a harness pins 1.
#
# Rows and sizes (--smoke: each shrunk to seconds of work, to check the script end to end;
# its numbers mean nothing):
#   fedtp       FedTP and FedAvg, the official main.py (zhyczy/FedTP) against pfl on
#               Fashion-MNIST repacked as CIFAR-10 (scripts/sbs/repack_fmnist.py), 20
#               clients of 2 classes, 25 % a round, the official ViT (patch 4, dim 128, 8
#               heads of 64, MLP 256), 1 local epoch, batch 64, SGD lr 0.05, momentum 0.9,
#               weight decay 1e-5:
#                 small:   depth 1, 10,000 + 2,000 images, 20 rounds, evaluated after 10 and 20
#                 default: depth 6 (FedTP's default), 50,000 + 10,000 images, 2 rounds and
#                          an evaluation after the second (main.py refuses a first evaluation
#                          before round 2: --test_round must be > 1)
#               Each side draws its own 2-class partition of the same images (this tree has
#               no exporter of the official partition), so the clients' sizes differ a little.
#   pfllib      FedAvg, Ditto, FedRep, FedRoD, pFedMe, Per-FedAvg: PFLlib (TsingZ0/PFLlib)
#               against pfl on configs/sbs-pfllib-fmnist.yaml's setting at 15,000 + 5,000
#               images (data.train_samples, data.test_samples), 10 rounds, evaluated every 2
#   fedperfix   FedPerfix and FedAvg, the FedPerfix code (imguangyu/FedPerfix) against pfl at
#               fedperfix-run.sh's size (16 clients, 6,000 + 1,000 images, 20 rounds)
#   pfedhn      pFedHN, the official code (AvivSham/pFedHN) against pfl at run.sh's size
#               (5 clients, 20,000 + 5,000 images, 100 steps of 50 inner steps)
#   pfedgp      pFedGP-Full, the official code (IdanAchituve/pFedGP) against pfl at
#               pfedgp-run.sh's size (10 clients, 14,000 + 2,000 images, 100 rounds)
# One seed (1) everywhere: it draws the partitions; timing needs no pairing over seeds.
#
# Usage: scripts/sbs/speed.sh [--peers "fedtp pfllib fedperfix pfedhn pfedgp"] [--runs 3]
#          [--out runs/speed] [--smoke] [--threads "1 2"] [--nice N]
#          --fedtp DIR --einops DIR --pfllib DIR --fedperfix DIR --pfedhn DIR --pfedgp DIR
#   --peers    which peers' rows to run (default all five; each needs its checkout flag)
#   --runs     runs per side and setting, interleaved (default 3; --smoke: 1)
#   --threads  the peer's thread settings to time (default "1 2")
#   --nice     niceness of every timed process (default 0: run it on an idle machine; 19
#              for a smoke check on a shared one)
#   checkouts  zhyczy/FedTP (with --einops, an arogozhnikov/einops checkout: Debian has no
#              package), TsingZ0/PFLlib, imguangyu/FedPerfix, AvivSham/pFedHN,
#              IdanAchituve/pFedGP; each read, never written
# Needs bin/pfl (scripts/build.sh), /usr/bin/time (Debian's time) and /usr/bin/python3 with
# Debian's python3-torch (and python3-torchvision, -sklearn, -h5py, -ujson for the peers).
set -euo pipefail
cd "$(dirname "$0")/../.."

peers="fedtp pfllib fedperfix pfedhn pfedgp" runs="" out=runs/speed smoke="" threads="1 2" niceness=0
fedtp="" einops="" pfllib="" fedperfix="" pfedhn="" pfedgp=""
while [ $# -gt 0 ]; do
  case "$1" in
    --peers) peers="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --threads) threads="$2"; shift 2 ;;
    --nice) niceness="$2"; shift 2 ;;
    --fedtp) fedtp="$2"; shift 2 ;;
    --einops) einops="$2"; shift 2 ;;
    --pfllib) pfllib="$2"; shift 2 ;;
    --fedperfix) fedperfix="$2"; shift 2 ;;
    --pfedhn) pfedhn="$2"; shift 2 ;;
    --pfedgp) pfedgp="$2"; shift 2 ;;
    -h|--help) sed -n '2,50p' "$0"; exit 0 ;;
    *) echo "speed.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
runs=${runs:-$([ -n "$smoke" ] && echo 1 || echo 3)}
need() { # need FLAG DIR FILE: a checkout that holds FILE
  [ -n "$2" ] && [ -e "$2/$3" ] || { echo "speed.sh: --$1 DIR is required for its rows and must hold $3 (got '${2}')" >&2; exit 2; }
}
for p in $peers; do
  case "$p" in
    fedtp) need fedtp "$fedtp" main.py; need einops "$einops" einops/__init__.py ;;
    pfllib) need pfllib "$pfllib" system/main.py ;;
    fedperfix) need fedperfix "$fedperfix" system/main.py ;;
    pfedhn) need pfedhn "$pfedhn" experiments ;;
    pfedgp) need pfedgp "$pfedgp" experiments/heterogeneous_class_dist/trainer.py ;;
    *) echo "speed.sh: --peers: unknown peer $p (fedtp pfllib fedperfix pfedhn pfedgp)" >&2; exit 2 ;;
  esac
done
for t in $threads; do
  case "$t" in [1-9]|[1-9][0-9]) ;; *) echo "speed.sh: --threads: $t is not a thread count" >&2; exit 2 ;; esac
done
[ -x bin/pfl ] || { echo "speed.sh: bin/pfl missing; run scripts/build.sh" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "speed.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
py=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1
mkdir -p "$out"
out=$(cd "$out" && pwd)
data="$out/data"
mkdir -p "$data"
abs() { (cd "$1" && pwd); }
for v in fedtp einops pfllib fedperfix pfedhn pfedgp; do
  [ -z "${!v}" ] || printf -v "$v" '%s' "$(abs "${!v}")"
done

# ---- rows: each writes $out/<row>/row.json and the two sides' commands ----------------
# row ROW PEER ALGORITHM SIZE: starts a row; then pfl_cmd and peer_cmd set its commands,
# where {I} is replaced by the run's number and {T} by the peer's thread count
rows=()
declare -A PFL PEER
row() {
  local dir="$out/$1"
  mkdir -p "$dir"
  rows+=("$1")
  $py -c 'import json,sys; json.dump({"peer": sys.argv[1], "algorithm": sys.argv[2], "size": sys.argv[3]}, open(sys.argv[4], "w"))' \
    "$2" "$3" "$4" "$dir/row.json"
}

if [[ " $peers " == *" fedtp "* ]]; then
  # small: depth 1, 10,000 + 2,000 images, 20 rounds evaluated every 10; default: depth 6,
  # 50,000 + 10,000, 2 rounds evaluated after the second
  for size in small default; do
    if [ "$size" = small ]; then depth=1 ntrain=10000 ntest=2000 rounds=20 every=10; else depth=6 ntrain=50000 ntest=10000 rounds=2 every=2; fi
    [ -z "$smoke" ] || { depth=1 ntrain=400 ntest=200 rounds=2 every=2; }
    d="$data/fmnist-$ntrain-$ntest"
    [ -f "$d/cifar-10-batches-bin/test_batch.bin" ] || $py scripts/sbs/repack_fmnist.py --out "$d" --train "$ntrain" --test "$ntest" >/dev/null
    for alg in fedtp fedavg; do
      official=FedTP; [ "$alg" = fedavg ] && official=fedavg
      r="fedtp-$size-$alg"
      row "$r" "FedTP official (zhyczy/FedTP)" "$alg" "$size: depth $depth, $ntrain + $ntest images, $rounds round(s)"
      PFL[$r]="bin/pfl train -c configs/fedtp-default-fmnist.yaml --overwrite --set 'suite=[$alg]' --set data.dataset=cifar10:$d --set data.pad_to=0 --set data.channels=0 --set model.depth=$depth --set train.rounds=$rounds --set train.eval_every=$every --set train.tail_rounds=$rounds --set train.checkpoint_every=$rounds --set out=$out/$r/pfl-runs-{I} --set name=$r"
      PEER[$r]="env PYTHONPATH=$einops $py bench/fedtp-official.py --checkout $fedtp --data $d --trust-files --work $out/$r/peer-work-{I} -- --model=vit --dataset=cifar10 --alg=$official --partition=noniid-labeluni --n_parties=20 --sample=0.25 --comm_round=$rounds --eval_step=$every --test_round=$every --epochs=1 --batch-size=64 --lr=0.05 --rho=0.9 --reg=0.00001 --depth=$depth --init_seed=1 --logdir=$out/$r/peer-work-{I}/logs"
    done
  done
fi

if [[ " $peers " == *" pfllib "* ]]; then
  config=configs/sbs-pfllib-fmnist.yaml
  ntrain=15000 ntest=5000 rounds=10 gap=2
  [ -z "$smoke" ] || { ntrain=1500 ntest=500 rounds=2 gap=2; }
  size=(--set seed=1 --set data.train_samples=$ntrain --set data.test_samples=$ntest)
  part="$data/pfllib-partition-$ntrain" pd="$data/pfllib-$ntrain/FMNIST-pfl"
  if [ ! -d "$pd" ]; then
    bin/pfl partition -c $config "${size[@]}" -out "$part" >/dev/null
    $py scripts/sbs/pfllib-data.py --export "$part" --out "$pd" >/dev/null
  fi
  for a in fedavg ditto fedrep fedrod pfedme perfedavg; do
    # the member's --set flags in the config's suite, as pfllib-run.sh reads them
    line=$(grep -E "^  - (\"$a:|$a$)" $config | head -1 | sed -E 's/^  - "?//; s/"$//')
    sets="--set algorithm.name=$a"
    [[ "$line" != *:* ]] || sets=$(echo "${line#*:}" | tr ';' '\n' | sed -E 's/^ +//; s/ +$//' | grep . | sed 's/^/--set /' | paste -sd' ' -)
    r="pfllib-$a"
    row "$r" "PFLlib (TsingZ0/PFLlib)" "$a" "$ntrain + $ntest images, 20 clients, $rounds rounds"
    PFL[$r]="bin/pfl train -c $config ${size[*]} --set 'suite=[]' $sets --set train.rounds=$rounds --set name=$r --set out=$out/$r/pfl-runs-{I} --set device=cpu"
    PEER[$r]="$py scripts/sbs/pfllib-run.py --checkout $pfllib --data $pd --algo $a --seed 1 --device cpu --threads {T} --rounds $rounds --eval-gap $gap --clients 20 --work $out/$r/peer-work-{I} --out $out/$r/peer-{I}.json"
  done
fi

if [[ " $peers " == *" fedperfix "* ]]; then
  config=configs/sbs-fedperfix-fmnist.yaml
  key() { grep -E "^  $1: " "$config" | head -1 | awk '{print $2}'; }
  clients=$(key clients) rounds=$(key rounds) epochs=$(key epochs) participation=$(key participation)
  ntrain=6000 ntest=1000
  [ -z "$smoke" ] || { clients=4 rounds=1 epochs=1 participation=0.5 ntrain=200 ntest=40; }
  dim=$(key dim) heads=$(key heads) depth=$(key depth) mlp=$(key mlp) patch=$(key patch) batch=$(key batch)
  vit="img_size=32,patch_size=$patch,in_chans=3,embed_dim=$dim,depth=$depth,num_heads=$heads,mlp_ratio=$((mlp / dim))"
  part="$data/fedperfix-partition-$ntrain-$clients.json" fd="$data/fedperfix-$ntrain-$clients"
  [ -f "$part" ] || $py scripts/sbs/fedperfix_official.py --checkout "$fedperfix" --export "$part" --data "$fd" --seed 1 \
    --clients "$clients" --train-images $ntrain --test-images $ntest >/dev/null
  for a in fedperfix fedavg; do
    method=FedPerfix; [ "$a" = fedavg ] && method=FedAVG
    r="fedperfix-$a"
    row "$r" "FedPerfix code (imguangyu/FedPerfix)" "$a" "$clients clients, $ntrain + $ntest images, $rounds rounds of $epochs epochs"
    PFL[$r]="$py scripts/sbs/pfl_side.py --config $config --seed 1 --partition $part --device cpu --runs $out/$r/pfl-runs-{I} --name $r --out $out/$r/pfl-{I}.json --set 'suite=[]' --set algorithm.name=$a --set data.clients=$clients --set train.rounds=$rounds --set train.epochs=$epochs --set train.participation=$participation --set train.checkpoint_every=$rounds --set train.workers=0"
    PEER[$r]="$py scripts/sbs/fedperfix_official.py --checkout $fedperfix --data $fd --partition $part --method $method --seed 1 --rounds $rounds --local-steps $epochs --join-ratio $participation --batch $batch --vit $vit --device cpu --start-method forkserver --out $out/$r/peer-{I}.json"
  done
fi

if [[ " $peers " == *" pfedhn "* ]]; then
  ntrain=20000 ntest=5000 steps=100 every=50
  [ -z "$smoke" ] || { ntrain=1000 ntest=500 steps=2 every=2; }
  d="$data/fmnist-$ntrain-$ntest"
  [ -f "$d/cifar-10-batches-bin/test_batch.bin" ] || $py scripts/sbs/repack_fmnist.py --out "$d" --train "$ntrain" --test "$ntest" >/dev/null
  hn=(--checkout "$pfedhn" --data "$d" --device cpu --num-nodes 5 --num-steps "$steps" --eval-every "$every")
  part="$data/pfedhn-partition-$ntrain.json"
  [ -f "$part" ] || $py scripts/sbs/pfedhn_official.py "${hn[@]}" --seed 1 --export "$part" >/dev/null
  r=pfedhn
  row "$r" "pFedHN official (AvivSham/pFedHN)" pfedhn "5 clients, $ntrain + $ntest images, $steps steps"
  PFL[$r]="$py scripts/sbs/pfl_side.py --config configs/sbs-pfedhn-fmnist.yaml --device cpu --seed 1 --set train.eval_every=$every --set train.rounds=$steps --set data.dataset=cifar10:$d --runs $out/$r/pfl-runs-{I} --partition $part --out $out/$r/pfl-{I}.json"
  PEER[$r]="$py scripts/sbs/pfedhn_official.py ${hn[*]} --seed 1 --partition $part --out $out/$r/peer-{I}.json"
fi

if [[ " $peers " == *" pfedgp "* ]]; then
  ntrain=14000 ntest=2000 rounds=100
  [ -z "$smoke" ] || { ntrain=1000 ntest=500 rounds=2; }
  d="$data/fmnist-$ntrain-$ntest"
  [ -f "$d/cifar-10-batches-bin/test_batch.bin" ] || $py scripts/sbs/repack_fmnist.py --out "$d" --train "$ntrain" --test "$ntest" >/dev/null
  gp=(--checkout "$pfedgp" --data "$d" --device cpu --num-clients 10 --num-steps "$rounds" --method full)
  part="$data/pfedgp-partition-$ntrain.json"
  [ -f "$part" ] || $py scripts/sbs/pfedgp_official.py "${gp[@]}" --seed 1 --export "$part" >/dev/null
  batch=$($py -c "import json,sys; print(max(len(t) for t in json.load(open(sys.argv[1]))['train']))" "$part")
  r=pfedgp
  row "$r" "pFedGP official (IdanAchituve/pFedGP)" pfedgp "10 clients, $ntrain + $ntest images, $rounds rounds"
  PFL[$r]="$py scripts/sbs/pfl_side.py --config configs/sbs-pfedgp-fmnist.yaml --device cpu --seed 1 --partition $part --runs $out/$r/pfl-runs-{I} --out $out/$r/pfl-{I}.json --set train.batch=$batch --set train.rounds=$rounds --set train.eval_every=$rounds --set train.checkpoint_every=$rounds --set data.dataset=cifar10:$d --set train.workers=0"
  PEER[$r]="$py scripts/sbs/pfedgp_official.py ${gp[*]} --seed 1 --partition $part --out $out/$r/peer-{I}.json"
fi

# ---- the timed runs, interleaved: run i of every side and setting of a row, the order
# rotated from one i to the next -----------------------------------------------------------
timed() { # timed ROW NAME THREADS CMD: one whole process under /usr/bin/time -v
  local dir="$out/$1" name=$2 t=$3 cmd=$4 rc=0
  if [ "$t" = default ]; then
    env -u OMP_NUM_THREADS -u MKL_NUM_THREADS -u OPENBLAS_NUM_THREADS \
      nice -n "$niceness" /usr/bin/time -v -o "$dir/$name.time" bash -c "$cmd" >"$dir/$name.log" 2>&1 || rc=$?
  else
    env OMP_NUM_THREADS="$t" MKL_NUM_THREADS="$t" OPENBLAS_NUM_THREADS="$t" \
      nice -n "$niceness" /usr/bin/time -v -o "$dir/$name.time" bash -c "$cmd" >"$dir/$name.log" 2>&1 || rc=$?
  fi
  [ $rc -eq 0 ] || echo "speed.sh: $1 $name failed (exit $rc); see $dir/$name.log" >&2
}
echo "speed.sh: ${#rows[@]} rows, $runs run(s) of pfl and of the peer at $threads thread(s) each, into $out"
for i in $(seq 1 "$runs"); do
  for r in "${rows[@]}"; do
    sides=("pfl default")
    for t in $threads; do sides+=("peer $t"); done
    n=${#sides[@]}
    for j in $(seq 0 $((n - 1))); do
      read -r side t <<<"${sides[$(( (j + i - 1) % n ))]}"
      if [ "$side" = pfl ]; then cmd=${PFL[$r]}; else cmd=${PEER[$r]}; fi
      cmd=${cmd//\{I\}/$i}
      cmd=${cmd//\{T\}/$t}
      if [ "$side" = pfl ]; then rm -rf "$out/$r/pfl-runs-$i"; else rm -rf "$out/$r/peer-work-$i"; fi
      echo "speed.sh: $r run $i: $side (threads: $t)"
      timed "$r" "$side-t$t-$i" "$t" "$cmd"
    done
  done
done
$py scripts/sbs/speed_table.py --out "$out" --json "$out/speed.json"
