# shellcheck shell=bash
# Staging end to end: the job's tasks find a complete private copy, the
# Epilog removes it, and iostaged keeps serving across jobs.
. "$IT_DIR/datasets.sh"

test_staged_tree_matches_source_from_inside_job() {
	local ds="$TEST_WORKDIR/pfs/imagenet" ds2="$TEST_WORKDIR/pfs/labels"
	make_dataset "$ds"
	make_dataset "$ds2"
	tree_digest "$ds" >src.digest
	chmod 0644 src.digest
	cat >job.sh <<'JOB'
#!/bin/bash
set -e
. "$TREE_DIGEST_LIB"
tree_digest "$IOSTAGE_DATA" > staged.digest
cmp staged.digest src.digest && echo SAME
[ "$IOSTAGE_DATA_IMAGENET" = "$IOSTAGE_DATA" ] && echo NAMED
[ -d "$IOSTAGE_DATA_LABELS/train" ] && echo SECOND
stat -c 'JOBDIR %U %a' "$IOSTAGE_JOB_DIR"
stat -c 'LOCAL %U %a' "$IOSTAGE_LOCAL"
touch "$IOSTAGE_LOCAL/scratch" && echo LOCAL_WRITABLE
echo "JOB_DIR=$IOSTAGE_JOB_DIR"
JOB
	TREE_DIGEST_LIB="$IT_DIR/datasets.sh" submit_wait "$TEST_USER" \
		--export=ALL,TREE_DIGEST_LIB="$IT_DIR/datasets.sh" \
		--io-profile="dl-train,data=$ds,data=$ds2" -o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt)"
	assert_file_contains "byte-for-byte comparison in the job" out.txt SAME
	assert_file_contains "IOSTAGE_DATA_IMAGENET" out.txt NAMED
	assert_file_contains "IOSTAGE_DATA_LABELS" out.txt SECOND
	assert_file_contains "job dir owner/mode" out.txt "JOBDIR $TEST_USER 700"
	assert_file_contains "local dir owner/mode" out.txt "LOCAL $TEST_USER 700"
	assert_file_contains "local scratch" out.txt LOCAL_WRITABLE

	# The Epilog removed the private directory once the job ended.
	local jobdir
	jobdir=$(sed -n 's/^JOB_DIR=//p' out.txt)
	assert_contains "job dir path" "$jobdir" "$IOSTAGE_TIERS/nvme/jobs/$SUBMIT_JOBID"
	for _ in $(seq 1 50); do [ -e "$jobdir" ] || break; sleep 0.2; done
	[ ! -e "$jobdir" ] || fail "epilog: $jobdir still exists after the job"
}

test_daemon_serves_consecutive_jobs() {
	local ds="$TEST_WORKDIR/pfs/ds" pid i
	make_dataset "$ds"
	pid=$(iostaged_pid)
	for i in 1 2 3; do
		submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds" -o "out$i.txt" \
			--wrap 'test -s "$IOSTAGE_DATA/train/a/x.bin" && echo OK' >/dev/null ||
			fail "job $i failed: $SUBMIT_OUT"
		assert_file_contains "job $i output" "out$i.txt" OK
	done
	assert_eq "iostaged pid after 3 jobs" "$pid" "$(iostaged_pid)"
	pid_running "$pid" || fail "iostaged died"
}

test_job_without_profile_is_untouched() {
	submit_wait "$TEST_USER" -o out.txt --wrap 'env | grep -cE "^(IOSTAGE_(DATA|LOCAL|JOB_DIR|OUTPUT|FALLBACK)|SLURM_SPANK_IOSTAGE)" || true' >/dev/null ||
		fail "job failed: $SUBMIT_OUT"
	assert_file_eq "IOSTAGE_ variables in a job without --io-profile" out.txt 0
}

test_status_shows_tiers_and_active_job() {
	local ds="$TEST_WORKDIR/pfs/ds" st
	make_dataset "$ds"
	submit "$TEST_USER" --io-profile="dl-train,data=$ds" -o out.txt \
		--wrap 'touch started; sleep 30' >/dev/null || fail "sbatch failed: $SUBMIT_OUT"
	for _ in $(seq 1 100); do [ -e started ] && break; sleep 0.2; done
	[ -e started ] || fail "job $SUBMIT_JOBID did not start"
	st=$(iostage -c "$IOSTAGE_CONF" status)
	assert_contains "status: daemon line" "$st" "iostaged "
	assert_contains "status: tier nvme" "$st" "$IOSTAGE_TIERS/nvme"
	assert_contains "status: tier tiny" "$st" "$IOSTAGE_TIERS/tiny"
	assert_contains "status: job row" "$st" "$SUBMIT_JOBID"
	assert_contains "status: job state" "$st" "staged"
	# Another user sees the tiers but not this job.
	st=$(as_user "$OTHER_USER" iostage -c "$IOSTAGE_CONF" status)
	assert_contains "other user's status: tiers" "$st" "$IOSTAGE_TIERS/nvme"
	assert_not_contains "other user's status: jobs" "$st" "$TEST_USER"
	scancel "$SUBMIT_JOBID"
}
