"""The twin of examples/support/mod.rs: the same deterministic parameters
and inputs, bit for bit, and the writer of the reference files the model
examples compare with (examples/reference/*.json).

A recorded tensor is {"shape", "sum", "abs_sum", "index", "values"}: the
f64 sum and sum of absolute values of all elements, and up to `count`
elements (flat row-major indices spread over the tensor) with their values.
"""
import json

import numpy as np

M32 = np.uint64(0xFFFFFFFF)


def unit_values(seed, n):
    """n values in [-1, 1): an integer hash of the index, mod 2^32."""
    i = np.arange(n, dtype=np.uint64)
    x = (i * np.uint64(2654435761) + np.uint64((seed * 40503) & 0xFFFFFFFF) + np.uint64(0x9E3779B9)) & M32
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x045D9F3B)) & M32
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x045D9F3B)) & M32
    x ^= x >> np.uint64(16)
    return x.astype(np.float64) / 4294967296.0 * 2.0 - 1.0


def uniform(shape, seed, bound, dtype=np.float32):
    """bound * unit_values(seed), shaped, computed in f64 and rounded once."""
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    return (unit_values(seed, n) * bound).reshape(shape).astype(dtype)


def torch_bound(fan_in):
    return 1.0 / np.sqrt(float(fan_in))


def labels(n, seed, classes):
    u = unit_values(seed, n)
    return np.minimum(np.floor((u + 1.0) / 2.0 * classes).astype(np.int64), classes - 1)


def record(array, count=256):
    """The JSON entry of one tensor (numpy array or torch tensor)."""
    a = np.asarray(array.detach().cpu().numpy() if hasattr(array, "detach") else array)
    flat = a.astype(np.float64).reshape(-1)
    n = flat.size
    if n <= count:
        index = list(range(n))
    else:
        # Spread over the tensor, plus the first and last elements.
        index = sorted(set(np.linspace(0, n - 1, count).round().astype(np.int64).tolist()))
    return {
        "shape": list(a.shape),
        "sum": float(flat.sum()),
        "abs_sum": float(np.abs(flat).sum()),
        "index": index,
        "values": [float(flat[i]) for i in index],
    }


def write(path, entries):
    with open(path, "w") as f:
        json.dump(entries, f, indent=0)
        f.write("\n")
