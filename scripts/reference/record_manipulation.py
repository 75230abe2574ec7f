"""Records PyTorch's values of the shape-manipulation ops (split,
split_with_sizes, chunk, flip, roll, repeat, masked_fill, one_hot) and their
derivatives on edge cases, for tests/suite/manipulation.rs (which reads
tests/reference/torch_manipulation.json). record_sorting.py uses the same
recorder for max/min/sort/topk.

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch
    /tmp/torchenv/bin/python scripts/reference/record_manipulation.py

For each case, in float64 and float32: every output (shape, dtype, values);
the gradient with respect to the input of sum_j sum(out_j * w_j) over the
float outputs, where the cotangents w_j are recorded too (multiples of 1/4,
exact in both dtypes); and the output tangents of torch.func.jvp along a
recorded tangent (also multiples of 1/4). JSON has no NaN or infinity, so
those are written as the strings "nan", "inf" and "-inf". The JSON is
committed, so the tests need no Python.
"""
import json
import math
import pathlib

import torch
import torch.nn.functional as F

from recording import encode

NAN, INF = math.nan, math.inf


def quarters(n, start):
    """n distinct-ish multiples of 1/4 in [-2, 2], a sequence from `start`."""
    return [((start + 7 * k) % 17 - 8) / 4.0 for k in range(n)]


def flat(t):
    return t.detach().reshape(-1).tolist()


def dtype_name(t):
    return {torch.float64: "f64", torch.float32: "f32", torch.int64: "i64", torch.bool: "bool"}[t.dtype]


