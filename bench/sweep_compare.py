#!/usr/bin/env python3
"""The layout sweep in CuPy and PyTorch: every case of layout_sweep's JSON rebuilt (the same
views: a C-contiguous base, transposed, then sliced) and timed in each library on the same GPU,
in the same run, beside each library's own device-to-device copy.

    .gpu/layout_sweep > sweep.json && python3 bench/sweep_compare.py sweep.json [out.json]
    python3 bench/compare_cupy.py bench.json combined.json --sweep sweep.json [out.json]

Per case: kiln's fraction of the copy rate (from the sweep), CuPy's and PyTorch's (bytes as the
sweep counts them, over the copy rate each measured here). PyTorch has no negative strides:
cases with a negative step have no PyTorch value. Then, per family and library: min, median and
the five worst.

How each library runs a case, as a user writes it:
  sub          z = x - y into the output view: cp.subtract(x, y, out=z); torch.sub(x, y, out=z)
  axpy         z = x * 1.5 + y into it: a CuPy ElementwiseKernel (one kernel, as kiln's
               expression); torch.add(y, x, alpha=1.5, out=z)
  sum, max, mean, var, argmax   the library's reduction over the same axes (var: ddof 0)
  softmax, log_softmax, layer_norm, standardize, mean_var   CuPy: NumPy's functions (max, exp,
               sum, mean, var); PyTorch: torch.softmax, torch.log_softmax,
               torch.nn.functional.layer_norm, torch.var_mean (standardizing over (0, 2, 3) of
               a 4-d array: torch.nn.functional.batch_norm in training mode, no affine)
"""
import json
import statistics
import sys

GiB = 1 << 30


# ---------------------------------------------------------------- timing

