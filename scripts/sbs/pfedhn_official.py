#!/usr/bin/python3
"""Runs the official pFedHN (AvivSham/pFedHN, experiments/pfedhn/trainer.py) unmodified on the
repacked Fashion-MNIST (repack_fmnist.py), or exports the partition it draws.

The checkout is imported as it is; from the outside this script only (1) skips torchvision's
CIFAR-10 checksum check, which the repacked files cannot pass, (2) limits torch to one thread,
and (3) reads back the client index lists the official gen_random_loaders drew. The official
trainer's own main() is replayed: set_logger(), set_seed(seed), then train() with the
trainer's argparse defaults unless a flag below overrides them.

  export:  pfedhn_official.py --checkout DIR --data runs/sbs/fmnist --seed 1 --export P.json
  run:     pfedhn_official.py --checkout DIR --data runs/sbs/fmnist --seed 1 --partition P.json --out R.json

--export writes {"train": [...], "test": [...]}: per client, its training indices into the
stored training set (data_batch_1..5 in order; the official code holds --val-size of them out
as a validation split with torch's random_split, and those appear in no list) and its test
indices into test_batch: pfl's data.partition: file. With --partition, the run checks that it
drew exactly that partition and stops otherwise. --train-seed S re-seeds every random stream
(set_seed(S)) right after the partition is drawn, so that the hypernetwork's initialization,
the clients' order and the batches change while the partition stays --seed's: the official
side's counterpart of pfl's seed on a partition file.

The result JSON holds the official results dict (test_avg_acc is the test accuracy pooled over
all clients' test samples at each evaluation; best_test_acc_based_on_val_beststep the same at
the evaluation of best pooled validation accuracy) plus "final_pooled_acc" (the last
evaluation, after the last step) and the per-client accuracies of that last evaluation.
"""
import argparse
import json
import os
import sys
import tempfile

import torch
import torchvision.datasets.cifar


def client_indices(loaders):
    """The dataset indices of each client's subset (a Subset of a random_split Subset or of
    the dataset itself)."""
    out = []
    for dl in loaders:
        sub = dl.dataset
        idx = list(sub.indices)
        base = sub.dataset
        if isinstance(base, torch.utils.data.Subset):
            idx = [base.indices[i] for i in idx]
        out.append([int(i) for i in idx])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkout", required=True, help="the AvivSham/pFedHN checkout")
    ap.add_argument("--data", required=True, help="repack_fmnist.py's output folder")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--num-nodes", type=int, default=50)
    ap.add_argument("--num-steps", type=int, default=5000)
    ap.add_argument("--inner-steps", type=int, default=50)
    ap.add_argument("--eval-every", type=int, default=30)
    ap.add_argument("--export", help="write the partition here and stop")
    ap.add_argument("--partition", help="check that the run draws this exported partition")
    ap.add_argument("--out", help="result JSON")
    ap.add_argument("--train-seed", type=int, help="re-seed after the partition is drawn (default: --seed's stream goes on)")
    a = ap.parse_args()

    torch.set_num_threads(1)
    # the repacked files are not CIFAR-10's: check that they exist, not their checksums
    torchvision.datasets.cifar.check_integrity = lambda path, md5=None: os.path.isfile(path)
    sys.path.insert(0, os.path.abspath(a.checkout))
    from experiments import dataset as D
    from experiments.pfedhn import node as N
    from experiments.pfedhn import trainer as T
    from experiments.utils import set_logger, set_seed

    classes_per_node = 2  # the trainer's main(): 2 for cifar10
    if a.export:
        set_seed(a.seed)  # as the trainer's main(), before BaseNodes draws
        train, _val, test = D.gen_random_loaders("cifar10", a.data, a.num_nodes, 64, classes_per_node)
        with open(a.export, "w") as f:
            json.dump({"train": client_indices(train), "test": client_indices(test)}, f)
        print(f"pfedhn: seed {a.seed}: partition of {a.num_nodes} clients in {a.export}")
        return

    drawn = {}
    init = N.BaseNodes._init_dataloaders

    def recording_init(self):
        init(self)
        drawn["train"], drawn["test"] = client_indices(self.train_loaders), client_indices(self.test_loaders)
        if a.partition:
            with open(a.partition) as f:
                want = json.load(f)
            if want != drawn:
                raise SystemExit(f"pfedhn: the run drew another partition than {a.partition}")
            print(f"pfedhn: the run drew {a.partition}'s partition")
        if a.train_seed is not None:
            set_seed(a.train_seed)

    N.BaseNodes._init_dataloaders = recording_init
    evals = []
    eval_model = T.eval_model

    def recording_eval(nodes, num_nodes, hnet, net, criteria, device, split):
        r = eval_model(nodes, num_nodes, hnet, net, criteria, device, split)
        if split == "test":
            evals.append(r[3])  # all_acc: per-client test accuracy
        return r

    T.eval_model = recording_eval
    set_logger()
    set_seed(a.seed)
    device = torch.device("cuda" if a.device == "cuda" else "cpu")
    with tempfile.TemporaryDirectory() as save:
        # the trainer's argparse defaults, but for the flags above
        T.train(data_name="cifar10", data_path=a.data, classes_per_node=classes_per_node, num_nodes=a.num_nodes,
                steps=a.num_steps, inner_steps=a.inner_steps, optim="sgd", lr=1e-2, inner_lr=5e-3, embed_lr=None,
                wd=1e-3, inner_wd=5e-5, embed_dim=-1, hyper_hid=100, n_hidden=3, n_kernels=16, bs=64,
                device=device, eval_every=a.eval_every, save_path=save, seed=a.seed)
        with open(os.path.join(save, f"results_{a.inner_steps}_inner_steps_seed_{a.seed}.json")) as f:
            res = json.load(f)
    res["final_pooled_acc"] = res["test_avg_acc"][-1]
    res["final_client_acc"] = [float(x) for x in evals[-1]]
    # every test evaluation's per-client accuracies, in step order (the first is before training)
    res["client_acc_per_eval"] = [[float(x) for x in e] for e in evals]
    res["args"] = vars(a)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    print(f"pfedhn: seed {a.seed}, training seed {a.train_seed}: final pooled test accuracy {res['final_pooled_acc']:.4f}, "
          f"at best validation {res['best_test_acc_based_on_val_beststep'][-1]:.4f}")


if __name__ == "__main__":
    main()
