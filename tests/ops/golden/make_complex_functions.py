#!/usr/bin/env python3
"""Writes complex_functions.txt: NumPy's results of every complex function kiln's device code
implements, for complex64 and complex128, over a grid whose parts are +-0, +-inf, nan, values
either side of every branch cut (+-0.5, +-1, +-1.3, +-2.5), tiny and huge magnitudes (1e+-300;
1e+-30 for complex64), the overflow edge of exp, plus the points issue 20 reported and a few
random ones. Run once with NumPy 2 and mpmath; the output is committed and read by
tests/codegen/device_complex_host_test.cpp (the device code compiled for the host) and
tests/ops/device_complex_gpu_test.cpp (the same code on a GPU), so the tests need no NumPy.

NumPy's complex log1p is log(hypot(1 + x, y)) + i atan2(y, 1 + x), which loses every digit
of a small real part (log1p(1e-20+0j) is 0 there); kiln computes it accurately, so for log1p
the expected finite results are mpmath's (rounded to the dtype), and NumPy's elsewhere (its
infinities, NaNs and signed zeros). Every other function's expected values are NumPy's.

Format (numbers: Python's shortest round-trip repr of the dtype's value, inf, -inf, nan):
  grid <dtype> <n>                    then n lines `re im`
  pairs <dtype> <n>                   then n lines `a_re a_im b_re b_im` (binary functions)
  unary <function> <dtype>            then one line `re im` per grid point
  binary <function> <dtype>           then one line `re im` per pair
  real <function> <dtype>             then one line `value` per grid point (absolute, angle)
"""
import math
import sys
import warnings

import mpmath
import numpy as np

DTYPES = {"complex64": (np.complex64, np.float32), "complex128": (np.complex128, np.float64)}

UNARY = ["sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
         "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
         "sign", "reciprocal", "square"]
REAL = ["absolute", "angle"]
BINARY = {"divide": np.true_divide, "multiply": np.multiply, "power": np.power}

# Points issue 20 reported (NumPy and kiln disagreed there).
ISSUE = [(-2.637582, 0.0), (-3.9360032, 0.0), (1.3550842, 0.0), (0.0, 1.2513849),
         (0.0, 1.3973596), (-0.98561853, 0.0), (-3.4814205, 0.0), (-np.inf, -0.97),
         (np.inf, 1.56), (0.26, np.inf), (1e300, 0.52), (0.0, 1e-30), (1e-20, 0.0),
         (1e-8, 1e-8), (-1e-9, 3e-5), (0.0, -1.2513849), (-0.98561853, -0.0)]


def parts(dtype):
    tiny, huge, edge = (1e-30, 1e30, 89.0) if dtype == "complex64" else (1e-300, 1e300, 710.0)
    return [0.0, -0.0, np.inf, -np.inf, np.nan, tiny, -tiny, huge, -huge, 0.5, -0.5, 1.0, -1.0,
            1.3, -1.3, 2.5, -2.5, 1e-8, edge, -edge]


def grid(dtype):
    ctype, ftype = DTYPES[dtype]
    rng = np.random.default_rng(20)
    pts = [(a, b) for a in parts(dtype) for b in parts(dtype)] + ISSUE
    mag = 10.0 ** rng.uniform(-6, 6, size=(48, 2))
    sgn = rng.choice([-1.0, 1.0], size=(48, 2))
    pts += [tuple(m * s) for m, s in zip(mag, sgn)]
    pts += [tuple(p) for p in rng.uniform(-3, 3, size=(32, 2))]
    return np.array([complex(ftype(a), ftype(b)) for a, b in pts], dtype=ctype)


def pairs(dtype):
    ctype, _ = DTYPES[dtype]
    g = grid(dtype)
    rng = np.random.default_rng(21)
    a = list(g)  # a / a, a * a, ... for every grid point
    b = list(g)
    idx = rng.integers(0, len(g), size=(400, 2))
    a += [g[i] for i, _ in idx]
    b += [g[j] for _, j in idx]
    # Random normal values: a / a is exactly NumPy's (1 + 0j for most).
    r = (rng.standard_normal(256) + 1j * rng.standard_normal(256)) * 10.0 ** rng.uniform(-8, 8, 256)
    a += list(r)
    b += list(r)
    # Integer and simple exponents for power.
    for e in [2, 3, -1, -2, 5, 0.5, 1j, 0.0]:
        a += list(g[:64])
        b += [complex(e)] * 64
    return np.array(a, dtype=ctype), np.array(b, dtype=ctype)


def fmt(v, ftype):
    v = ftype(v)
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(float(v)) if ftype == np.float64 else str(v)


def log1p_reference(z, ctype, ftype):
    """mpmath's log1p rounded to the dtype where it is finite; NumPy's elsewhere."""
    numpy_value = np.log1p(z)
    if not (np.isfinite(z.real) and np.isfinite(z.imag)):
        return numpy_value
    if not (np.isfinite(numpy_value.real) and np.isfinite(numpy_value.imag)):
        return numpy_value
    mpmath.mp.prec = 200
    w = mpmath.log1p(mpmath.mpc(float(z.real), float(z.imag)))
    re, im = float(w.real), float(w.imag)
    # Rounding to float64 first then to float32 could round twice; mpmath rounds to 24 bits.
    if ftype == np.float32:
        mpmath.mp.prec = 24
        re, im = float(mpmath.mpf(w.real)), float(mpmath.mpf(w.imag))
    # mpmath has no signed zero: on the real axis the imaginary part takes y's sign (+-0 right
    # of the cut at x < -1, +-pi on it), as NumPy's atan2(y, 1 + x).
    if z.imag == 0:
        im = math.copysign(abs(im), float(z.imag))
    return ctype(complex(ftype(re), ftype(im)))


def main():
    out = [f"# NumPy {np.__version__}, mpmath {mpmath.__version__}: "
           "tests/ops/golden/make_complex_functions.py"]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for dtype, (ctype, ftype) in DTYPES.items():
            g = grid(dtype)
            out.append(f"grid {dtype} {len(g)}")
            out += [f"{fmt(z.real, ftype)} {fmt(z.imag, ftype)}" for z in g]
            for name in UNARY:
                if name == "log1p":
                    r = np.array([log1p_reference(z, ctype, ftype) for z in g], dtype=ctype)
                else:
                    r = getattr(np, name)(g)
                assert r.dtype == ctype, (name, r.dtype)
                out.append(f"unary {name} {dtype}")
                out += [f"{fmt(w.real, ftype)} {fmt(w.imag, ftype)}" for w in r]
            for name in REAL:
                r = getattr(np, name)(g)
                assert r.dtype == ftype, (name, r.dtype)
                out.append(f"real {name} {dtype}")
                out += [fmt(w, ftype) for w in r]
            a, b = pairs(dtype)
            out.append(f"pairs {dtype} {len(a)}")
            out += [f"{fmt(x.real, ftype)} {fmt(x.imag, ftype)} {fmt(y.real, ftype)} "
                    f"{fmt(y.imag, ftype)}" for x, y in zip(a, b)]
            for name, f in BINARY.items():
                r = f(a, b)
                assert r.dtype == ctype, (name, r.dtype)
                out.append(f"binary {name} {dtype}")
                out += [f"{fmt(w.real, ftype)} {fmt(w.imag, ftype)}" for w in r]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
