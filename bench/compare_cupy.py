#!/usr/bin/env python3
"""Times kiln's benchmark cases in CuPy, in the same run on the same GPU, and prints a
side-by-side table with ratios; the CUDA graph cases (graph_*) are also timed in PyTorch
(torch.cuda.CUDAGraph) when it is installed, in a second table.

    .gpu/kiln_bench > bench.json && python3 bench/compare_cupy.py bench.json [combined.json]
    .gpu/kiln_lib_bench > lib.json && python3 bench/compare_cupy.py bench.json combined.json --also lib.json
    .gpu/layout_sweep > sweep.json && python3 bench/compare_cupy.py --sweep sweep.json sweep_out.json
        (the layout sweep in CuPy and PyTorch beside kiln: bench/sweep_compare.py)

Each case in kiln's JSON has a name, a metric ("GB/s" and "TFLOP/s" higher is better, "us" or
"ms" lower is better) and a value. Files after --also (kiln_lib_bench's JSON) add their cases. Bandwidth counts bytes read plus bytes written.
"""
import json
import os
import sys
import tempfile
import time

import cupy as cp

import sweep_compare  # one timing helper for both scripts

GiB = 1 << 30


def device_ms(fn, warmup=3, repeats=20):
    return sweep_compare.cupy_ms(fn, warmup, repeats)


