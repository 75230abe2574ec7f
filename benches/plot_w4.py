"""Plots W4 (batching rule vs the fallback loop, time vs batch size) from the
medians criterion saved under target/criterion. Usage, after `cargo bench --features bench`:

    python3 benches/plot_w4.py [target/criterion] [docs/bench_w4.png]
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

root = sys.argv[1] if len(sys.argv) > 1 else "target/criterion"
out = sys.argv[2] if len(sys.argv) > 2 else "docs/bench_w4.png"
sizes = [1, 16, 256, 1024]


def median_us(variant, size):
    path = os.path.join(root, "W4_rule_vs_loop", variant, str(size), "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"] / 1000.0


fig, ax = plt.subplots(figsize=(6, 4))
for op, marker, color in (("matmul", "o", "tab:blue"), ("add", "s", "tab:green")):
    for kind, style in (("rule", "-"), ("loop", "--")):
        ys = [median_us(f"{op}_{kind}", b) for b in sizes]
        label = f"{op}: {'batching rule' if kind == 'rule' else 'fallback loop'}"
        ax.plot(sizes, ys, style, marker=marker, color=color, label=label)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("batch size")
ax.set_ylabel("median time per vmap call (µs)")
ax.set_title("W4: batching rule vs fallback loop (single thread)")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
os.makedirs(os.path.dirname(out), exist_ok=True)
fig.savefig(out, dpi=110)
print(f"wrote {out}")
