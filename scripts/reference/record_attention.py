"""Records PyTorch's values of the attention family (baddbmm,
scaled_dot_product_attention, einsum, cumsum, vector_norm) and the gradients
of every input, for tests/suite/attention.rs (which reads
tests/reference/torch_attention.json).

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch==2.15.0
    /tmp/torchenv/bin/python scripts/reference/record_attention.py

Each case holds its inputs (drawn here from a fixed seed, in float64, and
rounded to float32 for the float32 twin), the op's other arguments, the
forward value, a cotangent `w` of the output's shape, and the gradient of
sum(out * w) with respect to each float input (by autograd's backward; an
input autograd gives no gradient, as for ord = 0, is recorded as zeros).
JSON has no NaN or infinity, so those are written as the strings "nan",
"inf" and "-inf". float32 values are written as the float64 that holds them
exactly. The JSON is committed, so the tests need no Python.
"""
import json
import math
import pathlib

import torch
import torch.nn.functional as F

from recording import encode

gen = torch.Generator().manual_seed(28)


def randn(*shape):
    return torch.randn(tuple(shape), generator=gen, dtype=torch.float64)


def encode_tensor(t):
    values = encode(t.detach().double().flatten().tolist())
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "values": values}


INF = float("inf")


def encode_args(args):
    """Infinite float arguments (ord) as the strings "inf" and "-inf"."""
    if isinstance(args, list):
        return [encode_args(a) for a in args]
    if isinstance(args, float) and math.isinf(args):
        return "inf" if args > 0 else "-inf"
    return args

# (op, inputs (float64 tensors or bool masks), non-tensor arguments as the
# Rust test passes them, the PyTorch call on the inputs)
CASES = []


def case(op, inputs, args, f, note=""):
    CASES.append((op, inputs, args, f, note))


# baddbmm(self, batch1, batch2, beta, alpha)
for beta, alpha, shape in [(1.0, 1.0, [2, 3, 2]), (0.5, -2.0, [2]), (0.0, 1.5, [1, 3, 1])]:
    s = randn(*shape)
    if beta == 0.0:
        s[0, 0, 0] = float("nan")  # ignored when beta = 0, as in PyTorch
    case("baddbmm", [s, randn(2, 3, 4), randn(2, 4, 2)], [beta, alpha],
         lambda s, a, b, beta=beta, alpha=alpha: torch.baddbmm(s, a, b, beta=beta, alpha=alpha))

# scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale)
def sdpa(mask_kind=None, is_causal=False, scale=None):
    def f(q, k, v, *m):
        mask = m[0] if m else None
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0,
                                              is_causal=is_causal, scale=scale)
    return f


case("sdpa", [randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 3)], {"is_causal": False}, sdpa(),
     "L != S, no mask")
case("sdpa", [randn(2, 4, 3), randn(2, 4, 3), randn(2, 4, 2)], {"is_causal": True},
     sdpa(is_causal=True), "causal, L = S")
case("sdpa", [randn(1, 3, 2), randn(1, 5, 2), randn(1, 5, 2)], {"is_causal": True},
     sdpa(is_causal=True), "causal, L < S")
case("sdpa", [randn(5, 2), randn(3, 2), randn(3, 4)], {"is_causal": True},
     sdpa(is_causal=True), "causal, L > S (rows past S see every key)")
bool_mask = torch.tensor([[True, False, True, True, False],
                          [False, False, False, False, False],
                          [True, True, True, True, True]])
case("sdpa", [randn(2, 2, 3, 4), randn(2, 2, 5, 4), randn(2, 2, 5, 3), bool_mask],
     {"is_causal": False}, sdpa(), "bool mask with a fully masked row, 4-D")
additive = randn(2, 1, 3, 5)
additive[0, 0, 1, :] = -INF
additive[1, 0, 0, 2] = -INF
case("sdpa", [randn(2, 2, 3, 4), randn(2, 2, 5, 4), randn(2, 2, 5, 3), additive],
     {"is_causal": False}, sdpa(), "additive mask with -inf, a fully masked row, broadcast over heads")
