"""iostage for training scripts: mark phases, find the job's staged data.

    import iostage

    train_dir = iostage.data("imagenet", default="/pfs/imagenet/train")
    for epoch in range(epochs):
        with iostage.phase("compute"):
            train_one_epoch(...)
        with iostage.phase("checkpoint"):
            torch.save(state, os.path.join(iostage.output(), "last.pt"))
    print(iostage.telemetry()["phases"])

A thin layer over libiostage (shim/iostage.h), loaded with ctypes: the
phase protocol, the identity and the dataset name rule are the C library's,
so Python, C and the `iostage phase` command record the same thing.
docs/PYTHON.md has a complete PyTorch example.
"""

from .identity import Identity, identity
from .paths import data, fallback, local, output
from .phases import begin, end, phase
from .telemetry import TelemetryError, telemetry

__all__ = [
    "Identity",
    "TelemetryError",
    "begin",
    "data",
    "end",
    "fallback",
    "identity",
    "local",
    "output",
    "phase",
    "telemetry",
]
