"""Records PyTorch's values of the normalization ops (batch_norm, group_norm,
rms_norm), embedding and the losses (nll_loss,
binary_cross_entropy_with_logits, smooth_l1_loss, huber_loss) and of their
gradients, for tests/suite/normalization.rs and tests/suite/losses.rs (which
read tests/reference/torch_norm_losses.json).

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch==2.15.0
    /tmp/torchenv/bin/python scripts/reference/record_norm_losses.py

Each case calls one op on small deterministic inputs, in float64 and float32,
and records its outputs and the gradient of sum(output * cotangent) (over
every output, with fixed cotangents) with respect to each float input, by
autograd's backward of the torch.nn.functional op.

PyTorch does not differentiate some inputs: batch_norm's running statistics
(its running-stat outputs are in-place buffer updates), nll_loss's `weight`,
and binary_cross_entropy_with_logits's `weight` and `pos_weight`. For those
cases the gradients come from autograd over the op's formula written with
torch ops (`manual` below), whose forward values and whose gradients with
respect to the inputs PyTorch does differentiate are first checked against
the functional op's (to 1e-12 in float64, 1e-5 in float32).

JSON has no NaN or infinity, so those are written as the strings "nan",
"inf" and "-inf". float32 values are written as the float64 that holds them
exactly. The JSON is committed, so the tests need no Python.
"""
import json
import math
import pathlib

import warnings

import torch
import torch.nn.functional as F

from recording import encode


def values(n, start=0, scale=1.0):
    """Deterministic, distinct, non-integer values, as the op samples' (samples/src/values.rs)."""
    return [scale * (math.sin((start + i) * 0.7373 + 0.2) * 2.0 + 0.01 * (start + i)) for i in range(n)]


def seq(shape, start=0, scale=1.0):
    n = 1
    for s in shape:
        n *= s
    return torch.tensor(values(n, start, scale), dtype=torch.float64).reshape(shape)


def tensor_json(t):
    if t is None:
        return None
    kind = "i64" if t.dtype == torch.int64 else ("f32" if t.dtype == torch.float32 else "f64")
    vals = t.detach().reshape(-1).tolist()
    if kind != "i64":
        vals = encode([float(v) for v in vals])
    return {"shape": list(t.shape), "dtype": kind, "values": vals}


def close(a, b, tol):
    a, b = a.double(), b.double()
    both_nan = torch.isnan(a) & torch.isnan(b)
    diff = (a - b).abs()
    ok = both_nan | (a == b) | (diff <= tol * torch.clamp(b.abs(), min=1.0))
    return bool(ok.all())


# ---------------------------------------------------------------------------
# The ops written with torch ops, for the gradients PyTorch does not give.

def manual_batch_norm(x, rm, rv, w, b, training, momentum, eps):
    shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
    if training:
        dims = [0] + list(range(2, x.dim()))
        mean = x.mean(dim=dims)
        var = x.var(dim=dims, unbiased=False)
        unbiased = x.var(dim=dims, unbiased=True)
        y = (x - mean.reshape(shape)) / torch.sqrt(var.reshape(shape) + eps)
        if rm is None:
            new_m, new_v = mean, unbiased
        else:
            new_m = (1 - momentum) * rm + momentum * mean
            new_v = (1 - momentum) * rv + momentum * unbiased
    else:
        y = (x - rm.reshape(shape)) / torch.sqrt(rv.reshape(shape) + eps)
        new_m, new_v = rm, rv
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y, new_m, new_v


def manual_nll(x, t, w, ignore_index, reduction):
    cdim = 0 if x.dim() == 1 else 1
    ignored = t == ignore_index
    safe = torch.where(ignored, torch.zeros_like(t), t)
    picked = x.gather(cdim, safe.unsqueeze(cdim)).squeeze(cdim)
    wt = w[safe] if w is not None else torch.ones_like(picked)
    zero = torch.zeros((), dtype=x.dtype)
    losses = torch.where(ignored, zero, -(wt * picked))
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / torch.where(ignored, zero, wt).sum()


