"""Peer figures for W16 and W17 (benches/workloads.rs): the conv2d layer
input [64, 32, 28, 28], weight [64, 32, 3, 3], padding 1, f32.

- W16: torch.nn.functional.conv2d forward (oneDNN on CPU);
- W17: the per-sample weight gradients of that layer (loss: the sum of one
  example's outputs, example [32, 28, 28]), batch 64, by torch.func
  vmap(grad) and by jax.jit(vmap(grad)) (and jax.jit forward, for reference).

Prints milliseconds per call (median of repeats).

Usage: taskset -c 0 python3 benches/peers_conv.py [torch] [jax] [--threads N]
(needs `pip install torch jax`; one thread, torch's and XLA's, unless
--threads says otherwise). Run it in the same sitting as
`taskset -c 0 cargo bench --features bench --bench workloads -- 'W16|W17'`,
interleaved, when comparing figures: the machines are noisy, compare ratios.
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
# One thread for XLA's CPU backend too (unless --threads says otherwise).
if THREADS == 1:
    os.environ.setdefault(
        "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    )

N, C, H, W, O, K = 64, 32, 28, 28, 64, 3


def bench(fn, reps=15):
    for _ in range(3):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def torch_figs():
    import torch
    import torch.nn.functional as F
    from torch.func import grad, vmap

    torch.set_num_threads(THREADS)
    x = torch.randn(N, C, H, W)
    w = torch.randn(O, C, K, K)
    out = {}
    with torch.no_grad():
        out["w16_torch_conv2d_forward"] = bench(lambda: F.conv2d(x, w, padding=1))

    def loss(w, x):
        return F.conv2d(x, w, padding=1).sum()

    per_sample = vmap(grad(loss), in_dims=(None, 0))
    assert per_sample(w, x).shape == (N, O, C, K, K)
    out["w17_torch_func_vmap_grad"] = bench(lambda: per_sample(w, x), reps=5)
    return out


def jax_figs():
    import jax
    import jax.numpy as jnp

    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    x = jax.random.normal(k1, (N, C, H, W), jnp.float32)
    w = jax.random.normal(k2, (O, C, K, K), jnp.float32)

    def conv(x, w):
        return jax.lax.conv_general_dilated(
            x, w, window_strides=(1, 1), padding=((1, 1), (1, 1)),
            dimension_numbers=("NCHW", "OIHW", "NCHW"))

    def loss(w, x):
        return conv(x[None], w).sum()

    fwd = jax.jit(conv)
    per_sample = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0)))
    assert per_sample(w, x).shape == (N, O, C, K, K)
    return {
        "w16_jax_jit_forward": bench(lambda: fwd(x, w).block_until_ready()),
        "w17_jax_jit_vmap_grad": bench(lambda: per_sample(w, x).block_until_ready()),
    }


if __name__ == "__main__":
    which = ARGS or ["torch", "jax"]
    print(f"threads: {THREADS}", flush=True)
    figs = {}
    if "torch" in which:
        figs.update(torch_figs())
    if "jax" in which:
        figs.update(jax_figs())
    for k, v in figs.items():
        print(f"{k}: {v:.2f} ms")