def event_median_ms(fn, new_event, elapsed_ms, warmup, repeats):
    """Median device time of fn between two events of one library (CuPy's or PyTorch's)."""
    for _ in range(warmup):
        fn()
    start, stop = new_event(), new_event()
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(elapsed_ms(start, stop))
    return sorted(times)[len(times) // 2]


def cupy_ms(fn, warmup=3, repeats=15):
    import cupy as cp
    return event_median_ms(fn, cp.cuda.Event, cp.cuda.get_elapsed_time, warmup, repeats)


def torch_ms(fn, warmup=3, repeats=15):
    import torch
    return event_median_ms(fn, lambda: torch.cuda.Event(enable_timing=True),
                           lambda a, b: a.elapsed_time(b), warmup, repeats)


def py_slices(view):
    return tuple(slice(s[0], s[1], s[2]) for s in view["slices"])


def has_negative_step(case):
    views = case["inputs"] + ([case["out"]] if case["out"] else [])
    return any(s[2] < 0 for v in views if v["slices"] for s in v["slices"])


def cupy_view(base, view):
    a = base
    if view["perm"]:
        a = a.transpose(view["perm"])
    if view["slices"]:
        a = a[py_slices(view)]
    return a


def torch_view(base, view):
    a = base
    if view["perm"]:
        a = a.permute(*view["perm"])
    if view["slices"]:
        a = a[py_slices(view)]
    return a


def cupy_base(shape, dtype, rs):
    import cupy as cp
    if dtype == "int32":
        return rs.integers(-1000, 1000, size=shape, dtype=cp.int32)
    return (rs.random(shape, dtype=cp.float32) * 8 - 4).astype(dtype)


def torch_base(shape, dtype):
    import torch
    if dtype == "int32":
        return torch.randint(-1000, 1000, shape, dtype=torch.int32, device="cuda")
    return (torch.rand(shape, dtype=torch.float32, device="cuda") * 8 - 4).to(getattr(torch, dtype))


def axes_of(case):
    return tuple(case["axes"])


# ---------------------------------------------------------------- one case per library

_axpy = {}


def cupy_case(case, rs):
    import cupy as cp
    xs = [cupy_view(cupy_base(v["base"], case["dtype"], rs), v) for v in case["inputs"]]
    op, ax, keep = case["op"], axes_of(case), case["keepdims"]
    if case["out"]:
        z = cupy_view(cp.empty(case["out"]["base"], dtype=case["dtype"]), case["out"])
        if op == "sub":
            return lambda: cp.subtract(xs[0], xs[1], out=z)
        if "k" not in _axpy:
            _axpy["k"] = cp.ElementwiseKernel("T x, T y", "T z", "z = x * (T)1.5 + y", "sweep_axpy")
        k = _axpy["k"]
        return lambda: k(xs[0], xs[1], z)
    x = xs[0]
    if op in ("sum", "max", "mean", "var"):
        f = {"sum": cp.sum, "max": cp.amax, "mean": cp.mean, "var": cp.var}[op]
        return lambda: f(x, axis=ax, keepdims=keep)
    if op == "argmax":
        return lambda: cp.argmax(x, axis=ax[0], keepdims=keep)
    if op == "softmax":
        def softmax():
            e = cp.exp(x - x.max(axis=ax, keepdims=True))
            return e / e.sum(axis=ax, keepdims=True)
        return softmax
    if op == "log_softmax":
        def log_softmax():
            s = x - x.max(axis=ax, keepdims=True)
            return s - cp.log(cp.exp(s).sum(axis=ax, keepdims=True))
        return log_softmax
    if op == "layer_norm":
        g, b = xs[1], xs[2]
        return lambda: (x - x.mean(axis=ax, keepdims=True)) / cp.sqrt(x.var(axis=ax, keepdims=True) + 1e-5) * g + b
    if op == "standardize":
        return lambda: (x - x.mean(axis=ax, keepdims=True)) / cp.sqrt(x.var(axis=ax, keepdims=True) + 1e-5)
    if op == "mean_var":
        return lambda: (x.mean(axis=ax), x.var(axis=ax))
    raise ValueError(op)


def torch_case(case):
    import torch
    import torch.nn.functional as F
    if has_negative_step(case):
        return None
    xs = [torch_view(torch_base(v["base"], case["dtype"]), v) for v in case["inputs"]]
    op, ax, keep = case["op"], axes_of(case), case["keepdims"]
    if case["out"]:
        z = torch_view(torch.empty(case["out"]["base"], dtype=getattr(torch, case["dtype"]), device="cuda"),
                       case["out"])
        # PyTorch resizes an out= tensor to the inputs' broadcast shape (a broadcast case whose
        # output has a leading axis no input has would compute less): expand them to it.
        xs = [v.expand(z.shape) for v in xs]
        if op == "sub":
            return lambda: torch.sub(xs[0], xs[1], out=z)
        return lambda: torch.add(xs[1], xs[0], alpha=1.5, out=z)
    x = xs[0]
    if op == "sum":
        return lambda: torch.sum(x, dim=ax, keepdim=keep)
    if op == "max":
        return lambda: torch.amax(x, dim=ax, keepdim=keep)
    if op == "mean":
        return lambda: torch.mean(x, dim=ax, keepdim=keep)
    if op == "var":
        return lambda: torch.var(x, dim=ax, keepdim=keep, correction=0)
    if op == "argmax":
        return lambda: torch.argmax(x, dim=ax[0], keepdim=keep)
    if op == "softmax" and ax == (-1,):
        return lambda: torch.softmax(x, -1)
    if op == "log_softmax" and ax == (-1,):
        return lambda: torch.log_softmax(x, -1)
    if op == "layer_norm":
        return lambda: F.layer_norm(x, (x.shape[-1],), xs[1], xs[2], 1e-5)
    if op == "standardize" and ax == (0, 2, 3) and x.dim() == 4:
        # Batch statistics of NCHW: PyTorch's own kernel for them (batch norm in training
        # mode, no affine), where var_mean then arithmetic would run three kernels.
        return lambda: F.batch_norm(x, None, None, training=True, momentum=0.0, eps=1e-5)
    if op == "standardize":
        def standardize():
            v, m = torch.var_mean(x, dim=ax, keepdim=True, correction=0)
            return (x - m) / torch.sqrt(v + 1e-5)
        return standardize
    if op == "mean_var":
        return lambda: torch.var_mean(x, dim=ax, correction=0)
    return None


# ---------------------------------------------------------------- the comparison

def copy_rates():
    import cupy as cp
    import torch
    n = 2 * GiB // 4
    src = cp.random.default_rng(1).random(n, dtype=cp.float32)
    dst = cp.empty_like(src)
    ms = cupy_ms(lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, src.nbytes,
                                                     cp.cuda.runtime.memcpyDeviceToDevice, 0))
    cupy_rate = 2 * src.nbytes / ms / 1e6
    del src, dst
    cp.get_default_memory_pool().free_all_blocks()
    a = torch.rand(n, device="cuda")
    b = torch.empty_like(a)
    torch_rate = 2 * a.nbytes / torch_ms(lambda: b.copy_(a)) / 1e6
    del a, b
    torch.cuda.empty_cache()
    return cupy_rate, torch_rate


