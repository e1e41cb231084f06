#!/usr/bin/env python3
"""Writes the partition that pfl exported (`pfl partition -c CONFIG`) in PFLlib's on-disk
layout, so that PFLlib trains every client on the very images pfl trains it on.

PFLlib (TsingZ0/PFLlib) reads ../dataset/<name>/{train,test}/<client>.npz, each an npz whose
`data` entry is a dict {'x': float32 [n, 1, 28, 28], 'y': int64 [n]}, plus config.json
(dataset/utils/dataset_utils.py save_file). Pixels are scaled as its
generate_FashionMNIST.py scales them: ToTensor() then Normalize([0.5], [0.5]), i.e.
(p / 255 - 0.5) / 0.5, which is pfl's data.normalize: half.

Usage: pfllib-data.py --export DIR --out DATASET_DIR [--idx IDX_DIR] [--pad-to 32 --channels 3]
  DIR          the folder `pfl partition -c` wrote (clients.json inside)
  DATASET_DIR  becomes PFLlib's dataset/<name> folder (train/, test/, config.json)
  IDX_DIR      the four Fashion-MNIST IDX files (default: Debian's dataset-fashion-mnist)
  --pad-to N   zero-pads every 28×28 image to N×N, centred, before scaling (pfl's
               data.pad_to: a padded pixel is 0, so -1 after scaling, on both sides)
  --channels 3 repeats the grey channel three times (pfl's data.channels: 3)
"""
import argparse
import gzip
import json
import os
import sys

import numpy as np

IDX_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    """Reads one IDX file (gzip or plain) into a uint8 array shaped as its header says."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        b = f.read()
    if len(b) < 4 or b[0] != 0 or b[1] != 0 or b[2] != 0x08:
        sys.exit(f"pfllib-data: {path}: not an IDX file of unsigned bytes")
    dims = b[3]
    shape = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    body = np.frombuffer(b, dtype=np.uint8, offset=4 + 4 * dims)
    if body.size != int(np.prod(shape)):
        sys.exit(f"pfllib-data: {path}: {body.size} bytes after the header, want {int(np.prod(shape))}")
    return body.reshape(shape)


def find(idx_dir, stem):
    for name in (stem + ".gz", stem):
        p = os.path.join(idx_dir, name)
        if os.path.exists(p):
            return p
    sys.exit(f"pfllib-data: {idx_dir}: no {stem}[.gz] (install dataset-fashion-mnist or pass --idx)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--export", required=True, help="folder with pfl's clients.json")
    ap.add_argument("--out", required=True, help="PFLlib dataset folder to write")
    ap.add_argument("--idx", default=IDX_DIR, help="folder of the Fashion-MNIST IDX files")
    ap.add_argument("--pad-to", type=int, default=0, help="zero-pad the images to this side, centred (pfl's data.pad_to)")
    ap.add_argument("--channels", type=int, default=1, choices=[1, 3], help="3 repeats the grey channel (pfl's data.channels)")
    a = ap.parse_args()

    path = os.path.join(a.export, "clients.json")
    try:
        with open(path) as f:
            e = json.load(f)
    except (OSError, ValueError) as err:
        sys.exit(f"pfllib-data: {path}: {err}")
    for key in ("clients", "train_images", "test_images", "classes"):
        if key not in e:
            sys.exit(f"pfllib-data: {path}: no key {key!r} (not written by `pfl partition -c`?)")

    x = np.concatenate([read_idx(find(a.idx, "train-images-idx3-ubyte")), read_idx(find(a.idx, "t10k-images-idx3-ubyte"))])
    y = np.concatenate([read_idx(find(a.idx, "train-labels-idx1-ubyte")), read_idx(find(a.idx, "t10k-labels-idx1-ubyte"))]).astype(np.int64)
    if (len(x) - len(y)) or len(x) != e["train_images"] + e["test_images"]:
        sys.exit(f"pfllib-data: {a.idx} holds {len(x)} images and {len(y)} labels; {path} was exported from "
                 f"{e['train_images']} + {e['test_images']}: not the same dataset")
    if x.shape[1:] != (28, 28):  # checked before any padding
        sys.exit(f"pfllib-data: {a.idx}: images of {x.shape[1:]}, want 28×28")
    if a.pad_to and a.pad_to < 28:
        sys.exit(f"pfllib-data: --pad-to {a.pad_to}: smaller than the 28×28 images")

    def pixels(idx):
        """The images idx as PFLlib reads them: float32 [n, channels, side, side]."""
        im = x[idx]
        if a.pad_to:
            top = (a.pad_to - 28) // 2  # pfl's data.PadTo: an odd margin's extra row and column after the image
            padded = np.zeros((len(idx), a.pad_to, a.pad_to), dtype=np.uint8)
            padded[:, top:top + 28, top:top + 28] = im
            im = padded
        out = ((im.astype(np.float32) / 255.0 - 0.5) / 0.5)[:, None, :, :]
        return np.repeat(out, a.channels, axis=1) if a.channels > 1 else out

    for split in ("train", "test"):
        os.makedirs(os.path.join(a.out, split), exist_ok=True)
    stats, sizes = [], {"train": [], "test": []}
    for c, cl in enumerate(e["clients"]):
        counts = {}
        for split in ("train", "test"):
            idx = np.asarray(cl[split], dtype=np.int64)
            want = np.asarray(cl[split + "_labels"], dtype=np.int64)
            if len(idx) and (idx.min() < 0 or idx.max() >= len(x)):
                sys.exit(f"pfllib-data: {path}: client {c} {split} index out of range")
            if not np.array_equal(y[idx], want):
                sys.exit(f"pfllib-data: {path}: client {c} {split}: the labels in {a.idx} differ from the exported ones")
            with open(os.path.join(a.out, split, f"{c}.npz"), "wb") as f:
                np.savez_compressed(f, data={"x": pixels(idx), "y": y[idx]})
            sizes[split].append(len(idx))
            for label in y[idx]:
                counts[int(label)] = counts.get(int(label), 0) + 1
        stats.append(sorted(counts.items()))
    # the keys PFLlib's save_file writes; its check() reads num_clients, non_iid, balance,
    # partition, alpha and batch_size, and its training reads none of them
    config = {"num_clients": len(e["clients"]), "num_classes": e["classes"], "non_iid": True, "balance": False,
              "partition": "pfl:" + e.get("convention", ""), "Size of samples for labels in clients": stats,
              "alpha": None, "batch_size": None, "pfl_hash": e.get("hash"), "pfl_seed": e.get("seed")}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f)
    print(f"pfllib-data: {len(e['clients'])} clients, {sum(sizes['train'])} train and {sum(sizes['test'])} test images "
          f"(per client {min(sizes['train'])} to {max(sizes['train'])} train) -> {a.out}")


if __name__ == "__main__":
    main()
