#!/usr/bin/env python3
"""NCCL all_reduce through kiln beside CuPy's NCCL, in the same run on the same GPUs.

    python3 bench/compare_nccl.py .gpu/kiln_nccl_bench [combined.json]

Runs kiln_nccl_bench (kiln with nonblocking and blocking communicators, and NCCL called
directly from C++) with KILN_NCCL_LIBRARY set to the libnccl CuPy loaded, so both drive the same
NCCL; then times CuPy's cupy.cuda.nccl the same way: float32 sum, out of place, on the null
stream; one process driving two GPUs (a group per call) and two processes with one GPU each.
Bus bandwidth is nccl-tests' (bytes / time * 2 (n - 1) / n) of `iters` calls then a stream
synchronize per device (median of 5 rounds); latency is one 8-byte call then the synchronize
(median of 2000); pipelined is 100 calls then the synchronize, per call (median of 20).
Prints a table (kiln / CuPy >= 1 is kiln at least as good) and writes every number as JSON.
NVLink multicast stays off (NCCL_NVLS_ENABLE=0), as on every kiln GPU run.
"""
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

MiB = 1 << 20
SIZES = [MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB]


def cupy_nccl_library():
    """The libnccl file this process loaded for CuPy (after CuPy's first NCCL call)."""
    from cupy.cuda import nccl
    nccl.get_version()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "libnccl" in path and os.path.exists(path):
                return path
    return None


