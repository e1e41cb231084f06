#!/usr/bin/python3
"""Runs the official pFedGP (IdanAchituve/pFedGP, experiments/heterogeneous_class_dist/
trainer.py for pFedGP-Full, trainer_ip.py --method pFedGP-data for pFedGP-IP-data) unmodified
on the repacked Fashion-MNIST (repack_fmnist.py), or exports the partition it draws.

The trainers are scripts (argparse and training at module level), so the chosen one is run
as __main__ (runpy) with the command line below. The checkout is imported as it is; from the
outside this script only
  (1) puts scripts/sbs/standins first on the import path: gpytorch and pypolyagamma have no
      Debian package and there is no PyPI here, so minimal stand-ins of those names
      (written from the mathematics; checked by standins/check_pfedgp.py) replace them,
  (2) skips torchvision's CIFAR-10 checksum check, which the repacked files cannot pass,
  (3) limits torch to one thread and loads batches in the process (DataLoader num_workers 0
      where the official loaders ask for 4 worker processes: the same batches in the same
      order, without four more processes, since the official transforms are deterministic
      and a DataLoader draws its order in the calling process whatever its workers; argued
      from the code, not compared by a recorded run),
  (4) reads back the client index lists the official gen_random_loaders drew, and each
      client's test counts from the official calc_metrics.

  export:  pfedgp_official.py --checkout DIR --data D --num-clients 10 --seed 1 --export P.json
  run:     pfedgp_official.py --checkout DIR --data D --num-clients 10 --seed 1 --num-steps 100 \\
               [--method full|ip-data] --partition P.json --out R.json

--export writes {"train": [...], "test": [...]}: per client, its training indices into the
stored training set (data_batch_1..5 in order; the official get_datasets holds 10,000 of them
out as a validation split with torch's random_split, and those appear in no list) and its test
indices into test_batch: pfl's data.partition: file. Both trainers draw the same partition
for a seed (the same set_seed, then the same gen_random_loaders call). With --partition, the
run checks that it drew exactly that partition and stops otherwise.

What is compared: the official trainers test only once, after training, the model of best
pooled validation accuracy over their evaluations (every --eval-every rounds and after the
last). The default --eval-every here is --num-steps, so the only validation is after the last
round and the model tested is the last one, as pfl's last evaluation. The result JSON holds
the official results dict (test_acc: correct over samples pooled over all clients' test sets)
plus "final_pooled_acc" (the same number, recomputed from the per-client counts),
"final_client_acc", "final_mean_acc" (the plain mean over clients), "test_counts" and the
run's wall and CPU seconds.
"""
import argparse
import glob
import json
import os
import runpy
import sys
import tempfile
import time

import torch
import torch.utils.data
import torchvision.datasets.cifar

from pfedhn_official import client_indices  # the same Subset layout as the official pFedHN loaders

STANDINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standins")
TRAINERS = {"full": "trainer.py", "ip-data": "trainer_ip.py"}


