"""Records reference values from PyTorch for the edge semantics the tests pin
(tests/suite/edge_cases.rs reads tests/reference/torch_edge_values.json).

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch==2.15.0
    /tmp/torchenv/bin/python scripts/reference/record_torch.py

The JSON is committed, so the tests need no Python.
"""
import json
import pathlib

import torch
from torch.func import grad, jvp

torch.set_default_dtype(torch.float64)
out = {"torch_version": torch.__version__}

# clamp's derivative at and around its bounds, with scalar bounds, three ways.
x = torch.tensor([-1.0, 0.0, 0.5, 1.0, 2.0])
lo, hi = 0.0, 1.0
out["clamp_x"] = x.tolist()
out["clamp_min"], out["clamp_max"] = lo, hi
out["clamp_grad_func"] = grad(lambda t: torch.clamp(t, lo, hi).sum())(x).tolist()
_, tangent = jvp(lambda t: torch.clamp(t, lo, hi), (x,), (torch.ones_like(x),))
out["clamp_jvp_ones"] = tangent.tolist()
xb = x.clone().requires_grad_(True)
torch.clamp(xb, lo, hi).sum().backward()
out["clamp_grad_backward"] = xb.grad.tolist()

# One bound only, and crossed bounds (max wins), at the bounds too.
for name, bounds in [("min_only", (0.0, None)), ("max_only", (None, 1.0)), ("crossed", (1.0, 0.0))]:
    out[f"clamp_grad_{name}"] = grad(lambda t: torch.clamp(t, *bounds).sum())(x).tolist()
    _, tangent = jvp(lambda t: torch.clamp(t, *bounds), (x,), (torch.ones_like(x),))
    out[f"clamp_jvp_{name}"] = tangent.tolist()

# bernoulli with probabilities outside [0, 1] or NaN: PyTorch's answer.
cases = {}
for name, p in [("nan", float("nan")), ("below_zero", -0.5), ("above_one", 1.5)]:
    try:
        torch.bernoulli(torch.tensor([p, 0.5]))
        cases[name] = "ok"
    except RuntimeError as e:
        cases[name] = "error: " + str(e).splitlines()[0]
out["bernoulli"] = cases

path = pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference" / "torch_edge_values.json"
path.write_text(json.dumps(out, indent=2) + "\n")
print(json.dumps(out, indent=2))
