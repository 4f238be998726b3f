"""The C library under this module: libiostage.so.0, loaded with ctypes.

Phases, identity and the dataset name rule are libiostage's (shim/iostage.h),
the same code the C API and `iostage phase` run: this module adds no second
implementation of the daemon's protocol, only Python's shape on top.
"""

import ctypes
import os

from . import _paths

ERR_MAX = 512
PATH_MAX = 4096


class _Identity(ctypes.Structure):
    """struct iostage_identity (shim/iostage.h)."""

    _fields_ = [
        ("job", ctypes.c_uint32),
        ("step", ctypes.c_uint32),
        ("rank", ctypes.c_int64),
        ("local_rank", ctypes.c_int64),
        ("node", ctypes.c_char * 64),
        ("source", ctypes.c_char * 8),
    ]


def _candidates():
    """Where to look for the library, first match wins.

    IOSTAGE_LIBIOSTAGE names a build tree's copy (the project's tests);
    then the copy `make install` put beside this module's install; then
    the dynamic loader's own search (a package's /usr/lib/<triplet>).
    """
    override = os.environ.get("IOSTAGE_LIBIOSTAGE")
    if override:
        return [override]
    found = []
    if _paths.LIBDIR and not _paths.LIBDIR.startswith("@"):
        found.append(os.path.join(_paths.LIBDIR, "libiostage.so.0"))
    found.append("libiostage.so.0")
    return found


def _load():
    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path, use_errno=True)
        except OSError as e:
            errors.append(str(e))
            continue
        _declare(lib)
        return lib
    raise ImportError(
        "iostage: cannot load libiostage.so.0 (%s); install iostage's "
        "libiostage0 package or run `make install`" % "; ".join(errors)
    )


def _declare(lib):
    c_char_p, c_size_t, c_int = ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int
    lib.iostage_phase.argtypes = [c_char_p, c_int, c_char_p, c_size_t]
    lib.iostage_phase.restype = c_int
    lib.iostage_identity.argtypes = [ctypes.POINTER(_Identity)]
    lib.iostage_identity.restype = c_int
    for fn in (lib.iostage_data_path, lib.iostage_output_path):
        fn.argtypes = [c_char_p, c_char_p, c_size_t]
        fn.restype = c_int


LIB = _load()


def phase(name, begin):
    """libiostage's iostage_phase: (0, "") or (errno, the reason)."""
    err = ctypes.create_string_buffer(ERR_MAX)
    rc = LIB.iostage_phase(_encode(name), 1 if begin else 0, err, ERR_MAX)
    if rc == 0:
        return 0, ""
    return ctypes.get_errno(), err.value.decode("utf-8", "replace")


def identity():
    """The struct libiostage fills, or None outside a Slurm job."""
    ident = _Identity()
    if LIB.iostage_identity(ctypes.byref(ident)) != 0:
        return None
    return ident


def job_path(kind, name):
    """iostage_data_path / iostage_output_path: (errno, path)."""
    fn = LIB.iostage_data_path if kind == "data" else LIB.iostage_output_path
    buf = ctypes.create_string_buffer(PATH_MAX)
    if fn(_encode(name) if name else None, buf, PATH_MAX) != 0:
        return ctypes.get_errno(), None
    return 0, os.fsdecode(buf.value)


def _encode(name):
    if not isinstance(name, str):
        raise TypeError("iostage: a name is a str, not %s" % type(name).__name__)
    return name.encode("utf-8", "surrogateescape")
