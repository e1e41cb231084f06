#!/usr/bin/python3
"""Runs the official FedTP code (zhyczy/FedTP, main.py) unmodified on Fashion-MNIST repacked as
CIFAR-10 (repack_fmnist.py), training every client on the images pfl's exported partition
gives it (`pfl partition -c CONFIG`, clients.json).

Get the code: fetch github:zhyczy/FedTP (commit 3cca0d7f57c09800faab85ff443459bd2df37589 was
run) and make a work tree of it outside this repository; nothing of it is copied here. Its
ViT imports einops, which Debian does not package: fetch github:arogozhnikov/einops and pass
a work tree of tag v0.8.2 (8e911db71f2e693a0c434b041180388c685ed06f) as --einops; it is the
real einops, put first on sys.path. torchvision and faiss are Debian's (python3-torchvision,
python3-faiss; faiss is imported by the code and used only by its KNN variant).

main.py runs as it is (runpy, as `python main.py ARGS`) with the arguments below; what this
script adds from the outside:

  - torch.utils.tensorboard: main.py imports SummaryWriter and never uses it; Debian has no
    tensorboard, so that module is replaced by one whose SummaryWriter raises if called;
  - torchvision's CIFAR-10 checksum check only checks that the files exist (the repacked
    files are not CIFAR-10's);
  - one thread (OMP/MKL/OpenBLAS variables before NumPy and torch load; torch.set_num_threads);
  - the partition: utils.partition_data, which main.py calls once after seeding with
    --init_seed, runs as it is (so every random draw after it is the unmodified run's), then
    its client index maps are replaced by clients.json's lists (train indices into the
    training batches, test indices into test_batch), after checking the labels clients.json
    records against the repacked files; the per-client class counts it returns are
    recomputed from the new maps with the code's own record_net_data_stats;
  - reading its evaluations: compute_accuracy_per_client (FedTP) and
    compute_accuracy_per_client_simple (FedAvg) run as they are; their per-client correct and
    total counts are recorded (main.py keeps only the pooled accuracy of each evaluation);
  - a scratch --work folder as the working directory (main.py writes results_table/ there)
    with its --logdir and --modeldir.

The code evaluates at rounds r (1-based) with r >= --test-round and r % --eval-step == 0,
every client on its own test split with its model (FedTP: the global model with the
hypernetwork's Q/K/V for that client; FedAvg: the global model), after the server update.
Its accuracy is pooled: Σ correct / Σ samples over all clients (test_avg_acc); its reported
"Test Acc" is the mean of that over the evaluations.

  run:        fedtp_official.py --checkout DIR --einops DIR --data runs/sbs/fedtp/fmnist \\
                  --export runs/sbs/fedtp/data/export-seed1 --alg FedTP --seed 1 --work W --out R.json
  pfl's file: fedtp_official.py --export E --write-partition P.json

R.json: "evals" (per evaluation: round, pooled accuracy, per-client accuracies and counts),
"final_pooled_acc" and "final_mean_acc" (the last evaluation's pooled and per-client-mean
accuracy, fractions), "final_client_acc", "test_counts", "test_acc_mean" (the official "Test
Acc": mean of the pooled accuracies, in percent, as main.py logs it), the official results
dict, the main.py argument list and the checkout's commit.
"""
import argparse
import json
import os
import runpy
import subprocess
import sys
import time
import types

for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_v] = "1"

import numpy as np  # noqa: E402

ALGS = ["FedTP", "fedavg"]  # main.py's --alg values this harness runs


def no_tensorboard():
    """Registers a torch.utils.tensorboard whose SummaryWriter refuses to run (main.py imports
    it and never calls it)."""
    mod = types.ModuleType("torch.utils.tensorboard")

    class SummaryWriter:  # noqa: D401
        def __init__(self, *args, **kwargs):
            raise RuntimeError("fedtp_official: tensorboard is not installed; main.py was not expected to write summaries")

    mod.SummaryWriter = SummaryWriter
    sys.modules["torch.utils.tensorboard"] = mod


