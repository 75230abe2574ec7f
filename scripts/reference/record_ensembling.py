"""Records what examples/ensembling.rs checks: functorch's model-ensembling
tutorial (ten MLPs 784 -> 128 -> 128 -> 10, their parameters stacked with
torch.func.stack_module_state and run with vmap(functional_call)), in f64,
with the parameters and data of examples_common.py.

Usage: python scripts/reference/record_ensembling.py   (torch from pip)
Writes examples/reference/ensembling.json.
"""
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, stack_module_state, vmap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from examples_common import labels, record, torch_bound, uniform, write  # noqa: E402

import numpy as np  # noqa: E402

MODELS, BATCH, IN, HIDDEN, CLASSES = 10, 64, 784, 128, 10
LAYERS = [("fc1", IN, HIDDEN), ("fc2", HIDDEN, HIDDEN), ("fc3", HIDDEN, CLASSES)]


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(IN, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.fc3 = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def model(m):
    """Model m: leaf k (fc1.weight, fc1.bias, fc2.weight, ...) from seed 100 m + k."""
    net = Mlp().double()
    k = 0
    with torch.no_grad():
        for name, fan_in, fan_out in LAYERS:
            layer = getattr(net, name)
            layer.weight.copy_(torch.from_numpy(uniform([fan_out, fan_in], 100 * m + k, torch_bound(fan_in), np.float64)))
            layer.bias.copy_(torch.from_numpy(uniform([fan_out], 100 * m + k + 1, torch_bound(fan_in), np.float64)))
            k += 2
    return net


def main():
    models = [model(m) for m in range(MODELS)]
    params, buffers = stack_module_state(models)
    base = Mlp().double().to("meta")

    def fmodel(params, buffers, x):
        return functional_call(base, (params, buffers), (x,))

    data = torch.from_numpy(uniform([MODELS, BATCH, IN], 999, 1.0, np.float64))
    ys = torch.from_numpy(labels(MODELS * BATCH, 998, CLASSES).reshape(MODELS, BATCH))
    minibatch = data[0]

    out = {
        "different_minibatches": record(vmap(fmodel)(params, buffers, data)),
        "same_minibatch": record(vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)),
    }

    def loss(params, buffers, x, y):
        return F.cross_entropy(fmodel(params, buffers, x), y)

    grads = vmap(grad(loss))(params, buffers, data, ys)
    for name, g in grads.items():
        out["grad." + name] = record(g)
    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "reference", "ensembling.json")
    write(path, out)
    print("wrote", os.path.normpath(path), "with torch", torch.__version__)


if __name__ == "__main__":
    main()
