"""Who this process is in the job: libiostage's iostage_identity."""

import collections

from . import _lib

Identity = collections.namedtuple(
    "Identity", ["job", "step", "rank", "local_rank", "node", "source"]
)
Identity.__doc__ = """This process in its Slurm job.

job, step: Slurm's ids (step 4294967291 is the batch script, 0 when
unknown); rank, local_rank: global and per-node rank, None when unknown;
node: the node's name; source: "pmix" (a PMIx client) or "slurm" (from
Slurm's environment)."""


def identity():
    """This process's Identity, or None outside a Slurm job."""
    ident = _lib.identity()
    if ident is None:
        return None
    return Identity(
        job=ident.job,
        step=ident.step,
        rank=ident.rank if ident.rank >= 0 else None,
        local_rank=ident.local_rank if ident.local_rank >= 0 else None,
        node=ident.node.decode("utf-8", "replace"),
        source=ident.source.decode("ascii", "replace"),
    )
