"""This job's telemetry as a dict: what `iostage telemetry JOBID --json`
prints.

The record comes from the node's iostaged while the job runs and from the
cluster's history (iostagectld, MUNGE-authenticated) after it; the
`iostage` command already knows how to ask both and how to prove who is
asking, so this runs it rather than speaking either protocol a second
time. One process per call: for a script that logs its I/O now and then,
not for a loop.
"""

import json
import os
import shutil
import subprocess

from . import _paths
from .identity import identity

TIMEOUT_S = 60


class TelemetryError(RuntimeError):
    """The record could not be had; the message is iostage's reason."""


def _command():
    override = os.environ.get("IOSTAGE_CLI")
    if override:
        return override
    if _paths.BINDIR and not _paths.BINDIR.startswith("@"):
        installed = os.path.join(_paths.BINDIR, "iostage")
        if os.access(installed, os.X_OK):
            return installed
    found = shutil.which("iostage")
    if not found:
        raise TelemetryError("iostage: the iostage command is not installed")
    return found


def telemetry(job=None):
    """The record of JOB (default: this job) as a dict: its phases
    (stage_in, run and the phases marked in it, stage_out) with their bytes
    and times, and what the history advises. TelemetryError saying why when
    there is none (an unknown job, another user's, no daemon)."""
    if job is None:
        me = identity()
        if me is None:
            raise TelemetryError("iostage: not in a Slurm job; name one: "
                                 "telemetry(job=JOBID)")
        job = me.job
    if isinstance(job, bool) or not isinstance(job, int) or job <= 0:
        raise TelemetryError("iostage: %r is not a job id" % (job,))
    try:
        done = subprocess.run(
            [_command(), "telemetry", str(job), "--json"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TelemetryError("iostage: telemetry: %s" % e) from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise TelemetryError(why[-1] if why else
                             "iostage telemetry exited %d" % done.returncode)
    return json.loads(done.stdout)
