#!/usr/bin/python3
"""Prints the speed table of scripts/sbs/speed.sh from its runs' /usr/bin/time -v outputs.

usage: speed_table.py --out DIR [--json FILE]

DIR/<row>/ holds, per run, <side>-t<threads>-<i>.time (GNU time's -v report) and .log,
where side is pfl or peer and threads is the setting the run had (pfl: "default", its own:
OMP_NUM_THREADS unset, train.workers default; the peer: 1 or 2), and row.json (written by
speed.sh: the row's peer, algorithm, size and commands). For each row and setting the
table takes the median over runs of wall, user + sys CPU and peak RSS; the peer's setting
is the one with the lower median wall time (both are listed); speed-up is the peer's
median wall over pfl's. Where pfl's runs wrote metrics.jsonl (row.json names the run
folder), the median of pfl's own training and evaluation seconds (sums over the run's
rounds) is listed too. A run that failed (non-zero exit status) is counted apart and left
out of the medians.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

FIELDS = {
    "wall": r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (.+)",
    "user": r"User time \(seconds\): ([\d.]+)",
    "sys": r"System time \(seconds\): ([\d.]+)",
    "rss_kb": r"Maximum resident set size \(kbytes\): (\d+)",
    "status": r"Exit status: (\d+)",
}


def clock(s):
    """h:mm:ss or m:ss.ss -> seconds."""
    parts = [float(p) for p in s.strip().split(":")]
    secs = 0.0
    for p in parts:
        secs = secs * 60 + p
    return secs


def parse_time(path):
    with open(path) as f:
        text = f.read()
    out = {}
    for k, rx in FIELDS.items():
        m = re.search(rx, text)
        if not m:
            # GNU time writes "Command exited with non-zero status N" and still the report;
            # a report cut short (the process killed) lacks fields
            return None
        out[k] = clock(m.group(1)) if k == "wall" else float(m.group(1))
    out["cpu"] = out["user"] + out["sys"]
    return out


def pfl_phases(run_dir):
    """Training and evaluation seconds summed over a pfl run's rounds (metrics.jsonl files
    under run_dir), or None."""
    files = glob.glob(os.path.join(run_dir, "**", "metrics.jsonl"), recursive=True)
    if not files:
        return None
    train = evals = 0.0
    for path in files:
        with open(path) as f:
            for line in f:
                if line.strip():
                    m = json.loads(line)
                    train += m.get("time_train_s", 0.0)
                    evals += m.get("time_eval_s", 0.0)
    return train, evals


def median(xs):
    return statistics.median(xs) if xs else None


def summarize(row_dir):
    with open(os.path.join(row_dir, "row.json")) as f:
        row = json.load(f)
    settings = {}
    for path in sorted(glob.glob(os.path.join(row_dir, "*.time"))):
        m = re.match(r"(pfl|peer)-t(\w+)-(\d+)\.time$", os.path.basename(path))
        if not m:
            continue
        side, threads, i = m.group(1), m.group(2), int(m.group(3))
        rec = parse_time(path)
        key = (side, threads)
        st = settings.setdefault(key, {"ok": [], "failed": 0, "phases": []})
        if rec is None or rec["status"] != 0:
            st["failed"] += 1
            continue
        st["ok"].append(rec)
        if side == "pfl":
            ph = pfl_phases(os.path.join(row_dir, f"pfl-runs-{i}"))
            if ph:
                st["phases"].append(ph)
    med = {}
    for key, st in settings.items():
        ok = st["ok"]
        med[key] = {"n": len(ok), "failed": st["failed"],
                    "wall": median([r["wall"] for r in ok]), "cpu": median([r["cpu"] for r in ok]),
                    "rss_mib": median([r["rss_kb"] / 1024 for r in ok]),
                    "train": median([p[0] for p in st["phases"]]), "eval": median([p[1] for p in st["phases"]])}
    return row, med


def fmt(v, spec="{:.1f}"):
    return "—" if v is None else spec.format(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    rows = sorted(d for d in glob.glob(os.path.join(a.out, "*")) if os.path.isfile(os.path.join(d, "row.json")))
    if not rows:
        sys.exit(f"speed_table: no rows (row.json) under {a.out}")
    print("| peer | algorithm | size | pfl wall s | peer wall s (best threads) | peer wall s, 1 / 2 threads | "
          "speed-up (peer / pfl wall) | pfl CPU s | peer CPU s | pfl peak RSS MiB | peer peak RSS MiB | "
          "pfl train / eval s | runs (pfl, peer 1, peer 2; failed) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    out = []
    for d in rows:
        row, med = summarize(d)
        p = med.get(("pfl", "default"), {})
        peers = {t: med[("peer", t)] for t in ("1", "2") if ("peer", t) in med and med[("peer", t)]["wall"] is not None}
        best = min(peers, key=lambda t: peers[t]["wall"]) if peers else None
        q = peers.get(best, {})
        speedup = q["wall"] / p["wall"] if best and p.get("wall") else None
        failed = sum(m["failed"] for m in med.values())
        n = [med.get(k, {}).get("n", 0) for k in (("pfl", "default"), ("peer", "1"), ("peer", "2"))]
        print(f"| {row['peer']} | {row['algorithm']} | {row['size']} | {fmt(p.get('wall'))} | "
              f"{fmt(q.get('wall'))}{f' ({best})' if best else ''} | "
              f"{fmt(med.get(('peer', '1'), {}).get('wall'))} / {fmt(med.get(('peer', '2'), {}).get('wall'))} | "
              f"{fmt(speedup, '{:.2f}×')} | {fmt(p.get('cpu'))} | {fmt(q.get('cpu'))} | "
              f"{fmt(p.get('rss_mib'), '{:,.0f}')} | {fmt(q.get('rss_mib'), '{:,.0f}')} | "
              f"{fmt(p.get('train'))} / {fmt(p.get('eval'))} | {n[0]}, {n[1]}, {n[2]}; {failed} |")
        out.append({"row": os.path.basename(d), **row, "medians": {f"{k[0]}-t{k[1]}": v for k, v in med.items()},
                    "peer_best_threads": best, "speedup": speedup})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
