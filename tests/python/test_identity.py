"""iostage.identity: libiostage's iostage_identity as a namedtuple."""

import socket
import unittest

from helpers import run_py


class Identity(unittest.TestCase):
    def test_a_task_of_a_step(self):
        rc, out, err = run_py("import iostage; print(tuple(iostage.identity()))",
                              SLURM_JOB_ID=9, SLURM_STEP_ID=2, SLURM_PROCID=5,
                              SLURM_LOCALID=1, SLURMD_NODENAME="node07")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.strip(), "(9, 2, 5, 1, 'node07', 'slurm')")

    def test_the_batch_script_and_unknown_ranks(self):
        rc, out, err = run_py("import iostage; print(tuple(iostage.identity()))",
                              SLURM_JOB_ID=9, ENVIRONMENT="BATCH")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.strip(), "(9, 4294967291, None, None, %r, 'slurm')"
                         % socket.gethostname())

    def test_outside_a_job_there_is_none(self):
        rc, out, err = run_py("import iostage; print(iostage.identity())")
        self.assertEqual((rc, out.strip()), (0, "None"), err)


if __name__ == "__main__":
    unittest.main()
