#!/usr/bin/env python3
"""Writes scalar_values.txt: NumPy's values for operators and functions with a Python int
outside the array dtype's range (the `int:` lines of op_types.txt that NumPy computes rather
than refuses), over one fixed array per dtype that spans the dtype's range. Run once with
NumPy 2; the output is committed and read by tests/ops/expression_gpu_test.cpp, so the test
needs no NumPy.

Lines: `input <dtype> v...` (the array for that dtype), then `<key> : <result dtype> v...`
with <key> as in op_types.txt (`less uint8 int:-1`, `less int:-1 uint8`, `where int8 int:300`,
`clip uint8 int:-1 int:300`). Booleans are 0/1, integers decimal, floats Python's shortest
round-trip repr of the value (inf, -inf, nan). A float16 result past its range is inf, as
NumPy gives it (with a warning).
"""
import sys
import warnings

import numpy as np

from make_op_types import BINARY, CLIP_BOUNDS, ON_THE_LEFT, OUT_OF_RANGE

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16"]
# Operators whose out-of-range ints NumPy computes with (the others raise OverflowError).
OPS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
       "logical_or", "logical_xor", "divide", "arctan2", "hypot", "add", "multiply", "maximum"]


def inputs(dtype):
    if dtype == "bool":
        return np.array([False, True, True, False])
    if dtype == "float16":
        return np.array([-65504, -2.5, -0.0, 0.0, 1.0, 255.0, 65504, np.inf, -np.inf, np.nan],
                        dtype=np.float16)
    info = np.iinfo(dtype)
    v = sorted({info.min, info.min + 1, -1 if info.min < 0 else 0, 0, 1, 2, info.max // 2,
                info.max - 1, info.max})
    return np.array(v, dtype=dtype)


def text(v):
    if isinstance(v, (bool, np.bool_)):
        return str(int(v))
    if isinstance(v, (np.integer, int)):
        return str(int(v))
    f = float(v)
    if np.isnan(f):
        return "nan"
    if np.isinf(f):
        return "inf" if f > 0 else "-inf"
    return repr(f)


def line(key, f, *args):
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            r = np.asarray(f(*args))
    except (OverflowError, TypeError, ValueError):
        return None
    return f"{key} : {r.dtype.name} " + " ".join(text(v) for v in r.ravel())


def main():
    out = [f"# NumPy {np.__version__}: tests/ops/golden/make_scalar_values.py"]
    arr = {d: inputs(d) for d in DTYPES}
    for d in DTYPES:
        out.append(f"input {d} " + " ".join(text(v) for v in arr[d]))
    cond = {d: np.arange(len(arr[d])) % 3 != 1 for d in DTYPES}
    rows = []
    for op in OPS:
        f = BINARY[op]
        for d in DTYPES:
            rows += [line(f"{op} {d} int:{v}", f, arr[d], v) for v in OUT_OF_RANGE]
            rows += [line(f"{op} int:{v} {d}", f, v, arr[d]) for v in ON_THE_LEFT]
    for d in DTYPES:
        rows += [line(f"where {d} int:{v}", np.where, cond[d], arr[d], v) for v in OUT_OF_RANGE]
        rows += [line(f"where int:{v} {d}", np.where, cond[d], v, arr[d]) for v in ON_THE_LEFT]
        rows += [line(f"clip {d} int:{lo} int:{hi}", np.clip, arr[d], lo, hi)
                 for lo, hi in CLIP_BOUNDS]
    out += [r for r in rows if r is not None]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
