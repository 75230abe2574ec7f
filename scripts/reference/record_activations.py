"""Records PyTorch's values of the activation ops and their derivatives on edge
inputs, for tests/suite/activations.rs (which reads
tests/reference/torch_activations.json).

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch==2.15.0
    /tmp/torchenv/bin/python scripts/reference/record_activations.py

For each op and each parameter setting below, in float64 and float32: the
forward values, and the gradient of sum(out) with respect to the input (the
elementwise derivative), by autograd's backward. JSON has no NaN or infinity,
so those are written as the strings "nan", "inf" and "-inf". float32 values
are written as the float64 that holds them exactly. The JSON is committed, so
the tests need no Python.
"""
import json
import math
import pathlib

import torch
import torch.nn.functional as F

from recording import encode

INPUTS = [0.0, -0.0, 1e-8, -1e-8, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 6.0, 19.9, -19.9,
          20.1, -20.1, 30.0, -30.0, 100.0, -100.0, 800.0, -800.0,
          math.inf, -math.inf, math.nan]

# (name in batchrules, its arguments after the tensor, the PyTorch call)
CASES = [
    ("erf", [], lambda x: torch.erf(x)),
    ("gelu", [False], lambda x: F.gelu(x, approximate="none")),
    ("gelu", [True], lambda x: F.gelu(x, approximate="tanh")),
    ("silu", [], lambda x: F.silu(x)),
    ("softplus", [1.0, 20.0], lambda x: F.softplus(x, beta=1.0, threshold=20.0)),
    ("softplus", [2.0, 10.0], lambda x: F.softplus(x, beta=2.0, threshold=10.0)),
    ("softplus", [-1.0, 20.0], lambda x: F.softplus(x, beta=-1.0, threshold=20.0)),
    ("elu", [1.0], lambda x: F.elu(x, alpha=1.0)),
    ("elu", [0.5], lambda x: F.elu(x, alpha=0.5)),
    ("leaky_relu", [0.01], lambda x: F.leaky_relu(x, negative_slope=0.01)),
    ("leaky_relu", [0.2], lambda x: F.leaky_relu(x, negative_slope=0.2)),
    ("logsigmoid", [], lambda x: F.logsigmoid(x)),
    ("hardtanh", [-1.0, 1.0], lambda x: F.hardtanh(x, min_val=-1.0, max_val=1.0)),
    ("hardtanh", [0.0, 6.0], lambda x: F.hardtanh(x, min_val=0.0, max_val=6.0)),
]


cases = []
for name, args, f in CASES:
    for dtype in [torch.float64, torch.float32]:
        x = torch.tensor(INPUTS, dtype=dtype, requires_grad=True)
        y = f(x)
        y.sum().backward()
        cases.append({
            "op": name,
            "args": args,
            "dtype": "f64" if dtype == torch.float64 else "f32",
            "forward": encode(y.detach().double().tolist()),
            "grad": encode(x.grad.double().tolist()),
        })

out = {"torch_version": torch.__version__, "inputs": encode(INPUTS), "cases": cases}
path = pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference" / "torch_activations.json"
path.write_text(json.dumps(out) + "\n")
for c in cases:
    print(c["op"], c["args"], c["dtype"])
    print("  fwd ", c["forward"])
    print("  grad", c["grad"])