def host_us(fn, calls=2000, rounds=7):
    for _ in range(calls):
        fn()
    cp.cuda.Stream.null.synchronize()
    res = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        cp.cuda.Stream.null.synchronize()
        res.append((t1 - t0) / calls * 1e6)
    res.sort()
    return res[len(res) // 2]


def cupy_cases():
    out = {}
    rs = cp.random.default_rng(1)
    # Device-to-device copy of 2 GiB.
    src = rs.random(2 * GiB // 4, dtype=cp.float32)
    dst = cp.empty_like(src)
    ms = device_ms(lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, src.nbytes,
                                                       cp.cuda.runtime.memcpyDeviceToDevice, 0))
    out["copy_2GiB"] = ("GB/s", 2 * src.nbytes / ms / 1e6)
    del src, dst
    # my_kernel on 2^28 float32.
    k = cp.ElementwiseKernel("float32 x, float32 y", "float32 z",
                             "z = (x - 2 > y) ? x * y : x + y", "my_kernel")
    n = 1 << 28
    x, y = rs.random(n, dtype=cp.float32) * 8, rs.random(n, dtype=cp.float32) * 8
    z = cp.empty_like(x)
    ms = device_ms(lambda: k(x, y, z))
    out["my_kernel_2^28_f32"] = ("GB/s", 3 * x.nbytes / ms / 1e6)
    del x, y, z
    # x *= 5 on 1000x500x500 float64.
    a = rs.random((1000, 500, 500))
    ms = device_ms(lambda: a.__imul__(5))
    out["imul5_1000x500x500_f64"] = ("GB/s", 2 * a.nbytes / ms / 1e6)
    out["imul5_1000x500x500_f64_ms"] = ("ms", ms)
    del a
    # The strided path: z = x.T + y on 8192^2 float32 (x read through a transposed view).
    add = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y", "add_t")
    xt = rs.random((8192, 8192), dtype=cp.float32)
    yt = rs.random((8192, 8192), dtype=cp.float32)
    zt = cp.empty_like(yt)
    ms = device_ms(lambda: add(xt.T, yt, zt))
    out["strided_transpose_8192sq_f32"] = ("GB/s", 3 * zt.nbytes / ms / 1e6)
    del xt, yt, zt
    # Host cost of a cache-hit elementwise call on 1 element.
    x1, y1 = cp.ones(1, cp.float32), cp.ones(1, cp.float32)
    z1 = cp.empty_like(x1)
    out["hit_call_host_us_given_out"] = ("us", host_us(lambda: k(x1, y1, z1)))
    out["hit_call_host_us_alloc_out"] = ("us", host_us(lambda: k(x1, y1)))
    # Bursts shorter than the launch queue: host cost, not tiny-kernel GPU throughput.
    out["hit_call_host_us_given_out_burst"] = ("us", host_us(lambda: k(x1, y1, z1), 200, 51))
    out["hit_call_host_us_alloc_out_burst"] = ("us", host_us(lambda: k(x1, y1), 200, 51))
    # RawKernel: CuPy's docs my_add on 25 elements (a cache hit), and its cold compile below.
    my_add_src = r'''extern "C" __global__
void my_add(const float* x1, const float* x2, float* y) {
    int tid = blockDim.x * blockIdx.x + threadIdx.x;
    y[tid] = x1[tid] + x2[tid];
}
'''
    raw = cp.RawKernel(my_add_src, "my_add")
    r1, r2 = cp.arange(25, dtype=cp.float32), cp.ones(25, dtype=cp.float32)
    ry = cp.empty_like(r1)
    out["raw_hit_launch_host_us_burst"] = ("us", host_us(lambda: raw((5,), (5,), (r1, r2, ry)), 200, 51))
    # Fused expressions (kiln's expr_* cases): CuPy eager (one kernel per op) and cupy.fuse.
    n = 1 << 28
    x, y = rs.random(n, dtype=cp.float32) * 8 - 4, rs.random(n, dtype=cp.float32) * 8 - 4
    z = cp.empty_like(x)
    # cupy.fuse names its kernel after the function: a lambda's name is not a C identifier.
    def sin5_yy(a, b):
        return cp.sin(a) * 5 + b * b

    f = cp.fuse(sin5_yy)
    ms_fuse = device_ms(lambda: f(x, y))
    ms_eager = device_ms(lambda: cp.sin(x) * 5 + y * y)
    out["expr_sin5_yy_2^28_f32"] = ("GB/s", 3 * x.nbytes / ms_fuse / 1e6)
    out["expr_sin5_yy_2^28_f32_eager"] = ("GB/s", 3 * x.nbytes / ms_eager / 1e6)
    del x, y, z
    a = rs.random((1000, 500, 500))
    ms = device_ms(lambda: a.__imul__(5))
    out["expr_imul5_1000x500x500_f64"] = ("GB/s", 2 * a.nbytes / ms / 1e6)

    def chain():
        a.__imul__(5)
        a.__imul__(a)
        a.__iadd__(a)
    out["expr_chain_imul_isq_iadd_1000x500x500_f64"] = ("ms", device_ms(chain))
    del a
    x1, y1 = cp.ones(1, cp.float32), cp.ones(1, cp.float32)
    z1 = cp.empty_like(x1)
    def sin5_yy_1(a, b):
        return cp.sin(a) * 5 + b * b - 1

    f5 = cp.fuse(sin5_yy_1)
    f5(x1, y1)
    # cupy.fuse allocates its output: compare with kiln's alloc_out_us field too.
    out["expr5_hit_host_us_given_out_burst"] = ("us", host_us(lambda: f5(x1, y1), 200, 51))
    out["expr5_hit_host_us_eager_burst"] = ("us", host_us(lambda: cp.sin(x1) * 5 + y1 * y1 - 1, 200, 51))
    # Cold compile of a new kernel (a fresh cache folder) and an in-memory hit.
    os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp()
    nonce = str(time.time_ns())
    kc = cp.ElementwiseKernel("float32 x", "float32 z", f"z = x * {len(nonce)} + 1", "cold_" + nonce)
    t0 = time.perf_counter()
    kc(x1)
    cp.cuda.Stream.null.synchronize()
    out["cold_compile_ms"] = ("ms", (time.perf_counter() - t0) * 1e3)
    raw_cold = cp.RawKernel(my_add_src + f"// nonce {nonce}\n", "my_add")
    t0 = time.perf_counter()
    raw_cold((5,), (5,), (r1, r2, ry))
    cp.cuda.Stream.null.synchronize()
    out["raw_cold_compile_ms"] = ("ms", (time.perf_counter() - t0) * 1e3)
    # The same for a complex64 kernel (kiln's cold_compile_complex64_ms): the same operation.
    xc, yc = cp.asarray([1.5 - 2j], cp.complex64), cp.asarray([0.5 + 3j], cp.complex64)
    kcc = cp.ElementwiseKernel("complex64 x, complex64 y", "complex64 z",
                               f"z = x * y + conj(x); /* nonce {nonce} */", "cold_c64_" + nonce)
    t0 = time.perf_counter()
    kcc(xc, yc)
    cp.cuda.Stream.null.synchronize()
    out["cold_compile_complex64_ms"] = ("ms", (time.perf_counter() - t0) * 1e3)
    # Reductions (issue 7): bytes read over time, as kiln_bench counts them.
    n = 1 << 28
    xr = rs.random(n, dtype=cp.float32) * 2 - 1
    l2 = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    o = cp.empty((), cp.float32)
    out["sum_2^28_f32"] = ("GB/s", xr.nbytes / device_ms(lambda: cp.sum(xr, out=o)) / 1e6)
    out["l2norm_kernel_2^28_f32"] = ("GB/s", xr.nbytes / device_ms(lambda: l2(xr, o)) / 1e6)
    out["linalg_norm_2^28_f32"] = ("GB/s", xr.nbytes / device_ms(lambda: cp.linalg.norm(xr)) / 1e6)
    # Fused reductions (issue 9): CuPy eager (a temporary, then the reduction) and a hand-written
    # ReductionKernel (its fused best).
    out["sum_x_times_x_2^28_f32"] = ("GB/s", xr.nbytes / device_ms(lambda: (xr * xr).sum()) / 1e6)
    sxx = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "sum_xx")
    out["sum_x_times_x_kernel_2^28_f32"] = ("GB/s", xr.nbytes / device_ms(lambda: sxx(xr, o)) / 1e6)
    yr = rs.random(n, dtype=cp.float32) * 2 - 1
    out["linalg_norm_x_minus_y_2^28_f32"] = ("GB/s", 2 * xr.nbytes / device_ms(lambda: cp.linalg.norm(xr - yr)) / 1e6)
    nd = cp.ReductionKernel("T x, T y", "T z", "(x - y) * (x - y)", "a + b", "z = sqrt(a)", "0", "norm_diff")
    out["linalg_norm_x_minus_y_kernel_2^28_f32"] = ("GB/s", 2 * xr.nbytes / device_ms(lambda: nd(xr, yr, o)) / 1e6)
    out["sum_abs_x_minus_y_2^28_f32"] = ("GB/s", 2 * xr.nbytes / device_ms(lambda: cp.abs(xr - yr).sum()) / 1e6)
    del yr
    m = xr.reshape(16384, 16384)
    rows, cols = cp.empty(16384, cp.float32), cp.empty(16384, cp.float32)
    out["sum_axis1_16384sq_f32"] = ("GB/s", m.nbytes / device_ms(lambda: cp.sum(m, axis=1, out=rows)) / 1e6)
    out["sum_axis0_16384sq_f32"] = ("GB/s", m.nbytes / device_ms(lambda: cp.sum(m, axis=0, out=cols)) / 1e6)
    del xr, m
    x1r, o1 = cp.full(1, 3, cp.float32), cp.empty((), cp.float32)
    l2(x1r, o1)
    out["reduction_hit_call_host_us_burst"] = ("us", host_us(lambda: l2(x1r, o1), 200, 51))
    lc = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm_cold_" + nonce)
    t0 = time.perf_counter()
    lc(x1r)
    cp.cuda.Stream.null.synchronize()
    out["reduction_cold_compile_ms"] = ("ms", (time.perf_counter() - t0) * 1e3)
    return out


