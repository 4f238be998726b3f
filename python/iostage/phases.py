"""Phase markers: `with iostage.phase("checkpoint"):`, `@iostage.phase("read")`,
`iostage.begin(name)` / `iostage.end(name)`.

A marker is a call into libiostage (iostage_phase), which tells the node's
iostaged; the daemon records the phase as a sub-phase of the job's run with
the I/O the job did in it. Markers never raise into training code when
there is no job or no daemon: the first failure warns once (a
RuntimeWarning saying why), and later ones return False quietly, as the C
API returns -1. Only a malformed name raises (ValueError), and that at the
point the phase is named, so a typo shows up before the training does.

Thread-safe, fork-safe (libiostage takes its own lock across fork; this
module's is re-made in the child) and usable from a DataLoader's workers:
the daemon counts a phase open while any process of the job holds it.
"""

import contextlib
import os
import re
import sys
import threading
import warnings

from . import _lib

# telrec_phase_name_ok's rule (common/telemetry/telrec.h), checked here so
# that a bad name fails where it is written; tests/python/test_phases.py
# holds the two rules to the same answers.
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,31}\Z")

_warn_lock = threading.Lock()
_warned = False
_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _after_fork_in_child():
    global _warn_lock
    _warn_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def check_name(name):
    """NAME, if it is a phase name; else ValueError saying why."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            "iostage: %r is not a phase name ([A-Za-z0-9_.-], 1 to 31 "
            "characters)" % (name,)
        )
    return name


def _ours(frame):
    """Is FRAME this package's, or contextlib's (phase as a decorator)?"""
    name = frame.f_code.co_filename
    return name.startswith(_HERE) or name == contextlib.__file__


def _warn_once(why):
    global _warned
    with _warn_lock:
        if _warned:
            return
        _warned = True
    # Point at the training script's line, however many of our frames
    # (begin, `with`, a decorated function through contextlib) are between.
    frame, level = sys._getframe(1), 2
    while frame is not None and _ours(frame):
        frame, level = frame.f_back, level + 1
    warnings.warn(
        "iostage: phase markers are not recorded: %s" % why,
        RuntimeWarning,
        stacklevel=level,
    )


def _mark(name, begin):
    err, why = _lib.phase(check_name(name), begin)
    if err == 0:
        return True
    _warn_once(why)
    return False


def begin(name):
    """Begin phase NAME for this process. True when iostaged recorded it."""
    return _mark(name, True)


def end(name):
    """End phase NAME for this process. True when iostaged recorded it."""
    return _mark(name, False)


class phase(contextlib.ContextDecorator):
    """Phase NAME around a block (`with`) or each call of a function (`@`).

    The phase ends when the block or call ends, by return or exception;
    the exception goes on unchanged.
    """

    def __init__(self, name):
        self.name = check_name(name)

    def __enter__(self):
        begin(self.name)
        return self

    def __exit__(self, *exc):
        end(self.name)
        return False

    def __repr__(self):
        return "iostage.phase(%r)" % self.name
