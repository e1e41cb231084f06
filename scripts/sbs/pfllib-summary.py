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

Each cell is the mean over the seeds both sides finished (the seeds column; ± half their
range with two); Δ is pfl − PFLlib. --per-seed adds each seed's final accuracies.
"""
import argparse
import json
import os
import sys

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


def cell(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None, "—"
    m = sum(vals) / len(vals)
    if len(vals) == 1:
        return m, f"{100 * m:.2f}"
    return m, f"{100 * m:.2f} ± {50 * (max(vals) - min(vals)):.2f}"


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
    print(f"| algorithm | seeds | pfl final | PFLlib final | Δ final | pfl tail | PFLlib tail | Δ tail |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = [(x, x, x) for x in algos]
    if "pfedme" in algos:  # PFLlib's pFedMe evaluating θ (pfllib-run.py --pfedme-theta), where run
        rows.insert(algos.index("pfedme") + 1, ("pfedme", "pfedme-theta", "pfedme (PFLlib evaluating θ)"))
    for algo, file, label in rows:
        cols = {k: [] for k in ("pf", "lf", "pt", "lt")}
        n = 0
        for s in seeds:
            p = pfl_evals(a.out, s, algo)
            l, tuned = pfllib_evals(a.out, s, algo, file)
            if not p or not l or pfl_final(a.out, s, algo, p) is None or (a.rounds not in l and tuned is None):
                continue  # a seed counts only where both sides finished (paired means)
            n += 1
            window = lambda ev: [ev[r] for r in sorted(ev) if a.rounds - a.tail <= r <= a.rounds]
            if p:
                cols["pf"].append(pfl_final(a.out, s, algo, p))
                w = window(p)
                cols["pt"].append(sum(w) / len(w) if w else None)
            if l:
                cols["lf"].append(tuned if tuned is not None else l.get(a.rounds))
                w = window(l)
                cols["lt"].append(sum(w) / len(w) if w else None)
        (pf, pfs), (lf, lfs), (pt, pts), (lt, lts) = (cell(cols[k]) for k in ("pf", "lf", "pt", "lt"))
        d = lambda x, y: "—" if x is None or y is None else f"{100 * (x - y):+.2f}"
        if file != algo and not cols["lf"]:
            continue
        print(f"| {label} | {n} | {pfs} | {lfs} | {d(pf, lf)} | {pts} | {lts} | {d(pt, lt)} |")
    if a.per_seed:
        print("\n| algorithm | " + " | ".join(f"pfl s{x} | PFLlib s{x}" for x in seeds) + " |")
        print("| --- |" + " --- | --- |" * len(seeds))
        for algo, file, label in rows:
            cells = []
            for x in seeds:
                p = pfl_evals(a.out, x, algo)
                l, tuned = pfllib_evals(a.out, x, algo, file)
                pf = pfl_final(a.out, x, algo, p)
                lf = (tuned if tuned is not None else l.get(a.rounds)) if l else None
                cells += ["—" if v is None else f"{100 * v:.2f}" for v in (pf, lf)]
            if file != algo and cells[1::2].count("—") == len(seeds):
                continue
            print(f"| {label} | " + " | ".join(cells) + " |")
    print(f"\nseeds {' '.join(seeds)}; accuracy in % (pooled over clients' test samples), mean ± half the range over seeds; "
          f"final: after round {a.rounds} (pfl's FedBABU: {a.rounds + 1}, PFLlib's after its extra round); tail: mean of the evaluations after rounds {a.rounds - a.tail} to {a.rounds}")


if __name__ == "__main__":
    sys.exit(main())