class InProcessLoader(torch.utils.data.DataLoader):
    """torch's DataLoader with the batches loaded in the calling process (num_workers 0)."""

    def __init__(self, *args, **kwargs):
        kwargs["num_workers"] = 0
        kwargs["pin_memory"] = False
        super().__init__(*args, **kwargs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkout", required=True, help="the IdanAchituve/pFedGP checkout")
    ap.add_argument("--data", required=True, help="repack_fmnist.py's output folder")
    ap.add_argument("--method", default="full", choices=sorted(TRAINERS),
                    help="full: trainer.py (pFedGP-Full); ip-data: trainer_ip.py --method pFedGP-data")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--num-clients", type=int, default=50)
    ap.add_argument("--num-steps", type=int, default=1000, help="rounds")
    ap.add_argument("--inner-steps", type=int,
                    help="local steps a round; default the CIFAR-10 scripts': 3 (full), 1 (ip-data)")
    ap.add_argument("--loss-scaler", type=float,
                    help="default the CIFAR-10 scripts': 1 (full), 2 (ip-data)")
    ap.add_argument("--eval-every", type=int, help="validation every so many rounds; default --num-steps (only the last)")
    ap.add_argument("--export", help="write the partition here and stop")
    ap.add_argument("--partition", help="check that the run draws this exported partition")
    ap.add_argument("--out", help="result JSON")
    a = ap.parse_args()

    torch.set_num_threads(1)
    torch.utils.data.DataLoader = InProcessLoader
    # the repacked files are not CIFAR-10's: check that they exist, not their checksums
    torchvision.datasets.cifar.check_integrity = lambda path, md5=None: os.path.isfile(path)
    checkout = os.path.abspath(a.checkout)
    sys.path[:0] = [STANDINS, checkout]
    import utils as U  # the checkout's utils.py
    from experiments.heterogeneous_class_dist import clients as C
    from experiments.heterogeneous_class_dist import dataset as D

    classes_per_client = 2  # the trainers: 2 for cifar10
    if a.export:
        U.set_seed(a.seed)  # as the trainers, before BaseClients draws
        train, _val, test = D.gen_random_loaders("cifar10", a.data, a.num_clients, 512, classes_per_client)
        part = {"train": client_indices(train), "test": client_indices(test)}
        with open(a.export, "w") as f:
            json.dump(part, f)
        sizes = [len(t) for t in part["train"]]
        print(f"pfedgp: seed {a.seed}: partition of {a.num_clients} clients in {a.export} "
              f"(training samples {min(sizes)}..{max(sizes)}, test {sum(len(t) for t in part['test'])})")
        return

    init = C.BaseClients._init_dataloaders

    def recording_init(self):
        init(self)
        drawn = {"train": client_indices(self.train_loaders), "test": client_indices(self.test_loaders)}
        if a.partition:
            with open(a.partition) as f:
                want = json.load(f)
            if want != drawn:
                raise SystemExit(f"pfedgp: the run drew another partition than {a.partition}")
            print(f"pfedgp: the run drew {a.partition}'s partition", flush=True)

    C.BaseClients._init_dataloaders = recording_init
    evals = []
    calc_metrics = U.calc_metrics

    def recording_calc_metrics(results):
        evals.append({int(c): {"correct": float(r["correct"]), "total": float(r["total"])} for c, r in results.items()})
        return calc_metrics(results)

    U.calc_metrics = recording_calc_metrics  # the trainers import it from utils after this

    inner = a.inner_steps if a.inner_steps is not None else (3 if a.method == "full" else 1)
    scaler = a.loss_scaler if a.loss_scaler is not None else (1.0 if a.method == "full" else 2.0)
    eval_every = a.eval_every if a.eval_every is not None else a.num_steps
    trainer = os.path.join(checkout, "experiments", "heterogeneous_class_dist", TRAINERS[a.method])
    with tempfile.TemporaryDirectory() as save:
        argv = [trainer, "--data-name", "cifar10", "--data-path", os.path.abspath(a.data),
                "--num-clients", str(a.num_clients), "--num-steps", str(a.num_steps),
                "--inner-steps", str(inner), "--loss-scaler", str(scaler), "--eval-every", str(eval_every),
                "--gpus", "0" if a.device == "cuda" else "-1", "--seed", str(a.seed), "--save-path", save]
        if a.method == "ip-data":
            argv += ["--method", "pFedGP-data"]
        print("pfedgp:", " ".join(argv[1:]), flush=True)
        sys.argv = argv
        wall, cpu = time.time(), time.process_time()
        runpy.run_path(trainer, run_name="__main__")
        wall, cpu = time.time() - wall, time.process_time() - cpu
        found = glob.glob(os.path.join(save, "**", f"results_{inner}_inner_steps_seed_{a.seed}.json"), recursive=True)
        if len(found) != 1:
            raise SystemExit(f"pfedgp: expected one results file under the save path, found {found}")
        with open(found[0]) as f:
            res = json.load(f)
    test = evals[-1]  # the last calc_metrics call is the test evaluation
    order = sorted(test)
    acc = [test[c]["correct"] / test[c]["total"] for c in order]
    counts = [int(test[c]["total"]) for c in order]
    res["final_pooled_acc"] = sum(test[c]["correct"] for c in order) / sum(counts)
    res["final_client_acc"] = acc
    res["final_mean_acc"] = sum(acc) / len(acc)
    res["test_counts"] = counts
    res["validations"] = len(evals) - 1
    res["wall_s"], res["cpu_s"] = wall, cpu
    res["args"] = vars(a) | {"inner_steps": inner, "loss_scaler": scaler, "eval_every": eval_every}
    if abs(res["final_pooled_acc"] - res["test_acc"][-1]) > 1e-9:
        raise SystemExit(f"pfedgp: pooled accuracy {res['final_pooled_acc']} from the counts, "
                         f"the trainer's test_acc {res['test_acc'][-1]}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    print(f"pfedgp ({a.method}): seed {a.seed}: pooled test accuracy {res['final_pooled_acc']:.4f} "
          f"(client mean {res['final_mean_acc']:.4f}) after {a.num_steps} rounds; {wall:.0f} s wall, {cpu:.0f} s CPU")


if __name__ == "__main__":
    main()
