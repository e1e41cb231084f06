#!/usr/bin/env bash
# Side by side with the official FedTP code (zhyczy/FedTP, main.py --alg FedTP and fedavg) on
# Fashion-MNIST repacked as CIFAR-10: for every seed, exports the partition pfl draws
# (`pfl partition -c configs/sbs-fedtp-fmnist.yaml`), runs the official main.py on it
# (fedtp_official.py replaces its partition function's output with the export's client lists;
# main.py --init_seed is the seed, so the official side's training streams change with the
# partition) and pfl on the same lists (pfl_side.py, data.partition: file), --jobs processes
# at a time, each under `/usr/bin/time -v` (wall time and peak RSS go into its result JSON,
# timev.py), and prints the paired table (fedtp-summary.py, through verdict.py). Settings come
# from the config; the official side gets the same numbers as flags. Build pfl first
# (scripts/build.sh). The official code needs /usr/bin/python3 with Debian's python3-torch,
# python3-torchvision, python3-sklearn and python3-faiss, and a work tree of einops (Debian
# has none; see fedtp_official.py).
#
# Usage: scripts/sbs/fedtp-run.sh --checkout DIR --einops DIR [--seeds "1 2 3 4 5"]
#          [--algos "fedtp fedavg"] [--out DIR] [--jobs N] [--nice N] [--timeout S] [--rounds N]
#   --checkout  a zhyczy/FedTP work tree (read, never written; commit 3cca0d7f was run)
#   --einops    an arogozhnikov/einops work tree (tag v0.8.2 was run)
#   --seeds     seeds; each draws its own partition and trains both sides (default "1 2 3 4 5")
#   --algos     pfl names, fedtp and/or fedavg (default both)
#   --out       where everything goes (default runs/sbs/fedtp)
#   --jobs      processes at once, one thread each (default 2)
#   --nice      niceness of every run (default 19)
#   --timeout   seconds one run may take before it is stopped (default 7200)
#   --rounds    override the config's train.rounds (smoke runs only; the tail stays the config's)
set -euo pipefail
cd "$(dirname "$0")/../.."

config=configs/sbs-fedtp-fmnist.yaml
key() { grep -E "^  $1: " "$config" | head -1 | awk '{print $2}'; }
checkout="" einops="" seeds="1 2 3 4 5" algos="fedtp fedavg" out=runs/sbs/fedtp jobs=2 niceness=19 limit=7200
rounds=$(key rounds)
while [ $# -gt 0 ]; do
  case "$1" in
    --checkout) checkout="$2"; shift 2 ;;
    --einops) einops="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --algos) algos="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --nice) niceness="$2"; shift 2 ;;
    --timeout) limit="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "fedtp-run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -f "$checkout/main.py" ] && [ -f "$checkout/utils.py" ] ||
  { echo "fedtp-run.sh: --checkout '$checkout': no main.py or utils.py (a zhyczy/FedTP work tree is required)" >&2; exit 2; }
[ -f "$einops/einops/__init__.py" ] ||
  { echo "fedtp-run.sh: --einops '$einops': no einops/__init__.py (an arogozhnikov/einops work tree is required)" >&2; exit 2; }
[ -x bin/pfl ] || { echo "fedtp-run.sh: bin/pfl missing; run scripts/build.sh" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "fedtp-run.sh: /usr/bin/time missing (Debian: apt-get install time)" >&2; exit 2; }
py=/usr/bin/python3
for m in torch torchvision sklearn faiss; do
  "$py" -c "import $m" 2>/dev/null || { echo "fedtp-run.sh: $py cannot import $m (Debian: python3-$m)" >&2; exit 2; }
done
alg() {
  case "$1" in
    fedtp) echo FedTP ;; fedavg) echo fedavg ;;
    *) echo "fedtp-run.sh: --algos: $1 is not fedtp or fedavg" >&2; exit 2 ;;
  esac
}
for a in $algos; do alg "$a" >/dev/null; done
# the official code's flags, from the config
tail_rounds=$(key tail_rounds) every=$(key eval_every)
[ $(( (rounds - tail_rounds) % every )) -eq 0 ] && [ $((rounds % every)) -eq 0 ] ||
  { echo "fedtp-run.sh: train.rounds $rounds and tail_rounds $tail_rounds must be multiples of eval_every $every" >&2; exit 2; }
[ "$(key heads)" = 8 ] && [ "$(key head_dim)" = 64 ] && [ "$(key dim)" = 128 ] && [ "$(key patch)" = 4 ] && [ "$(key mlp)" = 256 ] ||
  { echo "fedtp-run.sh: $config: the official CIFAR-10 ViT is patch 4, dim 128, 8 heads of 64, MLP 256; only depth is a flag" >&2; exit 2; }
official=(--clients "$(key clients)" --sample "$(key participation)" --rounds "$rounds" --eval-step "$every"
          --test-round $((rounds - tail_rounds)) --depth "$(key depth)" --lr "$(key lr)" --batch "$(key batch)"
          --epochs "$(key epochs)" --rho "$(key momentum)" --reg "$(key weight_decay)")

export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1
mkdir -p "$out"
out=$(cd "$out" && pwd)
data="$out/data"
mkdir -p "$data"
[ -f "$data/fmnist/cifar-10-batches-bin/test_batch.bin" ] ||
  "$py" scripts/sbs/repack_fmnist.py --out "$data/fmnist" --train 2000 --test 1000
ds=(--set "data.dataset=cifar10:$data/fmnist")

jobfile="$out/jobs.txt"
: >"$jobfile"
for s in $seeds; do
  exp="$data/export-seed$s"
  bin/pfl partition -c "$config" --set "seed=$s" "${ds[@]}" -out "$exp" | tail -2
  part="$data/partition-seed$s.json"
  "$py" scripts/sbs/fedtp_official.py --export "$exp" --write-partition "$part" >/dev/null
  for a in $algos; do
    dir="$out/$a"
    mkdir -p "$dir"
    o="$dir/official-seed$s" p="$dir/pfl-seed$s"
    printf '%s\n' "nice -n $niceness timeout $limit /usr/bin/time -v -o $o.time $py scripts/sbs/fedtp_official.py --checkout $checkout --einops $einops --data $data/fmnist --export $exp --alg $(alg "$a") --seed $s --work $out/work/$a-seed$s --out $o.json ${official[*]} >$o.log 2>&1 && $py scripts/sbs/timev.py --time $o.time --into $o.json" >>"$jobfile"
    printf '%s\n' "nice -n $niceness timeout $limit /usr/bin/time -v -o $p.time $py scripts/sbs/pfl_side.py --config $config --seed $s --partition $part --runs $out/pfl --name sbs-fedtp-fmnist-$a-seed$s --out $p.json ${ds[*]} --set suite=[] --set algorithm.name=$a --set data.partition=file --set data.partition_file=$part --set train.rounds=$rounds --set train.checkpoint_every=$rounds >$p.log 2>&1 && $py scripts/sbs/timev.py --time $p.time --into $p.json" >>"$jobfile"
  done
done
echo "fedtp-run.sh: $(wc -l <"$jobfile") runs, $jobs at a time: $jobfile"
start=$(date +%s)
# a run that fails is reported and the rest go on; the table marks what is missing
xargs -P "$jobs" -I{} -d '\n' sh -c '{} || echo "fedtp-run.sh: failed: {}" >&2' <"$jobfile"
echo "fedtp-run.sh: done in $(( $(date +%s) - start )) s"
"$py" scripts/sbs/fedtp-summary.py --runs "$out"
