"""Peer figures for the model workloads W12-W15 (benches/models/) and W8:

- W8: per-sample gradients of the MLP 64 -> 128 -> relu -> 10 with
  cross-entropy, batch 256 (as ../shared/bench/peers.py times it);
- W12: per-sample gradients of the DP-SGD paper's MNIST CNN (conv 1->16 8x8
  stride 2 padding 3, tanh, max_pool 2 stride 1, conv 16->32 4x4 stride 2,
  tanh, max_pool 2 stride 1, linear 512->32, tanh, linear 32->10), batch 256
  of 28x28, f32;
- W13: per-sample gradients of the transformer block of
  examples/transformer_per_sample_grads.rs, batch 32 sequences of 32;
- W14: one DP-SGD step of W12 (clip each example's gradient to norm 1,
  Gaussian noise of scale 1, average, SGD with learning rate 0.1);
- W15: the empirical NTK of examples/neural_tangent_kernel.rs's CNN between
  two batches of 16 images, by the Jacobian contraction.

Peers: torch.func (vmap(grad), vmap(jacrev)), jax.jit of the same, and
Opacus (GradSampleModule for W12, its DPOptimizer for W14). Parameters and
inputs are those of the Rust workloads (scripts/reference/examples_common.py
reproduces examples/support bit for bit), and each result's checksum (sum,
sum of absolute values) is printed to compare with the one the Rust
benchmark prints.

Prints milliseconds per call (median of repeats), one line per figure.

Usage: taskset -c 0 python3 benches/peers_models.py [torch] [jax] [opacus]
           [--threads N]
(needs `pip install torch jax opacus`; one thread unless --threads says
otherwise). Run it in the same sitting as
`taskset -c 0 cargo bench --features bench --bench workloads -- 'W8_|W1[2-5]_'`
when comparing figures: the machines are noisy, compare ratios.
"""
import os
import statistics
import sys
import time

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
THREADS = 1
for i, a in enumerate(sys.argv):
    if a == "--threads":
        THREADS = int(sys.argv[i + 1])
        ARGS = [x for x in ARGS if x != sys.argv[i + 1]]

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if THREADS == 1:
    os.environ.setdefault(
        "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    )

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "reference"))
from examples_common import labels, torch_bound, uniform  # noqa: E402


def bench(fn, reps):
    for _ in range(2):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def checksum(leaves):
    leaves = [np.asarray(leaf, dtype=np.float64) for leaf in leaves]
    return (sum(float(x.sum()) for x in leaves), sum(float(np.abs(x).sum()) for x in leaves))


# --- parameters and inputs, as benches/models/mod.rs builds them ------------

def mnist_params():
    spec = [("conv1_w", [16, 1, 8, 8], 64), ("conv1_b", [16], 64),
            ("conv2_w", [32, 16, 4, 4], 256), ("conv2_b", [32], 256),
            ("fc1_w", [32, 512], 512), ("fc1_b", [32], 512),
            ("fc2_w", [10, 32], 32), ("fc2_b", [10], 32)]
    return {name: uniform(shape, 90 + k, torch_bound(fan)) for k, (name, shape, fan) in enumerate(spec)}


def mnist_inputs():
    return uniform([256, 1, 28, 28], 900, 1.0), labels(256, 901, 10)


V, L, D, HEADS, FF = 100, 32, 64, 4, 256
BLOCK_NAMES = ["tok_emb", "pos_emb", "ln1_w", "ln1_b", "qkv_w", "qkv_b", "out_w", "out_b",
               "ln2_w", "ln2_b", "fc1_w", "fc1_b", "fc2_w", "fc2_b", "lnf_w", "lnf_b",
               "head_w", "head_b"]


