"""Records what the model examples check, computed by torch.func from the
parameters and inputs of examples_common.py (the same numbers the examples
build):

- examples/reference/per_sample_grads_cnn.json: functorch's per-sample-gradient
  tutorial CNN (conv 1->32 3x3, relu, conv 32->64 3x3, relu, max_pool2d 2,
  flatten, linear 9216->128, relu, linear 128->10, log_softmax, nll_loss),
  batch 64 of 28x28, f32: the loss of the batch and every parameter's
  per-sample gradients by vmap(grad(loss)).
- examples/reference/transformer_per_sample_grads.json: a one-block pre-LN
  transformer (embedding, causal scaled_dot_product_attention with 4 heads,
  layer_norm, a GELU MLP, a linear head; sequence 32, width 64, vocabulary
  100), batch 32 sequences, f32: each sequence's loss and per-sample
  gradients by vmap(grad(loss)).
- examples/reference/neural_tangent_kernel.json: the empirical NTK of the
  NTK tutorial's CNN (three 3x3 convs, a linear 21632->10) between 20 and 5
  images of 3x32x32, f32, by the tutorial's two methods (Jacobian
  contraction with einsum; NTK-vector products, vmap over vjp then jvp).
- examples/reference/maml.json: one meta-gradient of MAML sine regression
  (an MLP 1-40-40-1; two inner SGD steps inside grad, vmap over 25 tasks),
  f32, at the initial parameters on the first batch of tasks.
- examples/reference/dp_sgd.json: the deterministic part of one DP-SGD step
  of examples/dp_sgd.rs's CNN on the first 64 training images (after its
  fixed shuffle) of examples/data/digits.npz, at the initial parameters: each example's
  gradient norm (over all parameters) and the sum of the gradients clipped
  to norm 1, before noise.

Usage: python scripts/reference/record_model_examples.py   (torch from pip)
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import grad, jacrev, jvp, vjp, vmap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from examples_common import labels, record, torch_bound, uniform, unit_values, write  # noqa: E402

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


V, L, D, HEADS, FF = 100, 32, 64, 4, 256


def transformer_params():
    """Leaf k from stream 40 + k; layer-norm weights 1 + 0.1 u, biases 0.1 u."""
    shapes = [
        ("tok_emb", [V, D], 1.0), ("pos_emb", [L, D], 1.0),
        ("ln1.weight", [D], None), ("ln1.bias", [D], 0.1),
        ("qkv.weight", [3 * D, D], torch_bound(D)), ("qkv.bias", [3 * D], torch_bound(D)),
        ("out.weight", [D, D], torch_bound(D)), ("out.bias", [D], torch_bound(D)),
        ("ln2.weight", [D], None), ("ln2.bias", [D], 0.1),
        ("fc1.weight", [FF, D], torch_bound(D)), ("fc1.bias", [FF], torch_bound(D)),
        ("fc2.weight", [D, FF], torch_bound(FF)), ("fc2.bias", [D], torch_bound(FF)),
        ("lnf.weight", [D], None), ("lnf.bias", [D], 0.1),
        ("head.weight", [V, D], torch_bound(D)), ("head.bias", [V], torch_bound(D)),
    ]
    p = {}
    for k, (name, shape, bound) in enumerate(shapes):
        p[name] = 1.0 + t(shape, 40 + k, 0.1) if bound is None else t(shape, 40 + k, bound)
    return p


def transformer(p, tokens):
    """One pre-LN block on one sequence [L] of token ids: logits [L, V]."""
    h = F.embedding(tokens, p["tok_emb"]) + p["pos_emb"]
    a = F.layer_norm(h, [D], p["ln1.weight"], p["ln1.bias"])
    q, k, v = F.linear(a, p["qkv.weight"], p["qkv.bias"]).split(D, dim=-1)
    heads = [z.reshape(L, HEADS, D // HEADS).transpose(0, 1) for z in (q, k, v)]
    o = F.scaled_dot_product_attention(*heads, is_causal=True).transpose(0, 1).reshape(L, D)
    h = h + F.linear(o, p["out.weight"], p["out.bias"])
    m = F.layer_norm(h, [D], p["ln2.weight"], p["ln2.bias"])
    h = h + F.linear(F.gelu(F.linear(m, p["fc1.weight"], p["fc1.bias"])), p["fc2.weight"], p["fc2.bias"])
    return F.linear(F.layer_norm(h, [D], p["lnf.weight"], p["lnf.bias"]), p["head.weight"], p["head.bias"])


def transformer_per_sample_grads(batch=32):
    p = transformer_params()
    tokens = torch.from_numpy(labels(batch * L, 600, V).reshape(batch, L))
    targets = torch.from_numpy(labels(batch * L, 601, V).reshape(batch, L))

    def loss(p, x, y):
        return F.cross_entropy(transformer(p, x), y)

    grads = vmap(grad(loss), in_dims=(None, 0, 0))(p, tokens, targets)
    out = {"losses": record(vmap(loss, in_dims=(None, 0, 0))(p, tokens, targets))}
    for name, g in grads.items():
        out["grad." + name] = record(g)
    write(os.path.join(OUT, "transformer_per_sample_grads.json"), out)


def ntk_params():
    """The NTK tutorial's CNN; leaf k from stream 70 + k, default init bounds."""
    return {
        "conv1.weight": t([32, 3, 3, 3], 70, torch_bound(27)),
        "conv1.bias": t([32], 71, torch_bound(27)),
        "conv2.weight": t([32, 32, 3, 3], 72, torch_bound(288)),
        "conv2.bias": t([32], 73, torch_bound(288)),
        "conv3.weight": t([32, 32, 3, 3], 74, torch_bound(288)),
        "conv3.bias": t([32], 75, torch_bound(288)),
        "fc.weight": t([10, 21632], 76, torch_bound(21632)),
        "fc.bias": t([10], 77, torch_bound(21632)),
    }