def as_list(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return list(out)


def record(op, args, shape, values, f, dtype, extra=None):
    """One case: `f(x)` of the tensor of `shape` holding `values`."""
    x0 = torch.tensor(values, dtype=dtype).reshape(shape)
    x = x0.clone().requires_grad_(True)
    outs = as_list(f(x))
    floats = [o for o in outs if o.dtype.is_floating_point]
    cotangents = []
    loss = torch.zeros((), dtype=dtype)
    for j, o in enumerate(outs):
        if o.dtype.is_floating_point:
            w = torch.tensor(quarters(o.numel(), 3 + j), dtype=dtype).reshape(o.shape)
            cotangents.append(encode(flat(w)))
            loss = loss + (o * w).sum()
        else:
            cotangents.append(None)
    if floats and loss.requires_grad:
        (g,) = torch.autograd.grad(loss, x, allow_unused=True)
        if g is None:
            g = torch.zeros_like(x0)
    else:
        g = torch.zeros_like(x0)
    tangent = torch.tensor(quarters(x0.numel(), 5), dtype=dtype).reshape(shape)
    _, tangents = torch.func.jvp(lambda t: tuple(as_list(f(t))), (x0,), (tangent,))
    case = {
        "op": op,
        "args": {k: encode([v])[0] if isinstance(v, float) else v for k, v in args.items()},
        "dtype": dtype_name(x0),
        "shape": list(shape),
        "input": encode(flat(x0)),
        "outputs": [
            {"shape": list(o.shape), "dtype": dtype_name(o), "values": encode(flat(o))}
            for o in outs
        ],
        "cotangents": cotangents,
        "grad": encode(flat(g)),
        "tangent": encode(flat(tangent)),
        "jvp": [
            encode(flat(t)) if o.dtype.is_floating_point else None
            for o, t in zip(outs, tangents)
        ],
    }
    if extra:
        case.update(extra)
    return case


def seq(n, scale=0.5, offset=-1.25):
    """n distinct values (no ties)."""
    return [offset + scale * ((5 * k) % n) + 0.125 * k for k in range(n)]


def cases_for(spec):
    out = []
    for op, args, shape, values, f, extra in spec:
        for dtype in [torch.float64, torch.float32]:
            out.append(record(op, args, shape, values, f, dtype, extra))
    return out


def write(name, cases):
    data = {"torch_version": torch.__version__, "cases": cases}
    path = pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference" / f"torch_{name}.json"
    path.write_text(json.dumps(data) + "\n")
    for c in cases:
        print(c["op"], c["args"], c["dtype"], [o["shape"] for o in c["outputs"]])


def mask_of(shape, values):
    return {"mask": {"shape": list(shape), "values": [bool(v) for v in values]}}


def manipulation_spec():
    m1 = ([2, 3], [1, 0, 1, 0, 0, 1])
    m2 = ([2, 1], [0, 1])
    m3 = ([3], [1, 0, 0])
    m4 = ([2, 3], [0, 1, 1, 0, 1, 0])
    mt = lambda m: torch.tensor(m[1], dtype=torch.bool).reshape(m[0])
    return [
        ("split", {"split_size": 2, "dim": 0}, [5], seq(5), lambda x: torch.split(x, 2, 0), None),
        # 5 = 3 + 2 along the last dim, given as -1.
        ("split", {"split_size": 3, "dim": -1}, [2, 5], seq(10), lambda x: torch.split(x, 3, -1), None),
        # A split size larger than the dim: one piece.
        ("split", {"split_size": 7, "dim": 0}, [3, 2], seq(6), lambda x: torch.split(x, 7, 0), None),
        ("split", {"split_size": 1, "dim": 1}, [2, 3], seq(6), lambda x: torch.split(x, 1, 1), None),
        # An empty dim: one empty piece, also with split size 0.
        ("split", {"split_size": 2, "dim": 0}, [0, 2], [], lambda x: torch.split(x, 2, 0), None),
        ("split", {"split_size": 0, "dim": 0}, [0, 2], [], lambda x: torch.split(x, 0, 0), None),
        ("split_with_sizes", {"split_sizes": [2, 0, 3], "dim": 1}, [2, 5], seq(10),
         lambda x: torch.split(x, [2, 0, 3], 1), None),
        ("split_with_sizes", {"split_sizes": [4], "dim": -1}, [4], seq(4),
         lambda x: torch.split(x, [4], -1), None),
        ("split_with_sizes", {"split_sizes": [1, 2], "dim": -2}, [3, 2], seq(6),
         lambda x: torch.split(x, [1, 2], -2), None),
        ("chunk", {"chunks": 3, "dim": 0}, [5], seq(5), lambda x: torch.chunk(x, 3, 0), None),
        # 6 in 4 chunks: 3 pieces of 2 (fewer than asked).
        ("chunk", {"chunks": 4, "dim": 0}, [6], seq(6), lambda x: torch.chunk(x, 4, 0), None),
        # More chunks than elements.
        ("chunk", {"chunks": 5, "dim": 0}, [2], seq(2), lambda x: torch.chunk(x, 5, 0), None),
        ("chunk", {"chunks": 2, "dim": -1}, [2, 3], seq(6), lambda x: torch.chunk(x, 2, -1), None),
        # An empty dim: `chunks` empty pieces.
        ("chunk", {"chunks": 3, "dim": 0}, [0, 3], [], lambda x: torch.chunk(x, 3, 0), None),
        ("flip", {"dims": [0, -1]}, [2, 3], seq(6), lambda x: torch.flip(x, [0, -1]), None),
        ("flip", {"dims": [1]}, [2, 3, 2], seq(12), lambda x: torch.flip(x, [1]), None),
        ("flip", {"dims": []}, [3], seq(3), lambda x: torch.flip(x, []), None),
        ("flip", {"dims": [0]}, [], [1.5], lambda x: torch.flip(x, [0]), None),
        ("roll", {"shifts": [-1], "dims": []}, [2, 3], seq(6), lambda x: torch.roll(x, -1), None),
        ("roll", {"shifts": [1, -4], "dims": [1, 0]}, [2, 3], seq(6),
         lambda x: torch.roll(x, (1, -4), (1, 0)), None),
        ("roll", {"shifts": [7], "dims": [-1]}, [2, 3], seq(6), lambda x: torch.roll(x, 7, -1), None),
        # A dim given twice: the shifts add up.
        ("roll", {"shifts": [1, 1], "dims": [1, 1]}, [2, 3], seq(6),
         lambda x: torch.roll(x, (1, 1), (1, 1)), None),
        ("roll", {"shifts": [-5], "dims": [0]}, [4], seq(4), lambda x: torch.roll(x, -5, 0), None),
        ("roll", {"shifts": [3], "dims": []}, [], [2.5], lambda x: torch.roll(x, 3), None),
        ("roll", {"shifts": [2], "dims": [0]}, [0, 2], [], lambda x: torch.roll(x, 2, 0), None),
        # More repeats than dims: leading dims added.
        ("repeat", {"repeats": [2, 2]}, [3], seq(3), lambda x: x.repeat(2, 2), None),
        ("repeat", {"repeats": [2, 1]}, [2, 3], seq(6), lambda x: x.repeat(2, 1), None),
        ("repeat", {"repeats": [2, 3]}, [], [0.75], lambda x: x.repeat(2, 3), None),
        ("repeat", {"repeats": [0, 3]}, [2], seq(2), lambda x: x.repeat(0, 3), None),
        ("repeat", {"repeats": [1, 2, 3]}, [2, 1], seq(2), lambda x: x.repeat(1, 2, 3), None),
        ("masked_fill", {"value": -1.5}, [2, 3], seq(6),
         lambda x: x.masked_fill(mt(m1), -1.5), mask_of(*m1)),
        # The mask broadcasts against self, and self against the mask.
        ("masked_fill", {"value": 0.25}, [3], seq(3),
         lambda x: torch.masked_fill(x, mt(m2), 0.25), mask_of(*m2)),
        ("masked_fill", {"value": NAN}, [2, 3], seq(6),
         lambda x: x.masked_fill(mt(m3), NAN), mask_of(*m3)),
        ("masked_fill", {"value": -INF}, [2, 3], [1.0, NAN, INF, -2.0, 0.5, -0.0],
         lambda x: x.masked_fill(mt(m4), -INF), mask_of(*m4)),
    ]


ONE_HOT = [
    ([3], [0, 2, 1], 3),
    ([2, 1], [1, 0], 2),
    ([], [1], 4),
    ([0], [], 2),
]


def one_hot_cases():
    out = []
    for shape, values, nc in ONE_HOT:
        x = torch.tensor(values, dtype=torch.int64).reshape(shape)
        y = F.one_hot(x, nc)
        out.append({
            "shape": list(shape), "input": values, "num_classes": nc,
            "output": {"shape": list(y.shape), "values": flat(y)},
        })
    return out


if __name__ == "__main__":
    write("manipulation", cases_for(manipulation_spec()))
    # one_hot: integer in and out, no derivative.
    path = pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference" / "torch_manipulation.json"
    data = json.loads(path.read_text())
    data["one_hot"] = one_hot_cases()
    path.write_text(json.dumps(data) + "\n")
