#!/usr/bin/env python3
"""torch_reader - the PyTorch side of `make bench-cluster-spread`.

A training loop's input pipeline as a PyTorch user writes it: a Dataset of
the files under DIR (one sample per file, its bytes read whole), a
DistributedSampler (rank and world from Slurm: every task reads a disjoint
share, shuffled anew each epoch with set_epoch) and a DataLoader with
worker processes; the model is a sleep of COMPUTE_MS per batch, as
bench/dlio_reader.c's accelerator. The files are not images (bench/
gendata.c writes JPEG-sized random bytes), so there is no decoding: what
is timed is the reading.

    torch_reader.py [--epochs 3] [--batch 32] [--workers 2]
                    [--compute-ms 50] DIR

Prints one JSON object, the shape of dlio_reader's: per epoch its seconds
(from the loader's iterator, worker start included, to the last batch
computed), the samples and bytes this rank read, and the rank and node.
"""

import argparse
import json
import os
import socket
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Files(Dataset):
    """Every regular file under ROOT, sorted by path: the same list, and so
    the same shuffle, on every node whatever its copy's directory order."""

    def __init__(self, root):
        self.paths = sorted(
            os.path.join(d, f)
            for d, _, names in os.walk(root)
            for f in names
            if os.path.isfile(os.path.join(d, f)))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            return len(f.read())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--compute-ms", type=float, default=50.0)
    p.add_argument("dir")
    a = p.parse_args()
    rank = int(os.environ.get("SLURM_PROCID", "0"))
    world = int(os.environ.get("SLURM_NTASKS", "1"))

    t_start = time.monotonic()
    ds = Files(a.dir)
    if not ds.paths:
        sys.exit(f"torch_reader: {a.dir}: no files to read")
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank,
                                 shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=a.batch, sampler=sampler,
                        num_workers=a.workers)
    epochs = []
    total_bytes = 0
    first_batch = None
    for e in range(a.epochs):
        sampler.set_epoch(e)
        t0 = time.monotonic()
        samples = nbytes = 0
        for sizes in loader:
            if first_batch is None:
                first_batch = time.monotonic() - t_start
            samples += len(sizes)
            nbytes += int(torch.sum(sizes))
            time.sleep(a.compute_ms / 1000.0)
        epochs.append({"seconds": round(time.monotonic() - t0, 3),
                       "samples": samples, "bytes": nbytes})
        total_bytes += nbytes
    print(json.dumps({
        "reader": "torch", "dir": a.dir, "node": socket.gethostname(),
        "rank": rank, "world": world, "files": len(ds),
        "batch": a.batch, "workers": a.workers, "compute_ms": a.compute_ms,
        "torch": torch.__version__, "epochs": epochs,
        "first_batch_s": round(first_batch or 0, 3),
        "total_s": round(time.monotonic() - t_start, 3),
        "bytes_read": total_bytes}))


if __name__ == "__main__":
    main()