# CUDA graphs (issue 17): 100 tiny in-place kernels (x *= 1.0001 on 256 float32), eager and
# replayed from a graph captured once, on one stream; as kiln_bench's case_graphs measures
# them. Per kernel, host plus GPU: wall time of 20 rounds (100 eager calls or one replay) and a
# synchronize, over 2000 kernels; median of 7 rounds.
GRAPH_KERNELS, GRAPH_REPS, GRAPH_ROUNDS = 100, 20, 7


def graph_input():
    return [1.0 + (i % 17) / 17.0 for i in range(256)]


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def wall_us_per_kernel(round_fn, sync, kernels):
    for _ in range(GRAPH_REPS):
        round_fn()
    sync()
    res = []
    for _ in range(GRAPH_ROUNDS):
        t0 = time.perf_counter()
        for _ in range(GRAPH_REPS):
            round_fn()
        sync()
        res.append((time.perf_counter() - t0) * 1e6 / (GRAPH_REPS * kernels))
    return median(res)


def replay_split(launch, stream, event_type, elapsed_ms):
    """Host microseconds of one replay call, and device microseconds per kernel of a replay."""
    host, gpu = [], []
    for _ in range(GRAPH_ROUNDS):
        start, stop = event_type(), event_type()
        start.record(stream)
        t0 = time.perf_counter()
        for _ in range(GRAPH_REPS):
            launch()
        host.append((time.perf_counter() - t0) * 1e6 / GRAPH_REPS)
        stop.record(stream)
        stop.synchronize()
        gpu.append(elapsed_ms(start, stop) * 1e3 / (GRAPH_REPS * GRAPH_KERNELS))
    return median(host), median(gpu)


