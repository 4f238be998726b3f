#!/usr/bin/env python3
"""Make the example's data: an ImageFolder of small PNGs and an HDF5 file.

    python3 make_data.py /pfs/alice/shapes

DIR/train/CLASS/NNN.png: 4 classes x 40 RGB images of 16x16, a bright
square in the quadrant the class names, on noise; DIR/val.h5: 64 more
such images ("images", uint8, N x 16 x 16 x 3) and their classes
("labels"). The same seed gives the same pixels.
"""

import os
import sys

import h5py
import numpy as np
from PIL import Image

# Sorted, as ImageFolder numbers them: "bottom-left" is class 0.
CLASSES = ["bottom-left", "bottom-right", "top-left", "top-right"]
SIZE = 16


def image(rng, name):
    pixels = rng.integers(0, 96, size=(SIZE, SIZE, 3), dtype=np.uint8)
    top = 2 + (SIZE // 2 if name.startswith("bottom") else 0)
    left = 2 + (SIZE // 2 if name.endswith("right") else 0)
    pixels[top:top + 4, left:left + 4] = rng.integers(160, 256, size=3)
    return pixels


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_data.py DIR")
    root = sys.argv[1]
    rng = np.random.default_rng(27)
    for name in CLASSES:
        os.makedirs(os.path.join(root, "train", name), exist_ok=True)
        for i in range(40):
            path = os.path.join(root, "train", name, "%03d.png" % i)
            Image.fromarray(image(rng, name)).save(path)
    labels = rng.integers(0, len(CLASSES), size=64)
    with h5py.File(os.path.join(root, "val.h5"), "w") as f:
        f["images"] = np.stack([image(rng, CLASSES[k]) for k in labels])
        f["labels"] = labels.astype(np.int64)


if __name__ == "__main__":
    main()
