# shellcheck shell=bash
# Helpers for integration tests. Sourced by run.sh and by every test.
#
# A test file tests/integration/test_*.sh defines functions named test_*.
# run.sh runs each one in its own bash process (with a timeout) after sourcing
# this file and the test file. A test passes when its function returns 0;
# assert_* and fail end the test (exit 1) with a message saying what was
# checked, what was expected and what was got.
#
# Variables available to tests (set by run.sh):
#   IT_DIR        tests/integration          REPO_ROOT  the git work tree
#   CLUSTER_DIR   cluster state directory    SLURM_CONF its slurm.conf
#   CLUSTER_NODE  the node name              TEST_NAME  current test function
#   TEST_WORKDIR  a fresh world-writable directory for this test (cwd of jobs
#                 submitted with submit_wait)
#   TEST_USER=iostage-test  OTHER_USER=iostage-other

IT_DIR=${IT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)}
REPO_ROOT=${REPO_ROOT:-$(cd "$IT_DIR/../.." && pwd -P)}
TEST_USER=${TEST_USER:-iostage-test}
OTHER_USER=${OTHER_USER:-iostage-other}

# --- users -------------------------------------------------------------------

ensure_user() {
  local u=$1
  if ! id "$u" >/dev/null 2>&1; then
    useradd -m -s /bin/bash "$u" || { echo "lib.sh: useradd $u failed" >&2; return 1; }
  fi
  local home
  home=$(getent passwd "$u" | cut -d: -f6)
  [ -d "$home" ] || install -d -o "$u" -g "$(id -gn "$u")" -m 0755 "$home"
}

ensure_users() {
  ensure_user "$TEST_USER" && ensure_user "$OTHER_USER"
}

user_home() { getent passwd "$1" | cut -d: -f6; }

# as_user USER CMD...   run CMD as USER, keeping SLURM_CONF
as_user() {
  local u=$1
  shift
  runuser -u "$u" -- env SLURM_CONF="${SLURM_CONF:-}" "$@"
}

# pid_running PID (pidstate.sh): a live process, not a zombie
. "$IT_DIR/pidstate.sh"
export -f pid_running

# --- jobs --------------------------------------------------------------------

# submit_wait USER [SBATCH_ARGS...]
#   sbatch as USER from $TEST_WORKDIR (or the user's home), then wait for
#   the job as `sbatch --wait` does (job_wait). Returns what sbatch --wait
#   would: the job's exit code, or 1 if submission failed. Sets
#   SUBMIT_JOBID (empty if nothing was queued) and SUBMIT_OUT (sbatch's
#   stdout+stderr), and echoes SUBMIT_OUT.
SUBMIT_JOBID=
SUBMIT_OUT=
submit_wait() {
  local u=$1 rc wd
  shift
  wd=${TEST_WORKDIR:-$(user_home "$u")}
  SUBMIT_OUT=$(cd "$wd" && as_user "$u" sbatch "$@" 2>&1)
  rc=$?
  SUBMIT_JOBID=$(printf '%s\n' "$SUBMIT_OUT" | sed -n 's/^Submitted batch job \([0-9][0-9]*\).*/\1/p' | head -n1)
  if [ "$rc" -eq 0 ] && [ -n "$SUBMIT_JOBID" ]; then
    job_wait "$SUBMIT_JOBID"
    rc=$?
  fi
  printf '%s\n' "$SUBMIT_OUT"
  return $rc
}

# job_wait JOBID
#   Until the job (every task of an array) has ended, polled every 0.2 s;
#   returns its exit code as `sbatch --wait` does (the highest of the
#   tasks; 1 for a task killed by a signal). Why not sbatch --wait: it
#   looks after 2 s, then 8 s more, then every 32 s, so a job of 3 s cost
#   10 s. As with sbatch --wait, COMPLETING counts as ended (the job's
#   script is done; the Epilogs may still run: job_end_state).
job_wait() {
  local id=$1 out st ec
  while :; do
    out=$(scontrol show job -o "$id" 2>&1) || {
      echo "job_wait: job $id: $out" >&2
      return 1
    }
    st=$(printf '%s\n' "$out" | grep -oE 'JobState=[A-Z_]+' | sed 's/JobState=//' |
      grep -vxE 'COMPLETED|COMPLETING|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|PREEMPTED|BOOT_FAIL|DEADLINE|OUT_OF_MEMORY')
    [ -z "$st" ] && break
    sleep 0.2
  done
  # ExitCode=STATUS:SIGNAL per task (not DerivedExitCode, the steps')
  ec=$(printf '%s\n' "$out" | grep -oE '(^| )ExitCode=[0-9]+:[0-9]+' | sed 's/.*ExitCode=//' |
    awk -F: '{ e = ($2 != 0) ? 1 : $1; if (e > m) m = e } END { print m + 0 }')
  return "$ec"
}

