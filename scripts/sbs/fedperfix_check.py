#!/usr/bin/python3
"""Checks that the two sides of the FedPerfix side-by-side comparison trained the same thing:

  --partition P.json --pfl-clients DIR/clients.json
      pfl's clients (`pfl partition -c configs/sbs-fedperfix-fmnist.yaml --set
      data.partition_file=P.json -out DIR` exports what a run trains on) are exactly the
      official partition's lists, client by client and in order;
  --official R.json --pfl-run RUN_DIR
      pfl's model (the parameter names and shapes in RUN_DIR/checkpoint.safetensors, global/...)
      is the official one (R.json's "params", under timm's names), and the parameters pfl keeps
      with each client (store/...) are the ones the official preset's local_parts keep
      ("local_params"). The official Local preset lists no local parts (its server never
      aggregates), so for it only the names and shapes are compared.

Either pair or both; exits non-zero naming the first difference.

  fedperfix_check.py --partition P.json --pfl-clients DIR/clients.json
  fedperfix_check.py --official runs/sbs/fedperfix-fedperfix/official-seed1.json --pfl-run runs/sbs/pfl/NAME
"""
import argparse
import json
import math
import os
import struct
import sys


def safetensors_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def check_partition(partition, clients):
    with open(partition) as f:
        want = json.load(f)
    with open(clients) as f:
        got = json.load(f)["clients"]
    if len(got) != len(want["train"]):
        sys.exit(f"fedperfix_check: pfl has {len(got)} clients, {partition} {len(want['train'])}")
    for c, cl in enumerate(got):
        for split in ("train", "test"):
            if cl[split] != want[split][c]:
                sys.exit(f"fedperfix_check: client {c}'s {split} samples differ between pfl ({clients}) and {partition}")
    n = sum(len(t) for t in want["train"]), sum(len(t) for t in want["test"])
    print(f"fedperfix_check: pfl trains and tests {partition}'s {len(got)} clients ({n[0]} training, {n[1]} test "
          "samples), the same lists in the same order")


def check_model(official, run):
    with open(official) as f:
        res = json.load(f)
    header = safetensors_header(os.path.join(run, "checkpoint.safetensors"))
    shapes = {k[len("global/"):]: v["shape"][1:] for k, v in header.items() if k.startswith("global/")}
    stored = sorted(k[len("store/"):] for k in header if k.startswith("store/"))
    want = res["params"]
    if shapes != want:
        only_pfl = sorted(set(shapes) - set(want))
        only_off = sorted(set(want) - set(shapes))
        other = sorted(k for k in set(shapes) & set(want) if shapes[k] != want[k])
        sys.exit(f"fedperfix_check: {run}'s model is not {official}'s: only pfl {only_pfl[:5]}, only official "
                 f"{only_off[:5]}, other shapes {other[:5]}")
    n = sum(math.prod(s) for s in want.values())
    if res["method"] == "Local":
        print(f"fedperfix_check: {res['method']}: the same {len(want)} parameters ({n} values); pfl keeps "
              f"{len(stored)} of them with each client (Local: all)")
        return
    if stored != res["local_params"]:
        sys.exit(f"fedperfix_check: {res['method']}: pfl keeps {stored} with each client, the official preset "
                 f"{res['local_params']}")
    print(f"fedperfix_check: {res['method']}: the same {len(want)} parameters ({n} values), and the same "
          f"{len(stored)} kept with each client")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partition")
    ap.add_argument("--pfl-clients")
    ap.add_argument("--official")
    ap.add_argument("--pfl-run")
    a = ap.parse_args()
    if bool(a.partition) != bool(a.pfl_clients) or bool(a.official) != bool(a.pfl_run) or not (a.partition or a.official):
        ap.error("give --partition with --pfl-clients, --official with --pfl-run, or both pairs")
    if a.partition:
        check_partition(a.partition, a.pfl_clients)
    if a.official:
        check_model(a.official, a.pfl_run)


if __name__ == "__main__":
    main()