case("sdpa", [randn(3, 2), randn(4, 2), randn(4, 3)], {"is_causal": False, "scale": 0.3},
     sdpa(scale=0.3), "custom scale")
case("sdpa", [randn(2, 3, 2), randn(2, 3, 2), randn(2, 3, 2)], {"is_causal": True, "scale": 2.5},
     sdpa(is_causal=True, scale=2.5), "causal with a custom scale")

# einsum(equation, operands)
for eq, shapes in [
    ("ij,jk->ik", [[2, 3], [3, 4]]),
    ("bij,bjk->bik", [[2, 2, 3], [2, 3, 2]]),
    ("ij,jk,kl", [[2, 3], [3, 2], [2, 4]]),
    ("...ij,...jk", [[2, 3, 4], [4, 2]]),
    ("bhqd,bhkd->bhqk", [[2, 2, 3, 4], [2, 2, 5, 4]]),
    ("ii->i", [[3, 3]]),
    ("ii", [[3, 3]]),
    ("i,j->ij", [[3], [2]]),
    ("ij,ij->", [[2, 3], [1, 3]]),
    ("ba", [[2, 3]]),
    ("Ab,bc->cA", [[2, 3], [3, 2]]),
    ("i...,j...->ij", [[2, 3], [4, 3]]),
    (" ij , jk ->k ", [[2, 3], [3, 4]]),
]:
    case("einsum", [randn(*s) for s in shapes], [eq],
         lambda *xs, eq=eq: torch.einsum(eq, *xs))

# cumsum(self, dim)
for shape, dim in [([3, 4], 0), ([3, 4], 1), ([2, 3, 2], -1), ([5], 0), ([], 0)]:
    case("cumsum", [randn(*shape)], [dim], lambda x, dim=dim: torch.cumsum(x, dim))

# vector_norm(self, ord, dim, keepdim): inputs with a zero row and ties.
x = randn(3, 4)
x[1] = 0.0
x[2, 1] = 0.0
x[0, 3] = -x[0, 0]  # a tie for the largest and the smallest |x| of row 0
for ord in [2.0, 1.0, INF, -INF, 0.0, 3.0, 0.5, -1.5]:
    for dim, keepdim in [(None, False), ([1], False), ([0, 1], True)]:
        case("vector_norm", [x.clone()], [ord, dim, keepdim],
             lambda x, ord=ord, dim=dim, keepdim=keepdim: torch.linalg.vector_norm(
                 x, ord=ord, dim=dim, keepdim=keepdim))
zero = torch.zeros(4, dtype=torch.float64)
for ord in [2.0, 1.0, INF, 3.0, 0.5]:
    case("vector_norm", [zero.clone()], [ord, None, False],
         lambda x, ord=ord: torch.linalg.vector_norm(x, ord=ord), "the zero vector")
case("vector_norm", [randn(2, 3, 2)], [2.0, [2, 0], False],
     lambda x: torch.linalg.vector_norm(x, ord=2.0, dim=[2, 0]))

cases = []
for op, inputs, args, f, note in CASES:
    for dtype in [torch.float64, torch.float32]:
        xs = [t.to(dtype).requires_grad_(True) if t.is_floating_point() else t for t in inputs]
        y = f(*xs)
        w = torch.randn(y.shape, generator=gen, dtype=torch.float64).to(dtype)
        floats = [t for t in xs if t.is_floating_point()]
        grads = torch.autograd.grad((y * w).sum(), floats, allow_unused=True)
        grads = [torch.zeros_like(t) if g is None else g for t, g in zip(floats, grads)]
        cases.append({
            "op": op,
            "note": note,
            "dtype": "f64" if dtype == torch.float64 else "f32",
            "args": encode_args(args),
            "inputs": [encode_tensor(t) for t in xs],
            "forward": encode_tensor(y),
            "cotangent": encode_tensor(w),
            "grads": [encode_tensor(g) for g in grads],
        })

out = {"torch_version": torch.__version__, "cases": cases}
path = pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference" / "torch_attention.json"
path.write_text(json.dumps(out) + "\n")
print(len(cases), "cases")
