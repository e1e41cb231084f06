"""A one-thread PyTorch training loop of FedTP's ViT: the per-step floor pfl is compared with.

usage: /usr/bin/python3 scripts/sbs/torch_step.py --checkout FEDTP --einops EINOPS --steps N
           [--warmup W] [--batch 64] [--depth 6] [--patch 4] [--dim 128] [--heads 8]
           [--dim-head 64] [--mlp 256] [--eval-batches M] [--eval-batch 64] [--profile FILE]
           [--callgrind train|eval]

The model is the official class, models/vit.py's ViT from a checkout of zhyczy/FedTP (commit
3cca0d7f57c09800faab85ff443459bd2df37589; fetch it and make a work tree outside this
repository), with the einops library (arogozhnikov/einops, tag v0.8.2) on sys.path. Each
step is the official train_net's body (methods/method.py): zero_grad, the input marked as
requiring a gradient, forward, cross-entropy, backward, SGD step (lr 0.05, momentum 0.9,
weight decay 1e-5: FedTP's defaults) and loss.item(), on a fixed batch of random
CIFAR-shaped images and labels (no data loader: what is compared is the step). W untimed
warm-up steps run first. With --eval-batches, M no-grad forward passes of --eval-batch
images follow (the official compute_accuracy's body: forward and argmax), after the steps.

It prints the steps' wall and CPU time per sample. --callgrind train (or eval), for a run
under `valgrind --tool=callgrind --instr-atstart=no`, turns callgrind's instrumentation on
(callgrind_control -i on) just before the timed steps (or the evaluation's batches) and off
after them, so the count is theirs alone: imports, model setup and warm-up are not counted
(scripts/sbs/step-cost.sh). --profile FILE writes libtorch's profiler table of the timed
steps (self CPU time per op) to FILE.
"""

import argparse
import os
import subprocess
import sys
import time


def instrument(on, phase, want):
    """Turns callgrind's instrumentation of this process on or off around phase."""
    if want == phase:
        subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(os.getpid())],
                       check=True, capture_output=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--checkout", required=True, help="a zhyczy/FedTP checkout")
    p.add_argument("--einops", required=True, help="an arogozhnikov/einops checkout (its folder holding einops/)")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--patch", type=int, default=4)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--dim-head", type=int, default=64)
    p.add_argument("--mlp", type=int, default=256)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--eval-batches", type=int, default=0)
    p.add_argument("--eval-batch", type=int, default=64)
    p.add_argument("--profile", default="")
    p.add_argument("--callgrind", choices=["train", "eval"], default=None)
    a = p.parse_args()
    sys.path.insert(0, os.path.abspath(a.einops))
    sys.path.insert(0, os.path.abspath(a.checkout))
    import torch
    from torch import nn, optim
    from models.vit import ViT  # the official class

    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = ViT(image_size=32, patch_size=a.patch, num_classes=a.classes, dim=a.dim, depth=a.depth,
              heads=a.heads, mlp_dim=a.mlp, dim_head=a.dim_head, dropout=0.1, emb_dropout=0.1)
    # main.py's SGD: lr, momentum (--rho) and weight decay (--reg) at FedTP's defaults
    optimizer = optim.SGD([q for q in net.parameters() if q.requires_grad], lr=0.05, momentum=0.9, weight_decay=1e-5)
    criterion = nn.CrossEntropyLoss()
    x0 = torch.randn(a.batch, 3, 32, 32)
    target0 = torch.randint(0, a.classes, (a.batch,))

    def step():
        x, target = x0.clone(), target0.clone()
        optimizer.zero_grad()
        x.requires_grad = True
        target.requires_grad = False
        target = target.long()
        out = net(x)
        loss = criterion(out, target)
        loss.backward()
        optimizer.step()
        return loss.item()

    net.train()
    for _ in range(a.warmup):
        step()
    prof = None
    if a.profile:
        prof = torch.autograd.profiler.profile()
        prof.__enter__()
    instrument(True, "train", a.callgrind)
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(a.steps):
        step()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    instrument(False, "train", a.callgrind)
    n = a.steps * a.batch
    if n:
        print(f"torch_step: {a.steps} steps of {a.batch}: {wall:.3f} s wall, {cpu:.3f} s CPU, "
              f"{n / wall:.1f} samples/s (wall), {n / max(cpu, 1e-9):.1f} samples/s (CPU)", flush=True)
    if a.eval_batches:
        net.eval()
        xe = torch.randn(a.eval_batch, 3, 32, 32)
        instrument(True, "eval", a.callgrind)
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.no_grad():
            for _ in range(a.eval_batches):
                _, pred = torch.max(net(xe).data, 1)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        instrument(False, "eval", a.callgrind)
        m = a.eval_batches * a.eval_batch
        print(f"torch_step: eval {a.eval_batches} batches of {a.eval_batch}: {wall:.3f} s wall, {cpu:.3f} s CPU, "
              f"{m / wall:.1f} samples/s (wall)", flush=True)
    if prof is not None:
        prof.__exit__(None, None, None)
        with open(a.profile, "w") as f:
            f.write(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=60))


if __name__ == "__main__":
    main()