def ntk_cnn(p, x):
    x = F.relu(F.conv2d(x, p["conv1.weight"], p["conv1.bias"]))
    x = F.relu(F.conv2d(x, p["conv2.weight"], p["conv2.bias"]))
    x = F.conv2d(x, p["conv3.weight"], p["conv3.bias"])
    return F.linear(x.flatten(1), p["fc.weight"], p["fc.bias"])


def neural_tangent_kernel(n=20, m=5):
    """The tutorial's two methods, which must agree; both recorded."""
    p = ntk_params()
    x1 = t([n, 3, 32, 32], 700, 1.0)
    x2 = t([m, 3, 32, 32], 701, 1.0)

    def f_single(p, x):
        return ntk_cnn(p, x.unsqueeze(0)).squeeze(0)

    def jacobians(x):
        return [j.flatten(2) for j in vmap(jacrev(f_single), (None, 0))(p, x).values()]

    contraction = sum(torch.einsum("Naf,Mbf->NMab", a, b) for a, b in zip(jacobians(x1), jacobians(x2)))

    def ntk_pair(a, b):
        out, pullback = vjp(lambda q: f_single(q, a), p)

        def column(v):
            return jvp(lambda q: f_single(q, b), (p,), pullback(v))[1]

        return vmap(column)(torch.eye(out.numel()))

    vps = vmap(vmap(ntk_pair, (None, 0)), (0, None))(x1, x2)
    assert torch.allclose(contraction, vps, atol=1e-4), (contraction - vps).abs().max()
    write(os.path.join(OUT, "neural_tangent_kernel.json"), {"ntk": record(contraction, count=1000), "ntk_vps": record(vps, count=1000)})


TASKS, K, ALPHA, INNER_STEPS = 25, 10, 0.1, 2


def sine_tasks(step, tasks=TASKS, k=K):
    """Step `step`'s batch of sine tasks y = A sin(x + phase): amplitudes in
    [0.1, 5], phases in [0, pi], K support and K query points in [-5, 5]."""
    u = lambda j, n: unit_values(10000 + 4 * step + j, n)  # noqa: E731
    amp = 0.1 + 4.9 * (u(0, tasks) + 1) / 2
    phase = np.pi * (u(1, tasks) + 1) / 2
    x1 = 5 * u(2, tasks * k).reshape(tasks, k, 1)
    x2 = 5 * u(3, tasks * k).reshape(tasks, k, 1)
    y1 = amp[:, None, None] * np.sin(x1 + phase[:, None, None])
    y2 = amp[:, None, None] * np.sin(x2 + phase[:, None, None])
    return [torch.from_numpy(a.astype(np.float32)) for a in (x1, y1, x2, y2)]


