"""iostage.telemetry: the `iostage telemetry JOB --json` record, or one
line saying why not."""

import os
import stat
import tempfile
import unittest

from helpers import CLI, run_py


class Telemetry(unittest.TestCase):
    def test_the_record_the_command_prints_becomes_a_dict(self):
        # A stand-in command that prints what `iostage telemetry` prints
        # and says what it was asked.
        with tempfile.TemporaryDirectory() as d:
            cmd = os.path.join(d, "iostage")
            with open(cmd, "w") as f:
                f.write('#!/bin/sh\necho "{\\"job\\": $2, \\"args\\": \\"$*\\"}"\n')
            os.chmod(cmd, stat.S_IRWXU)
            rc, out, err = run_py("import iostage; print(iostage.telemetry())",
                                  SLURM_JOB_ID=77, IOSTAGE_CLI=cmd)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.strip(), "{'job': 77, 'args': 'telemetry 77 --json'}")

    def test_the_commands_reason_is_the_error(self):
        # The real command, with no daemon and no history to ask.
        rc, out, err = run_py("""
import iostage
try:
    iostage.telemetry(123456)
except iostage.TelemetryError as e:
    print("TelemetryError:", e)
""", IOSTAGE_CLI=CLI, IOSTAGE_SOCKET="/nonexistent/iostaged.sock")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith("TelemetryError: iostage: "), out)

    def test_no_job_and_bad_ids_are_refused_without_running_anything(self):
        rc, out, err = run_py("""
import iostage
for job in (None, 0, -3, "12", True):
    try:
        iostage.telemetry(job)
    except iostage.TelemetryError as e:
        print(e)
""", IOSTAGE_CLI="/nonexistent/iostage")
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(len(lines), 5)
        self.assertIn("not in a Slurm job", lines[0])
        for line in lines[1:]:
            self.assertIn("is not a job id", line)


if __name__ == "__main__":
    unittest.main()
