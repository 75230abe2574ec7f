"""Records PyTorch's values of the transposed convolutions
(conv_transpose1d, conv_transpose2d) and of their gradients, for
tests/suite/conv_transpose.rs (which reads
tests/reference/torch_conv_transpose.json).

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch==2.15.0
    /tmp/torchenv/bin/python scripts/reference/record_conv_transpose.py

As scripts/reference/record_conv.py does for the convolutions: each case
gives the op's tensors (input, weight, bias; seeded normal values rounded to
float32, so that the same numbers are exact in both dtypes), its other
arguments as PyTorch takes them, and a cotangent `c` of the output's shape;
in float64 and float32 it records the forward value and the gradient of
sum(out * c) with respect to every tensor, by autograd. Shapes and values are
row-major flat lists. The cases cover stride, padding, output_padding (below
the stride, and at or past the stride but below the dilation), dilation,
groups (depthwise too), bias and no bias, unbatched inputs, per-dim
arguments and 1x1 kernels. The JSON is committed, so the tests need no
Python.
"""
import json
import pathlib

import torch
import torch.nn.functional as F

from recording import shape_and_values as flat

gen = torch.Generator().manual_seed(44)


def values(*shape):
    """Seeded values exact in float32."""
    return torch.randn(*shape, generator=gen, dtype=torch.float64).float().double()


# (op, tensors {name: shape}, keyword arguments as PyTorch takes them)
CASES = [
    ("conv_transpose2d", {"input": [2, 3, 4, 4], "weight": [3, 2, 3, 3], "bias": [2]}, {}),
    ("conv_transpose2d", {"input": [2, 2, 3, 3], "weight": [2, 3, 3, 3], "bias": [3]},
     {"stride": [2, 2], "padding": [1, 1], "output_padding": [1, 1]}),
    ("conv_transpose2d", {"input": [1, 4, 3, 3], "weight": [4, 2, 2, 2]},
     {"stride": [1, 2], "padding": [1, 0], "groups": 2, "dilation": [2, 1]}),
    # output_padding at the stride, allowed since it is below the dilation.
    ("conv_transpose2d", {"input": [1, 2, 3, 2], "weight": [2, 2, 2, 2], "bias": [2]},
     {"padding": [1, 1], "output_padding": [1, 1], "dilation": [2, 2]}),
    # Unbatched input.
    ("conv_transpose2d", {"input": [3, 3, 4], "weight": [3, 2, 2, 3], "bias": [2]},
     {"stride": [2, 1], "output_padding": [1, 0]}),
    # Depthwise: one group per channel.
    ("conv_transpose2d", {"input": [2, 3, 3, 3], "weight": [3, 1, 3, 3], "bias": [3]},
     {"stride": [2, 2], "padding": [1, 1], "output_padding": [1, 1], "groups": 3}),
    # Every argument per dim, output_padding 2 under stride 3.
    ("conv_transpose2d", {"input": [1, 2, 3, 4], "weight": [2, 3, 3, 2], "bias": [3]},
     {"stride": [3, 2], "padding": [2, 1], "output_padding": [2, 0], "dilation": [1, 3]}),
    # A 1x1 kernel with stride 2: a spread-out copy of a channel mix.
    ("conv_transpose2d", {"input": [2, 3, 2, 2], "weight": [3, 4, 1, 1]},
     {"stride": [2, 2], "output_padding": [1, 1]}),
    ("conv_transpose1d", {"input": [2, 3, 5], "weight": [3, 2, 3], "bias": [2]},
     {"stride": [2], "padding": [1], "output_padding": [1]}),
    ("conv_transpose1d", {"input": [2, 4, 6], "weight": [4, 3, 2]},
     {"output_padding": [1], "groups": 2, "dilation": [2]}),
    ("conv_transpose1d", {"input": [2, 5], "weight": [2, 3, 4], "bias": [3]}, {"padding": [2]}),
    ("conv_transpose1d", {"input": [1, 2, 4], "weight": [2, 2, 3]},
     {"stride": [3], "padding": [1], "output_padding": [2], "dilation": [2]}),
]

FNS = {"conv_transpose1d": F.conv_transpose1d, "conv_transpose2d": F.conv_transpose2d}


cases = []
for op, shapes, kwargs in CASES:
    inputs = {name: values(*shape) for name, shape in shapes.items()}
    cot = None
    for dtype in [torch.float64, torch.float32]:
        ts = {k: v.detach().to(dtype).clone().requires_grad_() for k, v in inputs.items()}
        y = FNS[op](*ts.values(), **kwargs)
        if cot is None:
            cot = values(*y.shape)
        (y * cot.to(dtype)).sum().backward()
        cases.append({
            "op": op,
            "dtype": "f64" if dtype == torch.float64 else "f32",
            "args": kwargs,
            "inputs": {k: flat(v) for k, v in inputs.items()},
            "cotangent": flat(cot),
            "forward": flat(y),
            "grads": {k: flat(v.grad) for k, v in ts.items()},
        })

out = {"torch_version": torch.__version__, "cases": cases}
path = (pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference"
        / "torch_conv_transpose.json")
path.write_text(json.dumps(out) + "\n")
for c in cases:
    print(c["op"], c["dtype"], c["args"], c["forward"]["shape"])
