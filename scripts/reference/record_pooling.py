"""Records PyTorch's values of the pooling ops and their derivatives, for
tests/suite/pooling.rs (which reads tests/reference/torch_pooling.json).

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch==2.15.0
    /tmp/torchenv/bin/python scripts/reference/record_pooling.py

For each case below, in float64 and float32: the input (values as the dtype
holds them), the forward values (and, for max pooling, the indices of
`max_pool2d_with_indices`), the gradient of `sum(out * cotangent)` with
respect to the input by autograd's backward, and the forward-mode tangent of
the output along a fixed input tangent by `torch.func.jvp`. The cotangent and
the tangent are recorded too. Inputs cover ties (constant inputs, repeated
values), NaN and -inf, overlapping windows (stride < kernel), padding,
dilation, ceil_mode, count_include_pad=False, divisor_override, adaptive
sizes that do not divide, batched and unbatched inputs. JSON has no NaN or
infinity, so those are written as the strings "nan", "inf" and "-inf";
float32 values are written as the float64 that holds them exactly. The JSON
is committed, so the tests need no Python.
"""
import json
import math
import pathlib

import torch
import torch.nn.functional as F

from recording import encode


def distinct(n):
    # Distinct values in about [-2, 2], no ties.
    return [math.sin(0.7373 * i + 0.2) * 2.0 + 0.01 * i for i in range(n)]


def repeated(n):
    # Many ties: the integers 0, 1, 2.
    return [float((i * 7) % 3) for i in range(n)]


def constant(n):
    return [1.5] * n


def special(n):
    # NaN and -inf among distinct values; two NaN in one window.
    v = distinct(n)
    for i in (1, 5, 6):
        v[i % n] = math.nan
    for i in (9, 10):
        v[i % n] = -math.inf
    return v


def all_neg_inf(n):
    return [-math.inf] * n


INPUTS = {"distinct": distinct, "repeated": repeated, "constant": constant,
          "special": special, "neg_inf": all_neg_inf}

