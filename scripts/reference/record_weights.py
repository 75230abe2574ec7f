"""Writes the weights files that tests/suite/weights.rs loads, with PyTorch and
numpy, and the values they hold, recorded independently in a JSON file.

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
    /tmp/torchenv/bin/pip install numpy safetensors
    /tmp/torchenv/bin/python scripts/reference/record_weights.py

Outputs (all in tests/reference/, a few KB in all, committed so the tests need
no Python):
- torch_mlp.safetensors: the state_dict of a small seeded nn.Module (Linear
  layers, a LayerNorm, an nn.Sequential, an int64 and a bool buffer), written
  by safetensors.torch.save_file;
- torch_half.safetensors: tensors in float16 and bfloat16, and integers of
  int32, int16, int8 and uint8 (which batchrules converts on load);
- torch_u64.safetensors: a uint64 tensor (which batchrules refuses);
- torch_mlp.npz: the same state_dict as numpy arrays, written by np.savez;
- numpy_misc.npz: arrays numpy writes in other layouts (Fortran order,
  big-endian, float16, int32, uint8, bool, 0-d), written by np.savez;
- numpy_compressed.npz: one array written by np.savez_compressed (refused);
- torch_weights.json: every tensor's dtype, shape and values (as float64
  lists, from the tensors before they were written).
"""
import json
import pathlib

import numpy as np
import torch
from safetensors.torch import save_file
from torch import nn

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.norm = nn.LayerNorm(3)
        self.fc2 = nn.Linear(3, 2)
        self.head = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1, bias=False))
        self.register_buffer("steps", torch.tensor(3, dtype=torch.int64))
        self.register_buffer("mask", torch.tensor([True, False, True]))


def finite_or_name(values):
    """JSON has no infinities or NaN: those are written as "inf", "-inf", "nan"."""
    return [v if np.isfinite(v) else str(v) for v in values]


def record(tensors):
    return {
        k: {"dtype": str(v.dtype).removeprefix("torch."), "shape": list(v.shape),
            "values": finite_or_name(v.to(torch.float64).flatten().tolist())}
        for k, v in tensors.items()
    }


torch.manual_seed(0)
net = Net()
with torch.no_grad():
    # LayerNorm starts at ones and zeros; make its values tell apart.
    net.norm.weight.copy_(torch.randn(3))
    net.norm.bias.copy_(torch.randn(3))
state = {k: v.contiguous() for k, v in net.state_dict().items()}
save_file(state, OUT / "torch_mlp.safetensors")

half = {
    "w_f16": torch.randn(2, 3).to(torch.float16),
    "w_bf16": torch.randn(3, 2).to(torch.bfloat16),
    # Values at the ends of the ranges, and a subnormal and an infinity.
    "edge_f16": torch.tensor([65504.0, -2.0 ** -24, float("inf"), -0.0], dtype=torch.float16),
    "i32": torch.tensor([-2147483648, 2147483647, 0], dtype=torch.int32),
    "i16": torch.tensor([[-32768], [32767]], dtype=torch.int16),
    "i8": torch.tensor([-128, 127], dtype=torch.int8),
    "u8": torch.tensor([0, 255], dtype=torch.uint8),
}
save_file(half, OUT / "torch_half.safetensors")
save_file({"big": torch.tensor([2 ** 63], dtype=torch.uint64)}, OUT / "torch_u64.safetensors")

np.savez(OUT / "torch_mlp.npz", **{k: v.numpy() for k, v in state.items()})

rng = np.random.default_rng(0)
misc = {
    "fortran": np.asfortranarray(rng.standard_normal((2, 3))),
    "big_endian": rng.standard_normal(3).astype(">f8"),
    "f16": rng.standard_normal(3).astype(np.float16),
    "i32": np.array([[-5, 6]], dtype=np.int32),
    "u8": np.array([0, 200, 255], dtype=np.uint8),
    "flags": np.array([True, False]),
    "scalar": np.array(2.5, dtype=np.float32),
}
np.savez(OUT / "numpy_misc.npz", **misc)
np.savez_compressed(OUT / "numpy_compressed.npz", x=np.zeros(4, dtype=np.float32))

out = {
    "torch_version": torch.__version__,
    "numpy_version": np.__version__,
    "torch_mlp": record(state),
    "torch_half": record(half),
    "numpy_misc": {
        k: {"dtype": str(v.dtype), "shape": list(v.shape),
            "values": finite_or_name(v.astype(np.float64).flatten(order="C").tolist())}
        for k, v in misc.items()
    },
}
# One line per tensor.
(OUT / "torch_weights.json").write_text(
    json.dumps({k: v for k, v in out.items() if not isinstance(v, dict)})[:-1] + ",\n"
    + ",\n".join(
        f' "{group}": {{\n' + ",\n".join(f"  {json.dumps(k)}: {json.dumps(r)}" for k, r in recs.items()) + "\n }"
        for group, recs in out.items() if isinstance(recs, dict)
    ) + "\n}\n"
)
json.loads((OUT / "torch_weights.json").read_text(), parse_constant=lambda c: 1 / 0)
for p in sorted(OUT.glob("*")):
    print(p.name, p.stat().st_size)
