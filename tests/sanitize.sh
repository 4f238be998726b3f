#!/bin/bash
# make check-sanitize: every program built with ASan + UBSan (SANITIZE=1,
# in build/san; the plugin with UBSan only, docs/RELIABILITY.md), then the
# unit tests and the one-node integration suite run with them. Every
# sanitizer report of every process (the daemons and their workers, the
# Prolog, the CLI; LeakSanitizer at each exit, the daemons' after SIGTERM)
# is written to its own file in $BUILD/sanitizer-logs (common/base/log.c); the
# run fails when any is there, or when a test fails. Then the multi-node
# cluster suite (tests/cluster/) the same way: iostagectld, the peer
# channel and the outbox run only there.
#
#   tests/sanitize.sh [TESTFILE...]    (IT_FILTER as for the suites;
#                                       SANITIZE_UNIT=0 skips the unit tests,
#                                       SANITIZE_IT=0 the one-node suite,
#                                       SANITIZE_CLUSTER=0 the cluster suite;
#                                       TESTFILEs are one-node suite files)
set -u
cd "$(dirname "$0")/.." || exit 2
export SANITIZE=1 BUILD=${BUILD:-build/san}
logs=$PWD/$BUILD/sanitizer-logs
rc=0

make --no-print-directory -j2 all || exit 1
rm -rf "$logs"
# Workers run as the job's user: they must be able to write their reports.
mkdir -p "$logs" && chmod 1777 "$logs"
# Stop at the first UBSan report (it is in the log either way).
export UBSAN_OPTIONS="log_path=$logs/ubsan:print_stacktrace=1:halt_on_error=1"
if [ "${SANITIZE_UNIT:-1}" = 1 ]; then
	make --no-print-directory unit || rc=1
fi
if [ "${SANITIZE_IT:-1}" = 1 ]; then
	# The slow sanitized programs need more than the default 120 s a test.
	IT_TIMEOUT=${IT_TIMEOUT:-300} bash tests/integration/run.sh "$@" || rc=1
fi
if [ "${SANITIZE_CLUSTER:-1}" = 1 ]; then
	IT_TIMEOUT=${IT_TIMEOUT:-300} bash tests/cluster/run.sh || rc=1
fi
shopt -s nullglob
reports=("$logs"/*)
if [ ${#reports[@]} -gt 0 ]; then
	echo "sanitize: ${#reports[@]} report(s) in $logs:"
	for f in "${reports[@]}"; do
		echo "== $f"
		head -n 40 "$f"
	done
	rc=1
else
	echo "sanitize: no sanitizer report"
fi
exit $rc
