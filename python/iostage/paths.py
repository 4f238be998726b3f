"""Where the job's data is: the environment the iostage plugin gives each
task, looked up by dataset name with libiostage's rule.

A dataset's name is its "name" in a JSON profile, else the last component
of its path (data=/pfs/datasets/imagenet-1k is "imagenet-1k"); its
variable is IOSTAGE_DATA_<NAME> with NAME upper-cased and '-' as '_'
(README.md, "Task environment"). When staging fell back to the
PFS the same variables name the PFS paths and fallback() is True, so a
script works either way. Outside an iostage job each lookup returns its
DEFAULT when one is given, so one script runs with and without iostage.
"""

import errno
import os

from . import _lib

_MISSING = object()


def _known(prefix):
    """The variables the job's environment has for PREFIX, for error lines."""
    names = [v for v in sorted(os.environ)
             if v == prefix or v.startswith(prefix + "_")]
    return ", ".join(names) if names else "none"


def _lookup(kind, prefix, name, default):
    err, path = _lib.job_path(kind, name)
    if err == 0:
        return path
    if default is not _MISSING:
        return default
    if err == errno.EINVAL:
        raise ValueError(
            "iostage: %r is not a %s name ([A-Za-z0-9_-], 1 to 31 "
            "characters)" % (name, "dataset" if kind == "data" else "output")
        )
    var = prefix + ("_" + name.upper().replace("-", "_") if name else "")
    raise LookupError(
        "iostage: this job has no %s %s (%s is not set; set: %s)"
        % (
            "dataset" if kind == "data" else "output",
            repr(name) if name else "at all",
            var,
            _known(prefix),
        )
    )


def data(name=None, default=_MISSING):
    """The local path of dataset NAME (IOSTAGE_DATA_<NAME>), or of the first
    dataset when NAME is None (IOSTAGE_DATA). LookupError when the job has
    no such dataset and no DEFAULT is given."""
    return _lookup("data", "IOSTAGE_DATA", name, default)


def output(name=None, default=_MISSING):
    """The directory to write output NAME to (IOSTAGE_OUTPUT_<NAME>), or the
    first output's (IOSTAGE_OUTPUT). iostage drains what is written there to
    the output's PFS path, during the job and after it."""
    return _lookup("output", "IOSTAGE_OUTPUT", name, default)


def local(default=_MISSING):
    """The job's private scratch directory on the node's tier
    (IOSTAGE_LOCAL), removed when the job ends."""
    path = os.environ.get("IOSTAGE_LOCAL")
    if path:
        return path
    if default is not _MISSING:
        return default
    raise LookupError("iostage: this job has no local scratch "
                      "(IOSTAGE_LOCAL is not set: not an iostage job?)")


def fallback():
    """True when staging fell back and the job reads and writes the PFS
    paths directly (IOSTAGE_FALLBACK=1)."""
    return os.environ.get("IOSTAGE_FALLBACK") == "1"