# (op, input shape, input kind, keyword arguments in batchrules' order)
MAX2D = "max_pool2d"
CASES = [
    (MAX2D, [2, 3, 5, 5], "distinct", dict(kernel_size=[2])),
    (MAX2D, [1, 2, 5, 6], "distinct", dict(kernel_size=[3], stride=[1], padding=[1])),
    (MAX2D, [1, 1, 7, 7], "distinct", dict(kernel_size=[3], stride=[2], padding=[1], dilation=[2])),
    (MAX2D, [1, 2, 5, 5], "distinct", dict(kernel_size=[2], stride=[2], ceil_mode=True)),
    (MAX2D, [1, 1, 6, 5], "distinct",
     dict(kernel_size=[3, 2], stride=[2, 1], padding=[1, 0], dilation=[1, 2], ceil_mode=True)),
    (MAX2D, [1, 2, 4, 4], "constant", dict(kernel_size=[2], stride=[1])),
    (MAX2D, [1, 2, 4, 4], "constant", dict(kernel_size=[3], stride=[1], padding=[1])),
    (MAX2D, [1, 1, 5, 5], "repeated", dict(kernel_size=[3], stride=[1], padding=[1])),
    (MAX2D, [1, 1, 5, 6], "repeated", dict(kernel_size=[2, 3], stride=[1, 2], dilation=[2, 1])),
    (MAX2D, [1, 1, 4, 4], "special", dict(kernel_size=[2], stride=[1])),
    (MAX2D, [1, 1, 3, 3], "neg_inf", dict(kernel_size=[2], stride=[1], padding=[1])),
    (MAX2D, [2, 4, 5], "distinct", dict(kernel_size=[2], stride=[1])),
    (MAX2D, [3, 3, 4], "repeated", dict(kernel_size=[2], stride=[1], ceil_mode=True)),
    # A window of padding only (dilation 3 over a width of 2).
    (MAX2D, [1, 1, 1, 2], "distinct", dict(kernel_size=[1, 2], stride=[1], padding=[0, 1], dilation=[1, 3])),
    ("max_pool1d", [2, 3, 7], "distinct", dict(kernel_size=[3], stride=[2], padding=[1], ceil_mode=True)),
    ("max_pool1d", [3, 6], "repeated", dict(kernel_size=[2], dilation=[2], stride=[1])),
    ("avg_pool2d", [2, 3, 5, 5], "distinct", dict(kernel_size=[2])),
    ("avg_pool2d", [1, 2, 5, 6], "distinct", dict(kernel_size=[3], stride=[1], padding=[1])),
    ("avg_pool2d", [1, 2, 5, 6], "distinct",
     dict(kernel_size=[3], stride=[1], padding=[1], count_include_pad=False)),
    ("avg_pool2d", [1, 1, 5, 5], "distinct", dict(kernel_size=[3], stride=[2], padding=[1], ceil_mode=True)),
    ("avg_pool2d", [1, 1, 6, 6], "distinct",
     dict(kernel_size=[3], stride=[2], padding=[1], ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", [1, 2, 5, 5], "distinct", dict(kernel_size=[2], stride=[1], padding=[1], divisor_override=3)),
    ("avg_pool2d", [1, 1, 4, 5], "distinct",
     dict(kernel_size=[2], stride=[2], ceil_mode=True, divisor_override=-2)),
    ("avg_pool2d", [1, 2, 6, 5], "distinct", dict(kernel_size=[3, 2], stride=[2, 1], padding=[1, 1])),
    ("avg_pool2d", [2, 4, 5], "distinct", dict(kernel_size=[2], stride=[1])),
    ("avg_pool1d", [2, 3, 7], "distinct",
     dict(kernel_size=[3], stride=[2], padding=[1], ceil_mode=True, count_include_pad=False)),
    ("avg_pool1d", [3, 6], "distinct", dict(kernel_size=[2])),
    ("adaptive_avg_pool2d", [2, 3, 5, 7], "distinct", dict(output_size=[3, 4])),
    ("adaptive_avg_pool2d", [1, 2, 6, 6], "distinct", dict(output_size=[3])),
    ("adaptive_avg_pool2d", [1, 1, 3, 5], "distinct", dict(output_size=[5, 7])),
    ("adaptive_avg_pool2d", [2, 4, 5], "distinct", dict(output_size=[2, 3])),
    ("adaptive_avg_pool2d", [1, 2, 4, 3], "distinct", dict(output_size=[1])),
    ("adaptive_avg_pool1d", [2, 3, 7], "distinct", dict(output_size=[3])),
    ("adaptive_avg_pool1d", [3, 5], "distinct", dict(output_size=[4])),
]


def torch_call(op, kw):
    # One value for both dims: PyTorch's int.
    kw = {k: (v[0] if isinstance(v, list) and len(v) == 1 else v) for k, v in kw.items()}
    return lambda x: getattr(F, op)(x, **kw)


def flat(t):
    return t.detach().double().reshape(-1).tolist()


cases = []
for op, shape, kind, kw in CASES:
    f = torch_call(op, kw)
    n = math.prod(shape)
    for dtype in [torch.float64, torch.float32]:
        x = torch.tensor(INPUTS[kind](n), dtype=dtype).reshape(shape).requires_grad_(True)
        y = f(x)
        cot = torch.tensor([((i * 5) % 7 - 3) * 0.25 for i in range(y.numel())], dtype=dtype).reshape(y.shape)
        (y * cot).sum().backward()
        tangent = torch.tensor([((i * 3) % 5 - 2) * 0.5 for i in range(n)], dtype=dtype).reshape(shape)
        try:
            _, t_out = torch.func.jvp(f, (x.detach(),), (tangent,))
            t_out = encode(flat(t_out))
        except RuntimeError:
            # The window of padding only: PyTorch's own index of it is out
            # of range, and its forward-mode gather fails.
            t_out = None
        case = {
            "op": op,
            "shape": shape,
            "input_kind": kind,
            "args": kw,
            "dtype": "f64" if dtype == torch.float64 else "f32",
            "input": encode(flat(x)),
            "out_shape": list(y.shape),
            "forward": encode(flat(y)),
            "cotangent": encode(flat(cot)),
            "grad": encode(flat(x.grad)),
            "tangent": encode(flat(tangent)),
            "jvp": t_out,
        }
        if op == MAX2D:
            full = dict(kernel_size=None, stride=None, padding=0, dilation=1, ceil_mode=False)
            full.update(kw)
            _, idx = F.max_pool2d_with_indices(x.detach(), **full)
            case["indices"] = idx.reshape(-1).tolist()
        cases.append(case)

out = {"torch_version": torch.__version__, "cases": cases}
path = pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference" / "torch_pooling.json"
path.write_text(json.dumps(out) + "\n")
for c in cases:
    print(c["op"], c["shape"], c["input_kind"], c["args"], c["dtype"], "->", c["out_shape"])