def cupy_graph_cases():
    out = {}
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.asarray(graph_input(), dtype=cp.float32)

        def hundred():
            for _ in range(GRAPH_KERNELS):
                x.__imul__(1.0001)

        hundred()
        s.synchronize()
        out["graph_eager_100_tiny_us_per_kernel"] = ("us", wall_us_per_kernel(hundred, s.synchronize, GRAPH_KERNELS))
        caps = []
        for _ in range(5):
            t0 = time.perf_counter()
            s.begin_capture()
            hundred()
            g = s.end_capture()
            caps.append((time.perf_counter() - t0) * 1e3)
        out["graph_capture_instantiate_100_ms"] = ("ms", median(caps))
        g.launch(s)
        s.synchronize()
        out["graph_replay_100_tiny_us_per_kernel"] = (
            "us", wall_us_per_kernel(lambda: g.launch(s), s.synchronize, GRAPH_KERNELS))
        host, gpu = replay_split(lambda: g.launch(s), s, cp.cuda.Event, cp.cuda.get_elapsed_time)
        out["graph_replay_host_us"] = ("us", host)
        out["graph_replay_gpu_us_per_kernel"] = ("us", gpu)
    return out


def torch_graph_cases():
    import torch  # the GPU machine's python has it; elsewhere this table is left out

    out = {}
    s = torch.cuda.Stream()
    x = torch.tensor(graph_input(), dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()

    def hundred():
        for _ in range(GRAPH_KERNELS):
            x.mul_(1.0001)

    with torch.cuda.stream(s):
        hundred()
        s.synchronize()
        out["graph_eager_100_tiny_us_per_kernel"] = ("us", wall_us_per_kernel(hundred, s.synchronize, GRAPH_KERNELS))
        caps = []
        for _ in range(5):
            g = torch.cuda.CUDAGraph()
            t0 = time.perf_counter()
            with torch.cuda.graph(g, stream=s):  # (it synchronizes and collects garbage first)
                hundred()
            caps.append((time.perf_counter() - t0) * 1e3)
        out["graph_capture_instantiate_100_ms"] = ("ms", median(caps))
        g.replay()
        s.synchronize()
        out["graph_replay_100_tiny_us_per_kernel"] = (
            "us", wall_us_per_kernel(g.replay, s.synchronize, GRAPH_KERNELS))
        host, gpu = replay_split(g.replay, s, lambda: torch.cuda.Event(enable_timing=True),
                                 lambda a, b: a.elapsed_time(b))
        out["graph_replay_host_us"] = ("us", host)
        out["graph_replay_gpu_us_per_kernel"] = ("us", gpu)
    return out


def cupy_library_cases():
    """The library-backed cases of kiln_lib_bench: sort, SVD, matmul (FP32 and TF32)."""
    out = {}
    rs = cp.random.default_rng(1)
    n = 50_000_000
    x = rs.random(n, dtype=cp.float32)
    out["sort_50M_f32"] = ("ms", device_ms(lambda: cp.sort(x)))
    del x
    x = cp.sin(cp.arange(n, dtype=cp.float64))
    out["sort_50M_f64_sine"] = ("ms", device_ms(lambda: cp.sort(x)))
    del x
    a = cp.random.default_rng(3).uniform(-1, 1, (1000, 1000))
    out["svd_1000_f64"] = ("ms", device_ms(lambda: cp.linalg.svd(a), warmup=1, repeats=5))
    del a
    m = 8192
    a, b = rs.random((m, m), dtype=cp.float32), rs.random((m, m), dtype=cp.float32)
    out["matmul_8192_f32_fp32"] = ("TFLOP/s", 2 * m**3 / (device_ms(lambda: a @ b, 2, 10) * 1e-3) / 1e12)
    del a, b
    # CuPy reads CUPY_TF32 at import: time TF32 in a child process.
    import subprocess
    code = ("import cupy as cp, sys; sys.path.insert(0, %r); from compare_cupy import device_ms; "
            "m = 8192; rs = cp.random.default_rng(1); a = rs.random((m, m), dtype=cp.float32); "
            "b = rs.random((m, m), dtype=cp.float32); "
            "print(2 * m**3 / (device_ms(lambda: a @ b, 2, 10) * 1e-3) / 1e12)"
            % os.path.dirname(os.path.abspath(__file__)))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, CUPY_TF32="1"))
    if res.returncode == 0:
        out["matmul_8192_f32_tf32"] = ("TFLOP/s", float(res.stdout.strip().splitlines()[-1]))
    return out


