"""What the Python module's unit tests share: a clean child interpreter per
case (libiostage caches the process's identity, so each environment gets
a process of its own) and a stand-in for iostaged's socket that records
the markers it is sent.

The stand-in speaks only proto.h's framing (one JSON object per line each
way) and answers {"ok": true}: these tests are about what the module sends
and when; what iostaged does with a marker is tested against the real
daemon in tests/integration/test_python.sh.
"""

import json
import os
import socket
import subprocess
import tempfile
import threading

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", os.path.join(REPO, "build"))
LIBIOSTAGE = os.path.join(BUILD, "shim", "libiostage.so")
CLI = os.path.join(BUILD, "cli", "iostage")
# Debian's interpreter: the one the module is installed for.
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")

# Slurm's and iostage's variables a test's own environment must not leak.
_JOB_VARS = ("SLURM_", "SLURMD_", "IOSTAGE_", "PMIX_", "ENVIRONMENT")


def child_env(**extra):
    """This environment minus any job's, with the module and the build
    tree's libiostage, plus EXTRA."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_JOB_VARS)}
    env["PYTHONPATH"] = os.path.join(REPO, "python")
    env["IOSTAGE_LIBIOSTAGE"] = LIBIOSTAGE
    env["IOSTAGE_CONF"] = "/nonexistent/iostage.conf"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_py(code, timeout=60, **extra):
    """Run CODE in a fresh Debian python3; (exit status, stdout, stderr)."""
    done = subprocess.run(
        [PYTHON, "-W", "default", "-c", code],
        env=child_env(**extra),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


class FakeDaemon:
    """A Unix socket answering every request {"ok": true}, keeping them."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="iostage-pytest.")
        self.path = os.path.join(self.dir.name, "iostaged.sock")
        self.requests = []
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        self._sock.listen(64)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn, conn.makefile("rwb") as f:
            for line in f:
                with self._lock:
                    self.requests.append(json.loads(line))
                f.write(b'{"ok":true}\n')
                f.flush()

    def markers(self):
        """(name, event, pid-less request) in the order they came."""
        with self._lock:
            return [(r["name"], r["event"]) for r in self.requests if r.get("op") == "phase"]

    def close(self):
        self._sock.close()
        self.dir.cleanup()
