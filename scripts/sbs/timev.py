#!/usr/bin/python3
"""Adds a process's wall time and peak memory, as GNU time measured them (`/usr/bin/time -v -o
TIME ...`), to a side-by-side result JSON under "process":

  wall_s       elapsed wall-clock seconds of the whole process (interpreter start, imports,
               data loading and every evaluation included)
  max_rss_kib  "Maximum resident set size": the largest of the process and the children it
               waited for (pfl_side.py's bin/pfl is such a child), in KiB
  user_s, sys_s, exit_status

These are what the process took on the machine it ran on, beside whatever else ran there; a
result says whether that machine was shared.

  timev.py --time R.time --into R.json
"""
import argparse
import json
import re
import sys

FIELDS = {
    "Elapsed (wall clock) time": "wall_s",
    "Maximum resident set size (kbytes)": "max_rss_kib",
    "User time (seconds)": "user_s",
    "System time (seconds)": "sys_s",
    "Exit status": "exit_status",
}


def clock(text):
    """GNU time's [h:]mm:ss[.ss] as seconds."""
    parts = [float(p) for p in text.split(":")]
    s = 0.0
    for p in parts:
        s = s * 60 + p
    return s


def parse(text):
    """The FIELDS of a `time -v` report, as numbers."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"\s*(.+?):\s+(\S+)\s*$", line)
        if not m:
            continue
        label, value = m.group(1), m.group(2)
        for prefix, key in FIELDS.items():
            if label.startswith(prefix):
                out[key] = clock(value) if key == "wall_s" else float(value)
    if "wall_s" not in out or "max_rss_kib" not in out:
        raise ValueError("not a `/usr/bin/time -v` report (no elapsed time or maximum resident set size)")
    out["max_rss_kib"] = int(out["max_rss_kib"])
    if "exit_status" in out:
        out["exit_status"] = int(out["exit_status"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time", required=True, help="the file `/usr/bin/time -v -o` wrote")
    ap.add_argument("--into", required=True, help="the result JSON to add it to")
    ap.add_argument("--self-test", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    try:
        with open(a.time) as f:
            proc = parse(f.read())
        with open(a.into) as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"timev: {e}")
    res["process"] = proc
    with open(a.into, "w") as f:
        json.dump(res, f, indent=1)
    print(f"timev: {a.into}: {proc['wall_s']:.0f} s wall, {proc['max_rss_kib'] / 1024:.0f} MiB peak RSS")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        r = parse("\tUser time (seconds): 1.50\n\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:02:03.5\n"
                  "\tMaximum resident set size (kbytes): 2048\n\tExit status: 0\n")
        assert r == {"user_s": 1.5, "wall_s": 3723.5, "max_rss_kib": 2048, "exit_status": 0}, r
        assert parse("\tElapsed (wall clock) time (h:mm:ss or m:ss): 0:07.25\n\tMaximum resident set size (kbytes): 1\n")["wall_s"] == 7.25
        print("timev.py: self-test passed")
    else:
        main()
