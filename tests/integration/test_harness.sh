# shellcheck shell=bash
# Proves the harness: a batch job runs as the unprivileged test user.

test_batch_job_runs_as_test_user() {
  submit_wait "$TEST_USER" -o harness.%j.out --wrap 'id -un'
  local rc=$?
  assert_eq "sbatch --wait exit code" 0 "$rc"
  [ -n "$SUBMIT_JOBID" ] || fail "job id: expected 'Submitted batch job N', got '$SUBMIT_OUT'"
  assert_eq "job state" COMPLETED "$(job_end_state "$SUBMIT_JOBID")"
  assert_file_eq "job output" "$TEST_WORKDIR/harness.$SUBMIT_JOBID.out" "$TEST_USER"
}
