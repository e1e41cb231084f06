#!/usr/bin/env python3
"""Runs one algorithm of PFLlib (TsingZ0/PFLlib) on a dataset folder written by
pfllib-data.py, without touching the checkout, and writes what it evaluated as JSON.

PFLlib's system/main.py reads ../dataset/<name>/ and writes ../results/ and models/ relative
to its working directory, so this script runs main.py (imported from --checkout, its bytecode
not cached there) in a scratch folder WORK/system beside WORK/dataset/<name> (a link to
--data). Its command line is the one printed at the start of the log; every
hyper-parameter not given below is main.py's default.

--digit5 runs PFLlib's own BatchNorm network, Digit5CNN (flcore/trainmodel/models.py: the
FedBN paper's digit CNN, three 5×5 convolutions and two hidden FC layers, each followed by a
BatchNorm named bn1..bn5), which main.py builds for `-m CNN` when the dataset's name contains
"Digit5" and not "MNIST"; it reads 3×32×32 images (pfllib-data.py --pad-to 32 --channels 3)
into a dataset folder named so. PFLlib's FedAvgCNN for Fashion-MNIST has no BatchNorm, so its
FedBN (which keeps every parameter whose name contains 'bn' local) would be FedAvg there.
Nothing of the network is replaced: main.py picks it by the folder's name.

The JSON: {"algorithm", "seed", "evals": [{"round", "kind", "acc", "std"}], "cmd", "seconds"}
where acc is PFLlib's "Averaged Test Accuracy" (correct / test samples over all clients)
and std its "Std Test Accuracy" (population std of the clients' accuracies), and kind the
heading PFLlib printed before it ("global", "personalized", "fine-tuned").
"""
import argparse
import json
import os
import re
import runpy
import sys
import time

ALGOS = {  # pfl's name -> PFLlib's -algo and the flags that match configs/sbs-pfllib-fmnist.yaml
    "fedavg": ("FedAvg", []),
    "ditto": ("Ditto", ["-mu", "1", "-pls", "1"]),
    "apfl": ("APFL", ["-al", "1"]),
    "perfedavg": ("PerAvg", []),
    "pfedme": ("pFedMe", ["-lam", "1", "-K", "5", "-lrp", "0.01", "-bt", "1"]),
    "fedrep": ("FedRep", ["-pls", "1"]),
    "fedbabu": ("FedBABU", ["-fte", "10"]),
    "fedper": ("FedPer", []),
    "fedrod": ("FedROD", []),
    "fedbn": ("FedBN", []),
}


def stub_missing():
    """main.py imports every server; two of its imports serve none of the algorithms run
    here: cvxpy (FedPAC's solver) and calmsize (the memory report's number format). Where
    they are not installed, stand-ins let main.py load; FedPAC would fail on first use."""
    import importlib.util
    import types
    if importlib.util.find_spec("cvxpy") is None:
        sys.modules["cvxpy"] = types.ModuleType("cvxpy")
    if importlib.util.find_spec("calmsize") is None:
        m = types.ModuleType("calmsize")
        m.size = float
        sys.modules["calmsize"] = m


def pfedme_theta():
    """Makes PFLlib's pFedMe evaluate each client's θ (a diagnostic, not PFLlib's algorithm
    as published): its "personalized" evaluation reads the global model, because
    personalized_params are the model's own parameter objects, which train() and
    set_parameters overwrite with w. This keeps a copy of θ after each batch's K steps and
    evaluates that copy, restoring the model's parameters afterwards, so training is
    untouched."""
    from flcore.clients.clientpFedMe import clientpFedMe
    train, test = clientpFedMe.train, clientpFedMe.test_metrics_personalized

    def train_keeping_theta(self):
        step = self.optimizer.step

        def keep(local, device):
            params = step(local, device)
            self.theta = [p.data.clone() for p in params]
            return params
        self.optimizer.step = keep
        try:
            train(self)
        finally:
            del self.optimizer.step

    def test_theta(self):
        saved = [p.data.clone() for p in self.model.parameters()]
        for p, t in zip(self.model.parameters(), getattr(self, "theta", saved)):
            p.data = t.clone()
        try:
            return test(self)
        finally:
            for p, t in zip(self.model.parameters(), saved):
                p.data = t

    clientpFedMe.train, clientpFedMe.test_metrics_personalized = train_keeping_theta, test_theta


class Tee:
    """Copies what PFLlib prints to the log and keeps it for parsing."""

    def __init__(self, *outs):
        self.outs, self.text = outs, []

    def write(self, s):
        self.text.append(s)
        for o in self.outs:
            o.write(s)

    def flush(self):
        for o in self.outs:
            o.flush()


