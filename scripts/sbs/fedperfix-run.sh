#!/usr/bin/env bash
# Side by side with the official FedPerfix code (imguangyu/FedPerfix) on Fashion-MNIST: for every
# seed, draws the partition with the official generator's functions and exports it
# (fedperfix_official.py --export), checks that pfl reads the same clients (`pfl partition -c`,
# fedperfix_check.py), runs the official system/main.py (presets FedPerfix, VanillaAttention,
# FedAVG, Local) and pfl (fedperfix, vanilla-attn, fedavg, local) on it, --jobs processes at a
# time, checks that both sides built the same model with the same local parameters, and prints
# the table (summary.py). Settings come from configs/sbs-fedperfix-fmnist.yaml; the official
# side gets the same numbers as flags. Build pfl first (scripts/build.sh); the official code
# needs /usr/bin/python3 with Debian's python3-torch, python3-torchvision, python3-sklearn,
# python3-h5py and python3-ujson, and timm 0.6.7 from a checkout (the version the code pins):
#   git clone https://github.com/huggingface/pytorch-image-models
#   git -C pytorch-image-models checkout 7cd4204a289cd0dddad925c076cdb96ae9670e87   # tag v0.6.7
# (fedperfix_official.py says why not a newer timm); wandb, opacus and calmsize are stood in
# (scripts/sbs/standins/). Seed s pairs: partition s on both sides, pfl's seed s, and the
# official code's own training seed s (fedperfix_official.py --train-seed; 1 is the code's).
#
# Usage: scripts/sbs/fedperfix-run.sh --checkout DIR --timm DIR [--seeds "1 2 3 4 5"] [--algos "..."]
#          [--device cpu|cuda] [--out DIR] [--jobs N] [--nice N] [--start-method forkserver|spawn]
#          [--timeout S] [size flags, for smoke runs only]
#   --checkout      an imguangyu/FedPerfix checkout (read, never written)
#   --timm          a huggingface/pytorch-image-models checkout at v0.6.7 (read, never written)
#   --seeds         seeds; each draws its own partition and sets both sides' training seeds
#                   (default "1 2 3 4 5": five pairs, the fewest a verdict is computed from)
#   --algos         pfl names (default "fedperfix vanilla-attn fedavg local")
#   --device        cpu (default) or cuda, for both sides
#   --out           where everything goes (default runs/sbs)
#   --jobs          processes at once, one thread each (default 2)
#   --nice          niceness of every process (default 10)
#   --start-method  how the official code starts its processes: forkserver (default; the same
#                   results as main.py's own spawn, bit for bit in a smoke check, without seconds
#                   of imports per DataLoader worker, 4 per client per round) or spawn (main.py's
#                   own; it keeps the code's training seed 1, so only --seeds 1 runs under it)
#   --timeout       seconds a single run may take before it is stopped (default 3600)
#   size flags      --clients N --train-images N --test-images N --rounds N --epochs N
#                   --participation F: override the config's (and the pool's 6,000 + 1,000)
set -euo pipefail
cd "$(dirname "$0")/../.."

config=configs/sbs-fedperfix-fmnist.yaml
key() { grep -E "^  $1: " "$config" | head -1 | awk '{print $2}'; }
checkout="" timm="" seeds="1 2 3 4 5" algos="fedperfix vanilla-attn fedavg local" device=cpu out=runs/sbs jobs=2 niceness=10
start_method=forkserver limit=3600 train_images=6000 test_images=1000
clients=$(key clients) rounds=$(key rounds) epochs=$(key epochs) participation=$(key participation)
batch=$(key batch) lr=$(key lr) patch=$(key patch) dim=$(key dim) heads=$(key heads) depth=$(key depth) mlp=$(key mlp)
while [ $# -gt 0 ]; do
  case "$1" in
    --checkout) checkout="$2"; shift 2 ;;
    --timm) timm="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --algos) algos="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --nice) niceness="$2"; shift 2 ;;
    --start-method) start_method="$2"; shift 2 ;;
    --timeout) limit="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --train-images) train_images="$2"; shift 2 ;;
    --test-images) test_images="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --participation) participation="$2"; shift 2 ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "fedperfix-run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$checkout" ] || { echo "fedperfix-run.sh: --checkout DIR (an imguangyu/FedPerfix checkout) is required" >&2; exit 2; }
[ -f "$checkout/system/main.py" ] && [ -f "$checkout/dataset/utils/dataset_utils.py" ] ||
  { echo "fedperfix-run.sh: --checkout $checkout: no system/main.py or dataset/utils/dataset_utils.py" >&2; exit 2; }
[ -n "$timm" ] && [ -f "$timm/timm/version.py" ] ||
  { echo "fedperfix-run.sh: --timm DIR (a huggingface/pytorch-image-models checkout at v0.6.7) is required" >&2; exit 2; }