def block_params():
    lin = torch_bound(D)
    spec = [([V, D], 1.0), ([L, D], 1.0), ([D], None), ([D], 0.1), ([3 * D, D], lin),
            ([3 * D], lin), ([D, D], lin), ([D], lin), ([D], None), ([D], 0.1), ([FF, D], lin),
            ([FF], lin), ([D, FF], torch_bound(FF)), ([D], torch_bound(FF)), ([D], None),
            ([D], 0.1), ([V, D], lin), ([V], lin)]
    p = {}
    for k, (name, (shape, bound)) in enumerate(zip(BLOCK_NAMES, spec)):
        # Layer-norm weights: 1 + 0.1 u, added in f32 as the Rust side does.
        p[name] = (uniform(shape, 40 + k, 0.1) + np.float32(1.0)) if bound is None else uniform(shape, 40 + k, bound)
    return p


def block_inputs():
    return labels(32 * L, 600, V).reshape(32, L), labels(32 * L, 601, V).reshape(32, L)


def ntk_params():
    spec = [("conv1_w", [32, 3, 3, 3], 27), ("conv1_b", [32], 27), ("conv2_w", [32, 32, 3, 3], 288),
            ("conv2_b", [32], 288), ("conv3_w", [32, 32, 3, 3], 288), ("conv3_b", [32], 288),
            ("fc_w", [10, 21632], 21632), ("fc_b", [10], 21632)]
    return {name: uniform(shape, 70 + k, torch_bound(fan)) for k, (name, shape, fan) in enumerate(spec)}


def ntk_inputs():
    return uniform([16, 3, 32, 32], 700, 1.0), uniform([16, 3, 32, 32], 701, 1.0)


def mlp_inputs():
    rng = np.random.default_rng(0)
    p = {"w1": rng.standard_normal((128, 64), np.float32) * 0.125, "b1": rng.standard_normal(128, np.float32),
         "w2": rng.standard_normal((10, 128), np.float32) * 0.09, "b2": rng.standard_normal(10, np.float32)}
    return p, rng.standard_normal((256, 64), np.float32), (np.arange(256) * 7 + 3) % 10


def report(name, ms, check=None):
    line = f"{name}: {ms:.3f} ms"
    if check is not None:
        line += f"   checksum {check[0]:.6g} {check[1]:.6g}"
    print(line, flush=True)


# --- torch.func --------------------------------------------------------------

