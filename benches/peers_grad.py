"""Peer figures for the workloads ../shared/bench/peers.py does not cover:
W9 (grad of sum(x * x) on 2 elements: per-call overhead) and W10 (the Jacobian
of tanh(W x + b) by jacrev and jacfwd, 32 -> 2048 and 2048 -> 32), for
torch.func and JAX (eager and jax.jit). Prints microseconds per call (median
of repeats), like peers.py.

Usage: taskset -c 0 python3 benches/peers_grad.py [torch] [jax]
(needs `pip install torch jax`). Run it in the same sitting as
`cargo bench --features bench --bench workloads -- 'W9|W10'` when comparing figures."""
import os
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def bench(fn, reps=100, inner=3):
    for _ in range(5):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        ts.append((time.perf_counter() - t) / inner)
    return statistics.median(ts) * 1e6


SHAPES = [(32, 2048), (2048, 32)]


def torch_figs():
    import torch
    from torch.func import grad, jacfwd, jacrev

    torch.set_num_threads(1)
    out = {}
    x2 = torch.randn(2)
    g = grad(lambda x: (x * x).sum())
    out["w9_grad_2"] = bench(lambda: g(x2), reps=500, inner=10)
    for d_in, d_out in SHAPES:
        w = torch.randn(d_out, d_in) * 0.05
        b = torch.randn(d_out)
        x = torch.randn(d_in)
        f = lambda x: torch.tanh(torch.nn.functional.linear(x, w, b))
        out[f"w10_jacrev_{d_in}to{d_out}"] = bench(lambda: jacrev(f)(x), reps=20)
        out[f"w10_jacfwd_{d_in}to{d_out}"] = bench(lambda: jacfwd(f)(x), reps=20)
    return out


def jax_figs():
    import jax
    import jax.numpy as jnp

    out = {}
    k = jax.random.PRNGKey(0)
    x2 = jax.random.normal(k, (2,))
    g = jax.grad(lambda x: (x * x).sum())
    gj = jax.jit(g)
    out["w9_grad_2_eager"] = bench(lambda: g(x2).block_until_ready(), reps=100)
    out["w9_grad_2_jit"] = bench(lambda: gj(x2).block_until_ready(), reps=500, inner=10)
    for d_in, d_out in SHAPES:
        w = jax.random.normal(k, (d_out, d_in)) * 0.05
        b = jax.random.normal(k, (d_out,))
        x = jax.random.normal(k, (d_in,))
        f = lambda x: jnp.tanh(w @ x + b)
        for name, t in [("jacrev", jax.jacrev), ("jacfwd", jax.jacfwd)]:
            tj = jax.jit(t(f))
            out[f"w10_{name}_{d_in}to{d_out}_jit"] = bench(
                lambda: tj(x).block_until_ready(), reps=50
            )
    return out


if __name__ == "__main__":
    which = sys.argv[1:] or ["torch", "jax"]
    for w in which:
        figs = {"torch": torch_figs, "jax": jax_figs}[w]()
        for kname, v in figs.items():
            print(f"{w}\t{kname}\t{v:.1f} us")