def maml():
    """One meta-gradient of MAML sine regression at the initial parameters:
    INNER_STEPS SGD steps inside grad, vmap over TASKS tasks."""
    p = {
        "w1": t([40, 1], 80, torch_bound(1)), "b1": t([40], 81, torch_bound(1)),
        "w2": t([40, 40], 82, torch_bound(40)), "b2": t([40], 83, torch_bound(40)),
        "w3": t([1, 40], 84, torch_bound(40)), "b3": t([1], 85, torch_bound(40)),
    }

    def net(p, x):
        x = F.relu(F.linear(x, p["w1"], p["b1"]))
        x = F.relu(F.linear(x, p["w2"], p["b2"]))
        return F.linear(x, p["w3"], p["b3"])

    def mse(p, x, y):
        return F.mse_loss(net(p, x), y)

    def adapted(p, x1, y1, x2, y2):
        for _ in range(INNER_STEPS):
            g = grad(mse)(p, x1, y1)
            p = {k: p[k] - ALPHA * g[k] for k in p}
        return mse(p, x2, y2)

    def meta_loss(p, tasks):
        return vmap(adapted, in_dims=(None, 0, 0, 0, 0))(p, *tasks).mean()

    tasks = sine_tasks(0)
    out = {"meta_loss": record(meta_loss(p, tasks))}
    for name, g in grad(meta_loss)(p, tasks).items():
        out["meta_grad." + name] = record(g)
    write(os.path.join(OUT, "maml.json"), out)


def dp_cnn_params():
    """Leaf k from stream 20 + k, within PyTorch's default init bounds."""
    return {
        "conv1.weight": t([16, 1, 3, 3], 20, torch_bound(9)),
        "conv1.bias": t([16], 21, torch_bound(9)),
        "conv2.weight": t([32, 16, 3, 3], 22, torch_bound(144)),
        "conv2.bias": t([32], 23, torch_bound(144)),
        "fc.weight": t([10, 128], 24, torch_bound(128)),
        "fc.bias": t([10], 25, torch_bound(128)),
    }


def dp_cnn(p, x):
    x = F.max_pool2d(torch.tanh(F.conv2d(x, p["conv1.weight"], p["conv1.bias"], padding=1)), 2)
    x = F.max_pool2d(torch.tanh(F.conv2d(x, p["conv2.weight"], p["conv2.bias"], padding=1)), 2)
    return F.linear(torch.flatten(x, 1), p["fc.weight"], p["fc.bias"])


def dp_sgd(batch=64, clip=1.0):
    data = np.load(os.path.join(OUT, "..", "data", "digits.npz"))
    # The example's fixed shuffle (a stable sort of stream 7); the first batch.
    rows = np.argsort(unit_values(7, len(data["labels"])), kind="stable")[:batch]
    x = torch.from_numpy(data["images"].astype(np.float32) / 8.0 - 1.0).unsqueeze(1)[rows]
    y = torch.from_numpy(data["labels"].astype(np.int64))[rows]
    p = dp_cnn_params()

    def loss(p, sample, target):
        return F.cross_entropy(dp_cnn(p, sample.unsqueeze(0)), target.unsqueeze(0))

    grads = vmap(grad(loss), in_dims=(None, 0, 0))(p, x, y)
    norms = torch.stack([g.flatten(1).pow(2).sum(1) for g in grads.values()]).sum(0).sqrt()
    factor = (clip / (norms + 1e-6)).clamp(max=1.0)
    out = {"norms": record(norms)}
    for name, g in grads.items():
        out["clipped_sum." + name] = record((g * factor.view(-1, *[1] * (g.dim() - 1))).sum(0))
    write(os.path.join(OUT, "dp_sgd.json"), out)


if __name__ == "__main__":
    torch.set_num_threads(1)
    per_sample_grads_cnn()
    dp_sgd()
    transformer_per_sample_grads()
    neural_tangent_kernel()
    maml()
    print("recorded with torch", torch.__version__)