def torch_figs():
    import torch
    import torch.nn.functional as F
    from torch.func import grad, jacrev, vmap

    torch.set_num_threads(THREADS)
    T = lambda d: {k: torch.from_numpy(v) for k, v in d.items()}  # noqa: E731

    # W8
    p, x, y = mlp_inputs()
    p, x, y = T(p), torch.from_numpy(x), torch.from_numpy(y)

    def mlp_loss(p, x, y):
        h = F.relu(F.linear(x, p["w1"], p["b1"]))
        return F.cross_entropy(F.linear(h, p["w2"], p["b2"])[None], y[None])

    f = vmap(grad(mlp_loss), in_dims=(None, 0, 0))
    report("w8_torch_func_vmap_grad", bench(lambda: f(p, x, y), 50))

    # W12
    p = T(mnist_params())
    x, y = mnist_inputs()
    x, y = torch.from_numpy(x), torch.from_numpy(y)

    def mnist(p, x):
        x = torch.tanh(F.conv2d(x, p["conv1_w"], p["conv1_b"], stride=2, padding=3))
        x = F.max_pool2d(x, 2, 1)
        x = torch.tanh(F.conv2d(x, p["conv2_w"], p["conv2_b"], stride=2))
        x = F.max_pool2d(x, 2, 1)
        x = torch.tanh(F.linear(x.flatten(1), p["fc1_w"], p["fc1_b"]))
        return F.linear(x, p["fc2_w"], p["fc2_b"])

    def mnist_loss(p, x, y):
        return F.cross_entropy(mnist(p, x[None]), y[None])

    psg = vmap(grad(mnist_loss), in_dims=(None, 0, 0))
    report("w12_torch_func_vmap_grad", bench(lambda: psg(p, x, y), 10),
           checksum([g.numpy() for g in psg(p, x, y).values()]))

    # W14
    gen = torch.Generator().manual_seed(0)

    def dp_step(p, x, y):
        grads = psg(p, x, y)
        norms = torch.stack([g.flatten(1).pow(2).sum(1) for g in grads.values()]).sum(0).sqrt()
        factor = (1.0 / (norms + 1e-6)).clamp(max=1.0)
        out = {}
        for k, g in grads.items():
            s = (g * factor.view(-1, *[1] * (g.dim() - 1))).sum(0)
            noisy = (s + torch.randn(s.shape, generator=gen)) / x.shape[0]
            out[k] = p[k] - 0.1 * noisy
        return out

    report("w14_torch_func_step", bench(lambda: dp_step(p, x, y), 10))

    # W13
    p = T(block_params())
    x, y = block_inputs()
    x, y = torch.from_numpy(x), torch.from_numpy(y)

    def block(p, tokens):
        h = F.embedding(tokens, p["tok_emb"]) + p["pos_emb"]
        a = F.layer_norm(h, [D], p["ln1_w"], p["ln1_b"])
        q, k, v = F.linear(a, p["qkv_w"], p["qkv_b"]).split(D, dim=-1)
        heads = [z.reshape(L, HEADS, D // HEADS).transpose(0, 1) for z in (q, k, v)]
        o = F.scaled_dot_product_attention(*heads, is_causal=True).transpose(0, 1).reshape(L, D)
        h = h + F.linear(o, p["out_w"], p["out_b"])
        m = F.layer_norm(h, [D], p["ln2_w"], p["ln2_b"])
        h = h + F.linear(F.gelu(F.linear(m, p["fc1_w"], p["fc1_b"])), p["fc2_w"], p["fc2_b"])
        return F.linear(F.layer_norm(h, [D], p["lnf_w"], p["lnf_b"]), p["head_w"], p["head_b"])

    def block_loss(p, x, y):
        return F.cross_entropy(block(p, x), y)

    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # vmap over CPU attention warns that it loops
        psg_t = vmap(grad(block_loss), in_dims=(None, 0, 0))
        report("w13_torch_func_vmap_grad", bench(lambda: psg_t(p, x, y), 10),
               checksum([g.numpy() for g in psg_t(p, x, y).values()]))

    # W15
    p = T(ntk_params())
    x1, x2 = (torch.from_numpy(a) for a in ntk_inputs())

    def ntk_single(p, x):
        x = x[None]
        x = F.relu(F.conv2d(x, p["conv1_w"], p["conv1_b"]))
        x = F.relu(F.conv2d(x, p["conv2_w"], p["conv2_b"]))
        x = F.conv2d(x, p["conv3_w"], p["conv3_b"])
        return F.linear(x.flatten(1), p["fc_w"], p["fc_b"])[0]

    jac = vmap(jacrev(ntk_single), in_dims=(None, 0))

    def ntk():
        j1, j2 = jac(p, x1), jac(p, x2)
        return sum(torch.einsum("Naf,Mbf->NMab", j1[k].flatten(2), j2[k].flatten(2)) for k in j1)

    report("w15_torch_func_vmap_jacrev", bench(ntk, 3), checksum([ntk().numpy()]))


# --- jax.jit -----------------------------------------------------------------

def jax_figs():
    import jax
    import jax.numpy as jnp

    J = lambda d: {k: jnp.asarray(v) for k, v in d.items()}  # noqa: E731

    def xent(logits, y):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[..., None], -1))

    def linear(x, w, b):
        return x @ w.T + b

    # W8
    p, x, y = mlp_inputs()
    p, x, y = J(p), jnp.asarray(x), jnp.asarray(y)

    def mlp_loss(p, x, y):
        h = jax.nn.relu(linear(x, p["w1"], p["b1"]))
        return xent(linear(h, p["w2"], p["b2"])[None], y[None])

    f = jax.jit(jax.vmap(jax.grad(mlp_loss), in_axes=(None, 0, 0)))
    report("w8_jax_jit_vmap_grad", bench(lambda: jax.block_until_ready(f(p, x, y)), 100))

    # W12
    p = J(mnist_params())
    x, y = mnist_inputs()
    x, y = jnp.asarray(x), jnp.asarray(y)

    def conv(x, w, b, stride, pad):
        out = jax.lax.conv_general_dilated(x, w, (stride, stride), ((pad, pad), (pad, pad)),
                                           dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return out + b[None, :, None, None]

    def pool(x):
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 1, 1), "VALID")

    def mnist(p, x):
        x = pool(jnp.tanh(conv(x, p["conv1_w"], p["conv1_b"], 2, 3)))
        x = pool(jnp.tanh(conv(x, p["conv2_w"], p["conv2_b"], 2, 0)))
        x = jnp.tanh(linear(x.reshape(x.shape[0], -1), p["fc1_w"], p["fc1_b"]))
        return linear(x, p["fc2_w"], p["fc2_b"])

    def mnist_loss(p, x, y):
        return xent(mnist(p, x[None]), y[None])

    psg = jax.jit(jax.vmap(jax.grad(mnist_loss), in_axes=(None, 0, 0)))
    report("w12_jax_jit_vmap_grad", bench(lambda: jax.block_until_ready(psg(p, x, y)), 20),
           checksum(jax.tree_util.tree_leaves(psg(p, x, y))))

    # W14
    def dp_step(p, x, y, key):
        grads = jax.vmap(jax.grad(mnist_loss), in_axes=(None, 0, 0))(p, x, y)
        norms = jnp.sqrt(sum(jnp.sum(g.reshape(g.shape[0], -1) ** 2, 1) for g in grads.values()))
        factor = jnp.minimum(1.0, 1.0 / (norms + 1e-6))
        keys = jax.random.split(key, len(grads))
        out = {}
        for kk, (k, g) in zip(keys, sorted(grads.items())):
            s = jnp.sum(g * factor.reshape((-1,) + (1,) * (g.ndim - 1)), 0)
            out[k] = p[k] - 0.1 * (s + jax.random.normal(kk, s.shape)) / x.shape[0]
        return out

    step = jax.jit(dp_step)
    key = jax.random.PRNGKey(0)
    report("w14_jax_jit_step", bench(lambda: jax.block_until_ready(step(p, x, y, key)), 20))

    # W13
    p = J(block_params())
    x, y = block_inputs()
    x, y = jnp.asarray(x), jnp.asarray(y)

    def layer_norm(h, w, b):
        mu = h.mean(-1, keepdims=True)
        var = ((h - mu) ** 2).mean(-1, keepdims=True)
        return (h - mu) / jnp.sqrt(var + 1e-5) * w + b

    def block(p, tokens):
        h = p["tok_emb"][tokens] + p["pos_emb"]
        a = layer_norm(h, p["ln1_w"], p["ln1_b"])
        q, k, v = jnp.split(linear(a, p["qkv_w"], p["qkv_b"]), 3, axis=-1)
        q, k, v = (z.reshape(L, HEADS, D // HEADS).transpose(1, 0, 2) for z in (q, k, v))
        s = q @ k.transpose(0, 2, 1) / jnp.sqrt(D // HEADS)
        s = jnp.where(jnp.tril(jnp.ones((L, L), bool)), s, -jnp.inf)
        o = (jax.nn.softmax(s, -1) @ v).transpose(1, 0, 2).reshape(L, D)
        h = h + linear(o, p["out_w"], p["out_b"])
        m = layer_norm(h, p["ln2_w"], p["ln2_b"])
        h = h + linear(jax.nn.gelu(linear(m, p["fc1_w"], p["fc1_b"]), approximate=False), p["fc2_w"], p["fc2_b"])
        return linear(layer_norm(h, p["lnf_w"], p["lnf_b"]), p["head_w"], p["head_b"])

    def block_loss(p, x, y):
        return xent(block(p, x), y)

    psg_t = jax.jit(jax.vmap(jax.grad(block_loss), in_axes=(None, 0, 0)))
    # The first call traces, compiles and runs (what batchrules' W13 bench
    # prints as "jit first call").
    t = time.perf_counter()
    jax.block_until_ready(psg_t(p, x, y))
    report("w13_jax_jit_first_call", (time.perf_counter() - t) * 1e3)
    report("w13_jax_jit_vmap_grad", bench(lambda: jax.block_until_ready(psg_t(p, x, y)), 20),
           checksum(jax.tree_util.tree_leaves(psg_t(p, x, y))))

    # W15
    p = J(ntk_params())
    x1, x2 = (jnp.asarray(a) for a in ntk_inputs())

    def ntk_single(p, x):
        x = x[None]
        x = jax.nn.relu(conv(x, p["conv1_w"], p["conv1_b"], 1, 0))
        x = jax.nn.relu(conv(x, p["conv2_w"], p["conv2_b"], 1, 0))
        x = conv(x, p["conv3_w"], p["conv3_b"], 1, 0)
        return linear(x.reshape(1, -1), p["fc_w"], p["fc_b"])[0]

    def ntk(p, x1, x2):
        jac = jax.vmap(jax.jacrev(ntk_single), in_axes=(None, 0))
        j1, j2 = jac(p, x1), jac(p, x2)
        return sum(jnp.einsum("Naf,Mbf->NMab", j1[k].reshape(16, 10, -1), j2[k].reshape(16, 10, -1))
                   for k in j1)

    nt = jax.jit(ntk)
    report("w15_jax_jit_vmap_jacrev", bench(lambda: jax.block_until_ready(nt(p, x1, x2)), 5),
           checksum([nt(p, x1, x2)]))


# --- Opacus ------------------------------------------------------------------

def opacus_figs():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    torch.set_num_threads(THREADS)

    class Mnist(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, 8, 2, padding=3)
            self.conv2 = nn.Conv2d(16, 32, 4, 2)
            self.fc1 = nn.Linear(512, 32)
            self.fc2 = nn.Linear(32, 10)
            params = mnist_params()
            with torch.no_grad():
                for name, t in [("conv1", "conv1"), ("conv2", "conv2"), ("fc1", "fc1"), ("fc2", "fc2")]:
                    getattr(self, name).weight.copy_(torch.from_numpy(params[t + "_w"]))
                    getattr(self, name).bias.copy_(torch.from_numpy(params[t + "_b"]))

        def forward(self, x):
            x = F.max_pool2d(torch.tanh(self.conv1(x)), 2, 1)
            x = F.max_pool2d(torch.tanh(self.conv2(x)), 2, 1)
            return self.fc2(torch.tanh(self.fc1(x.flatten(1))))

    x, y = mnist_inputs()
    x, y = torch.from_numpy(x), torch.from_numpy(y)

    # W12: per-sample gradients (loss summed, so grad_sample is each example's gradient).
    m = GradSampleModule(Mnist(), loss_reduction="sum")

    def per_sample():
        m.zero_grad(set_to_none=True)
        for p in m.parameters():
            p.grad_sample = None
        F.cross_entropy(m(x), y, reduction="sum").backward()
        return [p.grad_sample for p in m.parameters()]

    report("w12_opacus_grad_sample", bench(per_sample, 10), checksum([g.numpy() for g in per_sample()]))

    # W14: one step of its DP optimizer (clipping to 1, noise multiplier 1, SGD 0.1).
    m2 = GradSampleModule(Mnist())
    opt = DPOptimizer(torch.optim.SGD(m2.parameters(), lr=0.1), noise_multiplier=1.0,
                      max_grad_norm=1.0, expected_batch_size=256)

    def step():
        opt.zero_grad()
        F.cross_entropy(m2(x), y).backward()
        opt.step()

    report("w14_opacus_dp_optimizer_step", bench(step, 10))


if __name__ == "__main__":
    which = ARGS or ["torch", "jax", "opacus"]
    print(f"threads: {THREADS}", flush=True)
    if "torch" in which:
        torch_figs()
    if "jax" in which:
        jax_figs()
    if "opacus" in which:
        opacus_figs()
