#!/usr/bin/python3
"""Instructions per sample, by op family, from pairs of callgrind runs that differ only in
how much work they do (scripts/sbs/step-cost.sh makes them).

usage: callgrind_families.py --label NAME --small A.out --large B.out --samples N
           [--label NAME --small ... --large ... --samples N ...] [--json FILE] [--top K]

For each labelled side, the difference of the two runs' self instruction counts
(callgrind_annotate, every function) is the cost of the extra work alone: start-up, data
loading and warm-up are in both runs and cancel. --small - takes a zero count: the --large
run counted only the work itself (instrumentation turned on around it). Dividing by N, the samples that extra
work processed, gives instructions per sample. Every function is put in one family by its
name and object (FAMILIES below, first match wins); the table has one column per side.
--top K also lists each side's K functions with the largest difference.
"""
import argparse
import json
import re
import subprocess
import sys

# (family, pattern over "function [object]"); the first match wins, so the specific come first
FAMILIES = [
    ("matmul: BLAS sgemm (OpenBLAS)", r"(sgemm|sgemv|_kernel_(HASWELL|SKYLAKEX|ZEN|SANDYBRIDGE|generic)|_[ot]copy|_beta|gemm_|blas_|openblas|libblas|\bs?dot_k|saxpy)"),
    ("matmul: ATen glue (addmm/bmm/matmul)", r"(addmm|baddbmm|\bbmm|matmul|_mm\b|mm_out|structured_mm|gemm|cpublas)"),
    ("softmax", r"softmax"),
    ("layer norm", r"layer_?norm|LayerNorm|RowwiseMoments|rowwise_moments"),
    ("GELU", r"gelu|erf"),
    ("dropout: Bernoulli mask (RNG)", r"bernoulli|mt19937|uniform_real|philox|random_|CPUGeneratorImpl|uniform_int"),
    ("cross-entropy / log-softmax / NLL", r"nll_loss|log_softmax|cross_entropy|logsoftmax"),
    ("reductions (sum, mean, max, argmax)", r"reduce|sum_kernel|cascade_sum|mean_kernel|argmax|max_kernel|ReduceOps|norm_kernel"),
    ("copies, transposes, cat (contiguous, permute, reshape)", r"copy_|copy_kernel|\bcopy\b|transpose|permute|contiguous|\bcat\b|cat_serial|_cat|clone|unfold|index_select|index_copy|narrow|memcpy|memmove"),
    ("elementwise: add, mul, div, fill, where (the optimizer's updates too)", r"add_kernel|mul_kernel|div_|addcmul|addcdiv|fill_|zero_|foreach|VectorizedLoop2d|basic_loop|vectorized_loop|cpu_kernel|binary_op|unary_op|Vectorized|\bvec::|at::vec|map2|map3|where_kernel|lerp|clamp|threshold|scalar"),
    ("memory: malloc, free, page faults (libc, allocator)", r"malloc|free|calloc|realloc|_int_|mmap|munmap|madvise|memset|posix_memalign|arena|tcache|sysmalloc|CPUCachingAllocator|host_cache|pfl_cache|Allocator|alloc_cpu|free_cpu"),
    ("autograd engine and graph", r"torch::autograd|autograd::|Engine::|Node::|GraphTask|SavedVariable|InputBuffer|VariableHooks|grad_fn|AccumulateGrad|Function::|validate_outputs|collect_next_edges|gradient_edge"),
    ("dispatcher, tensor bookkeeping (c10, at::_ops, TensorIterator set-up)", r"c10::|at::_ops|TensorIterator|TensorImpl|TensorBase|intrusive_ptr|SmallVector|DispatchKey|OperatorHandle|Dispatcher|KernelFunction|boxed|at::Tensor|at::native|at::detail|at::impl|at::meta|at::cpu|infer_size|computeStride|resize_|empty_|set_sizes|is_contiguous|compute_|ThreadLocal|RecordFunction|record_function|std::|__gnu_cxx|operator new|operator delete|__cxa|_Unwind|pthread|__tls_get_addr|__dynamic_cast|atomic"),
    ("Python interpreter", r"_Py|Py[A-Z_]|python3|libpython|\[/usr/bin/python|frame_|_PyEval|lookdict|dict_|list_|tuple|unicode|long_|float_|method_vectorcall|vectorcall|torch::|THP|pybind11"),
    ("Go runtime and pfl's glue (cgo, scopes)", r"\bruntime\.|pfl/|cgocall|_cgo|crosscall|asmcgocall|\bgo\.|sync\.|internal/|reflect\.|pfl_|libpfltorch"),
]
COMPILED = [(f, re.compile(p)) for f, p in FAMILIES]
OTHER = "other"


