#!/usr/bin/python3
"""Prints the side-by-side table (markdown) from the result JSONs the runners wrote:
RUNS/<algorithm>/official-seed<S>.json and RUNS/<algorithm>/pfl-seed<S>.json, each with
"final_pooled_acc" (Σ correct / Σ samples over every client's test set after the last
round) and, where there is one, "final_mean_acc" (the plain mean over clients).

Seed S pairs the two sides (the same partition; each side's training streams set by S), and
every row is the paired comparison of verdict.py over the seeds both sides have: n, the mean
of the per-seed differences pfl − official in points with its standard error, the 95 %
interval and the computed verdict. A seed only one side has is listed and left out of n.
The FedPerfix rows compare the paper's metric, the per-client mean, and beside it the pooled
accuracy (both sides report both); pFedHN and pFedGP report the pooled one only.

  summary.py --runs runs/sbs
"""
import argparse
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verdict  # noqa: E402

# the numbers each official code reports, by the folder's name: the first is its paper's
METRICS = {"pfedhn": ["final_pooled_acc"], "pfedgp": ["final_pooled_acc"],
           "fedperfix": ["final_mean_acc", "final_pooled_acc"]}
NAMES = {"final_pooled_acc": "pooled test acc. (%)", "final_mean_acc": "mean client test acc. (%)"}


def load(folder, side):
    out = {}
    for p in sorted(glob.glob(os.path.join(folder, f"{side}-seed*.json"))):
        seed = int(re.search(r"seed(\d+)\.json$", p).group(1))
        with open(p) as f:
            out[seed] = json.load(f)
    return out


def row(alg, key, off, pfl):
    """One table row: per-seed pairs, both sides' means over the paired seeds, the comparison."""
    paired = sorted(s for s in off if s in pfl and key in off[s] and key in pfl[s])
    lonely = sorted(set(off) ^ set(pfl))
    pairs = [(100 * off[s][key], 100 * pfl[s][key]) for s in paired]
    seeds = ", ".join(f"{s}: {o:.2f} / {p:.2f}" for s, (o, p) in zip(paired, pairs)) or "–"
    if lonely:
        seeds += f" (one side only: seed {', '.join(map(str, lonely))})"
    mean = lambda v: f"{sum(v) / len(v):.2f}" if v else "–"
    c = verdict.compare([p - o for o, p in pairs])
    return (f"| {alg} | {NAMES[key]} | {seeds} | {mean([o for o, _ in pairs])} | {mean([p for _, p in pairs])} | "
            f"{verdict.fmt(c)} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default="runs/sbs")
    a = ap.parse_args()
    print("| algorithm | metric | seed: official / pfl | official mean | pfl mean | n | pfl − official (s.e.) "
          "| 95 % interval | verdict |")
    print("|---|---|---|---|---|---|---|---|---|")
    for alg in sorted(os.listdir(a.runs)):
        folder = os.path.join(a.runs, alg)
        keys = METRICS.get(alg.split("-")[0])  # pfedhn-10c60: another setting of pfedhn
        if keys is None or not os.path.isdir(folder):
            continue
        off, pfl = load(folder, "official"), load(folder, "pfl")
        if not off and not pfl:
            continue
        for key in keys:
            print(row(alg, key, off, pfl))


if __name__ == "__main__":
    main()
