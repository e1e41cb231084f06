"""The training seed of the FedPerfix code's side, set from the outside; part of pfl's
side-by-side harness (scripts/sbs/fedperfix_official.py --train-seed), not of the FedPerfix code.

The FedPerfix code seeds every generator with one constant: system/main.py's
set_random_seed(seed=1) calls random.seed(1), np.random.seed(1), torch.manual_seed(1) and
torch.cuda.manual_seed(_all)(1), once when main.py starts (before the model's initial weights
and the rounds' client samples are drawn) and once in its client process (init_process, before
the shuffling of every DataLoader). There is no flag, so without this every run of a preset on
a partition draws the same streams, and the seed of a side-by-side pair varies the partition
only.

With FEDPERFIX_SBS_TRAIN_SEED=S in the environment, importing this module makes those four
functions seed with S wherever they are asked for the code's constant 1, and leaves every other
value alone (PyTorch's DataLoader workers seed themselves with a random 64-bit base plus their
index). S = 1 changes nothing. Every process where a swap happens says so on stderr, once
per set_random_seed() call, so the run's log shows that the client process was reached. fedperfix_official.py imports it in the main process, and the
forkserver preload (fedperfix_preload.py) imports it in every forkserver, from which the client
process and the DataLoader workers are forked; under the spawn start method the client process
is a fresh interpreter that never imports it, so fedperfix_official.py refuses a training seed
other than 1 there.
"""
import os
import random
import sys

CONSTANT = 1  # the seed system/main.py's set_random_seed() uses

_installed = False


def _swap(seed, value):
    return value if seed == CONSTANT else seed


def install():
    """Installs the wrappers once, if FEDPERFIX_SBS_TRAIN_SEED is set; returns the seed or None."""
    global _installed
    spec = os.environ.get("FEDPERFIX_SBS_TRAIN_SEED")
    if not spec:
        return None
    try:
        value = int(spec)
    except ValueError:
        raise SystemExit(f"fedperfix_seed: FEDPERFIX_SBS_TRAIN_SEED={spec!r}: want an integer")
    if _installed or value == CONSTANT:
        return value
    import numpy as np
    import torch

    seed_random, seed_numpy, seed_torch = random.seed, np.random.seed, torch.manual_seed
    seed_cuda, seed_cuda_all = torch.cuda.manual_seed, torch.cuda.manual_seed_all
    def manual_seed(seed):
        if seed == CONSTANT:  # once per set_random_seed(): the log shows which processes it reached
            print(f"fedperfix_seed: process {os.getpid()}: the code's seed {CONSTANT} -> {value}", file=sys.stderr, flush=True)
        return seed_torch(_swap(seed, value))

    random.seed = lambda a=None, *args, **kw: seed_random(_swap(a, value), *args, **kw)
    np.random.seed = lambda seed=None: seed_numpy(_swap(seed, value))
    torch.manual_seed = manual_seed
    torch.cuda.manual_seed = lambda seed: seed_cuda(_swap(seed, value))
    torch.cuda.manual_seed_all = lambda seed: seed_cuda_all(_swap(seed, value))
    _installed = True
    return value


install()
