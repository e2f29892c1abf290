#!/usr/bin/env python3
"""Writes op_types.txt: the result dtype NumPy gives for every kiln operator and function, for
every dtype (pair) and weak Python scalar kind. Run once with NumPy 2 and ml_dtypes (for
bfloat16); the output is committed and read by tests/ops/expression_types_test.cpp, so the
tests need no NumPy.

Lines: `<op> <a> [<b>] <result>`; b may be `weak_int`, `weak_float`, `weak_complex` (a Python
scalar on the right); result `TypeError` when NumPy refuses the dtypes.

Then Python ints outside the array dtype's range (negative beside unsigned arrays, past int8,
int16, int32, int64 and uint64, huge beside float16), on the right (`<op> <a> int:<v>`) and
for a few on the left (`<op> int:<v> <a>`), for every binary operator and function, where
(`where <a> int:<v>` is where(cond, a, v)) and clip (`clip <a> int:<lo> int:<hi>`); result
the dtype, or the error NumPy raises: `OverflowError` (the int does not fit the loop's dtype),
`TypeError` (no loop: this wins over the int's range), `ValueError` (an integer to a negative
integer power). A float16 result past its range is inf (NumPy warns). bfloat16 has no such
lines: ml_dtypes' bfloat16 does not follow NEP 50 (it refuses ints past int64), and kiln's
bfloat16 follows its float16 rows.
"""
import sys
import warnings

import ml_dtypes
import numpy as np

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
WEAK = {"weak_int": 1, "weak_float": 1.0, "weak_complex": 1j}


def dt(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def name_of(d):
    d = np.dtype(d)
    return "bfloat16" if d == np.dtype(ml_dtypes.bfloat16) else d.name


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.true_divide,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "power": np.power,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor, "left_shift": np.left_shift,
    "right_shift": np.right_shift, "arctan2": np.arctan2, "hypot": np.hypot,
    "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin,
}
UNARY = {
    "negative": np.negative, "positive": np.positive, "absolute": np.absolute,
    "logical_not": np.logical_not, "invert": np.invert,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos,
    "arctan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "arcsinh": np.arcsinh, "arccosh": np.arccosh, "arctanh": np.arctanh, "exp": np.exp,
    "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "sqrt": np.sqrt, "cbrt": np.cbrt, "square": np.square,
    "reciprocal": np.reciprocal, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "rint": np.rint, "sign": np.sign, "isnan": np.isnan, "isinf": np.isinf,
    "isfinite": np.isfinite, "real": np.real, "imag": np.imag, "conj": np.conj,
    "angle": np.angle,
}


def result(f, *args):
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return name_of(np.asarray(f(*args)).dtype)
    except (TypeError, np.exceptions.DTypePromotionError, ValueError, OverflowError):
        return "TypeError"


# Ints beyond some dtype's range (C++ int64 / uint64 values, as kiln's C++ scalars can be).
OUT_OF_RANGE = [-1, -3, 128, -129, 255, 256, 300, -32769, 32768, 65520, 65535, 65536, 100000,
                -2147483649, 2147483648, 4294967295, 4294967296, 2**63 - 1, 2**63, 2**64 - 1,
                -2**63]
ON_THE_LEFT = [-1, 300, 2147483648, 2**63]
CLIP_BOUNDS = [(-1, 300), (-1, 3), (1, 300), (300, 400), (-5, -1), (-1000, 1000), (0, 255),
               (-128, 127), (-2**63, 2**64 - 1), (2, -1), (-1, 2**63)]


def outcome(f, *args):
    """The result dtype, or the error NumPy raises (the first kind that applies)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return name_of(np.asarray(f(*args)).dtype)
    except OverflowError:
        return "OverflowError"
    except (TypeError, np.exceptions.DTypePromotionError):
        return "TypeError"
    except ValueError:
        return "ValueError"


def out_of_range_lines(arr):
    out = []
    names = [d for d in DTYPES if d != "bfloat16"]
    for op, f in BINARY.items():
        for a in names:
            for v in OUT_OF_RANGE:
                out.append(f"{op} {a} int:{v} {outcome(f, arr[a], v)}")
            for v in ON_THE_LEFT:
                out.append(f"{op} int:{v} {a} {outcome(f, v, arr[a])}")
    for a in names:
        for v in OUT_OF_RANGE:
            out.append(f"where {a} int:{v} {outcome(np.where, arr['bool'], arr[a], v)}")
        for v in ON_THE_LEFT:
            out.append(f"where int:{v} {a} {outcome(np.where, arr['bool'], v, arr[a])}")
        for lo, hi in CLIP_BOUNDS:
            out.append(f"clip {a} int:{lo} int:{hi} {outcome(np.clip, arr[a], lo, hi)}")
    return out


def main():
    out = [f"# NumPy {np.__version__}, ml_dtypes {ml_dtypes.__version__}: "
           "tests/ops/golden/make_op_types.py"]
    arr = {n: np.ones(3, dtype=dt(n)) for n in DTYPES}
    for op, f in UNARY.items():
        for a in DTYPES:
            out.append(f"{op} {a} {result(f, arr[a])}")
    for op, f in BINARY.items():
        for a in DTYPES:
            for b in DTYPES:
                out.append(f"{op} {a} {b} {result(f, arr[a], arr[b])}")
            for w, v in WEAK.items():
                out.append(f"{op} {a} {w} {result(f, arr[a], v)}")
    for a in DTYPES:
        for b in DTYPES:
            out.append(f"where {a} {b} {result(np.where, arr['bool'], arr[a], arr[b])}")
            out.append(f"clip {a} {b} {result(np.clip, arr[a], arr[b], arr[b])}")
        for w, v in WEAK.items():
            out.append(f"where {a} {w} {result(np.where, arr['bool'], arr[a], v)}")
            out.append(f"clip {a} {w} {result(np.clip, arr[a], v, v)}")
    out += out_of_range_lines(arr)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
