"""Records PyTorch's values of the convolution ops (conv1d, conv2d, unfold,
fold) and of their gradients, for tests/suite/conv.rs (which reads
tests/reference/torch_conv.json).

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch==2.15.0
    /tmp/torchenv/bin/python scripts/reference/record_conv.py

Each case gives the op's tensors (input, weight, bias; seeded normal values
rounded to float32, so that the same numbers are exact in both dtypes), its
other arguments, and a cotangent `c` of the output's shape; in float64 and
float32 it records the forward value and the gradient of sum(out * c) with
respect to every tensor, by autograd. Shapes and values are row-major flat
lists. The cases cover stride, padding, dilation, groups (depthwise too),
bias and no bias, unbatched inputs, 1x1 and larger-than-input-with-padding
windows, and PyTorch's padding="same" (with even kernels, whose extra padding
goes to the right/bottom) and "valid". The JSON is committed, so the tests
need no Python.
"""
import json
import pathlib

import torch
import torch.nn.functional as F

from recording import shape_and_values as flat

gen = torch.Generator().manual_seed(28)


def values(*shape):
    """Seeded values exact in float32."""
    return torch.randn(*shape, generator=gen, dtype=torch.float64).float().double()


# (op, tensors {name: shape}, keyword arguments as PyTorch takes them)
CASES = [
    ("conv2d", {"input": [2, 3, 5, 5], "weight": [4, 3, 3, 3], "bias": [4]}, {}),
    ("conv2d", {"input": [2, 3, 6, 5], "weight": [4, 3, 3, 3], "bias": [4]},
     {"stride": [2, 2], "padding": [1, 1]}),
    ("conv2d", {"input": [1, 2, 7, 6], "weight": [3, 2, 2, 3]},
     {"stride": [1, 2], "padding": [1, 2], "dilation": [2, 1]}),
    ("conv2d", {"input": [2, 4, 5, 4], "weight": [6, 2, 2, 3], "bias": [6]},
     {"stride": [2, 1], "padding": [1, 1], "groups": 2}),
    # Depthwise: one group per channel, with a channel multiplier of 2.
    ("conv2d", {"input": [1, 3, 4, 4], "weight": [6, 1, 3, 3], "bias": [6]},
     {"padding": [1, 1], "groups": 3}),
    # Unbatched input; a 1x1 kernel; a kernel larger than the input (padding).
    ("conv2d", {"input": [3, 5, 4], "weight": [2, 3, 2, 2]}, {"dilation": [1, 2]}),
    ("conv2d", {"input": [2, 3, 3, 4], "weight": [5, 3, 1, 1], "bias": [5]}, {"stride": [2, 2]}),
    ("conv2d", {"input": [1, 1, 2, 2], "weight": [1, 1, 3, 3]}, {"padding": [1, 1]}),
    # padding="same": an even kernel pads one more on the right/bottom.
    ("conv2d", {"input": [2, 2, 5, 6], "weight": [3, 2, 4, 2], "bias": [3]}, {"padding": "same"}),
    ("conv2d", {"input": [1, 2, 5, 5], "weight": [2, 1, 2, 3]},
     {"padding": "same", "dilation": [2, 1], "groups": 2}),
    ("conv2d", {"input": [2, 5, 5], "weight": [2, 2, 3, 3], "bias": [2]}, {"padding": "valid"}),
    ("conv1d", {"input": [2, 3, 7], "weight": [4, 3, 3], "bias": [4]},
     {"stride": [2], "padding": [1]}),
    ("conv1d", {"input": [2, 3, 8], "weight": [6, 1, 2]}, {"dilation": [2], "groups": 3}),
    ("conv1d", {"input": [2, 6], "weight": [3, 2, 4], "bias": [3]}, {"padding": [2]}),
    ("conv1d", {"input": [2, 2, 6], "weight": [2, 2, 4]}, {"padding": "same"}),
    ("conv1d", {"input": [1, 2, 7], "weight": [3, 2, 2], "bias": [3]},
     {"padding": "same", "dilation": [3]}),
    ("conv1d", {"input": [1, 2, 5], "weight": [3, 2, 2]}, {"padding": "valid", "stride": [2]}),
    ("unfold", {"input": [2, 2, 5, 4]},
     {"kernel_size": [2, 3], "dilation": [2, 1], "padding": [1, 0], "stride": [1, 2]}),
    ("unfold", {"input": [3, 4, 4]}, {"kernel_size": [3, 3], "padding": [1, 1], "stride": [2, 2]}),
    ("fold", {"input": [2, 12, 6]},
     {"output_size": [4, 5], "kernel_size": [2, 3], "padding": [0, 1], "stride": [2, 2]}),
    ("fold", {"input": [8, 10]},
     {"output_size": [4, 4], "kernel_size": [2, 2], "dilation": [1, 2], "padding": [1, 1],
      "stride": [1, 2]}),
]

FNS = {"conv1d": F.conv1d, "conv2d": F.conv2d, "unfold": F.unfold, "fold": F.fold}


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
path = pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference" / "torch_conv.json"
path.write_text(json.dumps(out) + "\n")
for c in cases:
    print(c["op"], c["dtype"], c["args"], c["forward"]["shape"])