def manual_bce(x, t, w, reduction, pw):
    ls = F.logsigmoid(x)
    if pw is not None:
        ls = ((pw - 1) * t + 1) * ls
    losses = (1 - t) * x - ls
    if w is not None:
        losses = losses * w
    return {"none": lambda l: l, "sum": torch.sum, "mean": torch.mean}[reduction](losses)


# ---------------------------------------------------------------------------
# The cases: (op, tensor inputs by name (None: not given), other arguments,
# the functional call, the manual one or None).

def bn(training, momentum=0.1, eps=1e-5):
    def f(input, running_mean, running_var, weight, bias):
        x = input
        rm = None if running_mean is None else running_mean.detach().clone()
        rv = None if running_var is None else running_var.detach().clone()
        y = F.batch_norm(x, rm, rv, weight, bias, training=training, momentum=momentum, eps=eps)
        if rm is None:
            return (y,)
        return (y, rm, rv)

    def m(input, running_mean, running_var, weight, bias):
        x = input
        return manual_batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)

    return {"training": training, "momentum": momentum, "eps": eps}, f, m


CASES = []


def case(op, tensors, args, f, manual=None, note=""):
    CASES.append((op, tensors, args, f, manual, note))


# batch_norm
for name, x, with_stats, affine, (args, f, m) in [
    ("train [4,3,2], stats, affine", seq([4, 3, 2]), True, True, bn(True)),
    ("eval [4,3], stats, affine", seq([4, 3], 3), True, True, bn(False)),
    ("train [3,2,2,2], no stats", seq([3, 2, 2, 2], 5), False, False, bn(True)),
    ("train [2,3], momentum 0.3, eps 1e-3, weight", seq([2, 3], 1), True, "weight", bn(True, 0.3, 1e-3)),
]:
    c = x.shape[1]
    tensors = {
        "input": x,
        "running_mean": seq([c], 11, 0.5) if with_stats else None,
        "running_var": torch.exp(seq([c], 13, 0.5)) if with_stats else None,
        "weight": seq([c], 17) if affine else None,
        "bias": seq([c], 19) if affine is True else None,
    }
    case("batch_norm", tensors, args, f, m, name)

# group_norm
for name, x, groups, w, b, eps in [
    ("[2,4,3] 2 groups, affine", seq([2, 4, 3]), 2, seq([4], 7), seq([4], 9), 1e-5),
    ("[3,6,2] 3 groups", seq([3, 6, 2], 2), 3, None, None, 1e-5),
    ("[2,4,2,2] 4 groups, weight, eps 1e-3", seq([2, 4, 2, 2], 4), 4, seq([4], 3), None, 1e-3),
    ("[2,4,2] 1 group", seq([2, 4, 2], 6), 1, None, seq([4], 1), 1e-5),
]:
    case("group_norm", {"input": x, "weight": w, "bias": b}, {"num_groups": groups, "eps": eps},
         lambda input, weight, bias, g=groups, e=eps: (F.group_norm(input, g, weight, bias, e),), None, name)

# rms_norm
zero_row = seq([2, 3])
zero_row[1] = 0.0
for name, x, shape, w, eps in [
    ("[3,4] over [4], weight, default eps", seq([3, 4]), [4], seq([4], 5), None),
    ("[2,3,4] over [3,4], eps 1e-3", seq([2, 3, 4], 2), [3, 4], None, 1e-3),
    ("[2,3] with a zero row, weight, default eps", zero_row, [3], seq([3], 8), None),
]:
    case("rms_norm", {"input": x, "weight": w}, {"normalized_shape": shape, "eps": eps},
         lambda input, weight, s=shape, e=eps: (F.rms_norm(input, s, weight, e),), None, name)

# embedding
idx = torch.tensor([[1, 4, 2], [2, 0, 1]])
for name, i, rows, pad in [
    ("[2,3] indices, repeats", idx, 5, None),
    ("padding_idx 2", idx, 5, 2),
    ("padding_idx -1 (row 4)", idx, 5, -1),
    ("0-d index at the padding row", torch.tensor(3), 4, 3),
]:
    case("embedding", {"input": i, "weight": seq([rows, 3], 2)}, {"padding_idx": pad},
         lambda input, weight, p=pad: (F.embedding(input, weight, padding_idx=p),), None, name)

