#!/usr/bin/python3
"""Prints the side-by-side tables for the official FedTP code (fedtp-run.sh's result JSONs:
RUNS/<fedtp|fedavg>/official-seed<S>.json and pfl-seed<S>.json), pairing the two sides by
seed (one seed: one exported partition, read by both; the official --init_seed and pfl's seed).

Both metrics are the official code's evaluation: every client evaluated after the server
update on its own test split, pooled over clients (Σ correct / Σ samples; main.py's
test_avg_acc):
  final     at the last round;
  Test Acc  the mean of that over the evaluations from --test_round on (main.py's "Test Acc";
            the config's tail_rounds).
pfl's pooled accuracy is computed from its per-client accuracies and the clients' test counts
(pfl_side.py), the official one from the counts main.py evaluated. The rows go through
verdict.py (n, mean difference, paired s.e., 95 % interval, verdict); the per-seed numbers and
each process's wall time and peak RSS (timev.py) follow.

  fedtp-summary.py --runs runs/sbs/fedtp
"""
import argparse
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verdict  # noqa: E402

ALGS = [("fedtp", "FedTP"), ("fedavg", "FedAvg")]


def load(folder, side):
    out = {}
    for p in sorted(glob.glob(os.path.join(folder, f"{side}-seed*.json"))):
        seed = int(re.search(r"seed(\d+)\.json$", p).group(1))
        with open(p) as f:
            out[seed] = json.load(f)
    return out


def official_metrics(r):
    """(final pooled, Test Acc, evaluated rounds) of an official result, in percent."""
    ev = r["evals"]
    return 100 * r["final_pooled_acc"], 100 * sum(e["pooled_acc"] for e in ev) / len(ev), [e["round"] for e in ev]


def pfl_metrics(r, rounds):
    """The same for pfl, over the evaluations of the official side's rounds."""
    n = r["test_counts"]
    pooled = {e["round"]: sum(a * k for a, k in zip(e["client_acc"], n)) / sum(n) for e in r["client_acc_per_eval"]}
    missing = [x for x in rounds if x not in pooled]
    if missing:
        raise ValueError(f"pfl evaluated no round {missing}")
    return 100 * r["final_pooled_acc"], 100 * sum(pooled[x] for x in rounds) / len(rounds), rounds


def pairs(folder):
    """Per seed: {metric: (official, pfl)} and the two processes' records; problems listed."""
    off, pfl = load(folder, "official"), load(folder, "pfl")
    rows, problems = {}, []
    for s in sorted(set(off) | set(pfl)):
        if s not in off or s not in pfl:
            problems.append(f"seed {s}: only the {'official' if s in off else 'pfl'} side finished")
            continue
        of, ot, rounds = official_metrics(off[s])
        if pfl[s]["round"] != off[s]["round"]:
            problems.append(f"seed {s}: last round {off[s]['round']} (official) against {pfl[s]['round']} (pfl)")
            continue
        if pfl[s]["test_counts"] != off[s]["test_counts"]:
            problems.append(f"seed {s}: the two sides' clients have different test counts")
            continue
        try:
            pf, pt, _ = pfl_metrics(pfl[s], rounds)
        except ValueError as e:
            problems.append(f"seed {s}: {e}")
            continue
        rows[s] = {"final": (of, pf), "tail": (ot, pt), "rounds": rounds,
                   "process": (off[s].get("process"), pfl[s].get("process"))}
    return rows, problems


def mean(xs):
    return sum(xs) / len(xs) if xs else None


def num(x):
    return "–" if x is None else f"{x:.2f}"


def schedule(rounds):
    """Evaluated rounds as "a–b every k" (or the one round)."""
    if len(rounds) == 1:
        return str(rounds[0])
    return f"{rounds[0]}–{rounds[-1]} every {rounds[1] - rounds[0]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default="runs/sbs/fedtp")
    a = ap.parse_args()
    names = {"final": "pooled test acc., last round (%)", "tail": "Test Acc: pooled, mean over rounds ≥ test_round (%)"}
    data = {}
    for alg, label in ALGS:
        folder = os.path.join(a.runs, alg)
        if os.path.isdir(folder):
            data[alg] = pairs(folder)
            for p in data[alg][1]:
                print(f"fedtp-summary: {label}: {p}", file=sys.stderr)
    print("| algorithm | metric | official mean | pfl mean |" + verdict.HEADER[1:])
    print("|---|---|---|---|---|---|---|---|")
    for alg, label in ALGS:
        rows = data.get(alg, ({}, []))[0]
        for m in ("final", "tail"):
            o = [rows[s][m][0] for s in sorted(rows)]
            p = [rows[s][m][1] for s in sorted(rows)]
            c = verdict.compare([y - x for x, y in zip(o, p)])
            print(f"| {label} | {names[m]} | {num(mean(o))} | {num(mean(p))} | {verdict.fmt(c)} |")
    print()
    print("| algorithm | seed | evaluated rounds | official final | pfl final | official Test Acc | pfl Test Acc |")
    print("|---|---|---|---|---|---|---|")
    for alg, label in ALGS:
        rows = data.get(alg, ({}, []))[0]
        for s in sorted(rows):
            r = rows[s]
            print(f"| {label} | {s} | {schedule(r['rounds'])} | "
                  f"{r['final'][0]:.2f} | {r['final'][1]:.2f} | {r['tail'][0]:.2f} | {r['tail'][1]:.2f} |")
    print()
    print("Whole process, /usr/bin/time -v (wall s; peak RSS MiB), per seed:")
    print()
    print("| algorithm | side | wall s per seed | mean wall s | peak RSS MiB per seed | mean peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for alg, label in ALGS:
        rows = data.get(alg, ({}, []))[0]
        for i, side in enumerate(("official", "pfl")):
            procs = [rows[s]["process"][i] for s in sorted(rows) if rows[s]["process"][i]]
            if not procs:
                continue
            w = [x["wall_s"] for x in procs]
            m = [x["max_rss_kib"] / 1024 for x in procs]
            print(f"| {label} | {side} | {', '.join(f'{x:.0f}' for x in w)} | {mean(w):.0f} | "
                  f"{', '.join(f'{x:.0f}' for x in m)} | {mean(m):.0f} |")


if __name__ == "__main__":
    main()