def family(name):
    for f, rx in COMPILED:
        if rx.search(name):
            return f
    return OTHER


LINE = re.compile(r"^\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(.+?)\s*$")


def self_costs(path):
    """{function [object]: self Ir} of a callgrind output, and the program's total."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--show-percs=no", path],
                         check=True, capture_output=True, text=True).stdout
    costs, total, body = {}, None, False
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        ir, rest = int(m.group(1).replace(",", "")), m.group(2)
        if "PROGRAM TOTALS" in rest:
            total = ir
            continue
        if ":" not in rest:
            continue
        body = True
        # "file:function [object]": drop the source file, keep function and object
        fn = rest.split(":", 1)[1] if not rest.startswith("0x") else rest
        costs[fn] = costs.get(fn, 0) + ir
    if total is None or not body:
        sys.exit(f"callgrind_families: {path}: no totals or functions in callgrind_annotate's output")
    return costs, total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--label", action="append", required=True)
    ap.add_argument("--small", action="append", required=True)
    ap.add_argument("--large", action="append", required=True)
    ap.add_argument("--samples", action="append", type=float, required=True)
    ap.add_argument("--json", default="")
    ap.add_argument("--top", type=int, default=0)
    a = ap.parse_args()
    if not (len(a.label) == len(a.small) == len(a.large) == len(a.samples)):
        sys.exit("callgrind_families: give --label, --small, --large and --samples once per side")
    sides = []
    for label, small, large, n in zip(a.label, a.small, a.large, a.samples):
        cs, ts = ({}, 0) if small == "-" else self_costs(small)
        cl, tl = self_costs(large)
        diff = {k: cl.get(k, 0) - cs.get(k, 0) for k in set(cs) | set(cl)}
        fam = {}
        for k, v in diff.items():
            f = family(k)
            fam[f] = fam.get(f, 0) + v
        sides.append({"label": label, "samples": n, "total": (tl - ts) / n,
                      "families": {f: v / n for f, v in fam.items()}, "diff": diff})
    names = [f for f, _ in FAMILIES] + [OTHER]
    head = "| op family | " + " | ".join(f"{s['label']} (instructions per sample)" for s in sides) + " |"
    if len(sides) == 2:
        head += f" {sides[0]['label']} / {sides[1]['label']} |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))

    def row(name, vals):
        cells = [f"{v / 1e6:,.2f} M" for v in vals]
        line = f"| {name} | " + " | ".join(cells) + " |"
        if len(vals) == 2:
            line += f" {vals[0] / vals[1]:.3f} |" if vals[1] else " — |"
        print(line)

    for f in names:
        vals = [s["families"].get(f, 0.0) for s in sides]
        if any(abs(v) >= 1e3 for v in vals):
            row(f, vals)
    row("**all (program totals)**", [s["total"] for s in sides])
    for s in sides:
        print(f"\n{s['label']}: {s['samples']:g} samples in the difference of the two runs")
        if a.top:
            for k, v in sorted(s["diff"].items(), key=lambda kv: -abs(kv[1]))[:a.top]:
                print(f"  {v / s['samples'] / 1e6:10.3f} M  [{family(k)}]  {k[:160]}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump([{k: v for k, v in s.items() if k != "diff"} for s in sides], f, indent=1)


if __name__ == "__main__":
    main()
