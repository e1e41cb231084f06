#!/usr/bin/python3
"""Runs pfl's side of a side-by-side comparison: bin/pfl train with a configs/sbs-*.yaml, a
seed and that seed's exported partition file, then computes from the last evaluation's
per-client accuracies (metrics.jsonl) and each client's test count (the partition file) the
numbers the official code reports:

  pooled  Σ_c acc_c·n_c / Σ_c n_c  (pFedHN's and pFedGP's test_avg_acc: correct over samples)
  mean    the plain mean of acc_c over clients (FedPerfix's reported average)

and checks the pooled number against pfl's own summary.json final_micro and the mean
against its final_mean. --name sets pfl's run name (several runs of one config, one per
algorithm, as scripts/sbs/fedperfix-run.sh makes).

  pfl_side.py --checkout . --config configs/sbs-pfedhn-fmnist.yaml --seed 1 \\
      --partition runs/sbs/pfedhn/partition-seed1.json --out runs/sbs/pfedhn/pfl-seed1.json
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkout", default=".", help="the pfl repository (bin/pfl built by scripts/build.sh)")
    ap.add_argument("--config", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--partition", required=True, help="the official side's exported partition")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--runs", default="runs/sbs/pfl", help="pfl's out folder")
    ap.add_argument("--out", required=True, help="result JSON")
    ap.add_argument("--name", help="pfl's run name (default: the config's file name and -seed<S>)")
    ap.add_argument("--set", action="append", default=[], help="further pfl --set key=value")
    a = ap.parse_args()

    pfl = os.path.join(a.checkout, "bin", "pfl")
    name = a.name or os.path.splitext(os.path.basename(a.config))[0] + f"-seed{a.seed}"
    sets = [f"seed={a.seed}", f"device={a.device}", f"data.partition_file={a.partition}", f"out={a.runs}",
            f"name={name}"] + a.set
    cmd = [pfl, "train", "-c", a.config, "--overwrite"] + [x for s in sets for x in ("--set", s)]
    print("pfl_side:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    run = os.path.join(a.runs, name)
    with open(os.path.join(run, "metrics.jsonl")) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    last = [l for l in lines if l.get("per_client")][-1]
    acc = [float(x) for x in last["per_client"]]
    with open(a.partition) as f:
        n = [len(t) for t in json.load(f)["test"]]
    if len(n) != len(acc):
        sys.exit(f"pfl_side: {len(acc)} clients evaluated, {a.partition} has {len(n)}")
    # per_client is a fraction or a percentage: bring both to fractions
    scale = 100.0 if max(acc) > 1.0 else 1.0
    acc = [x / scale for x in acc]
    pooled = sum(x * k for x, k in zip(acc, n)) / sum(n)
    mean = sum(acc) / len(acc)
    with open(os.path.join(run, "summary.json")) as f:
        summary = json.load(f)
    micro = summary["final_micro"]
    micro = micro / 100.0 if micro > 1.0 else micro
    if abs(pooled - micro) > 1e-3:
        sys.exit(f"pfl_side: pooled accuracy from per-client numbers {pooled:.4f}, summary.json final_micro {micro:.4f}")
    if "final_mean" in summary:
        fmean = summary["final_mean"] / 100.0 if summary["final_mean"] > 1.0 else summary["final_mean"]
        if abs(mean - fmean) > 1e-3:
            sys.exit(f"pfl_side: client mean from per-client numbers {mean:.4f}, summary.json final_mean {fmean:.4f}")
    # every evaluation's per-client accuracies (fractions), in round order
    per_eval = [{"round": l["round"], "client_acc": [float(x) / scale for x in l["per_client"]]}
                for l in lines if l.get("per_client")]
    res = {"round": last["round"], "final_pooled_acc": pooled, "final_mean_acc": mean,
           "final_client_acc": acc, "client_acc_per_eval": per_eval, "test_counts": n,
           "summary": summary, "command": cmd}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"pfl_side: {name}: round {last['round']}: pooled test accuracy {pooled:.4f}, client mean {res['final_mean_acc']:.4f}")


if __name__ == "__main__":
    main()
