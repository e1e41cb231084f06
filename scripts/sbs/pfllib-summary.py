#!/usr/bin/env python3
"""Prints the side-by-side table of pfl and PFLlib that pfllib-run.sh produced.

The metric, on both sides, is PFLlib's "Averaged Test Accuracy": correct predictions over
test samples, pooled over all clients (so sample-weighted), each client with the model it
is evaluated with. pfl's is metrics.jsonl's `accuracy` (Σ correct / Σ predictions); pfl's
round r (0-based) is PFLlib's "Round number" r + 1 (both: after r + 1 rounds of training).

  final  the evaluation after the last round. FedBABU's PFLlib number is the one after its
         end-of-training fine-tuning (pfl fine-tunes before every evaluation instead),
         which follows one more round of training (range(global_rounds + 1)): pfl's
         FedBABU member trains R + 1 rounds. pfl's final is each run's evaluation after
         its own last round (its config.json's train.rounds), missing if it stopped early.
  tail   the mean of the evaluations after rounds R - T ... R (T = the config's tail_rounds)
         on both sides; PFLlib's Ditto prints a global and a personalized evaluation per
         round and the personalized one is taken; FedBABU's PFLlib per-round evaluations are
         before any fine-tuning.

Pairs: a seed counts where both sides finished; it is one partition, and (pfllib-run.sh's
default) PFLlib's torch seed too, so a pair varies both sides' training randomness. Per row
the table prints both sides' seed means, and through verdict.py the number of pairs, the
mean of the paired differences pfl − PFLlib (points) with its standard error, the 95 %
interval and the verdict (agrees: the interval inside ±1.5 points; differs: outside;
inconclusive: neither, with the pairs that would settle it). The first table compares the
final numbers, the second the tails (FedBABU's only at the final). --per-seed adds each
seed's finals and their difference.
"""
import argparse
import json
import os
import sys

import verdict

ORDER = ["fedavg", "ditto", "apfl", "perfedavg", "pfedme", "fedrep", "fedbabu", "fedper", "fedrod", "fedbn"]


def pfl_evals(out, seed, algo):
    """{round (1-based): pooled accuracy} of pfl's run, or None."""
    path = os.path.join(out, "pfl", f"sbs-pfllib-fmnist-s{seed}-{algo}", "metrics.jsonl")
    if not os.path.exists(path):
        return None
    ev = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("accuracy") is not None:
                ev[r["round"]] = r["accuracy"]  # metrics.jsonl counts rounds from 1
    return ev or None


def pfllib_evals(out, seed, algo, file=None):
    """({round: pooled accuracy}, final fine-tuned accuracy or None) of PFLlib's run."""
    path = os.path.join(out, "pfllib", f"s{seed}", f"{file or algo}.json")
    if not os.path.exists(path):
        return None, None
    with open(path) as f:
        res = json.load(f)
    ev, tuned = {}, None
    for e in res["evals"]:
        if e["kind"] == "fine-tuned":
            tuned = e["acc"]
        elif e["kind"] == "personalized" or e["round"] not in ev:
            ev[e["round"]] = e["acc"]
    return ev, tuned


def pfl_final(out, seed, algo, ev):
    """pfl's final accuracy: the evaluation after the run's own last round, or None."""
    if not ev:
        return None
    path = os.path.join(out, "pfl", f"sbs-pfllib-fmnist-s{seed}-{algo}", "config.json")
    with open(path) as f:
        return ev.get(json.load(f)["train"]["rounds"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="runs/sbs-pfllib")
    ap.add_argument("--seeds", default="1 2")
    ap.add_argument("--algos", default=" ".join(ORDER))
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--per-seed", action="store_true", help="also a table of each seed's final accuracies")
    ap.add_argument("--tail", type=int, default=10, help="tail_rounds: evaluations after rounds >= rounds - tail")
    a = ap.parse_args()
    seeds = a.seeds.split()
    algos = [x for x in ORDER if x in a.algos.split()] + [x for x in a.algos.split() if x not in ORDER]
    rows = [(x, x, x) for x in algos]
    if "pfedme" in algos:  # PFLlib's pFedMe evaluating θ (pfllib-run.py --pfedme-theta), where run
        rows.insert(algos.index("pfedme") + 1, ("pfedme", "pfedme-theta", "pfedme (PFLlib evaluating θ)"))
    window = lambda ev: [ev[r] for r in sorted(ev) if a.rounds - a.tail <= r <= a.rounds]
    mean = lambda v: sum(v) / len(v)
    pairs = {}  # label -> [(seed, pfl final, PFLlib final, pfl tail, PFLlib tail)]
    for algo, file, label in rows:
        pairs[label] = []
        for s in seeds:
            p = pfl_evals(a.out, s, algo)
            l, tuned = pfllib_evals(a.out, s, algo, file)
            if not p or not l or pfl_final(a.out, s, algo, p) is None or (a.rounds not in l and tuned is None):
                continue  # a seed counts only where both sides finished (paired)
            pw, lw = window(p), window(l)
            pairs[label].append((s, pfl_final(a.out, s, algo, p), tuned if tuned is not None else l.get(a.rounds),
                                 mean(pw) if pw else None, mean(lw) if lw else None))
    empty = [label for label, ps in pairs.items() if not ps]
    pairs = {label: ps for label, ps in pairs.items() if ps}
    for title, i in (("Final", 1), ("Tail", 3)):
        print(f"\n{title}:\n\n| algorithm | pfl | PFLlib {verdict.HEADER}")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for label, ps in pairs.items():
            if title == "Tail" and label == "fedbabu":
                print("| fedbabu | — | — | not compared: PFLlib's per-round evaluations are not fine-tuned, pfl's are | | | |")
                continue
            ps = [q for q in ps if q[i] is not None and q[i + 1] is not None]
            pf = f"{100 * mean([q[i] for q in ps]):.2f}" if ps else "—"
            lf = f"{100 * mean([q[i + 1] for q in ps]):.2f}" if ps else "—"
            c = verdict.compare([100 * (q[i] - q[i + 1]) for q in ps])
            print(f"| {label} | {pf} | {lf} | {verdict.fmt(c)} |")
    if a.per_seed:
        print("\nPer seed, final:\n\n| algorithm | " + " | ".join(f"pfl s{x} | PFLlib s{x} | Δ s{x}" for x in seeds) + " |")
        print("| --- |" + " --- | --- | --- |" * len(seeds))
        for label, ps in pairs.items():
            by = {q[0]: q for q in ps}
            cells = []
            for x in seeds:
                q = by.get(x)
                cells += ["—"] * 3 if q is None else [f"{100 * q[1]:.2f}", f"{100 * q[2]:.2f}", f"{100 * (q[1] - q[2]):+.2f}"]
            print(f"| {label} | " + " | ".join(cells) + " |")
    if empty:
        print(f"\nno pair (a side missing or unfinished for every seed): {', '.join(empty)}")
    print(f"\nseeds {' '.join(seeds)}; accuracy in % (pooled over clients' test samples), seed means over the pairs; "
          f"pfl − PFLlib in points, mean of the paired differences (s.e.); final: after round {a.rounds} "
          f"(pfl's FedBABU: {a.rounds + 1}, PFLlib's after its extra round); tail: mean of the evaluations after rounds "
          f"{a.rounds - a.tail} to {a.rounds}")


if __name__ == "__main__":
    sys.exit(main())