class Timer:
    """The timing loops kiln_nccl_bench uses, for a CuPy op(count) and sync()."""

    def __init__(self, op, sync):
        self.op, self.sync = op, sync

    def latency_us(self):
        for _ in range(200):
            self.op(2)
            self.sync()
        us = []
        for _ in range(2000):
            t0 = time.perf_counter()
            self.op(2)
            self.sync()
            us.append((time.perf_counter() - t0) * 1e6)
        return statistics.median(us)

    def pipelined_us(self):
        us = []
        for r in range(21):
            t0 = time.perf_counter()
            for _ in range(100):
                self.op(2)
            self.sync()
            if r:
                us.append((time.perf_counter() - t0) * 1e6 / 100)
        return statistics.median(us)

    def busbw_gbs(self, nbytes, nranks):
        count = nbytes // 4
        iters = min(max((4 << 30) // nbytes, 5), 200)
        for _ in range(3):
            self.op(count)
        self.sync()
        per_call = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(iters):
                self.op(count)
            self.sync()
            per_call.append((time.perf_counter() - t0) / iters)
        return nbytes / statistics.median(per_call) * 2 * (nranks - 1) / nranks / 1e9


def measure(timer, mode, nranks):
    out = {f"all_reduce_8B_latency_us_{mode}": ("us", timer.latency_us()),
           f"all_reduce_8B_pipelined_us_{mode}": ("us", timer.pipelined_us())}
    for nbytes in SIZES:
        out[f"all_reduce_f32_busbw_{nbytes // MiB}MiB_{mode}"] = ("GB/s", timer.busbw_gbs(nbytes, nranks))
    return out


def cupy_one_process():
    import cupy as cp
    from cupy.cuda import nccl, runtime
    comms = nccl.NcclCommunicator.initAll([0, 1])
    n = SIZES[-1] // 4
    send, recv = [], []
    for d in (0, 1):
        with cp.cuda.Device(d):
            send.append(cp.ones(n, dtype=cp.float32))
            recv.append(cp.empty(n, dtype=cp.float32))
    ptrs = [(s.data.ptr, r.data.ptr) for s, r in zip(send, recv)]

    def op(count):
        nccl.groupStart()
        for c, (s, r) in zip(comms, ptrs):
            c.allReduce(s, r, count, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0)
        nccl.groupEnd()

    def sync():
        for d in (0, 1):
            runtime.setDevice(d)
            runtime.streamSynchronize(0)

    op(1024)
    sync()
    ok = all(float(r[:1024].get().min()) == 2.0 for r in recv)
    result = measure(Timer(op, sync), "1proc", 2)
    return result, ok


def cupy_rank(rank, uid, queue):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    import cupy as cp
    from cupy.cuda import nccl, runtime
    cp.cuda.Device(rank).use()
    comm = nccl.NcclCommunicator(2, uid, rank)
    n = SIZES[-1] // 4
    s, r = cp.ones(n, dtype=cp.float32), cp.empty(n, dtype=cp.float32)
    sp, rp = s.data.ptr, r.data.ptr

    def op(count):
        comm.allReduce(sp, rp, count, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0)

    def sync():
        runtime.streamSynchronize(0)

    op(1024)
    sync()
    ok = float(r[:1024].get().min()) == 2.0
    result = measure(Timer(op, sync), "2proc", 2)
    if rank == 0:
        queue.put((result, ok))


def cupy_two_processes():
    from cupy.cuda import nccl
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    uid = nccl.get_unique_id()
    procs = [ctx.Process(target=cupy_rank, args=(r, uid, queue)) for r in (0, 1)]
    for p in procs:
        p.start()
    result = queue.get(timeout=600)
    for p in procs:
        p.join(timeout=120)
    return result


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    bench = sys.argv[1]
    out_path = sys.argv[2] if len(sys.argv) > 2 else None
    from cupy.cuda import nccl
    lib = cupy_nccl_library()
    env = dict(os.environ)
    if lib:
        env["KILN_NCCL_LIBRARY"] = lib
    t0 = time.time()
    text = subprocess.run([bench], env=env, capture_output=True, text=True, timeout=900).stdout
    # NCCL may print warnings on stdout too: read the one JSON object wherever it starts.
    kiln, _ = json.JSONDecoder().raw_decode(text[text.find('{"device"'):])
    kiln_s = time.time() - t0
    print(f"kiln_nccl_bench took {kiln_s:.1f} s; timing CuPy", flush=True)
    if out_path:  # kiln's numbers survive a CuPy part that does not finish
        with open(out_path + ".kiln.json", "w") as f:
            json.dump(kiln, f, indent=1)
    report = {"cupy_nccl_version": nccl.get_version(), "cupy_nccl_library": lib,
              "kiln": kiln, "kiln_wall_s": kiln_s, "cupy": {}, "errors": list(kiln.get("errors", []))}
    if kiln.get("device") is None:
        print("kiln_nccl_bench:", kiln.get("error"))
        report["errors"].append(kiln.get("error"))
    for name, fn in (("1proc", cupy_one_process), ("2proc", cupy_two_processes)):
        try:
            cases, ok = fn()
            if not ok:
                report["errors"].append(f"cupy {name}: wrong all_reduce result")
            report["cupy"].update({k: {"metric": m, "value": v} for k, (m, v) in cases.items()})
        except Exception as e:  # keep the other half and kiln's numbers
            report["errors"].append(f"cupy {name}: {e!r}")

    by = {}
    for c in kiln.get("cases", []):
        key = c["name"][: -(len(c["impl"]) + 1)]
        by.setdefault(key, {"metric": c["metric"]})[c["impl"]] = c["value"]
    for key, c in report["cupy"].items():
        by.setdefault(key, {"metric": c["metric"]})["cupy"] = c["value"]
    print(f"kiln {kiln.get('nccl', {}).get('version')} ({kiln.get('nccl', {}).get('path')}), "
          f"CuPy NCCL {report['cupy_nccl_version']} ({lib}); device {kiln.get('device')}")
    print(f"{'case':40s} {'metric':5s} {'kiln':>9s} {'kiln_blk':>9s} {'direct':>9s} {'cupy':>9s} "
          f"{'kiln/cupy':>9s} {'blk/cupy':>9s}")
    rows = []
    for key in sorted(by, key=lambda k: (k.split("_")[-1], "busbw" in k, k)):
        c = by[key]
        vals = [c.get(i) for i in ("kiln", "kiln_blocking", "nccl_direct", "cupy")]

        def ratio(a, b):
            if a is None or b is None or a == 0 or b == 0:
                return None
            return a / b if c["metric"] == "GB/s" else b / a  # >= 1: kiln at least as good

        r1, r2 = ratio(vals[0], vals[3]), ratio(vals[1], vals[3])
        rows.append({"case": key, "metric": c["metric"], "kiln": vals[0], "kiln_blocking": vals[1],
                     "nccl_direct": vals[2], "cupy": vals[3], "kiln_over_cupy": r1,
                     "kiln_blocking_over_cupy": r2})
        fmt = lambda v: f"{v:9.2f}" if v is not None else f"{'-':>9s}"
        print(f"{key:40s} {c['metric']:5s} {fmt(vals[0])} {fmt(vals[1])} {fmt(vals[2])} "
              f"{fmt(vals[3])} {fmt(r1)} {fmt(r2)}")
    report["rows"] = rows
    if report["errors"]:
        print("errors:", *report["errors"], sep="\n  ")
    if out_path:
        with open(out_path, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
