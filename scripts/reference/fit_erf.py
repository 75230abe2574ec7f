"""Fits the polynomials of batchrules' vectorized `erf` (runtime/src/core/vmath.rs).

    /work/torchenv/bin/python scripts/reference/fit_erf.py

Two pieces, both Chebyshev interpolants computed by mpmath at 50 digits and
converted to monomial coefficients (highest degree first, for Horner):

* `erf(x) / x - 1` as a polynomial in `y = x^2` on `[0, 1]` (|x| < 1; the
  kernel adds `x` last, which halves its error);
* `x * exp(x^2) * erfc(x)` as a polynomial in `u`, where `t = 1/x` and
  `u = (t - c) / h` maps `t` in `[1/X, 1]` onto `[-1, 1]` (1 <= |x| <= X;
  X = 6 for f64, 4 for f32, past which erf rounds to +-1).

Prints the coefficients as Rust literals with each fit's max error.
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 50


def head(n):
    f = lambda y: (mp.erf(mp.sqrt(y)) / mp.sqrt(y) if y > 0 else 2 / mp.sqrt(mp.pi)) - 1
    poly, err = mp.chebyfit(f, [0, 1], n, error=True)
    return poly, err


def tail(n, top):
    a, b = mp.mpf(1) / top, mp.mpf(1)
    c, h = (a + b) / 2, (b - a) / 2
    f = lambda u: (1 / (c + h * u)) * mp.exp((1 / (c + h * u)) ** 2) * mp.erfc(1 / (c + h * u))
    poly, err = mp.chebyfit(f, [-1, 1], n, error=True)
    return poly, err, c, h


def show(name, poly, cast):
    print(f"const {name}: [{cast}; {len(poly)}] = [")
    for p in poly:
        # The shortest literal that reads back as the rounded coefficient.
        v = repr(float(p)) if cast == "f64" else str(np.float32(float(p)))
        print(f"    {v},")
    print("];")


for cast, nh, nt, top in [("f64", 12, 24, 6), ("f32", 7, 10, 4)]:
    poly, err = head(nh)
    print(f"// {cast}: head, degree {nh - 1} in x^2, max abs error {mp.nstr(err, 3)}")
    show(f"ERF_HEAD_{cast.upper()}", poly, cast)
    poly, err, c, h = tail(nt, top)
    print(f"// {cast}: tail, degree {nt - 1} in u, max abs error {mp.nstr(err, 3)}, c = {mp.nstr(c, 20)}, h = {mp.nstr(h, 20)}")
    show(f"ERF_TAIL_{cast.upper()}", poly, cast)
    for n, v in [("C", c), ("H", h)]:
        v = repr(float(v)) if cast == "f64" else str(np.float32(float(v)))
        print(f"const ERF_TAIL_{n}_{cast.upper()}: {cast} = {v};")