def summary(values):
    """min, median and the five worst (name, fraction) of a family's cases."""
    vals = sorted((v, n) for n, v in values if v is not None)
    if not vals:
        return None
    return {"count": len(vals), "min": vals[0][0], "median": statistics.median(v for v, _ in vals),
            "worst": [{"name": n, "fraction": v} for v, n in vals[:5]]}


def compare(sweep_path, out_path=None):
    import cupy as cp
    import torch
    sweep = json.load(open(sweep_path))
    cupy_copy, torch_copy = copy_rates()
    rs = cp.random.default_rng(7)
    rows = []
    print(f"{'family':12} {'case':58} {'dtype':9} {'kiln':>6} {'cupy':>6} {'torch':>6}")
    for case in sweep["cases"]:
        row = {"family": case["family"], "name": case["name"], "dtype": case["dtype"], "op": case["op"],
               "kiln": case.get("fraction") if not case.get("error") else None, "cupy": None, "torch": None}
        try:
            fn = cupy_case(case, rs)
            row["cupy"] = case["bytes"] / cupy_ms(fn) / 1e6 / cupy_copy
        except Exception as e:  # a layout or dtype the library refuses: no value
            row["cupy_error"] = str(e)[:200]
        fn = None
        cp.get_default_memory_pool().free_all_blocks()
        try:
            fn = torch_case(case)
            if fn is not None:
                row["torch"] = case["bytes"] / torch_ms(fn) / 1e6 / torch_copy
        except Exception as e:
            row["torch_error"] = str(e)[:200]
        fn = None
        torch.cuda.empty_cache()
        f = lambda v: f"{v:6.3f}" if isinstance(v, float) else f"{'-':>6}"
        print(f"{row['family']:12} {row['name'][:58]:58} {row['dtype']:9} {f(row['kiln'])} {f(row['cupy'])} {f(row['torch'])}")
        rows.append(row)
    families = {}
    for fam in dict.fromkeys(r["family"] for r in rows):
        fr = [r for r in rows if r["family"] == fam]
        families[fam] = {lib: summary([(r["name"], r[lib]) for r in fr]) for lib in ("kiln", "cupy", "torch")}
        # The cases every library ran, so the three columns compare the same work.
        both = [r for r in fr if r["kiln"] is not None and r["cupy"] is not None and r["torch"] is not None]
        families[fam]["common"] = {lib: summary([(r["name"], r[lib]) for r in both]) for lib in ("kiln", "cupy", "torch")}
    print()
    print(f"{'family':12} {'lib':6} {'n':>4} {'min':>6} {'median':>7}  worst five")
    for fam, libs in families.items():
        for lib in ("kiln", "cupy", "torch"):
            s = libs[lib]
            if not s:
                continue
            worst = ", ".join(f"{w['fraction']:.2f}" for w in s["worst"])
            print(f"{fam:12} {lib:6} {s['count']:4d} {s['min']:6.3f} {s['median']:7.3f}  {worst}")
    result = {"device": sweep.get("device"), "kiln_copy_GBps": sweep.get("copy_GBps"), "cupy_copy_GBps": cupy_copy,
              "torch_copy_GBps": torch_copy, "rows": rows, "families": families}
    if out_path:
        json.dump(result, open(out_path, "w"), indent=1)
    return result


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    compare(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
