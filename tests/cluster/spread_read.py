#!/usr/bin/env python3
"""Read a dataset the way training code does, and print what it read.

    spread_read.py DIR

DIR/train is an ImageFolder (examples/pytorch/make_data.py), DIR/val.h5
its validation set. Prints one line: the images a DataLoader (2 worker
processes) decoded, a digest of their pixels in order, the HDF5 set's
digest (and each other DIR/*.h5's every dataset, in name order: "h5"),
and a digest of every file read three ways (read, pread in 4 KiB pieces
from the end, mmap), which must agree. The same line for the
PFS copy and for a job's view means the view serves what the PFS holds.
"""

import hashlib
import mmap
import os
import sys

import h5py
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def files_digest(root):
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                continue
            with open(path, "rb") as f:
                whole = f.read()
                size = os.fstat(f.fileno()).st_size
                pieces = []
                off = size
                while off > 0:
                    n = min(4096, off)
                    off -= n
                    pieces.append(os.pread(f.fileno(), n, off))
                backwards = b"".join(reversed(pieces))
                mapped = b""
                if size:
                    with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
                        mapped = m[:]
            if not whole == backwards == mapped:
                sys.exit("%s: read, pread and mmap differ" % path)
            h.update(os.path.relpath(path, root).encode() + b"\0" + whole)
    return h.hexdigest()[:16]


def main():
    root = sys.argv[1]
    data = datasets.ImageFolder(os.path.join(root, "train"),
                                transform=transforms.ToTensor())
    loader = DataLoader(data, batch_size=16, num_workers=2)
    h = hashlib.sha256()
    n = 0
    for images, labels in loader:
        h.update(images.numpy().tobytes())
        h.update(labels.numpy().tobytes())
        n += len(labels)
    with h5py.File(os.path.join(root, "val.h5"), "r") as f:
        val = hashlib.sha256(f["images"][:].tobytes()).hexdigest()[:16]
    other = hashlib.sha256()
    for name in sorted(os.listdir(root)):
        if not name.endswith(".h5") or name == "val.h5":
            continue
        with h5py.File(os.path.join(root, name), "r") as f:
            for key in sorted(f.keys()):
                other.update(key.encode() + b"\0" + f[key][:].tobytes())
    print("images=%d pixels=%s val=%s h5=%s files=%s" %
          (n, h.hexdigest()[:16], val, other.hexdigest()[:16],
           files_digest(root)))


if __name__ == "__main__":
    main()