# nll_loss
logp = torch.log_softmax(seq([5, 4]), dim=1)
t5 = torch.tensor([1, -100, 3, 0, 1])
w4 = torch.exp(seq([4], 9, 0.5))
all_ignored = torch.tensor([-100, -100, -100, -100, -100])
logp3 = torch.log_softmax(seq([2, 3, 2], 3), dim=1)
t3 = torch.tensor([[0, 1], [2, 1]])
for name, x, t, w, ignore, red in [
    ("[5,4] weight, ignore -100, mean", logp, t5, w4, -100, "mean"),
    ("[5,4] sum", logp, t5, None, -100, "sum"),
    ("[5,4] weight, none", logp, t5, w4, -100, "none"),
    ("[5,4] mean, ignore_index 1", logp, t5.clamp(min=0), None, 1, "mean"),
    ("[2,3,2] weight, ignore_index 1, mean", logp3, t3, seq([3], 2, 0.3).exp(), 1, "mean"),
    ("[4] unbatched, weight, mean", logp[0], torch.tensor(2), w4, -100, "mean"),
    ("all ignored, weight, mean: NaN", logp, all_ignored, w4, -100, "mean"),
    ("all ignored, sum: 0", logp, all_ignored, None, -100, "sum"),
]:
    case("nll_loss", {"input": x, "target": t, "weight": w}, {"ignore_index": ignore, "reduction": red},
         lambda input, target, weight, i=ignore, r=red: (F.nll_loss(input, target, weight, ignore_index=i, reduction=r),),
         lambda input, target, weight, i=ignore, r=red: (manual_nll(input, target, weight, i, r),), name)

# binary_cross_entropy_with_logits
logits = seq([3, 4], 0, 3.0)
logits[0, 0], logits[0, 1], logits[1, 2], logits[2, 3] = 800.0, -800.0, 30.0, -30.0
probs = torch.sigmoid(seq([3, 4], 7))
probs[0, 0], probs[0, 1] = 0.0, 1.0
for name, w, pw, red in [
    ("[3,4] mean", None, None, "mean"),
    ("weight [4], pos_weight [4], sum", torch.exp(seq([4], 3, 0.3)), torch.exp(seq([4], 5, 0.5)), "sum"),
    ("pos_weight [4], none", None, torch.exp(seq([4], 8, 0.5)), "none"),
    ("weight [3,1], mean", seq([3, 1], 2).exp(), None, "mean"),
]:
    case("binary_cross_entropy_with_logits", {"input": logits, "target": probs, "weight": w, "pos_weight": pw},
         {"reduction": red},
         lambda input, target, weight, pos_weight, r=red: (
             F.binary_cross_entropy_with_logits(input, target, weight, reduction=r, pos_weight=pos_weight),),
         lambda input, target, weight, pos_weight, r=red: (manual_bce(input, target, weight, r, pos_weight),), name)

# smooth_l1_loss and huber_loss: differences on both sides of the threshold,
# exactly at it, and exactly 0.
a = torch.tensor([[0.3, -0.2, 2.5, -3.0], [1.0, 0.0, 0.75, -1.5], [0.5, -0.5, 4.0, 0.1]], dtype=torch.float64)
b = torch.tensor([[0.0, 0.1, 0.5, -1.0], [0.0, 0.0, -0.25, 0.5], [0.0, 0.0, 1.0, 0.1]], dtype=torch.float64)
for op, pname, fn in [("smooth_l1_loss", "beta", F.smooth_l1_loss), ("huber_loss", "delta", F.huber_loss)]:
    settings = [(1.0, "mean", b), (0.5, "none", b), (2.0, "sum", b[0])]
    if op == "smooth_l1_loss":
        settings.append((0.0, "sum", b))
    for p, red, target in settings:
        case(op, {"input": a, "target": target}, {"reduction": red, pname: p},
             lambda input, target, r=red, p=p, fn=fn, pname=pname: (fn(input, target, reduction=r, **{pname: p}),),
             None, f"{pname} {p}, {red}, target {list(target.shape)}")