def load_export(folder):
    """clients.json of `pfl partition -c`, with its test indices made relative to the test set."""
    path = os.path.join(folder, "clients.json")
    with open(path) as f:
        e = json.load(f)
    off = e["train_images"]
    clients = []
    for i, c in enumerate(e["clients"]):
        test = [t - off for t in c["test"]]
        if any(t < 0 or t >= e["test_images"] for t in test) or any(t < 0 or t >= off for t in c["train"]):
            sys.exit(f"fedtp_official: {path}: client {i} has an index outside its split")
        clients.append({"train": c["train"], "test": test, "train_labels": c["train_labels"],
                        "test_labels": c["test_labels"]})
    return e, clients


def main_args(a):
    """main.py's command line: the harness's size and settings, main.py's defaults otherwise."""
    return ["--model=vit", "--dataset=cifar10", f"--alg={a.alg}", f"--lr={a.lr}", f"--batch-size={a.batch}",
            f"--epochs={a.epochs}", f"--n_parties={a.clients}", f"--rho={a.rho}", f"--reg={a.reg}",
            f"--comm_round={a.rounds}", "--partition=noniid-labeluni", "--device=cpu",
            f"--datadir={os.path.abspath(a.data)}/", f"--logdir={os.path.join(a.work, 'logs')}/",
            f"--modeldir={os.path.join(a.work, 'models')}/", f"--init_seed={a.seed}", f"--sample={a.sample}",
            f"--eval_step={a.eval_step}", f"--test_round={a.test_round}", f"--depth={a.depth}",
            f"--log_file_name={a.alg}-seed{a.seed}"]


def install(a, clients, evals):
    """The outside adaptations on the code's modules (see the module doc)."""
    import torch
    import torchvision.datasets.cifar as cifar

    torch.set_num_threads(1)
    cifar.check_integrity = lambda path, md5=None: os.path.isfile(path)
    no_tensorboard()
    import utils as U  # the checkout's utils.py (sys.path[0])

    original = U.partition_data

    def exported_partition(dataset, datadir, partition, n_parties, beta=0.4, logdir=None):
        X_train, y_train, X_test, y_test, _, _, _, _ = original(dataset, datadir, partition, n_parties, beta, logdir)
        if n_parties != len(clients):
            sys.exit(f"fedtp_official: --n_parties {n_parties}, the export has {len(clients)} clients")
        train, test = {}, {}
        for i, c in enumerate(clients):
            train[i], test[i] = np.array(c["train"], dtype=np.int64), np.array(c["test"], dtype=np.int64)
            if y_train[train[i]].tolist() != c["train_labels"] or y_test[test[i]].tolist() != c["test_labels"]:
                sys.exit(f"fedtp_official: client {i}: the repacked files' labels are not the export's "
                         f"(repack the same images pfl read)")
        print(f"fedtp_official: the code's partition replaced by the export's {len(clients)} clients", flush=True)
        return (X_train, y_train, X_test, y_test, train, test,
                U.record_net_data_stats(y_train, train, logdir), U.record_net_data_stats(y_test, test, logdir))

    U.partition_data = exported_partition

    def recorder(fn):
        def wrapped(*args, **kwargs):
            r = fn(*args, **kwargs)
            res = r[4]  # test_results: per client correct, total
            ids = sorted(res)
            evals.append({"correct": [int(res[i]["correct"]) for i in ids], "total": [int(res[i]["total"]) for i in ids]})
            return r
        return wrapped

    U.compute_accuracy_per_client = recorder(U.compute_accuracy_per_client)
    U.compute_accuracy_per_client_simple = recorder(U.compute_accuracy_per_client_simple)
    import methods.method  # noqa: F401  (star-imports utils: it must see the wrapped functions)


