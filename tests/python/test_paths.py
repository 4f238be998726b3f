"""iostage.data / output / local / fallback: the job's environment read by
dataset name with the plugin's rule, and defaults outside a job."""

import unittest

from helpers import run_py

JOB = {
    "SLURM_JOB_ID": 812,
    "IOSTAGE_DATA": "/t/812/data/imagenet",
    "IOSTAGE_DATA_IMAGENET": "/t/812/data/imagenet",
    "IOSTAGE_DATA_VAL_SET": "/t/812/data/val-set",
    "IOSTAGE_OUTPUT": "/t/812/out/ckpt",
    "IOSTAGE_OUTPUT_CKPT": "/t/812/out/ckpt",
    "IOSTAGE_LOCAL": "/t/812/local",
}


class InAJob(unittest.TestCase):
    def test_names_map_to_the_plugins_variables(self):
        rc, out, err = run_py("""
import iostage
print(iostage.data())
print(iostage.data("imagenet"))
print(iostage.data("val-set"))
print(iostage.data("VAL_SET"))
print(iostage.output())
print(iostage.output("ckpt"))
print(iostage.local())
print(iostage.fallback())
""", **JOB)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines(), [
            "/t/812/data/imagenet", "/t/812/data/imagenet", "/t/812/data/val-set",
            "/t/812/data/val-set", "/t/812/out/ckpt", "/t/812/out/ckpt",
            "/t/812/local", "False"])

    def test_an_unknown_name_says_which_variable_and_which_there_are(self):
        rc, out, err = run_py("""
import iostage
try:
    iostage.data("imagenet-1k")
except LookupError as e:
    print(e)
print(iostage.data("imagenet-1k", default="/pfs/imagenet"))
try:
    iostage.data("a/b")
except ValueError as e:
    print(e)
""", **JOB)
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertIn("IOSTAGE_DATA_IMAGENET_1K is not set", lines[0])
        self.assertIn("IOSTAGE_DATA_IMAGENET, IOSTAGE_DATA_VAL_SET", lines[0])
        self.assertEqual(lines[1], "/pfs/imagenet")
        self.assertIn("'a/b' is not a dataset name", lines[2])

    def test_fallback_is_what_the_plugin_says(self):
        rc, out, err = run_py("import iostage; print(iostage.fallback())",
                              IOSTAGE_FALLBACK=1, **JOB)
        self.assertEqual((rc, out.strip()), (0, "True"), err)


class OutsideAJob(unittest.TestCase):
    def test_defaults_let_one_script_run_anywhere(self):
        rc, out, err = run_py("""
import iostage
print(iostage.data("imagenet", default="/pfs/imagenet"))
print(iostage.output(default="./ckpt"))
print(iostage.local(default="/tmp"))
for f in (iostage.data, iostage.output, iostage.local):
    try:
        f()
    except LookupError as e:
        print("LookupError")
""")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines(), ["/pfs/imagenet", "./ckpt", "/tmp"]
                         + ["LookupError"] * 3)


if __name__ == "__main__":
    unittest.main()