def run(op, tensors, args, f, manual, note, dtype):
    names = list(tensors)
    inputs = {}
    for n in names:
        t = tensors[n]
        if t is None:
            inputs[n] = None
        elif t.dtype == torch.int64:
            inputs[n] = t.clone()
        else:
            inputs[n] = t.detach().to(dtype).clone().requires_grad_(True)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    # The functional op sees the inputs it does not differentiate detached.
    outs = f(**{n: (t.detach() if t is not None and n in NOT_DIFFERENTIABLE.get(op, ()) else t)
                for n, t in inputs.items()})
    if manual is not None:
        mouts = manual(**inputs)
        assert len(mouts) >= len(outs)
        for o, mo in zip(outs, mouts):
            assert close(mo, o, tol), (op, note, o, mo)
        # The manual version gives every output (batch_norm's running stats
        # too, which the functional op returns only when given).
        outs_all = mouts
    else:
        outs_all = outs
    cots = [seq(list(o.shape), 20 + 7 * k, 0.5).to(dtype) for k, o in enumerate(outs_all)]
    float_inputs = [n for n in names if inputs[n] is not None and inputs[n].dtype != torch.int64]
    # The functional op's gradients for what it differentiates (those of its
    # outputs that autograd tracks, with their cotangents).
    tracked = [k for k, o in enumerate(outs) if o.requires_grad]
    torch_loss = sum((outs[k] * cots[k]).sum() for k in tracked)
    differentiable = [n for n in float_inputs if n not in NOT_DIFFERENTIABLE.get(op, ())]
    tg = torch.autograd.grad(torch_loss, [inputs[n] for n in differentiable], allow_unused=True)
    tg = {n: (torch.zeros_like(inputs[n]) if g is None else g) for n, g in zip(differentiable, tg)}
    grads = dict(tg)
    if manual is not None:
        # The manual gradients of the same outputs agree with torch's.
        l0 = sum((outs_all[k] * cots[k]).sum() for k in tracked)
        g0 = torch.autograd.grad(l0, [inputs[n] for n in differentiable], allow_unused=True, retain_graph=True)
        for n, g in zip(differentiable, g0):
            g = torch.zeros_like(inputs[n]) if g is None else g
            assert close(g, tg[n], tol), (op, note, n, g, tg[n])
        # Recorded: the manual gradients over every output.
        mloss = sum((o * c).sum() for o, c in zip(outs_all, cots))
        mg = torch.autograd.grad(mloss, [inputs[n] for n in float_inputs], allow_unused=True)
        mg = {n: (torch.zeros_like(inputs[n]) if g is None else g) for n, g in zip(float_inputs, mg)}
        grads = mg
    return {
        "op": op,
        "note": note,
        "dtype": "f64" if dtype == torch.float64 else "f32",
        "inputs": {n: tensor_json(inputs[n]) for n in names},
        "args": args,
        "outputs": [tensor_json(o) for o in outs_all],
        "cotangents": [tensor_json(c) for c in cots],
        "grads": {n: tensor_json(grads[n]) for n in float_inputs},
    }


NOT_DIFFERENTIABLE = {
    "batch_norm": ("running_mean", "running_var"),
    "nll_loss": ("weight",),
    "binary_cross_entropy_with_logits": ("weight", "pos_weight"),
}

warnings.filterwarnings("ignore", message="Using a target size")
cases = []
for c in CASES:
    for dtype in [torch.float64, torch.float32]:
        cases.append(run(*c, dtype))

out = {"torch_version": torch.__version__, "cases": cases}
path = pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference" / "torch_norm_losses.json"
path.write_text(json.dumps(out) + "\n")
for c in cases:
    print(c["op"], c["dtype"], c["note"], [o["shape"] for o in c["outputs"]], list(c["grads"]))