# ---- issue 16 (reductions engineer's block): reductions over any axes, one-pass statistics and
# reductions fused with their consumers, timed in CuPy and in PyTorch eager (torch.var_mean,
# torch.softmax, torch.nn.functional.layer_norm) on the same GPU. Bytes as kiln_bench counts
# them: read once (reductions), read plus written (fused rows).
def issue16_cases():
    """{case: (bytes, cupy_ms, torch_ms)}; torch_ms is None where PyTorch is missing."""
    try:
        import torch
    except ImportError:
        torch = None

    def torch_ms(fn, warmup=3, repeats=20):
        return None if torch is None else sweep_compare.torch_ms(fn, warmup, repeats)

    def as_torch(a):
        return torch.as_tensor(a, device="cuda") if torch is not None else None

    out = {}
    rs = cp.random.default_rng(16)
    x = rs.random((256, 1024, 1024), dtype=cp.float32) * 2 - 1
    t = as_torch(x)
    out["mean_axes02_256x1024x1024_f32"] = (x.nbytes, device_ms(lambda: cp.mean(x, axis=(0, 2))),
                                            torch_ms(lambda: t.mean(dim=(0, 2))))
    del x, t
    x = rs.random((8192, 8192), dtype=cp.float32) * 2 - 1
    t = as_torch(x)
    out["var_axis1_8192sq_f32"] = (x.nbytes, device_ms(lambda: cp.var(x, axis=1)),
                                   torch_ms(lambda: torch.var(t, dim=1, correction=0)))
    out["var_axis0_8192sq_f32"] = (x.nbytes, device_ms(lambda: cp.var(x, axis=0)),
                                   torch_ms(lambda: torch.var(t, dim=0, correction=0)))
    out["argmax_axis0_8192sq_f32"] = (x.nbytes, device_ms(lambda: cp.argmax(x, axis=0)),
                                      torch_ms(lambda: torch.argmax(t, dim=0)))
    z = cp.empty_like(x)
    tz = as_torch(z)

    def standardize_cupy():
        cp.divide(x - x.mean(axis=0, keepdims=True), x.std(axis=0, keepdims=True), out=z)

    def standardize_torch():
        torch.div(t - t.mean(dim=0, keepdim=True), t.std(dim=0, keepdim=True, correction=0), out=tz)

    out["standardize_axis0_8192sq_f32"] = (2 * x.nbytes, device_ms(standardize_cupy), torch_ms(standardize_torch))
    del x, t, z, tz
    x = rs.random((8192, 4096), dtype=cp.float64) * 2 - 1
    t = as_torch(x)
    out["argmax_axis0_8192x4096_f64"] = (x.nbytes, device_ms(lambda: cp.argmax(x, axis=0)),
                                         torch_ms(lambda: torch.argmax(t, dim=0)))
    x = x.reshape(64, 128, 64, 64).astype(cp.complex128)
    t = as_torch(x)
    out["sum_axes023_64x128x64x64_c128"] = (x.nbytes, device_ms(lambda: cp.sum(x, axis=(0, 2, 3))),
                                            torch_ms(lambda: t.sum(dim=(0, 2, 3))))
    del x, t
    x = rs.random((64, 256, 56, 56), dtype=cp.float32) * 2
    t = as_torch(x)
    both = device_ms(lambda: (cp.mean(x, axis=(0, 2, 3)), cp.var(x, axis=(0, 2, 3))))
    out["var_mean_axes023_64x256x56x56_f32"] = (x.nbytes, both,
                                                torch_ms(lambda: torch.var_mean(t, dim=(0, 2, 3), correction=0)))
    out["mean_then_var_axes023_64x256x56x56_f32"] = (2 * x.nbytes, both, None)
    out["mean_axes023_64x256x56x56_f32"] = (x.nbytes, device_ms(lambda: cp.mean(x, axis=(0, 2, 3))),
                                            torch_ms(lambda: t.mean(dim=(0, 2, 3))))
    del x, t
    for shape, label in (((1 << 24, 16), "2^24x16"), ((16, 1 << 24), "16x2^24")):
        x = rs.random(shape, dtype=cp.float32) * 2 - 1
        t = as_torch(x)
        for axis in (0, 1):
            out[f"sum_axis{axis}_{label}_f32"] = (x.nbytes, device_ms(lambda: cp.sum(x, axis=axis)),
                                                  torch_ms(lambda: t.sum(dim=axis)))
        del x, t
    x = rs.random((16384, 4096), dtype=cp.float32) * 8 - 4
    g = rs.random(4096, dtype=cp.float32) + 0.5
    b = rs.random(4096, dtype=cp.float32) * 2 - 1
    t, tg, tb = as_torch(x), as_torch(g), as_torch(b)

    def softmax_cupy():
        e = cp.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def log_softmax_cupy():
        s = x - x.max(axis=-1, keepdims=True)
        return s - cp.log(cp.exp(s).sum(axis=-1, keepdims=True))

    def layer_norm_cupy():
        return (x - x.mean(axis=-1, keepdims=True)) / cp.sqrt(x.var(axis=-1, keepdims=True) + 1e-5) * g + b

    rows = 2 * x.nbytes
    out["softmax_lastaxis_16384x4096_f32"] = (rows, device_ms(softmax_cupy), torch_ms(lambda: torch.softmax(t, -1)))
    out["log_softmax_lastaxis_16384x4096_f32"] = (rows, device_ms(log_softmax_cupy),
                                                  torch_ms(lambda: torch.log_softmax(t, -1)))
    out["layer_norm_lastaxis_16384x4096_f32"] = (
        rows, device_ms(layer_norm_cupy),
        torch_ms(lambda: torch.nn.functional.layer_norm(t, (4096,), tg, tb, 1e-5)))
    del x, g, b, t, tg, tb
    return out


