# shellcheck shell=bash
# One suite at a time on a machine: the one-node suite binds fixed ports
# and the cluster suite's timeouts assume the cores are its own, and
# several work trees (helpers, a release root, a package test) may run
# suites at once. Sourced by tests/integration/run.sh and
# tests/cluster/run.sh; tests/releases/run.sh and tests/package/
# test_package.sh take the same lock around what they run in a root
# (whose /tmp is its own, so the suite inside locks its own file).
#
# suite_lock: wait for /tmp/iostage-suite.lock (saying so) and hold it on
# fd 9 until the process exits. A caller that already holds it sets
# IOSTAGE_SUITE_LOCKED=1.
suite_lock() {
	[ "${IOSTAGE_SUITE_LOCKED:-0}" = 1 ] && return 0
	exec 9>/tmp/iostage-suite.lock
	if ! flock -n 9; then
		echo "run.sh: another suite is running on this machine; waiting for /tmp/iostage-suite.lock" >&2
		flock 9
	fi
	export IOSTAGE_SUITE_LOCKED=1
}
