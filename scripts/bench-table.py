#!/usr/bin/env python3
"""Prints the criterion medians of `bench-rounds.sh`'s outputs as one table.

Reads OUTDIR/LABEL-ROUND.txt (criterion's console output; the labels in the
order of OUTDIR/labels, when present) and prints, per
benchmark, the median of every label and round, and the ratio of each
label's best median to the first label's best.
"""
import re
import sys
from pathlib import Path

UNITS = {"ps": 1e-12, "ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
TIME = re.compile(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]")


def medians(path):
    """{benchmark: median seconds} of one criterion console output."""
    found, name = {}, None
    for line in path.read_text(errors="replace").splitlines():
        m = TIME.search(line)
        head = line.split("time:")[0].strip()
        if head and not head.startswith(("Benchmarking", "Found", "change", "Performance", "No change")):
            name = head
        if m and name:
            found[name] = float(m.group(1)) * UNITS[m.group(2)]
            name = None
    return found


def fmt(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.2f} {unit}"
    return f"{seconds / 1e-9:.2f} ns"


def main():
    out = Path(sys.argv[1])
    runs = {}
    for path in sorted(out.glob("*-*.txt")):
        label, _, rnd = path.stem.rpartition("-")
        runs.setdefault(label, {})[int(rnd)] = medians(path)
    order = out / "labels"
    labels = list(runs)
    if order.exists():
        labels = [l for l in order.read_text().split() if l in runs]
    names = []
    for label in labels:
        for rnd in sorted(runs[label]):
            for n in runs[label][rnd]:
                if n not in names:
                    names.append(n)
    cols = [(label, rnd) for label in labels for rnd in sorted(runs[label])]
    head = ["benchmark"] + [f"{label} r{rnd}" for label, rnd in cols]
    head += [f"{label} / {labels[0]} (best)" for label in labels[1:]]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for n in names:
        row = [n]
        best = {}
        for label, rnd in cols:
            v = runs[label][rnd].get(n)
            row.append(fmt(v) if v else "-")
            if v:
                best[label] = min(best.get(label, v), v)
        for label in labels[1:]:
            if label in best and labels[0] in best:
                row.append(f"{best[label] / best[labels[0]]:.3f}")
            else:
                row.append("-")
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
