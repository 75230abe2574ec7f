"""Records what the model examples check, computed by torch.func from the
parameters and inputs of examples_common.py (the same numbers the examples
build):

- examples/reference/per_sample_grads_cnn.json: functorch's per-sample-gradient
  tutorial CNN (conv 1->32 3x3, relu, conv 32->64 3x3, relu, max_pool2d 2,
  flatten, linear 9216->128, relu, linear 128->10, log_softmax, nll_loss),
  batch 64 of 28x28, f32: the loss of the batch and every parameter's
  per-sample gradients by vmap(grad(loss)).

Usage: python scripts/reference/record_model_examples.py   (torch from pip)
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import grad, vmap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from examples_common import labels, record, torch_bound, uniform, write  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "reference")


def t(shape, seed, bound):
    return torch.from_numpy(uniform(shape, seed, bound))


def cnn_params():
    """Leaf k from stream 10 + k, within PyTorch's default init bounds."""
    return {
        "conv1.weight": t([32, 1, 3, 3], 10, torch_bound(9)),
        "conv1.bias": t([32], 11, torch_bound(9)),
        "conv2.weight": t([64, 32, 3, 3], 12, torch_bound(288)),
        "conv2.bias": t([64], 13, torch_bound(288)),
        "fc1.weight": t([128, 9216], 14, torch_bound(9216)),
        "fc1.bias": t([128], 15, torch_bound(9216)),
        "fc2.weight": t([10, 128], 16, torch_bound(128)),
        "fc2.bias": t([10], 17, torch_bound(128)),
    }


def cnn(p, x):
    x = F.relu(F.conv2d(x, p["conv1.weight"], p["conv1.bias"]))
    x = F.relu(F.conv2d(x, p["conv2.weight"], p["conv2.bias"]))
    x = F.max_pool2d(x, 2)
    x = torch.flatten(x, 1)
    x = F.relu(F.linear(x, p["fc1.weight"], p["fc1.bias"]))
    x = F.linear(x, p["fc2.weight"], p["fc2.bias"])
    return F.log_softmax(x, dim=1)


def per_sample_grads_cnn():
    p = cnn_params()
    x = t([64, 1, 28, 28], 500, 1.0)
    y = torch.from_numpy(labels(64, 501, 10))

    def loss(p, sample, target):
        # One example as a batch of one, as the tutorial does.
        return F.nll_loss(cnn(p, sample.unsqueeze(0)), target.unsqueeze(0))

    grads = vmap(grad(loss), in_dims=(None, 0, 0))(p, x, y)
    out = {"batch_loss": record(F.nll_loss(cnn(p, x), y))}
    for name, g in grads.items():
        out["grad." + name] = record(g)
    write(os.path.join(OUT, "per_sample_grads_cnn.json"), out)


if __name__ == "__main__":
    torch.set_num_threads(1)
    per_sample_grads_cnn()
    print("recorded with torch", torch.__version__)