case "$device" in cpu|cuda) ;; *) echo "fedperfix-run.sh: --device $device: want cpu or cuda" >&2; exit 2 ;; esac
case "$start_method" in forkserver|spawn) ;; *) echo "fedperfix-run.sh: --start-method $start_method: want forkserver or spawn" >&2; exit 2 ;; esac
[ -x bin/pfl ] || { echo "fedperfix-run.sh: bin/pfl missing; run scripts/build.sh" >&2; exit 2; }
py=/usr/bin/python3
for m in torch torchvision sklearn h5py ujson; do
  "$py" -c "import $m" 2>/dev/null || { echo "fedperfix-run.sh: $py cannot import $m (Debian: apt-get install python3-$m)" >&2; exit 2; }
done
[ "$lr" = 0.01 ] || { echo "fedperfix-run.sh: $config has train.lr $lr; the official presets train at 0.01" >&2; exit 2; }
# the official ViT: timm's vit_small_patch16_224 at the config's size (fedperfix_official.py --vit)
head_dim=$(key head_dim)
[ $((heads * head_dim)) -eq "$dim" ] && [ $((mlp % dim)) -eq 0 ] ||
  { echo "fedperfix-run.sh: $config: timm's ViT wants heads × head_dim = dim and an MLP width that is a multiple of dim" >&2; exit 2; }
vit="img_size=32,patch_size=$patch,in_chans=3,embed_dim=$dim,depth=$depth,num_heads=$heads,mlp_ratio=$((mlp / dim))"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1
mkdir -p "$out"
out=$(cd "$out" && pwd)
data="$out/fedperfix-data"
mkdir -p "$data"

method() {
  case "$1" in
    fedperfix) echo FedPerfix ;; vanilla-attn) echo VanillaAttention ;; fedavg) echo FedAVG ;; local) echo Local ;;
    *) echo "fedperfix-run.sh: --algos: $1 is not one of fedperfix vanilla-attn fedavg local" >&2; exit 2 ;;
  esac
}
for a in $algos; do method "$a" >/dev/null; done
size=(--set "data.clients=$clients" --set "train.rounds=$rounds" --set "train.epochs=$epochs"
      --set "train.participation=$participation" --set "train.checkpoint_every=$rounds")

jobfile="$out/fedperfix-jobs.txt"
: >"$jobfile"
for s in $seeds; do
  part="$data/partition-seed$s.json"
  "$py" scripts/sbs/fedperfix_official.py --checkout "$checkout" --export "$part" --data "$data/FMNIST-s$s" --seed "$s" \
    --clients "$clients" --train-images "$train_images" --test-images "$test_images" >"$data/export-seed$s.log"
  tail -1 "$data/export-seed$s.log"
  bin/pfl partition -c "$config" --set "data.partition_file=$part" --set "data.clients=$clients" \
    -out "$data/pfl-partition-seed$s" >/dev/null
  "$py" scripts/sbs/fedperfix_check.py --partition "$part" --pfl-clients "$data/pfl-partition-seed$s/clients.json"
  for a in $algos; do
    dir="$out/fedperfix-$a"
    mkdir -p "$dir"
    extra=""
    [ "$a" = local ] && extra="--set algorithm.local_clients=sampled"
    printf '%s\n' "nice -n $niceness timeout $limit $py scripts/sbs/fedperfix_official.py --checkout $checkout --data $data/FMNIST-s$s --partition $part --timm $timm --method $(method "$a") --seed $s --train-seed $s --rounds $rounds --local-steps $epochs --join-ratio $participation --batch $batch --vit $vit --device $device --start-method $start_method --out $dir/official-seed$s.json >$dir/official-seed$s.log 2>&1" >>"$jobfile"
    printf '%s\n' "nice -n $niceness timeout $limit $py scripts/sbs/pfl_side.py --config $config --seed $s --partition $part --device $device --runs $out/pfl --name sbs-fedperfix-fmnist-$a-seed$s --out $dir/pfl-seed$s.json --set suite=[] --set algorithm.name=$a $extra ${size[*]} --set train.workers=1 >$dir/pfl-seed$s.log 2>&1" >>"$jobfile"
  done
done
echo "fedperfix-run.sh: $(wc -l <"$jobfile") runs, $jobs at a time: $jobfile"
start=$(date +%s)
# a run that fails is reported and the rest go on; the table marks what is missing
xargs -P "$jobs" -I{} -d '\n' sh -c '{} || echo "fedperfix-run.sh: failed: {}" >&2' <"$jobfile"
echo "fedperfix-run.sh: done in $(( $(date +%s) - start )) s"
for s in $seeds; do
  for a in $algos; do
    dir="$out/fedperfix-$a"
    if [ -f "$dir/official-seed$s.json" ] && [ -d "$out/pfl/sbs-fedperfix-fmnist-$a-seed$s" ]; then
      "$py" scripts/sbs/fedperfix_check.py --official "$dir/official-seed$s.json" --pfl-run "$out/pfl/sbs-fedperfix-fmnist-$a-seed$s" ||
        echo "fedperfix-run.sh: $a seed $s: the two sides' models differ" >&2
    fi
  done
done
"$py" scripts/sbs/summary.py --runs "$out"
