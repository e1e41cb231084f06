#!/usr/bin/env bash
# Instructions per training sample of pfl against a one-thread PyTorch loop of the same
# model, counted by valgrind's callgrind: a count that does not depend on what else runs on
# the machine (wall-clock times on a shared machine do). Setup is run uninstrumented
# (--instr-atstart=no) and instrumentation turned on for the training only:
#
#   PyTorch: scripts/sbs/torch_step.py --callgrind train: the official FedTP ViT class
#            (zhyczy/FedTP's models/vit.py) and the official train_net's step,
#            torch.set_num_threads(1), 1 warm-up step, then --steps counted steps: the
#            count is theirs alone.
#   pfl:     bin/pfl train -c configs/fedtp-default-fmnist.yaml, FedAvg (the local step of
#            FedTP's clients is the same code; FedAvg has no hypernetwork to set up), one
#            client a round, one worker, one thread, every step a full batch
#            (train.drop_last); instrumentation turned on from outside once the run prints
#            its "cpu: ... client group(s)" line (data loaded, models built), so the count
#            also holds a probe step, the evaluation and the checkpoint; two runs, 1 and
#            1 + --steps local epochs of one step each, and the difference of their counts is
#            the extra steps' alone.
# Both: FedTP's default ViT (patch 4, depth 6, dim 128, 8 heads of 64, MLP 256, dropout
# 0.1, 10 classes, 3×32×32 input), batch 64, SGD lr 0.05, momentum 0.9, weight decay 1e-5.
# Under valgrind both processes see a CPU without AVX-512 (valgrind does not emulate it), so
# OpenBLAS runs its Haswell (AVX2) kernels on both sides; libtorch's own kernels use AVX2 on
# this machine with or without valgrind ("CPU capability usage: AVX2"). The table splits the
# count by op family (callgrind_families.py).
#
# Usage: scripts/sbs/step-cost.sh --checkout FEDTP --einops EINOPS [--out DIR] [--steps N]
#          [--depth D] [--side pfl|torch|both] [--smoke]
#   --checkout  a zhyczy/FedTP checkout (commit 3cca0d7f57c09800faab85ff443459bd2df37589)
#   --einops    an arogozhnikov/einops checkout (tag v0.8.2)
#   --out       where the callgrind files, logs and the table go (default runs/step-cost)
#   --steps     extra steps of the larger run (default 1; a step is 64 samples)
#   --depth     the ViT's depth (default 6)
#   --side      which side's runs to make (default both); the table reads what is there
#   --smoke     a tiny model (depth 1, dim 16, one head of 16, MLP 16) and batch 8: checks
#               the script in minutes, its numbers mean nothing
# Runs under nice 19, one at a time; at FedTP's size each run takes tens of CPU-minutes.
# The steps are counted from the second on both sides (pfl's first epoch, PyTorch's warm-up).
set -euo pipefail
cd "$(dirname "$0")/../.."
checkout="" einops="" out=runs/step-cost steps=1 depth=6 side=both smoke=""
while [ $# -gt 0 ]; do
  case "$1" in
    --checkout) checkout="$2"; shift 2 ;;
    --einops) einops="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --depth) depth="$2"; shift 2 ;;
    --side) side="$2"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
    *) echo "step-cost.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -f "$checkout/models/vit.py" ] || { echo "step-cost.sh: --checkout $checkout: no models/vit.py (a zhyczy/FedTP checkout)" >&2; exit 2; }
[ -f "$einops/einops/__init__.py" ] || { echo "step-cost.sh: --einops $einops: no einops/__init__.py (an arogozhnikov/einops checkout)" >&2; exit 2; }
case "$side" in pfl|torch|both) ;; *) echo "step-cost.sh: --side $side: want pfl, torch or both" >&2; exit 2 ;; esac
command -v valgrind >/dev/null || { echo "step-cost.sh: valgrind missing (apt-get install valgrind)" >&2; exit 2; }
[ -x bin/pfl ] || { echo "step-cost.sh: bin/pfl missing; run scripts/build.sh" >&2; exit 2; }
py=/usr/bin/python3
mkdir -p "$out"
out=$(cd "$out" && pwd)
echo 19 >/proc/self/autogroup 2>/dev/null || true
# one thread on both sides; Go's asynchronous preemption signals trip callgrind 3.19's
# signal bookkeeping (an assertion in vgCallgrind_post_signal), so they are off under it
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 GODEBUG=asyncpreemptoff=1 PYTHONDONTWRITEBYTECODE=1

