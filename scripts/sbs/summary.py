#!/usr/bin/python3
"""Prints the side-by-side table (markdown) from the result JSONs the runners wrote:
RUNS/<algorithm>/official-seed<S>.json and RUNS/<algorithm>/pfl-seed<S>.json, each with
"final_pooled_acc" (Σ correct / Σ samples over every client's test set after the last
round) and, where there is one, "final_mean_acc" (the plain mean over clients).

  summary.py --runs runs/sbs
"""
import argparse
import glob
import json
import os
import re

# the number each official code reports, by the folder's name
METRIC = {"pfedhn": "final_pooled_acc", "pfedgp": "final_pooled_acc", "fedperfix": "final_mean_acc"}


def load(folder, side):
    out = {}
    for p in sorted(glob.glob(os.path.join(folder, f"{side}-seed*.json"))):
        seed = int(re.search(r"seed(\d+)\.json$", p).group(1))
        with open(p) as f:
            out[seed] = json.load(f)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default="runs/sbs")
    a = ap.parse_args()
    print("| algorithm | metric | official (per seed) | official mean | pfl (per seed) | pfl mean | pfl − official |")
    print("|---|---|---|---|---|---|---|")
    for alg in sorted(os.listdir(a.runs)):
        folder = os.path.join(a.runs, alg)
        key = METRIC.get(alg.split("-")[0])  # pfedhn-10c60: another setting of pfedhn
        if key is None or not os.path.isdir(folder):
            continue
        off, pfl = load(folder, "official"), load(folder, "pfl")
        if not off and not pfl:
            continue
        cells = []
        means = []
        for side in (off, pfl):
            vals = [100 * side[s][key] for s in sorted(side)]
            cells.append(", ".join(f"{v:.2f} (seed {s})" for s, v in zip(sorted(side), vals)) or "–")
            m = sum(vals) / len(vals) if vals else None
            means.append(m)
            cells.append(f"{m:.2f}" if m is not None else "–")
        diff = f"{means[1] - means[0]:+.2f}" if None not in means else "–"
        name = "pooled test acc. (%)" if key == "final_pooled_acc" else "mean client test acc. (%)"
        print(f"| {alg} | {name} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} | {diff} |")


if __name__ == "__main__":
    main()
