#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the handwritten digits that examples/train_cnn.cpp trains on, from scikit-learn's copy
of the UCI "Optical Recognition of Handwritten Digits" test set (1,797 images of 8 x 8 pixels,
each pixel a count 0..16 of the set pixels in a 4 x 4 block of the 32 x 32 scan):

    apt-get install -y python3-sklearn      # Debian 12; brings python3-numpy
    /usr/bin/python3 examples/data/make_digits.py

The committed files were written by Debian 12's python3-sklearn 1.2.1+dfsg-1 (scikit-learn
1.2.1, which ships the data in the package) and python3-numpy 1:1.24.2-1+deb12u1:

    digits_images.npy   uint8, shape (1797, 8, 8), values 0..16, in load_digits()'s order
    digits_labels.npy   int64, shape (1797,), values 0..9

The example and its test read these files and do not need Python. The data's creators: E.
Alpaydin and C. Kaynak (Bogazici University, 1998), "Optical Recognition of Handwritten Digits",
UCI Machine Learning Repository, https://archive.ics.uci.edu/ml/datasets/Optical+Recognition+of+Handwritten+Digits
(scikit-learn's copy: sklearn/datasets/data/digits.csv.gz, described in descr/digits.rst).
"""
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

HERE = Path(__file__).resolve().parent


def main():
    digits = load_digits()
    images = digits.images  # float64, whole numbers 0..16
    assert images.shape == (1797, 8, 8) and np.array_equal(images, np.round(images))
    assert images.min() == 0 and images.max() == 16
    labels = digits.target
    assert labels.shape == (1797,) and set(np.unique(labels)) == set(range(10))
    np.save(HERE / "digits_images.npy", images.astype(np.uint8), allow_pickle=False)
    np.save(HERE / "digits_labels.npy", labels.astype(np.int64), allow_pickle=False)


if __name__ == "__main__":
    main()