# submit USER [SBATCH_ARGS...]  like submit_wait without --wait (returns at once)
submit() {
  local u=$1 rc wd
  shift
  wd=${TEST_WORKDIR:-$(user_home "$u")}
  SUBMIT_OUT=$(cd "$wd" && as_user "$u" sbatch "$@" 2>&1)
  rc=$?
  SUBMIT_JOBID=$(printf '%s\n' "$SUBMIT_OUT" | sed -n 's/^Submitted batch job \([0-9][0-9]*\).*/\1/p' | head -n1)
  printf '%s\n' "$SUBMIT_OUT"
  return $rc
}

# job_field JOBID FIELD   one Key=Value field of `scontrol show job -o`
#   (completed jobs stay visible for MinJobAge=600 s)
job_field() {
  scontrol show job -o "$1" 2>/dev/null |
    tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1
}

# job_state JOBID   e.g. COMPLETED, FAILED, RUNNING, PENDING
job_state() { job_field "$1" JobState; }

# job_end_state JOBID [TIMEOUT_S=60]   the state once the job is past
#   COMPLETING: `sbatch --wait` returns when the batch script ends, while
#   the Epilogs may still run (slowly under the sanitizers)
job_end_state() {
  local id=$1 t=${2:-60} i st
  for ((i = 0; i < t * 5; i++)); do
    st=$(job_state "$id")
    [[ "$st" == COMPLETING* ]] || break
    sleep 0.2
  done
  printf '%s\n' "$st"
}

# job_exit JOBID    ExitCode, e.g. 0:0 or 1:0
job_exit() { job_field "$1" ExitCode; }

# job_comment JOBID (Comment can contain spaces: take the rest of the line)
job_comment() {
  scontrol show job "$1" 2>/dev/null | sed -n 's/^ *Comment=//p' | head -n1
}

# wait_job_state JOBID STATE_REGEX [TIMEOUT_S=30]
wait_job_state() {
  local id=$1 want=$2 t=${3:-30} i st
  for ((i = 0; i < t * 5; i++)); do
    st=$(job_state "$id")
    [[ "$st" =~ ^($want)$ ]] && return 0
    sleep 0.2
  done
  echo "wait_job_state: job $id is '$st', wanted '$want' after ${t}s" >&2
  return 1
}

# --- node --------------------------------------------------------------------

node_state() { sinfo -h -N -n "${CLUSTER_NODE:-$(hostname -s)}" -o '%T' 2>/dev/null | head -n1; }
node_reason() { sinfo -h -N -n "${CLUSTER_NODE:-$(hostname -s)}" -o '%E' 2>/dev/null | head -n1; }

# node_resume: undrain the node (after a test that drained it on purpose)
node_resume() {
  scontrol update NodeName="${CLUSTER_NODE:-$(hostname -s)}" State=RESUME >/dev/null 2>&1
  wait_node_idle 20
}

wait_node_idle() {
  local t=${1:-20} i st
  for ((i = 0; i < t * 5; i++)); do
    st=$(node_state)
    [ "$st" = idle ] && return 0
    sleep 0.2
  done
  echo "wait_node_idle: node is '$st' after ${t}s" >&2
  return 1
}

# --- mounts ------------------------------------------------------------------

# unmount_under DIR: detach every mount below DIR, innermost first (the
# test cluster's paths have no spaces to unescape).
unmount_under() {
  awk -v d="$1/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | tac |
    while read -r m; do umount -l "$m" 2>/dev/null; done
  return 0
}

# --- asserts -----------------------------------------------------------------

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# assert_eq WHAT EXPECTED GOT
assert_eq() {
  [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
}

# assert_ne WHAT UNEXPECTED GOT
assert_ne() {
  [ "$2" != "$3" ] || fail "$1: expected anything but '$2', got '$3'"
}

# assert_contains WHAT HAYSTACK NEEDLE
assert_contains() {
  case "$2" in
    *"$3"*) ;;
    *) fail "$1: expected to contain '$3', got '$2'" ;;
  esac
}

# assert_not_contains WHAT HAYSTACK NEEDLE
assert_not_contains() {
  case "$2" in
    *"$3"*) fail "$1: expected not to contain '$3', got '$2'" ;;
    *) ;;
  esac
}

# assert_file_eq WHAT FILE EXPECTED   (file content, trailing newlines ignored)
assert_file_eq() {
  [ -f "$2" ] || fail "$1: expected file $2 to exist, got no file"
  local got
  got=$(cat "$2")
  [ "$got" = "$3" ] || fail "$1: expected $2 to be '$3', got '$got'"
}

# assert_file_contains WHAT FILE NEEDLE
assert_file_contains() {
  [ -f "$2" ] || fail "$1: expected file $2 to exist, got no file"
  grep -qF -- "$3" "$2" || fail "$1: expected $2 to contain '$3', got '$(head -c 2000 "$2")'"
}

# assert_rc WHAT EXPECTED_RC CMD...
assert_rc() {
  local what=$1 want=$2 rc
  shift 2
  "$@"
  rc=$?
  [ "$rc" = "$want" ] || fail "$what: expected exit code $want from '$*', got $rc"
}
