#!/usr/bin/env bash
# Integration test runner: starts a one-node Slurm cluster, runs the test_*
# functions of tests/integration/test_*.sh (or of the files given), stops the
# cluster, and ends with the line "N passed, M failed".
#
#   bash tests/integration/run.sh [TESTFILE...]
#
# Environment:
#   IT_TIMEOUT   per-test timeout in seconds (default 120)
#   IT_FILTER    only run tests whose name matches this extended regex
#   IT_SKIP      do not run tests whose name matches this extended regex
#   IT_KEEP=1    keep the cluster directory (it is also kept when a test fails)
#   IT_VERBOSE=1 print every test's full output
#   IT_NO_SETUP=1 do not source setup.sh (bare harness self-test)
#   IOSTAGE_INSTALLED=1 test the iostage installed on this system (e.g. the
#                packages) instead of `make install` of this tree; paths
#                and defaults in setup.sh; scripts/install-deps.sh is not run
#
# Hooks: if tests/integration/setup.sh exists it is sourced after the cluster
# directory exists (CLUSTER_DIR is set, nothing started) and before the cluster
# starts; it may export CLUSTER_PLUGSTACK, CLUSTER_PROLOG, CLUSTER_EPILOG,
# CLUSTER_EXTRA_CONF and start daemons. If it defines teardown_hook, that is
# called at exit before the cluster is stopped.
set -uo pipefail

IT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO_ROOT=$(cd "$IT_DIR/../.." && pwd -P)
export IT_DIR REPO_ROOT
IT_TIMEOUT=${IT_TIMEOUT:-120}

if [ "$(id -u)" -ne 0 ]; then
  echo "run.sh: must run as root (starts slurmctld/slurmd, creates test users)" >&2
  exit 1
fi

# one suite at a time on this machine: from here on under the lock
# shellcheck source=../suitelock.sh
. "$REPO_ROOT/tests/suitelock.sh"
suite_lock "${BASH_SOURCE[0]}" "$@"

# test files
files=()
if [ $# -gt 0 ]; then
  for f in "$@"; do
    [ -f "$f" ] || { echo "run.sh: no such test file: $f" >&2; exit 1; }
    files+=("$(cd "$(dirname "$f")" && pwd -P)/$(basename "$f")")
  done
else
  shopt -s nullglob
  files=("$IT_DIR"/test_*.sh)
  shopt -u nullglob
fi

# install what is missing (quiet when everything is there); not for an
# installed iostage, whose system has what it has (tests/package)
if [ "${IOSTAGE_INSTALLED:-0}" != 1 ] && [ -f "$REPO_ROOT/scripts/install-deps.sh" ]; then
  bash "$REPO_ROOT/scripts/install-deps.sh" </dev/null || exit 1
fi

# shellcheck source=lib.sh
. "$IT_DIR/lib.sh"


# clusters left by earlier runs that died without cleaning up (their runner
# is gone) would hold the ports: stop them
for d in /tmp/iostage-it.*; do
  [ -d "$d/run" ] || continue
  rp=$(cat "$d/run/runner.pid" 2>/dev/null)
  if [ -n "$rp" ] && kill -0 "$rp" 2>/dev/null; then continue; fi
  if [ -s "$d/run/slurmctld.pid" ] || [ -s "$d/run/slurmd.pid" ]; then
    echo "run.sh: stopping stale cluster in $d" >&2
    CLUSTER_QUIET=1 bash "$IT_DIR/cluster.sh" stop "$d"
  fi
done

CLUSTER_DIR=$(mktemp -d /tmp/iostage-it.XXXXXX)
chmod 0755 "$CLUSTER_DIR"
mkdir -p "$CLUSTER_DIR/run"
echo $$ >"$CLUSTER_DIR/run/runner.pid"
export CLUSTER_DIR

passed=0
failed=0
cleaned=0
test_pid=

cleanup() {
  [ "$cleaned" = 1 ] && return 0
  cleaned=1
  if [ -n "$test_pid" ] && kill -0 "$test_pid" 2>/dev/null; then
    kill -TERM "$test_pid" 2>/dev/null
    wait "$test_pid" 2>/dev/null
  fi
  if declare -F teardown_hook >/dev/null; then
    teardown_hook || echo "run.sh: teardown_hook failed" >&2
  fi
  CLUSTER_QUIET=1 bash "$IT_DIR/cluster.sh" stop "$CLUSTER_DIR"
  # iostaged's read-only views of cache entries (bind mounts below the
  # tiers' jobs/) that a failed test left behind
  unmount_under "$CLUSTER_DIR"
  if [ "${IT_KEEP:-0}" = 1 ] || [ "$failed" -gt 0 ]; then
    echo "run.sh: kept $CLUSTER_DIR (logs in $CLUSTER_DIR/log, test output in $CLUSTER_DIR/tests)" >&2
  else
    rm -rf "$CLUSTER_DIR"
  fi
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted" >&2; exit 130' INT
trap 'echo "run.sh: terminated" >&2; exit 143' TERM

ensure_users || exit 1

if [ -f "$IT_DIR/setup.sh" ] && [ "${IT_NO_SETUP:-0}" != 1 ]; then
  # shellcheck source=/dev/null
  if ! . "$IT_DIR/setup.sh"; then
    echo "FAIL setup: tests/integration/setup.sh failed"
    failed=1
    cleanup
    trap - EXIT
    echo "0 passed, 1 failed"
    exit 1
  fi
fi

if ! bash "$IT_DIR/cluster.sh" start "$CLUSTER_DIR"; then
  echo "FAIL cluster-start: see the log tails above"
  failed=1
  cleanup
  trap - EXIT
  echo "0 passed, 1 failed"
  exit 1
fi
# shellcheck source=/dev/null
. "$CLUSTER_DIR/env.sh"
mkdir -p "$CLUSTER_DIR/tests"

# put the cluster back to a clean state between tests
between_tests() {
  local jobs st
  jobs=$(squeue -h -o %i 2>/dev/null | tr '\n' ' ')
  if [ -n "${jobs// /}" ]; then
    echo "    (cancelling leftover jobs: $jobs)"
    # shellcheck disable=SC2086
    scancel --quiet $jobs 2>/dev/null
    for _ in $(seq 1 50); do
      [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  st=$(node_state)
  if [ "$st" != idle ]; then
    echo "    (node was '$st' ($(node_reason)); resuming)"
    scontrol update NodeName="$CLUSTER_NODE" State=RESUME >/dev/null 2>&1
    if ! wait_node_idle 20 >/dev/null 2>&1; then
      # Say what holds it, for whoever reads a slow run's log.
      echo "    (node still '$(node_state)': $(scontrol show node "$CLUSTER_NODE" 2>/dev/null |
        grep -oE '(CPUAlloc|AllocTRES|State)=[^ ]*' | tr '\n' ' ')jobs: $(squeue -h -t R,CG,S -w "$CLUSTER_NODE" -o '%i:%T' 2>/dev/null | tr '\n' ' '))"
    fi
  fi
}

# shellcheck source=tests/integration/runner.sh
. "$IT_DIR/runner.sh"
RUNNER_SOURCES="$IT_DIR/lib.sh"
run_files "${files[@]}"

cleanup
trap - EXIT
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