batch=64 dim=128 heads=8 head_dim=64 mlp=256
if [ -n "$smoke" ]; then batch=8 dim=16 heads=1 head_dim=16 mlp=16 depth=1; fi
cg() { # cg NAME CMD...: one callgrind run, instrumentation off at the start, its log beside it
  local name=$1; shift
  echo "step-cost.sh: $name: $*"
  nice -n 19 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/$name.cg" "$@" >"$out/$name.log" 2>&1 &
  local pid=$! rc=0
  if [[ "$name" == pfl-* ]]; then # on once the data are loaded and the models built
    until grep -q "^cpu: .*client group" "$out/$name.log"; do
      kill -0 $pid 2>/dev/null || break
      sleep 2
    done
    kill -0 $pid 2>/dev/null && callgrind_control -i on $pid >/dev/null
  fi
  wait $pid || rc=$?
  [ $rc -eq 0 ] || { tail -20 "$out/$name.log" >&2; echo "step-cost.sh: $name failed; see $out/$name.log" >&2; exit 1; }
  grep -q "Collected : [1-9]" "$out/$name.log" || { echo "step-cost.sh: $name: nothing was counted; see $out/$name.log" >&2; exit 1; }
}

if [ "$side" != torch ]; then
  pfl_run() { # pfl_run NAME EPOCHS
    cg "$1" bin/pfl train -c configs/fedtp-default-fmnist.yaml --overwrite --set 'suite=[fedavg]' \
      --set data.train_samples=2560 --set data.test_samples=100 --set data.stratified=true \
      --set train.participation=0.05 --set train.workers=1 --set train.drop_last=true --set train.batch=$batch \
      --set train.epochs="$2" --set train.checkpoint_every=100 --set model.depth=$depth --set model.dim=$dim \
      --set model.heads=$heads --set model.head_dim=$head_dim --set model.mlp=$mlp \
      --set out="$out/pfl-runs" --set name="$1"
  }
  pfl_run pfl-small 1
  pfl_run pfl-large $((1 + steps))
fi
if [ "$side" != pfl ]; then
  cg torch $py scripts/sbs/torch_step.py --checkout "$checkout" --einops "$einops" --warmup 1 --steps "$steps" \
    --batch $batch --depth $depth --dim $dim --heads $heads --dim-head $head_dim --mlp $mlp --callgrind train
fi

# samples in the difference: pfl's from its metrics (every step a full batch), PyTorch's by construction
samples() { $py -c "import json,sys; print(sum(json.loads(l)['samples'] for l in open(sys.argv[1]) if l.strip()))" "$1"; }
args=()
if [ -f "$out/pfl-small.cg" ] && [ -f "$out/pfl-large.cg" ]; then
  n=$(( $(samples "$out/pfl-runs/pfl-large/fedavg/metrics.jsonl") - $(samples "$out/pfl-runs/pfl-small/fedavg/metrics.jsonl") ))
  [ "$n" -gt 0 ] || { echo "step-cost.sh: pfl's larger run trained no more samples than its smaller one" >&2; exit 1; }
  args+=(--label pfl --small "$out/pfl-small.cg" --large "$out/pfl-large.cg" --samples "$n")
fi
if [ -f "$out/torch.cg" ]; then
  args+=(--label PyTorch --small - --large "$out/torch.cg" --samples $((steps * batch)))
fi
[ ${#args[@]} -gt 0 ] || { echo "step-cost.sh: no pair of runs in $out" >&2; exit 1; }
$py scripts/sbs/callgrind_families.py "${args[@]}" --json "$out/families.json" --top 25 | tee "$out/table.md"
