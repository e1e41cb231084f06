#!/usr/bin/python3
"""Runs the official FedPerfix code (imguangyu/FedPerfix, system/main.py) unmodified on
Fashion-MNIST, on the real timm, or draws and exports the partition it trains on.

Both checkouts are imported as they are, never written:

  --checkout  imguangyu/FedPerfix (tested at commit 5acbd0c, its newest);
  --timm      huggingface/pytorch-image-models at commit TIMM_COMMIT below (the tag v0.6.7:
              the FedPerfix code's requirements.txt pins timm==0.6.7). Get it with
                git clone https://github.com/huggingface/pytorch-image-models
                git -C pytorch-image-models checkout 7cd4204a289cd0dddad925c076cdb96ae9670e87
              It runs on Debian's python3-torch 1.13 (Python 3.11) as it is. timm's current
              code (1.0.29.dev0 at aa4b5850, 2026-08) imports and builds the ViT on torch 1.13
              too, but the FedPerfix code cannot run on it: since commit 0893f5d2 (2025-04-07,
              first released in 1.0.16) timm's Block.forward calls
              self.attn(x, attn_mask=..., is_causal=...), and the FedPerfix code's
              AdapterAttention.forward(x), which replaces every block's attn, refuses those
              arguments (TypeError). The newest release the prefix runs on is therefore 1.0.15;
              this harness runs the version the code pins. A checkout of another timm version is
              refused; its commit is recorded in the result.

What this script adds from the outside:

  - stand-ins for wandb, opacus and calmsize (scripts/sbs/standins/, each module's docstring
    says what it replaces and why results do not depend on it), and the timm checkout, put
    first on sys.path and on PYTHONPATH (the processes the code starts import them too);
  - the ViT's size: the presets build timm.create_model('vit_small_patch16_224',
    num_classes=.., pretrained=False); main.py's timm.create_model is wrapped so that this
    call builds the same variant through timm's own builder
    (timm.models.vision_transformer._create_vision_transformer, which
    vit_small_patch16_224() calls) with the geometry --vit names (image size, patch, width,
    depth, heads, MLP ratio) in place of ViT-S/16's, a deliberate size reduction that pfl's
    config repeats. Everything else (qkv bias, LayerNorm eps 1e-6, GELU, the class token,
    the initialization) is timm's. Any other model name, pretrained weights or further
    arguments are refused;
  - --train-seed S: the code seeds every generator with the constant 1 (main.py's
    set_random_seed(), no flag); preload/fedperfix_seed.py makes those calls seed with S, in
    this process and, through the forkserver preload, in every process the code starts
    (forkserver only). S = 1 is the code's own stream;
  - one thread per process (OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS set
    before NumPy and torch load, which the code's worker processes inherit, and
    torch.set_num_threads(1));
  - a scratch folder --work, laid out as the code expects (WORK/system as the working
    directory, WORK/dataset/<name> a link to --data), so that its ../logs, ../results,
    models/ and wandb/ land there and not in the checkout;
  - --start-method: main.py calls torch.multiprocessing.set_start_method('spawn'); "spawn"
    leaves that as it is, "forkserver" (the harness's default) makes that call choose
    forkserver instead. Every process the code starts (its client process, and the 4 workers
    of each DataLoader it makes, clientbase.py's num_workers=4: one DataLoader per client per
    round) is then forked from a server process that has imported main.py's modules once
    (preload/fedperfix_preload.py), instead of being a fresh interpreter that imports torch,
    sklearn and the code again, seconds of CPU each.
    The processes start from the same state either way (spawn's preparation: sys.path, the
    working directory, main.py imported as __mp_main__; the client process reseeds every
    generator itself, init_process -> set_random_seed()), so the results are the same; the
    smoke check of docs/fidelity.md compared the two bit for bit (with the earlier timm
    stand-in). Plain fork is not offered: it hung twice in smoke runs (the code's client
    process holds several threads when it forks its DataLoader workers);
  - reading what it computed: every evaluation it logs to wandb (the stand-in writes them to
    OUT's .wandb.jsonl) and, when the last round ends, each client's test accuracy of that
    round, read from the server's clients before save_results() (main.py logs round r's
    accuracies at the start of round r+1, so its log never shows the last round's; reading
    them changes nothing).

Export (the official generator's steps, for Fashion-MNIST): as dataset/generate_cifar100.py,
seed random, NumPy and torch (with --seed; the generator's is 1), merge the training and the
test images (here the first --train-images and --test-images of Debian's Fashion-MNIST, in
stored order), and call the official dataset/utils/dataset_utils.py: separate_data(...,
niid=True, balance=False, partition="dir") (per-class Dirichlet with its alpha 0.5 and at
least its least_samples = 256 samples per client), split_data (75/25 per client,
sklearn's train_test_split) and save_file (the npz files and config.json that
system/utils/data_utils.py reads). The pool is passed to separate_data and split_data as
index arrays, which they move exactly as they move images (their random draws depend only on
labels and counts), so the exported lists are the very split; the images are then put in
their place: zero-padded to 32x32 (centred, as pfl's data.pad_to: 32), the grey channel
repeated three times (data.channels: 3), ToTensor's /255 and Normalize(0.5, 0.5) (data.normalize:
half), float32 [n, 3, 32, 32]. The partition file holds, per client, its training and test
indices into pfl's fedperfix pool (the 60,000 stored training images, then the 10,000 test
images): pfl's data.partition: file under data.convention: fedperfix.

  export: fedperfix_official.py --checkout DIR --export P.json --data D --seed 1 --clients 16
  run:    fedperfix_official.py --checkout DIR --timm TIMM --data D --partition P.json \\
              --method FedPerfix --train-seed 1 --rounds 20 --local-steps 2 --join-ratio 0.25 --out R.json

A run first checks that every client's npz files in --data hold exactly the images and labels
that P.json names, and stops otherwise. --seed only names the partition in a run's result;
--train-seed sets the code's own random streams (above).

R.json: "final_client_acc" (each client's test accuracy after the last round, fractions, in
client order), "test_counts", "final_mean_acc" (their plain mean: the paper's and main.py's
"Averaged Test Accurancy"), "final_pooled_acc" (correct over samples: main.py's "Global Test
Accurancy"), "evals" (what main.py logged, one entry per round: "round" r holds the
accuracies of round r, as pfl numbers rounds; its first log, before any training, is left
out), "params" (every parameter's shape, under timm's names) and "local_params" (those the preset's
local_parts keep with each client), "timm" (the checkout's version, commit and path),
"train_seed", the command line and the seconds it took.
"""
import argparse
import gzip
import json
import os
import random
import runpy
import shutil
import subprocess
import sys
import time

