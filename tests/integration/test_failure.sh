# shellcheck shell=bash
# Staging failures: the job's policy applies (fail or fallback), the reason
# reaches the user, and the node is never drained.
. "$IT_DIR/datasets.sh"

assert_node_not_drained() {
	local st
	st=$(node_state)
	case "$st" in
	*drain* | *DRAIN* | *fail*) fail "node state '$st' ($(node_reason)): a staging failure drained the node" ;;
	esac
}

test_daemon_down_fail_policy() {
	local ds="$TEST_WORKDIR/pfs/ds"
	make_dataset "$ds"
	iostaged_stop
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds,on-failure=fail" \
		-o out.txt -e err.txt --wrap 'echo RAN' >/dev/null
	local rc=$?
	iostaged_start || fail "iostaged did not restart"
	assert_ne "sbatch --wait exit status" 0 "$rc"
	assert_eq "job state" FAILED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "job stderr" err.txt "iostage: staging failed"
	assert_file_contains "job stderr" err.txt "not reachable"
	[ -e out.txt ] && ! grep -q RAN out.txt || [ ! -e out.txt ] || fail "the job script ran"
	assert_contains "job comment" "$(job_comment "$SUBMIT_JOBID")" "iostage: staging failed"
	assert_node_not_drained
}

test_daemon_down_fallback_policy() {
	local ds="$TEST_WORKDIR/pfs/ds"
	make_dataset "$ds"
	iostaged_stop
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds,on-failure=fallback" \
		-o out.txt -e err.txt --wrap 'echo "DATA=$IOSTAGE_DATA FB=$IOSTAGE_FALLBACK"' >/dev/null
	local rc=$?
	iostaged_start || fail "iostaged did not restart"
	assert_eq "sbatch --wait exit status" 0 "$rc"
	assert_file_contains "job output" out.txt "DATA=$ds FB=1"
	assert_file_contains "job stderr" err.txt "on-failure=fallback"
	assert_node_not_drained
}

test_source_vanished_fails_job() {
	local ds="$TEST_WORKDIR/pfs/ds"
	make_dataset "$ds"
	submit "$TEST_USER" --hold --io-profile="dl-train,data=$ds" -o out.txt -e err.txt \
		--wrap 'echo RAN' >/dev/null || fail "sbatch failed: $SUBMIT_OUT"
	rm -rf "$ds"
	scontrol release "$SUBMIT_JOBID"
	wait_job_state "$SUBMIT_JOBID" 'FAILED|COMPLETED' 60 || fail "job did not end"
	assert_eq "job state" FAILED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "job stderr" err.txt "iostage: staging failed"
	assert_file_contains "job stderr" err.txt "$ds"
	assert_node_not_drained
}

test_source_vanished_fallback_runs_on_pfs() {
	local ds="$TEST_WORKDIR/pfs/ds"
	make_dataset "$ds"
	submit "$TEST_USER" --hold --io-profile="dl-train,data=$ds,on-failure=fallback" \
		-o out.txt --wrap 'echo "FB=$IOSTAGE_FALLBACK DATA=$IOSTAGE_DATA"' >/dev/null ||
		fail "sbatch failed: $SUBMIT_OUT"
	rm -rf "$ds"
	scontrol release "$SUBMIT_JOBID"
	wait_job_state "$SUBMIT_JOBID" 'FAILED|COMPLETED' 60 || fail "job did not end"
	assert_eq "job state" COMPLETED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "job output" out.txt "FB=1 DATA=$ds"
	assert_node_not_drained
}

test_tier_full_fails_job_with_reason() {
	local ds="$TEST_WORKDIR/pfs/big"
	mkdir -p "$ds"
	head -c 1000000 /dev/urandom >"$ds/blob"
	chown -R "$TEST_USER:" "$ds"
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds:tiny" -o out.txt -e err.txt \
		--wrap 'echo RAN' >/dev/null
	assert_eq "job state" FAILED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "job stderr" err.txt "tier 'tiny' full"
	assert_contains "job comment" "$(job_comment "$SUBMIT_JOBID")" "tier 'tiny' full"
	assert_node_not_drained
	# Nothing half-staged is left on the tier.
	assert_eq "tiny tier after the job" "" "$(find "$IOSTAGE_TIERS/tiny/jobs" -mindepth 1 2>/dev/null)"
}

test_staging_timeout_applies_policy() {
	local ds="$TEST_WORKDIR/pfs/many" pid=
	mkdir -p "$ds"
	head -c 20000000 /dev/urandom | (cd "$ds" && split -b 1000 -a 5 - f)
	chown -R "$TEST_USER:" "$ds"
	submit "$TEST_USER" --io-profile="dl-train,data=$ds,timeout=2" -o out.txt -e err.txt \
		--wrap 'echo RAN' >/dev/null || fail "sbatch failed: $SUBMIT_OUT"
	# Freeze the copy as soon as its worker appears, so that the deadline
	# passes whatever the speed of the copy engine.
	for _ in $(seq 1 2000); do
		pid=$(pgrep -f -- "--stage-worker.* $ds( |\$)" | head -n1)
		[ -n "$pid" ] && break
		sleep 0.01
	done
	[ -n "$pid" ] || fail "no stage worker for $ds appeared"
	kill -STOP "$pid"
	wait_job_state "$SUBMIT_JOBID" 'FAILED|COMPLETED' 60 || fail "job did not end"
	assert_eq "job state" FAILED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "job stderr" err.txt "staging timed out after 2 s"
	assert_node_not_drained
	kill -0 "$pid" 2>/dev/null && [ "$(ps -o stat= -p "$pid")" != Z ] &&
		fail "the frozen worker $pid survived the timeout"
	assert_eq "partial copies left on the tier" "" \
		"$(find "$IOSTAGE_TIERS/nvme/cache" -maxdepth 1 -name '.build.*' 2>/dev/null)"
}
