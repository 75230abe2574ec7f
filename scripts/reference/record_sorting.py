"""Records PyTorch's values of max/min along a dim, sort and topk, and their
derivatives, on edge cases (ties, NaN, infinities, -0.0, 0-d tensors), for
tests/suite/sorting.rs (which reads tests/reference/torch_sorting.json).
Same recorder and format as record_manipulation.py:

    /tmp/torchenv/bin/python scripts/reference/record_sorting.py

Ties: max/min take the first occurrence (PyTorch's CPU kernel, recorded);
sort is recorded with stable=True, whose order of ties is defined, and
batchrules' sort is always stable; topk's order among tied elements is not
defined by PyTorch, so its cases have no ties where an index is chosen
among them (NaN, which topk treats as the largest, is in them).
"""
import math

import torch

from record_manipulation import cases_for, write

NAN, INF = math.nan, math.inf

TIES = [1.0, 3.0, 3.0, 2.0, NAN, 1.0, NAN, 0.0]
EDGES = [2.0, 5.0, 5.0, 1.0, -INF, 5.0, 0.0, -0.0, INF, -3.0, 0.5, INF]
PLAIN = [0.5, -1.0, 2.0, 0.0, 3.0, 2.5, -2.0, 1.0]


def spec():
    out = []
    for name, f in [("max_dim", torch.max), ("min_dim", torch.min)]:
        out += [
            (name, {"dim": 1, "keepdim": False}, [2, 4], TIES, lambda x, f=f: f(x, 1), None),
            (name, {"dim": -1, "keepdim": True}, [2, 4], TIES, lambda x, f=f: f(x, -1, keepdim=True), None),
            (name, {"dim": 0, "keepdim": False}, [4, 3], EDGES, lambda x, f=f: f(x, 0), None),
            (name, {"dim": -2, "keepdim": True}, [3, 4], EDGES, lambda x, f=f: f(x, -2, keepdim=True), None),
            (name, {"dim": 0, "keepdim": False}, [2], [0.0, -0.0], lambda x, f=f: f(x, 0), None),
            (name, {"dim": 0, "keepdim": False}, [2], [-0.0, 0.0], lambda x, f=f: f(x, 0), None),
            (name, {"dim": 0, "keepdim": False}, [], [1.5], lambda x, f=f: f(x, 0), None),
            (name, {"dim": -1, "keepdim": True}, [], [1.5], lambda x, f=f: f(x, -1, keepdim=True), None),
        ]
    for desc in [False, True]:
        out += [
            ("sort", {"dim": -1, "descending": desc}, [2, 4], TIES,
             lambda x, d=desc: torch.sort(x, dim=-1, descending=d, stable=True), None),
            ("sort", {"dim": 0, "descending": desc}, [4, 3], EDGES,
             lambda x, d=desc: torch.sort(x, dim=0, descending=d, stable=True), None),
            ("sort", {"dim": 0, "descending": desc}, [], [1.5],
             lambda x, d=desc: torch.sort(x, dim=0, descending=d, stable=True), None),
            ("sort", {"dim": 1, "descending": desc}, [2, 0], [],
             lambda x, d=desc: torch.sort(x, dim=1, descending=d, stable=True), None),
        ]
    out += [
        ("topk", {"k": 3, "dim": -1, "largest": True}, [2, 4], PLAIN,
         lambda x: torch.topk(x, 3, dim=-1), None),
        ("topk", {"k": 2, "dim": 1, "largest": False}, [2, 4], PLAIN,
         lambda x: torch.topk(x, 2, dim=1, largest=False), None),
        ("topk", {"k": 1, "dim": 0, "largest": True}, [2, 4], PLAIN,
         lambda x: torch.topk(x, 1, dim=0), None),
        ("topk", {"k": 4, "dim": 0, "largest": False}, [4], [3.0, NAN, -INF, 0.5],
         lambda x: torch.topk(x, 4, dim=0, largest=False), None),
        ("topk", {"k": 2, "dim": 0, "largest": True}, [5], [3.0, 1.0, NAN, 0.0, 2.0],
         lambda x: torch.topk(x, 2), None),
        ("topk", {"k": 0, "dim": -1, "largest": True}, [2, 3], PLAIN[:6],
         lambda x: torch.topk(x, 0), None),
        ("topk", {"k": 1, "dim": 0, "largest": True}, [], [1.5],
         lambda x: torch.topk(x, 1), None),
    ]
    return out


if __name__ == "__main__":
    write("sorting", cases_for(spec()))
