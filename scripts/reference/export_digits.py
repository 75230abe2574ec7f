"""Writes examples/data/digits.npz from scikit-learn's copy of the UCI
"Optical Recognition of Handwritten Digits" test set (load_digits: 1,797
images of 8x8, pixels 0..16, labels 0..9). Run once; the file is committed.

Usage: python scripts/reference/export_digits.py   (scikit-learn from pip)
The arrays: images uint8 [1797, 8, 8], labels uint8 [1797], in load_digits'
order. np.savez stores them uncompressed, which batchrules::io::read_npz reads.
"""
import os

import numpy as np
from sklearn.datasets import load_digits

d = load_digits()
images = d.images.astype(np.uint8)
assert (images == d.images).all()
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "data", "digits.npz")
np.savez(path, images=images, labels=d.target.astype(np.uint8))
print("wrote", os.path.normpath(path), images.shape, "from scikit-learn", __import__("sklearn").__version__)
