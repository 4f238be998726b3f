#!/usr/bin/env python3
"""Train a small CNN on an ImageFolder of PNGs; validate on an HDF5 file.

The same script runs as an iostage job (sbatch submit.sh: the data is
staged to the node's fast storage before it starts, its phases are
recorded, its checkpoints are copied to the PFS while it trains) and
without iostage (python3 train.py: it reads and writes the PFS paths).
"""

import argparse
import hashlib
import os

import h5py
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

import iostage


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--pfs", default="/pfs/alice/shapes",
                   help="the data on the PFS, used when the job has no "
                        "iostage datasets: DIR/train/ and DIR/val.h5")
    p.add_argument("--out", default="/pfs/alice/runs/tiny-cnn",
                   help="checkpoints, when the job has no iostage output")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--start-method", choices=["fork", "spawn"],
                   help="how the DataLoader starts its workers "
                        "(default: Python's, fork on Linux)")
    return p.parse_args()


class TinyCNN(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # 16x16 -> 8x8
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)  # 8x8 -> 4x4
        return self.fc(x.flatten(1))


def read_val(path):
    """The validation set, whole: HDF5's core driver reads the file into
    memory at once, one sequential read instead of many small ones."""
    with h5py.File(path, "r", driver="core") as f:
        images = torch.from_numpy(f["images"][:])
        labels = torch.from_numpy(f["labels"][:])
    digest = hashlib.sha256(images.numpy().tobytes())
    digest.update(labels.numpy().tobytes())
    return images.permute(0, 3, 1, 2).float() / 255, labels, digest.hexdigest()


def main():
    args = parse_args()
    torch.manual_seed(0)
    # The staged copies when the job has them, else the PFS paths.
    train_dir = iostage.data("train", default=os.path.join(args.pfs, "train"))
    val_file = iostage.data("val_h5", default=os.path.join(args.pfs, "val.h5"))
    out_dir = iostage.output(default=args.out)
    print("identity:", iostage.identity())
    print("train:", train_dir)
    print("val:", val_file)
    print("checkpoints:", out_dir)

    with iostage.phase("read"):
        val_x, val_y, val_sha = read_val(val_file)
    print("val data sha256", val_sha)
    train = datasets.ImageFolder(train_dir, transform=transforms.ToTensor())
    loader = DataLoader(train, batch_size=32, shuffle=True, num_workers=2,
                        persistent_workers=True,
                        generator=torch.Generator().manual_seed(0),
                        multiprocessing_context=args.start_method)
    model = TinyCNN(len(train.classes))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)

    for epoch in range(1, args.epochs + 1):
        seen, total = hashlib.sha256(), 0.0
        # Outside any phase: workers forked here would count all they do
        # in the phases open now (a worker's reads of the images are
        # phase "read" by themselves).
        batches = iter(loader)
        while True:
            with iostage.phase("read"):  # waiting for the next batch
                batch = next(batches, None)
            if batch is None:
                break
            x, y = batch
            seen.update(x.numpy().tobytes())
            seen.update(y.numpy().tobytes())
            with iostage.phase("compute"):
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
            total += loss.item() * len(y)
        with iostage.phase("compute"), torch.no_grad():
            acc = (model(val_x).argmax(1) == val_y).float().mean().item()
        print(f"epoch {epoch}: loss {total / len(train):.10f} "
              f"val accuracy {acc:.4f} data sha256 {seen.hexdigest()}")
        # To the node's fast storage: training goes on at once, and
        # iostage copies the file to the output's PFS path meanwhile.
        with iostage.phase("checkpoint"):
            os.makedirs(out_dir, exist_ok=True)  # made already in a job
            torch.save({"epoch": epoch, "model": model.state_dict(),
                        "optimizer": opt.state_dict()},
                       os.path.join(out_dir, f"epoch{epoch}.pt"))

    # This job's record so far (the complete one: `iostage telemetry
    # JOBID` after the job).
    try:
        record = iostage.telemetry()
    except iostage.TelemetryError as e:
        print("no telemetry:", e)
    else:
        marked = [p["name"] for p in record["phases"]
                  if p.get("source") == "marker"]
        print("phases marked:", " ".join(marked))


if __name__ == "__main__":
    main()