def issue16_table(kiln, copy_kiln, copy_cupy):
    """Prints kiln's issue-16 cases beside CuPy and PyTorch: ms and fraction of the copy rate."""
    rows = []
    cases = issue16_cases()
    print(f"\n{'issue 16 case':40} {'kiln ms':>9} {'cupy ms':>9} {'torch ms':>9} "
          f"{'kiln/copy':>9} {'cupy/copy':>9} {'torch/copy':>10} {'target ms':>9}")
    fmt = lambda v, w=9: f"{v:{w}.3f}" if isinstance(v, (int, float)) else f"{'-':>{w}}"
    for name, (nbytes, cms, tms) in cases.items():
        k = kiln.get(name, {})
        kms = k.get("ms")
        rate = lambda ms, copy: nbytes / ms / 1e6 / copy if ms and copy else None
        row = dict(name=name, bytes=nbytes, kiln_ms=kms, cupy_ms=cms, torch_ms=tms,
                   kiln_over_copy=rate(kms, copy_kiln), cupy_over_copy=rate(cms, copy_cupy),
                   torch_over_copy=rate(tms, copy_cupy), ms_target=k.get("ms_target"))
        rows.append(row)
        print(f"{name:40} {fmt(kms)} {fmt(cms)} {fmt(tms)} {fmt(row['kiln_over_copy'])} "
              f"{fmt(row['cupy_over_copy'])} {fmt(row['torch_over_copy'], 10)} {fmt(row['ms_target'])}")
    return rows


