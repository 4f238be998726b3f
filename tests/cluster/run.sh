#!/usr/bin/env bash
# Multi-node test runner: boots a cluster (cluster.sh: a controller, a login
# node and CLUSTER_NODES compute nodes, each with its own iostaged), runs
# the test_* functions of tests/cluster/test_*.sh (or of the files given),
# stops the cluster, and ends with the line "N passed, M failed".
#
#   bash tests/cluster/run.sh [TESTFILE...]
#
# Environment (as tests/integration/run.sh):
#   IT_TIMEOUT   per-test timeout in seconds (default 120)
#   IT_FILTER    only run tests whose name matches this extended regex
#   IT_SKIP      do not run tests whose name matches this extended regex
#   IT_KEEP=1    keep the cluster directory (also kept when a test fails)
#   IT_VERBOSE=1 print every test's full output
#   CLUSTER_NODES, CLUSTER_CTLD_PORT, CLUSTER_SLURMD_PORT: see cluster.sh
set -uo pipefail

CL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
IT_DIR=$(cd "$CL_DIR/../integration" && pwd -P)
REPO_ROOT=$(cd "$CL_DIR/../.." && pwd -P)
export CL_DIR IT_DIR REPO_ROOT
IT_TIMEOUT=${IT_TIMEOUT:-120}

if [ "$(id -u)" -ne 0 ]; then
  echo "run.sh: must run as root (creates namespaces, starts Slurm and iostaged)" >&2
  exit 1
fi

# one suite at a time on this machine: from here on under the lock
# shellcheck source=../suitelock.sh
. "$REPO_ROOT/tests/suitelock.sh"
suite_lock "${BASH_SOURCE[0]}" "$@"

files=()
if [ $# -gt 0 ]; then
  for f in "$@"; do
    [ -f "$f" ] || { echo "run.sh: no such test file: $f" >&2; exit 1; }
    files+=("$(cd "$(dirname "$f")" && pwd -P)/$(basename "$f")")
  done
else
  shopt -s nullglob
  files=("$CL_DIR"/test_*.sh)
  shopt -u nullglob
fi

bash "$REPO_ROOT/scripts/install-deps.sh" </dev/null || exit 1


# Clusters of runs that died without cleaning up (their runner.pid names a
# process that is gone) hold namespaces, mounts and daemons: stop them.
# Clusters started by hand (no runner.pid) are left alone. (A cluster's
# directory cannot be removed while its namespace files are mounted in it.)
for d in /tmp/iostage-cl.*; do
  [ -d "$d/ns" ] || continue
  rp=$(cat "$d/runner.pid" 2>/dev/null)
  [ -n "$rp" ] || continue
  kill -0 "$rp" 2>/dev/null && continue
  if [ -n "$(ls -A "$d/ns" 2>/dev/null)" ] || ls /run/netns 2>/dev/null |
    grep -q "^iosc-$(printf '%s' "$d" | cksum | cut -d' ' -f1)-"; then
    echo "run.sh: stopping stale cluster in $d" >&2
    CLUSTER_QUIET=1 bash "$CL_DIR/cluster.sh" stop "$d"
  fi
done

CLUSTER_DIR=$(mktemp -d /tmp/iostage-cl.XXXXXX)
chmod 0755 "$CLUSTER_DIR"
echo $$ >"$CLUSTER_DIR/runner.pid"
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
  CLUSTER_QUIET=1 bash "$CL_DIR/cluster.sh" stop "$CLUSTER_DIR"
  if mountpoint -q "$CLUSTER_DIR/pfs" 2>/dev/null; then
    echo "run.sh: $CLUSTER_DIR/pfs is still a mount (CLUSTER_PFS_DIR): kept $CLUSTER_DIR" >&2
  elif [ "${IT_KEEP:-0}" = 1 ] || [ "$failed" -gt 0 ]; then
    echo "run.sh: kept $CLUSTER_DIR (logs in $CLUSTER_DIR/log, test output in $CLUSTER_DIR/tests)" >&2
  else
    rm -rf "$CLUSTER_DIR"
  fi
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted" >&2; exit 130' INT
trap 'echo "run.sh: terminated" >&2; exit 143' TERM

# shellcheck source=tests/integration/lib.sh
. "$IT_DIR/lib.sh"
ensure_users || exit 1

if ! bash "$CL_DIR/cluster.sh" start "$CLUSTER_DIR"; then
  echo "FAIL cluster-start: see the log tails above"
  failed=1
  cleanup
  trap - EXIT
  echo "0 passed, 1 failed"
  exit 1
fi
# shellcheck source=/dev/null
. "$CLUSTER_DIR/env.sh"
# shellcheck source=tests/cluster/lib.sh
. "$CL_DIR/lib.sh"

# Put the cluster back between tests: no jobs, every compute node up with
# its slurmd and iostaged, idle.
between_tests() {
  local jobs node states
  # Jobs still completing (Epilogs running) get a few seconds first.
  for _ in $(seq 1 50); do
    [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
    sleep 0.2
  done
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
  # every node's state in one call (the usual case: all idle)
  states=$(sinfo -h -N -o '%N %T' 2>/dev/null)
  for node in $CLUSTER_COMPUTE_NODES; do
    if [ ! -s "$CLUSTER_DIR/nodes/$node/slurmd.pid" ] ||
      ! pid_running "$(cat "$CLUSTER_DIR/nodes/$node/slurmd.pid")"; then
      echo "    (node $node was down; starting it)"
      bash "$CL_DIR/cluster.sh" node-stop "$CLUSTER_DIR" "$node"
      bash "$CL_DIR/cluster.sh" node-start "$CLUSTER_DIR" "$node" >/dev/null 2>&1
    elif ! iostaged_pid "$node" >/dev/null; then
      echo "    (iostaged on $node was down; starting it)"
      iostaged_start "$node" >/dev/null
    fi
    if ! grep -qx "$node idle" <<<"$states"; then
      scontrol update NodeName="$node" State=RESUME >/dev/null 2>&1
      wait_node_state "$node" idle 30 >/dev/null 2>&1 ||
        echo "    (node $node still '$(node_state "$node")' ($(node_reason "$node")))"
    fi
  done
}

# shellcheck source=tests/integration/runner.sh
. "$IT_DIR/runner.sh"
RUNNER_SOURCES="$CLUSTER_DIR/env.sh:$CL_DIR/lib.sh"
run_files "${files[@]}"

cleanup
trap - EXIT
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
