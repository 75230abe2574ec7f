"""Helpers shared by the PyTorch recorders in this directory (record_*.py),
which write the JSON files of tests/reference/. Imported as `recording`: a
script run as `python scripts/reference/<script>.py` has this directory on
its path.
"""
import math


def encode(values):
    """A list of numbers as JSON can hold them: NaN and the infinities as the
    strings "nan", "inf" and "-inf"; bools and ints as ints (True as 1);
    other numbers as they are."""
    out = []
    for v in values:
        if isinstance(v, bool) or isinstance(v, int):
            out.append(int(v))
        elif math.isnan(v):
            out.append("nan")
        elif math.isinf(v):
            out.append("inf" if v > 0 else "-inf")
        else:
            out.append(v)
    return out


def shape_and_values(t):
    """A tensor as {"shape", "values"}: its values as float64, row-major (the
    values must be finite: they are not encoded)."""
    return {"shape": list(t.shape), "values": t.detach().double().reshape(-1).tolist()}
