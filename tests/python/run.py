#!/usr/bin/python3
"""Run the Python module's unit tests (tests/python/test_*.py) and end with
Check's summary line, so tests/unit/run.sh counts them with the C suites:

    tests/unit/run.sh build/tests/check_* tests/python/run.py

Debian's python3 on purpose: the module is installed for it. BUILD names
the build tree whose libiostage.so the tests load (default build/).
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    sys.path.insert(0, HERE)
    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py")
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=1).run(suite)
    ran = result.testsRun
    failures, errors = len(result.failures), len(result.errors)
    ok = ran - failures - errors
    print("%d%%: Checks: %d, Failures: %d, Errors: %d"
          % (100 * ok // ran if ran else 0, ran, failures, errors))
    return 0 if result.wasSuccessful() and ran else 1


if __name__ == "__main__":
    sys.exit(main())
