"""Records JAX's values of convolutions with no input or no output channels,
for tests/suite/api_edges.rs (which reads tests/reference/jax_conv_channels.json).

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax==0.10.2
    /tmp/jaxenv/bin/python scripts/reference/record_conv_channels.py

PyTorch is not the reference here: torch 2.15 returns an empty tensor of
shape [N, 0, H_out, W_out] for an input with no channels (its output channel
count becomes the input's), and refuses a weight with no output channels.
JAX's `lax.conv_general_dilated` gives what the sum over an empty set of
input channels is, zeros of shape [N, C_out, H_out, W_out], and an empty
[N, 0, H_out, W_out] for no output channels. Each case records the output
with the bias added (as `conv2d(x, w, b)` adds it, broadcast over the
spatial dims), and the gradient of sum(out * c) with respect to the bias
(by jax.grad) for a seeded cotangent c.
"""
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(43)

# (input shape with batch, weight shape, stride, bias?)
CASES = [
    ([2, 0, 4, 4], [3, 0, 2, 2], [1, 1], True),
    ([2, 0, 5, 4], [3, 0, 2, 3], [2, 1], False),
    ([2, 0, 5], [4, 0, 2], [2], True),
    ([2, 3, 4, 4], [0, 3, 2, 2], [1, 1], True),
]


def conv(x, w, b, stride):
    y = lax.conv_general_dilated(x, w, stride, "VALID")
    if b is not None:
        y = y + b.reshape((-1,) + (1,) * (y.ndim - 2))
    return y


def flat(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "values": a.reshape(-1).tolist()}


cases = []
for xs, ws, stride, has_bias in CASES:
    x = jnp.asarray(rng.standard_normal(xs))
    w = jnp.asarray(rng.standard_normal(ws))
    b = jnp.asarray(rng.standard_normal(ws[0])) if has_bias else None
    y = conv(x, w, b, stride)
    c = jnp.asarray(rng.standard_normal(y.shape))
    case = {"input": flat(x), "weight": flat(w), "stride": stride, "forward": flat(y),
            "cotangent": flat(c)}
    if has_bias:
        case["bias"] = flat(b)
        gb = jax.grad(lambda b: jnp.sum(conv(x, w, b, stride) * c))(b)
        case["bias_grad"] = flat(gb)
    cases.append(case)

out = {"jax_version": jax.__version__, "cases": cases}
path = pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference" / "jax_conv_channels.json"
path.write_text(json.dumps(out) + "\n")
for c in cases:
    print(c["input"]["shape"], c["weight"]["shape"], c["forward"]["shape"])