# One thread per process, set before NumPy and torch load their BLAS and OpenMP runtimes:
# NumPy's OpenBLAS otherwise starts a thread at import (and a second BLAS thread changes the
# last bits of the results).
for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_v] = "1"

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STANDINS = os.path.join(HERE, "standins")
PRELOAD = os.path.join(HERE, "preload")
TIMM_REPO = "huggingface/pytorch-image-models"
TIMM_COMMIT = "7cd4204a289cd0dddad925c076cdb96ae9670e87"  # tag v0.6.7
TIMM_VERSION = "0.6.7"  # imguangyu/FedPerfix requirements.txt: timm==0.6.7
VIT_NAME = "vit_small_patch16_224"  # the model every preset this harness runs names
VIT_KEYS = {"img_size": int, "patch_size": int, "in_chans": int, "embed_dim": int, "depth": int, "num_heads": int,
            "mlp_ratio": float}
FMNIST = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist
METHODS = ["FedPerfix", "VanillaAttention", "FedAVG", "Local"]  # main.py's -mtd presets this harness runs
DEFAULT_VIT = "img_size=32,patch_size=4,in_chans=3,embed_dim=64,depth=4,num_heads=4,mlp_ratio=4"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        b = f.read()
    dims = b[3]
    shape = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(b, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_pool(fmnist, n_train, n_test):
    """The first n_train training and n_test test images (uint8 [n, 28, 28]) and labels, merged
    in that order as the official generators merge them, and each one's index into pfl's
    fedperfix pool (all stored training images, then all test images)."""
    xs, ys, idx = [], [], []
    offset = 0
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        x = read_idx(os.path.join(fmnist, f"{prefix}-images-idx3-ubyte.gz"))
        y = read_idx(os.path.join(fmnist, f"{prefix}-labels-idx1-ubyte.gz"))
        if not 0 < n <= len(y):
            sys.exit(f"fedperfix_official: {prefix}: want 1 to {len(y)} images, not {n}")
        xs.append(x[:n])
        ys.append(y[:n].astype(np.int64))
        idx.append(offset + np.arange(n))
        offset += len(y)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(idx)


def to_input(images):
    """uint8 [n, 28, 28] -> float32 [n, 3, 32, 32]: zero-padded, centred, grey repeated, then
    ToTensor (/255) and Normalize((0.5,)*3, (0.5,)*3)."""
    n, h, w = images.shape
    top, left = (32 - h) // 2, (32 - w) // 2
    x = np.zeros((n, 32, 32), dtype=np.float32)
    x[:, top:top + h, left:left + w] = images
    x = (x / 255.0 - 0.5) / 0.5
    return np.repeat(x[:, None], 3, axis=1).astype(np.float32)


def export(a):
    sys.path.insert(0, os.path.join(os.path.abspath(a.checkout), "dataset"))
    from utils import dataset_utils as U  # the official dataset/utils/dataset_utils.py

    import torch
    random.seed(a.seed)  # generate_cifar100.py seeds these three with 1 at import
    np.random.seed(a.seed)
    torch.manual_seed(a.seed)
    images, labels, pool = load_pool(a.fmnist, a.train_images, a.test_images)
    if a.clients * U.least_samples > len(labels):  # separate_data would redraw for ever
        sys.exit(f"fedperfix_official: {len(labels)} images cannot give {a.clients} clients {U.least_samples:.0f} each "
                 "(dataset_utils.least_samples)")
    niid, balance, partition = True, False, "dir"  # `generate_cifar100.py noniid - dir` (README)
    # separate_data and split_data move the position of each pool sample instead of its image
    X, y, statistic = U.separate_data((np.arange(len(labels)), labels), a.clients, 10, niid, balance, partition)
    train, test = U.split_data(X, y)
    out = os.path.abspath(a.data)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(os.path.join(out, "train"))
    os.makedirs(os.path.join(out, "test"))
    x = to_input(images)
    fill = lambda parts: [{"x": x[d["x"]], "y": labels[d["x"]]} for d in parts]
    for part in train + test:
        if not np.array_equal(labels[part["x"]], part["y"]):
            sys.exit("fedperfix_official: split_data moved a label away from its sample")
    U.save_file(os.path.join(out, "config.json"), os.path.join(out, "train") + "/", os.path.join(out, "test") + "/",
                fill(train), fill(test), a.clients, 10, statistic, niid, balance, partition)
    lists = {"train": [[int(pool[i]) for i in d["x"]] for d in train],
             "test": [[int(pool[i]) for i in d["x"]] for d in test]}
    with open(a.export, "w") as f:
        json.dump(lists, f)
    meta = {"seed": a.seed, "clients": a.clients, "train_images": a.train_images, "test_images": a.test_images,
            "fmnist": a.fmnist, "partition_file": os.path.abspath(a.export),
            "train_sizes": [len(t) for t in lists["train"]], "test_sizes": [len(t) for t in lists["test"]]}
    with open(os.path.join(out, "sbs.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"fedperfix_official: seed {a.seed}: {a.clients} clients, {sum(meta['train_sizes'])} training and "
          f"{sum(meta['test_sizes'])} test samples (a client's training data {min(meta['train_sizes'])} to "
          f"{max(meta['train_sizes'])}) -> {a.export}, {a.data}")


def check_data(a):
    """Every client's npz files in --data hold exactly the images and labels --partition names."""
    with open(os.path.join(a.data, "sbs.json")) as f:
        meta = json.load(f)
    with open(a.partition) as f:
        lists = json.load(f)
    images, labels, pool = load_pool(meta["fmnist"], meta["train_images"], meta["test_images"])
    where = {int(p): i for i, p in enumerate(pool)}
    x = to_input(images)
    if len(lists["train"]) != meta["clients"] or len(lists["test"]) != meta["clients"]:
        sys.exit(f"fedperfix_official: {a.partition} does not have {meta['clients']} clients")
    for split in ("train", "test"):
        for c, want in enumerate(lists[split]):
            with open(os.path.join(a.data, split, f"{c}.npz"), "rb") as f:
                got = np.load(f, allow_pickle=True)["data"].tolist()  # as data_utils.read_data reads it
            rows = [where[i] for i in want]
            if not (np.array_equal(got["x"], x[rows]) and np.array_equal(got["y"], labels[rows])):
                sys.exit(f"fedperfix_official: {a.data}: client {c}'s {split} data is not {a.partition}'s")
    print(f"fedperfix_official: {a.data} holds {a.partition}'s partition ({meta['clients']} clients)", flush=True)
    return meta


def timm_checkout(path):
    """The --timm checkout's version and commit; exits unless it is timm TIMM_VERSION."""
    path = os.path.abspath(path)
    version_py = os.path.join(path, "timm", "version.py")
    if not os.path.isfile(os.path.join(path, "timm", "__init__.py")) or not os.path.isfile(version_py):
        sys.exit(f"fedperfix_official: --timm {path}: no timm/__init__.py and timm/version.py "
                 f"(a {TIMM_REPO} checkout at {TIMM_COMMIT})")
    scope = {}
    with open(version_py) as f:
        exec(f.read(), scope)  # one line: __version__ = '...'
    version = scope.get("__version__")
    commit = None
    try:
        commit = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass  # an exported tree without git: the version decides
    if version != TIMM_VERSION or (commit and commit != TIMM_COMMIT):
        sys.exit(f"fedperfix_official: --timm {path} is timm {version} (commit {commit or 'unknown'}); the harness "
                 f"runs timm {TIMM_VERSION}, {TIMM_REPO} at {TIMM_COMMIT} (see the docstring: --timm)")
    return {"version": version, "commit": commit or f"unknown (timm {version})", "path": path, "repository": TIMM_REPO}


def parse_vit(spec):
    """--vit's key=value list -> keyword arguments of timm's VisionTransformer."""
    out = {}
    for item in filter(None, (x.strip() for x in spec.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key.strip() not in VIT_KEYS:
            sys.exit(f"fedperfix_official: --vit item {item!r}: want key=value, key one of {sorted(VIT_KEYS)}")
        out[key.strip()] = VIT_KEYS[key.strip()](value)
    return out


def size_create_model(timm, geometry):
    """Wraps timm.create_model so that the presets' create_model(VIT_NAME, num_classes=..,
    pretrained=False) builds that variant through timm's own builder with `geometry` in place
    of ViT-S/16's (vit_small_patch16_224() passes patch_size 16, embed_dim 384, depth 12 and
    num_heads 6 to the same builder); refuses anything else."""
    from timm.models import vision_transformer

    def create_model(model_name, pretrained=False, num_classes=1000, **kwargs):
        if model_name != VIT_NAME or pretrained or kwargs:
            sys.exit(f"fedperfix_official: the code asked timm for {model_name!r} (pretrained={pretrained}, "
                     f"{sorted(kwargs)}); the harness sizes only {VIT_NAME}, trained from scratch")
        model = vision_transformer._create_vision_transformer(VIT_NAME, pretrained=False, num_classes=num_classes,
                                                               **geometry)
        n = sum(p.numel() for p in model.parameters())
        print(f"fedperfix_official: timm {timm.__version__} {model_name} -> {type(model).__module__}."
              f"{type(model).__name__}({geometry}), {num_classes} classes, {n} parameters", file=sys.stderr, flush=True)
        return model

    timm.create_model = create_model


def run(a):
    meta = check_data(a)
    timm_info = timm_checkout(a.timm)
    geometry = parse_vit(a.vit)
    if a.train_seed != 1 and a.start_method != "forkserver":
        sys.exit("fedperfix_official: --train-seed other than 1 needs --start-method forkserver "
                 "(a spawned client process would seed itself with the code's 1)")
    checkout = os.path.abspath(a.checkout)
    main_py = os.path.join(checkout, "system", "main.py")
    work = os.path.abspath(a.work or os.path.splitext(a.out)[0] + "-work")
    name = os.path.basename(os.path.abspath(a.data).rstrip("/"))
    if name[:2] in ("ag", "SS") or name == "cifar100":
        sys.exit(f"fedperfix_official: --data's folder name {name!r}: main.py treats it as a text set or as CIFAR-100")
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(os.path.join(work, "system"))
    os.makedirs(os.path.join(work, "dataset"))
    os.symlink(os.path.abspath(a.data), os.path.join(work, "dataset", name))
    out = os.path.abspath(a.out)
    wandb_log = os.path.splitext(out)[0] + ".wandb.jsonl"
    if os.path.exists(wandb_log):
        os.remove(wandb_log)
    os.environ.update({"WANDB_STANDIN_LOG": wandb_log, "WANDB_DIR": work, "PYTHONDONTWRITEBYTECODE": "1",
                       "FEDPERFIX_SBS_TRAIN_SEED": str(a.train_seed)})
    sys.dont_write_bytecode = True  # nothing lands in either checkout
    # the processes the code starts import the same modules: under forkserver Python 3.11
    # imports the preload list with the interpreter's own sys.path (it ignores the sys_path it
    # is handed), so the folders go in PYTHONPATH as well
    paths = [PRELOAD, STANDINS, timm_info["path"], os.path.join(checkout, "system")]
    sys.path[:0] = paths
    os.environ["PYTHONPATH"] = os.pathsep.join(paths + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

    import torch
    import torch.multiprocessing as tmp
    import fedperfix_seed
    import timm
    if os.path.dirname(os.path.dirname(os.path.abspath(timm.__file__))) != timm_info["path"]:
        sys.exit(f"fedperfix_official: imported timm from {timm.__file__}, not from --timm {timm_info['path']}")
    fedperfix_seed.install()
    size_create_model(timm, geometry)
    torch.set_num_threads(1)
    if a.start_method == "forkserver":
        set_start_method = tmp.set_start_method
        tmp.set_start_method = lambda method, force=False: set_start_method("forkserver", force=force)
        import fedperfix_preload  # noqa: F401  (sets the forkservers' preload list)

    from flcore.servers import serverbase
    final = {}
    save_results = serverbase.Server.save_results

    def reading_save_results(self):
        # the last round's test results, as receive_models() stored them in the server's clients
        final["client_acc"] = [c.test_acc / c.test_num for c in self.clients]
        final["test_counts"] = [int(c.test_num) for c in self.clients]
        final["correct"] = [int(c.test_acc) for c in self.clients]
        final["sampled_last_round"] = [c.id for c in self.clients if c.sampled]
        # the model's parameters under timm's names (the wrapper's "basic_model." dropped) and
        # the ones its local_parts keep with each client
        bare = lambda k: k[len("basic_model."):] if k.startswith("basic_model.") else k
        final["params"] = {bare(k): list(p.shape) for k, p in self.global_model.named_parameters()}
        final["local_params"] = sorted(bare(k) for k in self.global_model.local)
        return save_results(self)

    serverbase.Server.save_results = reading_save_results
    argv = ["main.py", "-mtd", a.method, "-data", name, "-nb", "10", "-nc", str(meta["clients"]), "-jr", str(a.join_ratio),
            "-nt", "1", "-gr", str(a.rounds), "-ls", str(a.local_steps), "-lbs", str(a.batch), "-eg", "1", "-dev", a.device]
    print("fedperfix_official: cd", os.path.join(work, "system"), "&&", sys.executable, main_py, " ".join(argv[1:]),
          f"(timm {timm_info['version']} at {timm_info['commit']}, ViT {a.vit}, training seed {a.train_seed}, "
          f"start method {a.start_method})", flush=True)
    cwd, start = os.getcwd(), time.time()
    try:
        os.chdir(os.path.join(work, "system"))
        sys.argv = argv
        runpy.run_path(main_py, run_name="__main__")
    finally:
        os.chdir(cwd)
    seconds = round(time.time() - start, 1)
    if not final:
        sys.exit("fedperfix_official: main.py ended without saving its results")
    if final["test_counts"] != meta["test_sizes"]:
        sys.exit(f"fedperfix_official: the clients' test counts {final['test_counts']} are not the partition's")
    evals = []
    with open(wandb_log) as f:
        for line in f:
            r = json.loads(line)
            if "_step" in r and r["_step"] > 0:  # step s is logged at the start of round s: round s's accuracies
                evals.append({"round": r["_step"], "mean_acc": r["Averaged/Acc"] / 100, "std_acc": r["Averaged/Acc_std"] / 100,
                              "pooled_acc": r["Global/Acc"] / 100})
    acc = final["client_acc"]
    res = {"method": a.method, "seed": a.seed, "round": a.rounds, "final_client_acc": acc, "test_counts": final["test_counts"],
           "final_mean_acc": sum(acc) / len(acc), "final_std_acc": float(np.std(acc)),
           "final_pooled_acc": sum(final["correct"]) / sum(final["test_counts"]),
           "sampled_last_round": final["sampled_last_round"], "evals": evals, "params": final["params"],
           "local_params": final["local_params"], "vit": a.vit, "timm": timm_info, "train_seed": a.train_seed,
           "start_method": a.start_method,
           "command": " ".join(argv), "seconds": seconds, "args": vars(a)}
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"fedperfix_official: {a.method} seed {a.seed}: round {a.rounds}: mean client test accuracy "
          f"{res['final_mean_acc']:.4f} ± {res['final_std_acc']:.4f}, pooled {res['final_pooled_acc']:.4f} ({seconds} s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkout", required=True, help="the imguangyu/FedPerfix checkout (holds system/ and dataset/)")
    ap.add_argument("--data", required=True, help="the client data folder (--export writes it, a run reads it)")
    ap.add_argument("--seed", type=int, default=1, help="the partition's seed (export); recorded in a run's result")
    ap.add_argument("--export", help="draw the partition, write --data and this partition file, and stop")
    ap.add_argument("--clients", type=int, default=16, help="export: clients (main.py's -nc)")
    ap.add_argument("--train-images", type=int, default=6000, help="export: the first N training images join the pool")
    ap.add_argument("--test-images", type=int, default=1000, help="export: the first N test images join the pool")
    ap.add_argument("--fmnist", default=FMNIST, help="export: the Fashion-MNIST IDX folder")
    ap.add_argument("--partition", help="run: the exported partition file the data must match")
    ap.add_argument("--method", choices=METHODS, help="run: main.py's -mtd preset")
    ap.add_argument("--rounds", type=int, default=20, help="run: -gr")
    ap.add_argument("--local-steps", type=int, default=2, help="run: -ls, local epochs per round")
    ap.add_argument("--join-ratio", type=float, default=0.25, help="run: -jr, the fraction of clients a round samples")
    ap.add_argument("--batch", type=int, default=64, help="run: -lbs (main.py's default 64)")
    ap.add_argument("--timm", help=f"run: a {TIMM_REPO} checkout at {TIMM_COMMIT} (timm {TIMM_VERSION})")
    ap.add_argument("--train-seed", type=int, default=1,
                    help="run: the seed of the code's own random streams, where main.py seeds with 1 (default 1: its own)")
    ap.add_argument("--vit", default=DEFAULT_VIT, help="run: the ViT's geometry, key=value pairs of " + ", ".join(VIT_KEYS))
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--start-method", default="forkserver", choices=["spawn", "forkserver"],
                    help="run: spawn (main.py's own) or forkserver (the same results, less CPU; see above)")
    ap.add_argument("--work", help="run: scratch folder (default: beside --out)")
    ap.add_argument("--out", help="run: result JSON")
    a = ap.parse_args()
    if a.export:
        export(a)
        return
    if not (a.partition and a.method and a.out and a.timm):
        ap.error("a run needs --partition, --method, --timm and --out (or --export to draw a partition)")
    run(a)


if __name__ == "__main__":
    main()