def parse(log):
    """Reads the evaluations PFLlib printed: (round, kind, acc, std) in order."""
    evals, rnd, kind = [], None, None
    for line in log.splitlines():
        m = re.match(r"-+Round number: (\d+)-+", line.strip())
        if m:
            rnd = int(m.group(1))
            continue
        if line.startswith("Evaluate") or "Evaluate fine-tuned" in line:
            kind = "fine-tuned" if "fine-tuned" in line else "personalized" if "personalized" in line else "global"
            continue
        m = re.match(r"Averaged? Test Accuracy: ([0-9.]+)", line)  # pFedMe prints "Average"
        if m:
            evals.append({"round": rnd, "kind": kind, "acc": float(m.group(1)), "std": None})
            continue
        m = re.match(r"Std Test Accuracy: ([0-9.]+)", line)
        if m and evals and evals[-1]["std"] is None:
            evals[-1]["std"] = float(m.group(1))
    return evals


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", required=True, help="a PFLlib checkout (holds system/main.py)")
    ap.add_argument("--data", required=True, help="the dataset folder pfllib-data.py wrote")
    ap.add_argument("--algo", required=True, choices=sorted(ALGOS), help="pfl's name of the algorithm")
    ap.add_argument("--work", required=True, help="scratch folder for PFLlib's outputs")
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--seed", type=int, default=0, help="the partition's seed, recorded only (see --torch-seed)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--eval-gap", type=int, default=5)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--digit5", action="store_true",
                    help="PFLlib's Digit5CNN (BatchNorm; for FedBN): --data a 3×32×32 folder whose name contains Digit5")
    ap.add_argument("--pfedme-theta", action="store_true", help="pFedMe: evaluate each client's θ (a diagnostic)")
    ap.add_argument("--torch-seed", type=int,
                    help="seed torch with this where PFLlib seeds it with 0 (main.py and every client), so that "
                         "PFLlib's training randomness varies as pfl's seed does (pfllib-run.sh passes the pair's seed)")
    ap.add_argument("--reparse", action="store_true", help="only read the log beside --out again and rewrite --out")
    a = ap.parse_args()
    log_path = os.path.splitext(a.out)[0] + ".log"
    if a.reparse:
        with open(log_path) as f:
            text = f.read()
        write(a, ALGOS[a.algo][0], text.splitlines()[0].split("&& python3 ", 1)[-1], text, None, log_path)
        return

    main_py = os.path.join(os.path.abspath(a.checkout), "system", "main.py")
    if not os.path.isfile(main_py):
        sys.exit(f"pfllib-run: --checkout {a.checkout}: no system/main.py (not a PFLlib checkout)")
    data = os.path.abspath(a.data)
    for f in ("config.json", "train/0.npz", "test/0.npz"):
        if not os.path.exists(os.path.join(data, f)):
            sys.exit(f"pfllib-run: --data {a.data}: no {f} (write it with pfllib-data.py)")
    name = os.path.basename(data.rstrip("/"))
    if a.digit5 and ("Digit5" not in name or "MNIST" in name):
        sys.exit(f"pfllib-run: --data {a.data}: PFLlib builds Digit5CNN only for a dataset name containing Digit5 and not MNIST")
    if not a.digit5 and "MNIST" not in name:
        sys.exit(f"pfllib-run: --data {a.data}: PFLlib picks FedAvgCNN's MNIST shape only for a dataset name containing MNIST")

    work = os.path.abspath(a.work)
    os.makedirs(os.path.join(work, "system"), exist_ok=True)
    os.makedirs(os.path.join(work, "dataset"), exist_ok=True)
    link = os.path.join(work, "dataset", name)
    if os.path.islink(link):
        os.remove(link)
    os.symlink(data, link)

    sys.dont_write_bytecode = True  # nothing lands in the checkout
    stub_missing()
    sys.path.insert(0, os.path.dirname(main_py))
    import torch
    torch.set_num_threads(a.threads)
    if a.pfedme_theta:
        if a.algo != "pfedme":
            sys.exit("pfllib-run: --pfedme-theta is for --algo pfedme")
        pfedme_theta()

    if a.torch_seed is not None:
        fixed = torch.manual_seed  # main.py and clientbase.py call torch.manual_seed(0)
        torch.manual_seed = lambda s: fixed(a.torch_seed if s == 0 else s)
    algo, flags = ALGOS[a.algo]
    argv = ["main.py", "-data", name, "-m", "CNN", "-algo", algo, "-gr", str(a.rounds), "-eg", str(a.eval_gap),
            "-nc", str(a.clients), "-dev", a.device, "-t", "1"] + flags
    os.makedirs(os.path.dirname(os.path.abspath(a.out)) or ".", exist_ok=True)
    start = time.time()
    with open(log_path, "w") as log:
        log.write("cd %s && %s\n" % (os.path.join(work, "system"), " ".join(["python3", main_py] + argv[1:])))
        tee = Tee(log, sys.stdout) if os.environ.get("PFLLIB_VERBOSE") else Tee(log)
        old, sys.stdout = sys.stdout, tee
        cwd = os.getcwd()
        try:
            os.chdir(os.path.join(work, "system"))
            sys.argv = argv
            runpy.run_path(main_py, run_name="__main__")
        finally:
            os.chdir(cwd)
            sys.stdout = old
    write(a, algo, " ".join(argv), "".join(tee.text), round(time.time() - start, 1), log_path)


def write(a, algo, cmd, log, seconds, log_path):
    """Writes --out from PFLlib's log."""
    evals = parse(log)
    if not evals:
        sys.exit(f"pfllib-run: {log_path}: PFLlib printed no evaluation")
    res = {"algorithm": a.algo, "pfllib_algorithm": algo, "seed": a.seed, "device": a.device, "digit5": a.digit5,
           "pfedme_theta": a.pfedme_theta, "torch_seed": a.torch_seed,
           "cmd": cmd, "seconds": seconds, "evals": evals}
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    last = evals[-1]
    print(f"pfllib-run: {a.algo} ({algo}) seed {a.seed}: last evaluation ({last['kind']}, round {last['round']}) "
          f"{100 * last['acc']:.2f}% -> {a.out}")

if __name__ == "__main__":
    main()
