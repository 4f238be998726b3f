# shellcheck shell=bash
# One suite at a time on a machine: the one-node suite binds fixed ports
# and the cluster suite's timeouts assume the cores are its own, and
# several work trees (helpers, a release root, a package test) may run
# suites at once. Sourced by tests/integration/run.sh and
# tests/cluster/run.sh; tests/releases/run.sh and tests/package/
# test_package.sh take the same lock around what they run in a root
# (whose /tmp is its own, so the suite inside locks its own file).
#
# suite_lock SCRIPT ARGS...: unless the caller holds the lock already
# (IOSTAGE_SUITE_LOCKED=1), run SCRIPT ARGS again under
# `flock -o /tmp/iostage-suite.lock`, saying so when it has to wait. The
# flock process holds the lock and the script gets no descriptor of it
# (-o), so a daemon a test starts, or one that outlives the suite, never
# keeps the next suite waiting.
suite_lock() {
	[ "${IOSTAGE_SUITE_LOCKED:-0}" = 1 ] && return 0
	export IOSTAGE_SUITE_LOCKED=1
	if ! flock -n /tmp/iostage-suite.lock true; then
		echo "run.sh: another suite is running on this machine; waiting for /tmp/iostage-suite.lock" >&2
	fi
	exec flock -o /tmp/iostage-suite.lock bash "$@"
}