def main():
    args = sys.argv[1:]
    # ---- the layout sweep (bench/sweep_compare.py): --sweep SWEEP.json [OUT.json] ----
    if "--sweep" in args:
        k = args.index("--sweep")
        sweep = args[k + 1:k + 3] if k + 2 < len(args) and not args[k + 2].startswith("--") else args[k + 1:k + 2]
        args = args[:k] + args[k + 1 + len(sweep):]
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import sweep_compare
        sweep_compare.compare(*sweep)
        if not args:
            return
    # ---- end of the layout sweep ----
    also = args[args.index("--also") + 1:] if "--also" in args else []
    args = args[:args.index("--also")] if "--also" in args else args
    kiln = {c["name"]: c for c in json.load(open(args[0]))["cases"]}
    for path in also:
        kiln.update({c["name"]: c for c in json.load(open(path))["cases"]})
    cupy = cupy_cases()
    cupy.update(cupy_graph_cases())
    if also:
        cupy.update(cupy_library_cases())
    try:
        torch = torch_graph_cases()
    except Exception as e:  # no PyTorch (or no CUDA build of it): the second table is left out
        print(f"PyTorch graph cases left out: {e}")
        torch = {}
    copy_kiln = kiln.get("copy_2GiB", {}).get("value")
    copy_cupy = cupy["copy_2GiB"][1]
    rows = []
    print(f"{'case':34} {'unit':5} {'kiln':>10} {'cupy':>10} {'kiln/cupy':>10} {'kiln/copy':>10}")
    for name in sorted(set(kiln) | set(cupy)):
        kv = kiln.get(name, {}).get("value")
        unit = kiln.get(name, {}).get("metric") or cupy.get(name, ("", None))[0]
        cv = cupy.get(name, (unit, None))[1]
        ratio = kv / cv if kv is not None and cv else None
        vs_copy = kv / copy_kiln if unit == "GB/s" and kv and copy_kiln else None
        rows.append(dict(name=name, unit=unit, kiln=kv, cupy=cv, kiln_over_cupy=ratio,
                         kiln_over_copy=vs_copy,
                         cupy_over_copy=(cv / copy_cupy if unit == "GB/s" and cv else None)))
        fmt = lambda v: f"{v:10.3f}" if isinstance(v, (int, float)) else f"{'-':>10}"
        print(f"{name:34} {unit:5} {fmt(kv)} {fmt(cv)} {fmt(ratio)} {fmt(vs_copy)}")
    torch_rows = []
    if torch:
        print(f"\n{'case':34} {'unit':5} {'kiln':>10} {'torch':>10} {'kiln/torch':>10}")
        for name in sorted(torch):
            kv = kiln.get(name, {}).get("value")
            unit, tv = torch[name]
            ratio = kv / tv if kv is not None and tv else None
            torch_rows.append(dict(name=name, unit=unit, kiln=kv, torch=tv, kiln_over_torch=ratio))
            fmt = lambda v: f"{v:10.3f}" if isinstance(v, (int, float)) else f"{'-':>10}"
            print(f"{name:34} {unit:5} {fmt(kv)} {fmt(tv)} {fmt(ratio)}")
    issue16 = issue16_table(kiln, copy_kiln, copy_cupy)
    if len(args) > 1:
        json.dump(dict(kiln=list(kiln.values()), rows=rows, torch_rows=torch_rows, issue16=issue16),
                  open(args[1], "w"), indent=1)


if __name__ == "__main__":
    main()
