#!/usr/bin/python3
"""Prints the side-by-side table (markdown) from the result JSONs the runners wrote:
RUNS/<algorithm>/official-seed<S>.json and RUNS/<algorithm>/pfl-seed<S>.json, each with
"final_pooled_acc" (Σ correct / Σ samples over every client's test set after the last
round) and, where there is one, "final_mean_acc" (the plain mean over clients).

Seed S pairs the two sides: one partition (drawn by the official code for that seed and
read by pfl) and both sides' training randomness seeded with S. Per folder and metric the
table prints both sides' means over the pairs and, through verdict.py, the number of pairs,
the mean of the paired differences pfl − official (points) with its standard error, the
95 % interval and the verdict (agrees: the interval inside ±1.5 points; differs: outside;
inconclusive: neither, with the pairs that would settle it). A seed only one side has is
named and left out. The FedPerfix rows compare the paper's metric, the per-client mean, and
beside it the pooled accuracy (both sides report both); pFedHN and pFedGP report the pooled
one only. --per-seed adds each pair's numbers and difference.

  summary.py --runs runs/sbs [--per-seed]
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default="runs/sbs")
    ap.add_argument("--per-seed", action="store_true", help="also a table of every pair's numbers")
    a = ap.parse_args()
    rows, per_seed = [], []
    for alg in sorted(os.listdir(a.runs)):
        folder = os.path.join(a.runs, alg)
        keys = METRICS.get(alg.split("-")[0])  # pfedhn-10c60: another setting of pfedhn
        if keys is None or not os.path.isdir(folder):
            continue
        off, pfl = load(folder, "official"), load(folder, "pfl")
        if not off and not pfl:
            continue
        seeds = sorted(set(off) & set(pfl))
        unpaired = sorted(set(off) ^ set(pfl))
        mean = lambda v: f"{sum(v) / len(v):.2f}" if v else "—"
        for key in keys:
            paired = [s for s in seeds if key in off[s] and key in pfl[s]]
            o = [100 * off[s][key] for s in paired]
            p = [100 * pfl[s][key] for s in paired]
            c = verdict.compare([y - x for x, y in zip(o, p)])
            label = alg + (f" (one side only, left out: seed {', '.join(map(str, unpaired))})" if unpaired else "")
            rows.append(f"| {label} | {NAMES[key]} | {mean(o)} | {mean(p)} | {verdict.fmt(c)} |")
            per_seed += [f"| {alg} | {NAMES[key]} | {s} | {x:.2f} | {y:.2f} | {y - x:+.2f} |" for s, x, y in zip(paired, o, p)]
    print(f"| algorithm | metric | official | pfl {verdict.HEADER}")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if a.per_seed:
        print("\n| algorithm | metric | seed | official | pfl | pfl − official |\n|---|---|---|---|---|---|")
        print("\n".join(per_seed))
    print("\nofficial and pfl: means over the pairs; pfl − reference (the official code) in points, "
          "mean of the paired differences (s.e.)")


if __name__ == "__main__":
    main()