def commit_of(checkout):
    try:
        return subprocess.run(["git", "-C", checkout, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git work tree)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkout", help="the zhyczy/FedTP work tree")
    ap.add_argument("--einops", help="an arogozhnikov/einops work tree (v0.8.2)")
    ap.add_argument("--data", help="repack_fmnist.py's output folder")
    ap.add_argument("--export", required=True, help="the folder `pfl partition -c` wrote (clients.json)")
    ap.add_argument("--write-partition", metavar="P.json",
                    help="only write the export as pfl's data.partition_file ({train, test}: indices into the "
                         "training and the test set) and stop")
    ap.add_argument("--alg", choices=ALGS)
    ap.add_argument("--seed", type=int, help="main.py --init_seed")
    ap.add_argument("--work", help="scratch folder (working directory, logs)")
    ap.add_argument("--out", help="result JSON")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--sample", type=float, default=0.25)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--eval-step", type=int, default=5)
    ap.add_argument("--test-round", type=int, default=10)
    ap.add_argument("--depth", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--rho", type=float, default=0.9, help="the clients' SGD momentum (main.py --rho)")
    ap.add_argument("--reg", type=float, default=1e-5, help="the clients' weight decay (main.py --reg)")
    a = ap.parse_args()
    export, clients = load_export(a.export)
    if a.write_partition:
        with open(a.write_partition, "w") as f:
            json.dump({"train": [c["train"] for c in clients], "test": [c["test"] for c in clients]}, f)
        print(f"fedtp_official: {a.export}: {len(clients)} clients as {a.write_partition}")
        return
    missing = [f"--{k}" for k in ("checkout", "einops", "data", "alg", "seed", "work", "out") if getattr(a, k) is None]
    if missing:
        ap.error(f"a run needs {', '.join(missing)}")
    a.work, a.out = os.path.abspath(a.work), os.path.abspath(a.out)  # before the chdir below
    checkout = os.path.abspath(a.checkout)
    os.makedirs(a.work, exist_ok=True)
    args = main_args(a)

    sys.path[:0] = [checkout, os.path.abspath(a.einops)]
    os.chdir(a.work)
    evals = []
    install(a, clients, evals)
    sys.argv = ["main.py"] + args
    print("fedtp_official: python3 main.py " + " ".join(args), flush=True)
    t0 = time.time()
    runpy.run_path(os.path.join(checkout, "main.py"), run_name="__main__")
    seconds = time.time() - t0

    rounds = [r for r in range(1, a.rounds + 1) if r >= a.test_round and r % a.eval_step == 0]
    if len(rounds) != len(evals):
        sys.exit(f"fedtp_official: {len(evals)} evaluations recorded, main.py's schedule has {len(rounds)}")
    for r, e in zip(rounds, evals):
        e["round"] = r
        e["pooled_acc"] = sum(e["correct"]) / sum(e["total"])
        e["client_acc"] = [c / t for c, t in zip(e["correct"], e["total"])]
    want = [len(c["test"]) for c in clients]
    if evals and evals[-1]["total"] != want:
        sys.exit("fedtp_official: the evaluated test counts are not the export's")
    name = f"results_{a.alg}-{a.clients}-cifar10-noniid-labeluni-_.json"
    with open(os.path.join(a.work, "results_table", f"{a.alg}-vit-{a.clients}-cifar10-noniid-labeluni_", name)) as f:
        official = json.load(f)
    mine = [100 * e["pooled_acc"] for e in evals]
    if any(abs(x - y) > 1e-9 for x, y in zip(mine, official["test_avg_acc"])) or len(mine) != len(official["test_avg_acc"]):
        sys.exit(f"fedtp_official: recorded pooled accuracies {mine} are not main.py's test_avg_acc {official['test_avg_acc']}")
    last = evals[-1]
    res = {"side": "official FedTP code", "alg": a.alg, "seed": a.seed, "round": last["round"],
           "final_pooled_acc": last["pooled_acc"], "final_mean_acc": sum(last["client_acc"]) / len(last["client_acc"]),
           "final_client_acc": last["client_acc"], "test_counts": want,
           "test_acc_mean": float(np.mean(official["test_avg_acc"])), "evals": evals, "official_results": official,
           "partition_hash": export["hash"], "main_args": args, "checkout_commit": commit_of(checkout),
           "seconds_in_main": seconds}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"fedtp_official: {a.alg} seed {a.seed}: round {last['round']}: pooled test accuracy "
          f"{res['final_pooled_acc']:.4f}, Test Acc {res['test_acc_mean']:.2f}, {seconds:.0f} s", flush=True)


if __name__ == "__main__":
    main()
