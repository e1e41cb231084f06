#!/usr/bin/python3
"""Prints the side-by-side table (markdown) from the result JSONs the runners wrote:
RUNS/<algorithm>/official-seed<S>.json and RUNS/<algorithm>/pfl-seed<S>.json, each with
"final_pooled_acc" (Σ correct / Σ samples over every client's test set after the last
round) and, where there is one, "final_mean_acc" (the plain mean over clients).

A seed is a pair where both sides wrote its JSON: one partition (drawn by the official code
for that seed and read by pfl) and both sides' training randomness seeded with it. Per
folder the table prints both sides' means over the pairs and, through verdict.py, the
number of pairs, the mean of the paired differences pfl − official (points) with its
standard error, the 95 % interval and the verdict (agrees: the interval inside ±1.5
points; differs: outside; inconclusive: neither, with the pairs that would settle it).
--per-seed adds each pair's numbers and difference.

  summary.py --runs runs/sbs [--per-seed]
"""
import argparse
import glob
import json
import os
import re

import verdict

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
    ap.add_argument("--per-seed", action="store_true", help="also a table of every pair's numbers")
    a = ap.parse_args()
    rows, per_seed = [], []
    for alg in sorted(os.listdir(a.runs)):
        folder = os.path.join(a.runs, alg)
        key = METRIC.get(alg.split("-")[0])  # pfedhn-10c60: another setting of pfedhn
        if key is None or not os.path.isdir(folder):
            continue
        off, pfl = load(folder, "official"), load(folder, "pfl")
        if not off and not pfl:
            continue
        seeds = sorted(set(off) & set(pfl))
        o = [100 * off[s][key] for s in seeds]
        p = [100 * pfl[s][key] for s in seeds]
        name = "pooled test acc. (%)" if key == "final_pooled_acc" else "mean client test acc. (%)"
        unpaired = sorted(set(off) ^ set(pfl))
        mean = lambda v: f"{sum(v) / len(v):.2f}" if v else "—"
        c = verdict.compare([y - x for x, y in zip(o, p)])
        label = alg + (f" (one side only, left out: seed {', '.join(map(str, unpaired))})" if unpaired else "")
        rows.append(f"| {label} | {name} | {mean(o)} | {mean(p)} | {verdict.fmt(c)} |")
        per_seed += [f"| {alg} | {s} | {x:.2f} | {y:.2f} | {y - x:+.2f} |" for s, x, y in zip(seeds, o, p)]
    print(f"| algorithm | metric | official | pfl {verdict.HEADER}")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if a.per_seed:
        print("\n| algorithm | seed | official | pfl | pfl − official |\n|---|---|---|---|---|")
        print("\n".join(per_seed))
    print("\nofficial and pfl: means over the pairs; pfl − reference (the official code) in points, "
          "mean of the paired differences (s.e.)")


if __name__ == "__main__":
    main()
