"""iostage.phase / begin / end: what reaches the daemon, and that training
code is never interrupted by a missing job or daemon."""

import unittest

from helpers import FakeDaemon, run_py

NAMES = ["read", "checkpoint", "a.b-c_d", "x" * 31, "x" * 32, "", "bad name",
         "caf\u00e9", "semi;colon", "../up", ".", "9"]


class NameRule(unittest.TestCase):
    def test_python_and_libiostage_agree_on_every_name(self):
        # Outside a job libiostage answers EINVAL for a bad name and
        # ENOENT for a good one; the module must refuse exactly the same.
        code = """
import ctypes, errno, iostage
from iostage import _lib, phases
for n in %r:
    c_err, _ = _lib.phase(n, True)
    try:
        phases.check_name(n); py_ok = True
    except ValueError:
        py_ok = False
    print(n, c_err == errno.ENOENT, py_ok)
""" % (NAMES,)
        rc, out, err = run_py(code)
        self.assertEqual(rc, 0, err)
        rows = out.splitlines()
        self.assertEqual(len(rows), len(NAMES))
        for row in rows:
            c_ok, py_ok = row.rsplit(" ", 2)[1:]
            self.assertEqual(c_ok, py_ok, row)
        self.assertIn("read True True", rows)

    def test_a_bad_name_raises_where_it_is_written(self):
        rc, out, err = run_py("""
import iostage
try:
    @iostage.phase("no spaces")
    def f(): pass
except ValueError as e:
    print("refused:", e)
""")
        self.assertEqual(rc, 0, err)
        self.assertIn("refused: iostage: 'no spaces' is not a phase name", out)


class NoJobNoDaemon(unittest.TestCase):
    def test_outside_a_job_markers_warn_once_and_return_false(self):
        rc, out, err = run_py("""
import iostage
print([iostage.begin("read"), iostage.end("read")])
with iostage.phase("compute"):
    print("body ran")
@iostage.phase("read")
def f(x): return x * 2
print(f(21))
""")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines(), ["[False, False]", "body ran", "42"])
        self.assertEqual(err.count("RuntimeWarning"), 1, err)
        self.assertIn("not in a Slurm job", err)

    def test_no_daemon_warns_once_naming_the_socket(self):
        rc, out, err = run_py("""
import iostage
print(sum(iostage.begin("read") for _ in range(5)))
""", SLURM_JOB_ID=7, IOSTAGE_SOCKET="/nonexistent/iostaged.sock")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.strip(), "0")
        self.assertEqual(err.count("RuntimeWarning"), 1, err)
        self.assertIn("/nonexistent/iostaged.sock", err)


class Delivery(unittest.TestCase):
    def setUp(self):
        self.daemon = FakeDaemon()
        self.env = {"SLURM_JOB_ID": 41, "SLURM_PROCID": 3, "SLURM_LOCALID": 1,
                    "SLURMD_NODENAME": "n7", "IOSTAGE_SOCKET": self.daemon.path}

    def tearDown(self):
        self.daemon.close()

    def test_block_and_decorator_send_begin_then_end_even_on_error(self):
        rc, out, err = run_py("""
import iostage
@iostage.phase("read")
def load(): return 1
load(); load()
try:
    with iostage.phase("checkpoint"):
        raise KeyError("disk full")
except KeyError as e:
    print("propagated", e)
print(iostage.begin("compute"), iostage.end("compute"))
""", **self.env)
        self.assertEqual(rc, 0, err)
        self.assertIn("propagated 'disk full'", out)
        self.assertIn("True True", out)
        self.assertEqual(self.daemon.markers(), [
            ("read", "begin"), ("read", "end"), ("read", "begin"), ("read", "end"),
            ("checkpoint", "begin"), ("checkpoint", "end"),
            ("compute", "begin"), ("compute", "end")])
        req = self.daemon.requests[0]
        self.assertEqual((req["job"], req["rank"], req["local_rank"], req["node"]),
                         (41, 3, 1, "n7"))
        self.assertNotIn("RuntimeWarning", err)

    def test_threads_each_marker_arrives_once(self):
        rc, out, err = run_py("""
import threading, iostage
def work():
    for _ in range(25):
        with iostage.phase("read"):
            pass
ts = [threading.Thread(target=work) for _ in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
""", **self.env)
        self.assertEqual(rc, 0, err)
        got = self.daemon.markers()
        self.assertEqual(got.count(("read", "begin")), 200)
        self.assertEqual(got.count(("read", "end")), 200)

    def test_fork_while_other_threads_mark_never_deadlocks(self):
        # A DataLoader forks its workers while the main process's threads
        # may be inside libiostage; every child must still mark and exit.
        # (check_libiostage forks inside the lock on purpose.)
        rc, out, err = run_py("""
import os, signal, threading, iostage
stop = False
def hammer():
    while not stop:
        iostage.begin("read"); iostage.end("read")
ts = [threading.Thread(target=hammer) for _ in range(3)]
[t.start() for t in ts]
ok = 0
for _ in range(40):
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)
        os._exit(0 if iostage.begin("compute") and iostage.end("compute") else 1)
    _, status = os.waitpid(pid, 0)
    ok += os.waitstatus_to_exitcode(status) == 0
stop = True
[t.join() for t in ts]
print(ok)
""", timeout=120, **self.env)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.strip(), "40")
        got = self.daemon.markers()
        self.assertEqual(got.count(("compute", "begin")), 40)
        self.assertEqual(got.count(("compute", "end")), 40)
        self.assertNotIn("Alarm", err)


if __name__ == "__main__":
    unittest.main()
