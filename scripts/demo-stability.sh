#!/usr/bin/env bash
# The demo's stability evidence: the demo (the built-in default, configs/demo-fmnist.yaml) at
# seeds 1-5 on three CPU kernel paths emulated on this machine, then one table per member
# (mean, min and max of each metric over every seed and path; how many runs diverged or
# fell). Float results differ across kernel paths as in every framework; the table shows
# whether the demo's conclusion does.
#
#   bash scripts/demo-stability.sh [--seeds "1 2 3 4 5"] [--paths "default haswell avx512"]
#                                  [--out runs/demo-stability] [--summary-only]
#
# Paths: default (whatever OpenBLAS and libtorch pick on this CPU), haswell
# (OPENBLAS_CORETYPE=Haswell: OpenBLAS's AVX2 kernels, as on a CPU without AVX-512), avx512
# (OPENBLAS_CORETYPE=SkylakeX and ATEN_CPU_CAPABILITY=avx512: AVX-512 kernels in both, as
# on a CPU with AVX-512). A finished run is not run again. Each demo takes about 3 minutes
# on 2 cores; 15 take about 45.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="1 2 3 4 5"; paths="default haswell avx512"; out=runs/demo-stability; only=
while [ $# -gt 0 ]; do
  case $1 in
    --seeds) seeds=$2; shift 2 ;;
    --paths) paths=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --summary-only) only=1; shift ;;
    *) echo "demo-stability.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$only" ]; then
  bash scripts/build.sh
  for s in $seeds; do
    for p in $paths; do
      case $p in
        default) e=() ;;
        haswell) e=(OPENBLAS_CORETYPE=Haswell) ;;
        avx512) e=(OPENBLAS_CORETYPE=SkylakeX ATEN_CPU_CAPABILITY=avx512) ;;
        *) echo "demo-stability.sh: unknown path $p (default, haswell, avx512)" >&2; exit 2 ;;
      esac
      [ -f "$out/$p-s$s/results.md" ] && continue
      echo "== $p, seed $s"
      env -u OMP_NUM_THREADS "${e[@]}" bin/pfl train --overwrite --set "out=$out" --set "name=$p-s$s" --set "seed=$s" \
        > "$out-$p-s$s.log" 2>&1 || { echo "demo-stability.sh: $p seed $s failed; see $out-$p-s$s.log" >&2; exit 1; }
    done
  done
fi
/usr/bin/python3 - "$out" <<'EOF'
import json, os, sys
out = sys.argv[1]
runs = {}  # member -> list of (path, seed, summary)
for d in sorted(os.listdir(out)):
    path, _, seed = d.rpartition("-s")
    top = os.path.join(out, d)
    if d.startswith(".") or not os.path.isdir(top) or not seed.isdigit():
        continue
    for m in sorted(os.listdir(top)):
        f = os.path.join(top, m, "summary.json")
        if os.path.exists(f):
            with open(f) as fh:
                runs.setdefault(m, []).append((path, int(seed), json.load(fh)))
def span(vals):
    if not vals:
        return "—"
    return f"{100 * sum(vals) / len(vals):.2f} [{100 * min(vals):.2f}, {100 * max(vals):.2f}]"
print("| member | runs | diverged | falling | FedTP protocol, mean [min, max] | trend, points, mean [min, max] | final per-client mean | best − last, points, max |")
print("|---|---|---|---|---|---|---|---|")
order = ["fedtp", "fedperfix", "transfed", "fedavg", "local"]
for m in sorted(runs, key=lambda m: (order.index(m) if m in order else len(order), m)):
    rs = runs[m]
    ok = [s for _, _, s in rs if not s.get("diverged_at_round")]
    div = [f"{p} s{sd} r{s['diverged_at_round']}" for p, sd, s in rs if s.get("diverged_at_round")]
    fall = [f"{p} s{sd}" for p, sd, s in rs if s.get("falling") and not s.get("diverged_at_round")]
    drop = max((s.get("best_micro", s["final_micro"]) - s["final_micro"] for s in ok), default=0)
    print(f"| {m} | {len(rs)} | {len(div)}{' (' + ', '.join(div) + ')' if div else ''} | {len(fall)}{' (' + ', '.join(fall) + ')' if fall else ''} "
          f"| {span([s['tail_mean'] for s in ok])} | {span([s['tail_trend'] for s in ok])} | {span([s['final_mean'] for s in ok])} | {100 * drop:.2f} |")
print()
paths = sorted({p for rs in runs.values() for p, _, _ in rs})
print("FedTP protocol per path (mean [min, max] over seeds):\n")
print("| member | " + " | ".join(paths) + " |")
print("|---|" + "---|" * len(paths))
for m in sorted(runs, key=lambda m: (order.index(m) if m in order else len(order), m)):
    cells = [span([s["tail_mean"] for p, _, s in runs[m] if p == q and not s.get("diverged_at_round")]) for q in paths]
    print(f"| {m} | " + " | ".join(cells) + " |")
print()
# each ordering of two members (FedTP protocol) over the runs where both trained
by_run = {}
for m, rs in runs.items():
    for p, sd, s in rs:
        if not s.get("diverged_at_round"):
            by_run.setdefault((p, sd), {})[m] = s["tail_mean"]
names = sorted(runs, key=lambda m: (order.index(m) if m in order else len(order), m))
print("Orderings (FedTP protocol): a > b in k of the n runs where both trained:\n")
print("| a | b | k of n | smallest a − b, points | largest a − b, points |")
print("|---|---|---|---|---|")
for i, first in enumerate(names):
    for second in names[i + 1:]:
        both = [r for r in by_run.values() if first in r and second in r]
        if not both:
            continue
        a, b = first, second
        if sum(r[a] > r[b] for r in both) * 2 < len(both):
            a, b = b, a
        d = [100 * (r[a] - r[b]) for r in both]
        print(f"| {a} | {b} | {sum(x > 0 for x in d)} of {len(d)} | {min(d):+.2f} | {max(d):+.2f} |")
EOF
