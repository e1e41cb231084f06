"""Times FedTP's official main.py on this machine (bench/gpu.sh's official step).

usage: python3 bench/fedtp-official.py --checkout DIR [--data DIR [--trust-files]] --work DIR -- MAIN_ARGS...

--checkout is a checkout of FedTP's official code (not part of pfl). --data is a folder
holding the official CIFAR-100 (cifar-100-python/); left empty, synthetic CIFAR-100-shaped
data (177 MB) is written to $TMPDIR/pfl-fedtp-official-data once instead, outside --work so
that it stays out of the packed logs: random 3x32x32 images of 100 classes, 50,000 for
training and 10,000 for testing, the shape of pfl bench's synthetic data. Random files
cannot match CIFAR-100's checksums, so torchvision's checksum check is turned off then;
--trust-files turns it off for a --data folder too (Fashion-MNIST repacked in CIFAR-10's
layout by scripts/sbs/repack_fmnist.py, which scripts/sbs/speed.sh gives both sides).
Times on synthetic data compare like with like (both sides train the same shapes); the
accuracies mean nothing. main.py runs in the checkout's folder with MAIN_ARGS (its
--datadir and --modeldir are added here); the wall time includes its data loading.
"""

import argparse
import os
import pickle
import runpy
import sys
import tempfile
import time


def synthetic(root, seed=0):
    """Writes cifar-100-python/{train,test,meta} under root in CIFAR-100's pickle layout."""
    import numpy as np

    folder = os.path.join(root, "cifar-100-python")
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name, n in (("train", 50000), ("test", 10000)):
        fine = rng.integers(0, 100, n)
        entry = {
            "batch_label": name,
            "filenames": [f"{i}.png" for i in range(n)],
            "data": rng.integers(0, 256, (n, 3 * 32 * 32), dtype=np.uint8),
            "fine_labels": fine.tolist(),
            "coarse_labels": (fine // 5).tolist(),
        }
        with open(os.path.join(folder, name), "wb") as f:
            pickle.dump(entry, f)
    meta = {"fine_label_names": [f"class{i}" for i in range(100)],
            "coarse_label_names": [f"superclass{i}" for i in range(20)]}
    with open(os.path.join(folder, "meta"), "wb") as f:
        pickle.dump(meta, f)


def trust_files():
    """Turns torchvision's CIFAR checksum checks off (the synthetic files cannot pass)."""
    import torchvision.datasets.cifar as cifar

    cifar.check_integrity = lambda *args, **kwargs: True
    cifar.CIFAR10._check_integrity = lambda self: True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--checkout", required=True)
    p.add_argument("--data", default="")
    p.add_argument("--trust-files", action="store_true", help="skip torchvision's checksum check of --data's files")
    p.add_argument("--work", required=True)
    p.add_argument("main_args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    rest = a.main_args[1:] if a.main_args[:1] == ["--"] else a.main_args
    checkout, work = os.path.abspath(a.checkout), os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    if a.data:
        data = os.path.abspath(a.data)
        if a.trust_files:
            trust_files()
    else:
        data = os.path.join(tempfile.gettempdir(), "pfl-fedtp-official-data")
        if not os.path.exists(os.path.join(data, "cifar-100-python", "meta")):
            t0 = time.time()
            synthetic(data)
            print(f"official: synthetic CIFAR-100-shaped data in {data} ({time.time() - t0:.1f} s)", flush=True)
        trust_files()
    # absolute paths before main.py's folder becomes the working directory
    rest = [f"--logdir={os.path.abspath(x.split('=', 1)[1])}" if x.startswith("--logdir=") else x for x in rest]
    sys.argv = ["main.py", *rest, f"--datadir={data}/", f"--modeldir={os.path.join(work, 'models')}/"]
    print("official: python3 main.py " + " ".join(sys.argv[1:]), flush=True)
    os.chdir(checkout)
    sys.path.insert(0, checkout)
    t0 = time.time()
    try:
        runpy.run_path("main.py", run_name="__main__")
    finally:
        print(f"official: main.py ran {time.time() - t0:.1f} s (wall, data loading included)", flush=True)


if __name__ == "__main__":
    main()
