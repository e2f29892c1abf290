#!/usr/bin/env python3
"""kiln <-> PyTorch through DLPack capsules, both ways, checking both sides see one memory.

    python3 tests/interop/dlpack_torch.py build/tests/libkiln_dlpack_probe.so

Exit 0: passed; 1: failed; 77: SKIPPED (no PyTorch with CUDA, or no GPU for kiln).
"""
import ctypes
import sys


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(77)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    try:
        import torch
        import torch.utils.dlpack
    except ImportError:
        skip("PyTorch is not installed")
    if not torch.cuda.is_available():
        skip("PyTorch sees no CUDA GPU")
    lib = ctypes.CDLL(sys.argv[1])
    if not lib.kiln_probe_has_gpu():
        skip("kiln sees no GPU")

    err = ctypes.create_string_buffer(4096)
    py = ctypes.pythonapi
    py.PyCapsule_New.restype = ctypes.py_object
    py.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    py.PyCapsule_GetPointer.restype = ctypes.c_void_p
    py.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    py.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    # kiln -> torch, contiguous and transposed.
    for transposed in (0, 1):
        rows, cols = 3, 5
        managed = ctypes.c_void_p()
        if lib.kiln_probe_export(ctypes.c_longlong(rows), ctypes.c_longlong(cols), transposed,
                                 ctypes.byref(managed), err, len(err)):
            check(False, f"kiln_probe_export: {err.value.decode()}")
            continue
        capsule = py.PyCapsule_New(managed, b"dltensor", None)
        t = torch.utils.dlpack.from_dlpack(capsule)
        base = torch.arange(rows * cols, dtype=torch.float32) * 0.5 + 1
        expect = (base.reshape(cols, rows).T if transposed else base.reshape(rows, cols)).cuda()
        check(t.is_cuda and t.dtype == torch.float32 and tuple(t.shape) == (rows, cols),
              f"torch sees a float32 CUDA tensor of shape ({rows}, {cols}) (transposed={transposed})")
        check(torch.equal(t, expect), f"torch reads kiln's values (transposed={transposed})")
        t.mul_(2)
        torch.cuda.synchronize()
        host = (ctypes.c_float * (rows * cols))()
        lib.kiln_probe_read_exported(host, err, len(err))
        check(list(host) == (expect * 2).cpu().reshape(-1).tolist(),
              f"kiln sees torch's in-place write (transposed={transposed})")

    # torch -> kiln: float32 and int64, one of them non-contiguous.
    for tensor in (torch.randn(4, 6, device="cuda") + 3,
                   torch.arange(30, device="cuda", dtype=torch.int64).reshape(5, 6)[:, ::2]):
        capsule = torch.utils.dlpack.to_dlpack(tensor)
        ptr = py.PyCapsule_GetPointer(capsule, b"dltensor")
        py.PyCapsule_SetName(capsule, b"used_dltensor")  # kiln owns it now
        host = (ctypes.c_double * tensor.numel())()
        torch.cuda.synchronize()
        # Taken before the import: kiln_probe_import then fills the tensor with 7 through kiln.
        expected = tensor.double().cpu().reshape(-1).tolist()
        if lib.kiln_probe_import(ctypes.c_void_p(ptr), ctypes.c_longlong(tensor.numel()), host,
                                 err, len(err)):
            check(False, f"kiln_probe_import: {err.value.decode()}")
            continue
        check(list(host) == expected,
              f"kiln reads torch's {tensor.dtype} {tuple(tensor.shape)} values")
        check(bool((tensor == 7).all()), f"torch sees kiln's fill on {tensor.dtype}")

    print(f"dlpack_torch: {'FAILED ' + str(len(failures)) if failures else 'all passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
