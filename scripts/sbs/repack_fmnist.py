#!/usr/bin/python3
"""Repacks Fashion-MNIST as CIFAR-10, so that official code written for CIFAR-10 and pfl read
the same pixels: the 28x28 grey images zero-padded to 32x32 (centred, 2 pixels a side, as pfl's
data.pad_to: 32 does) with the grey channel repeated three times (data.channels: 3), labels
unchanged. It writes both layouts from the same arrays:

  OUT/cifar-10-batches-py/   data_batch_1..5, test_batch, batches.meta (the pickles
                             torchvision's CIFAR10 reads; the official code bases read these)
  OUT/cifar-10-batches-bin/  data_batch_1..5.bin, test_batch.bin (the binary version pfl's
                             data.dataset: cifar10:OUT reads)

The first --train training and --test test images are kept, in stored order, so that index i
means the same image on both sides. The files are not the real CIFAR-10's, so torchvision's
checksum check fails on them; the runners in this folder skip that check.

  python3 scripts/sbs/repack_fmnist.py --out runs/sbs/fmnist --train 20000 --test 5000
"""
import argparse
import gzip
import os
import pickle

import numpy as np

FMNIST = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist
NAMES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def read_idx(path):
    with gzip.open(path, "rb") as f:
        b = f.read()
    dims = b[3]
    shape = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(b, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def to_cifar(images):
    """N x 28 x 28 grey -> N x 3072 (three 32x32 planes, as CIFAR stores them)."""
    n, h, w = images.shape
    top, left = (32 - h) // 2, (32 - w) // 2
    x = np.zeros((n, 32, 32), dtype=np.uint8)
    x[:, top:top + h, left:left + w] = images
    return np.repeat(x[:, None], 3, axis=1).reshape(n, 3 * 32 * 32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--fmnist", default=FMNIST)
    ap.add_argument("--train", type=int, default=20000, help="training images kept (first N)")
    ap.add_argument("--test", type=int, default=5000, help="test images kept (first N)")
    a = ap.parse_args()
    sets = {}
    for split, prefix, n in (("train", "train", a.train), ("test", "t10k", a.test)):
        x = read_idx(os.path.join(a.fmnist, f"{prefix}-images-idx3-ubyte.gz"))
        y = read_idx(os.path.join(a.fmnist, f"{prefix}-labels-idx1-ubyte.gz"))
        if not 0 < n <= len(y):
            raise SystemExit(f"repack: --{split} {n}: {split} set has {len(y)} images")
        sets[split] = (to_cifar(x[:n]), y[:n].astype(np.uint8))
    py = os.path.join(a.out, "cifar-10-batches-py")
    bi = os.path.join(a.out, "cifar-10-batches-bin")
    os.makedirs(py, exist_ok=True)
    os.makedirs(bi, exist_ok=True)
    x, y = sets["train"]
    chunks = np.array_split(np.arange(len(y)), 5)  # CIFAR-10 has five training batches
    files = [(f"data_batch_{k + 1}", x[c], y[c]) for k, c in enumerate(chunks)]
    files.append(("test_batch", *sets["test"]))
    for name, xs, ys in files:
        with open(os.path.join(py, name), "wb") as f:
            pickle.dump({"batch_label": name, "labels": ys.tolist(), "data": xs,
                         "filenames": [f"{name}_{i}.png" for i in range(len(ys))]}, f)
        rec = np.concatenate([ys[:, None], xs], axis=1)  # label byte, then 3072 pixel bytes
        rec.tofile(os.path.join(bi, name + ".bin"))
    with open(os.path.join(py, "batches.meta"), "wb") as f:
        pickle.dump({"label_names": NAMES, "num_cases_per_batch": len(chunks[0]), "num_vis": 3072}, f)
    with open(os.path.join(bi, "batches.meta.txt"), "w") as f:
        f.write("\n".join(NAMES) + "\n")
    print(f"repack: {len(sets['train'][1])} training and {len(sets['test'][1])} test images in {a.out}")


if __name__ == "__main__":
    main()
