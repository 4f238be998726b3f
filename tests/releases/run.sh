#!/usr/bin/env bash
# run.sh - iostage built and tested against one Slurm release, inside that
# release's Debian root (tests/releases/root.sh): `make check-slurm
# SLURM=24.11`.
#
#   tests/releases/run.sh RELEASE [SUITE...]
#
# SUITE: build (always first), unit, integration (the one-node suite),
# slurm (the part of the one-node suite that meets Slurm's interfaces:
# SLURM_FACING below), cluster (the 3-node suite); default: unit,
# integration and cluster. The tree (without
# build/ and .git) is copied to ROOT/src/iostage and built there with
# WERROR=1: a warning on any release fails the run. The root's build/
# is kept between runs, so a second run rebuilds only what changed.
#
# The suites boot their Slurm clusters inside the root, against that
# release's slurmctld, slurmd and MUNGE. They use fixed ports, so runs
# on one machine take turns (flock on /tmp/iostage-suite.lock, the lock
# every suite runner on the host takes too).
#
# The last lines are one per suite: "RELEASE SUITE: N passed, M failed
# (S s)" (or "failed to build"); the exit status is 0 only if every suite passed.
# The whole output is kept in RESULTS_DIR (default build/releases/).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HERE/../.." && pwd -P)
REL=${1:?usage: run.sh RELEASE [build|unit|integration|cluster ...]}
shift
SUITES=("$@")
[ ${#SUITES[@]} -gt 0 ] || SUITES=(unit integration cluster)
RESULTS_DIR=${RESULTS_DIR:-$REPO/build/releases}
JOBS=${CHECK_JOBS:-$(nproc)}

for s in "${SUITES[@]}"; do
  case "$s" in build|unit|integration|slurm|cluster) ;;
    *) echo "run.sh: unknown suite '$s' (build, unit, integration, slurm, cluster)" >&2
       exit 2 ;;
  esac
done

# One run per release root at a time, whichever work tree starts it: the
# tree is copied into the root's /src/iostage, built and tested there, so a
# second run would overwrite the first one's sources mid-suite. Re-run
# under flock -o (the lock's descriptor stays in the flock process, not in
# the daemons a suite starts).
if [ "${IOSTAGE_RELEASE_LOCKED:-}" != "$REL" ]; then
  lock=/tmp/iostage-release-$REL.lock
  flock -n "$lock" true ||
    echo "run.sh: Slurm $REL: another tree is testing this release; waiting for $lock" >&2
  IOSTAGE_RELEASE_LOCKED=$REL exec flock -o "$lock" bash "${BASH_SOURCE[0]}" "$REL" "${SUITES[@]}"
fi

"$HERE/root.sh" ensure "$REL" || exit 2
root=$("$HERE/root.sh" path "$REL")
mkdir -p "$RESULTS_DIR"
log=$RESULTS_DIR/slurm-$REL.log
: >"$log"

echo "run.sh: Slurm $REL: copying the tree into $root/src/iostage" >&2
mkdir -p "$root/src/iostage"
rsync -a --delete --exclude=/build --exclude=/.git --exclude='/wt-*' \
  "$REPO/" "$root/src/iostage/" || exit 2

# The paths the suites install with (prefix=/usr sysconfdir=/etc), for
# every build here: a build for other paths is rebuilt by each suite's
# `make install`, and again by the next stage.
PATHS="prefix=/usr sysconfdir=/etc"

# one suite inside the root; its summary line is the runner's last
# "N passed, M failed"
summaries=()
status=0
run_suite() {
  local suite=$1 target=$2 out rc line t0
  out=$(mktemp)
  t0=$(date +%s)
  echo "run.sh: Slurm $REL: $suite" >&2
  flock /tmp/iostage-suite.lock "$HERE/root.sh" enter "$REL" bash -c \
    "cd /src/iostage && make --no-print-directory $PATHS $target" 2>&1 |
    tee -a "$log" >"$out"
  rc=${PIPESTATUS[0]}
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n1)
  [ -n "$line" ] || line="exit $rc, no summary (see $log)"
  [ "$rc" -eq 0 ] || status=1
  summaries+=("$REL $suite: $line ($(($(date +%s) - t0)) s)")
  rm -f "$out"
}

echo "run.sh: Slurm $REL: building (WERROR=1)" >&2
t0=$(date +%s)
if ! "$HERE/root.sh" enter "$REL" bash -c \
  "cd /src/iostage && make --no-print-directory -j$JOBS WERROR=1 $PATHS all unit-bins" \
  >>"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "$REL build: failed to build (see $log)"
  exit 1
fi
summaries+=("$REL build: built with no warnings ($(($(date +%s) - t0)) s)")

# The one-node tests whose outcome a Slurm release can change, each file
# for the interface it meets (docs/ADMIN.md, "What differs between
# releases"): the SPANK options at sbatch/salloc/srun and submit-time
# validation; the Prolog's staging and the job's environment; the Prolog's
# failure policy (node drain, requeue, the job's Comment through
# slurm_update_job2); the Epilog's drain; the SPANK task hooks (the
# preload shim, step ids, ranks with and without PMIx); a PyTorch job
# under srun. The rest of the suite exercises the daemons through their
# own sockets, and the other PyTorch tests the DataLoader's workers
# (SLURM_FACING_SKIP): the same on every release. `make check` runs this
# part on the newest release, `make check-releases` the whole suite on
# each.
SLURM_FACING="tests/integration/test_submit.sh tests/integration/test_staging.sh
  tests/integration/test_datadir.sh tests/integration/test_failure.sh
  tests/integration/test_drain.sh tests/integration/test_shim.sh
  tests/integration/test_telemetry.sh tests/integration/test_python.sh"
SLURM_FACING_SKIP='^test_python_training_with_'

for s in "${SUITES[@]}"; do
  case "$s" in
    build) ;;
    slurm) run_suite slurm "integration IT_FILES='$(echo $SLURM_FACING)' IT_SKIP='$SLURM_FACING_SKIP'" ;;
    unit) run_suite unit unit ;;
    integration) run_suite integration integration ;;
    cluster) run_suite cluster cluster ;;
  esac
done

printf '%s\n' "${summaries[@]}" | tee -a "$log"
exit $status
