# shellcheck shell=bash
# Deep mode (docs/SHIM.md): a job with trace=true gets the LD_PRELOAD I/O
# shim in its tasks, ahead of the user's own LD_PRELOAD, with the job's
# dataset and output trees as file classes; each traced process leaves one
# summary (here in the file IOSTAGE_SHIM_REPORT names; in production on
# iostaged's socket) whose counters match what the job did.
. "$IT_DIR/datasets.sh"

SHIM_LIB="$IOSTAGE_ROOT/usr/lib/iostage/libiostage-preload.so"

# A dataset, and a PFS output directory owned by the test user.
shim_fixture() {
	DS="$TEST_WORKDIR/ds"
	make_dataset "$DS"
	PFSOUT="$TEST_WORKDIR/pfs/run1"
	install -d -o "$TEST_USER" -g "$(id -gn "$TEST_USER")" -m 0755 \
		"$TEST_WORKDIR/pfs" "$PFSOUT"
	REPORT="$TEST_WORKDIR/report.jsonl"
}

# The job: show the environment, read one dataset file with dd (read(2)
# in 4 KiB requests), write a checkpoint of 4 x 64 KiB with dd.
write_shim_job() {
	cat >job.sh <<'JOB'
#!/bin/bash
set -e
printf 'PRELOAD=%s\n' "$LD_PRELOAD"
printf 'CLASSES=%s\n' "$IOSTAGE_TRACE_CLASSES"
dd if="$IOSTAGE_DATA/train/a/x.bin" of=/dev/null bs=4096 status=none
dd if=/dev/zero of="$IOSTAGE_OUTPUT/model.ckpt" bs=65536 count=4 status=none
${EXTRA_STEP:-true}
JOB
	chmod 0755 job.sh
}

# summaries JQ_FILTER: the job's summaries that pass the filter, one a line.
summaries() {
	[ -f "$REPORT" ] || fail "no summary file $REPORT"
	jq -rc --argjson job "$SUBMIT_JOBID" "select(.job == \$job) | $1" "$REPORT"
}

test_trace_true_preloads_the_shim_and_counts() {
	local n
	shim_fixture
	write_shim_job
	submit_wait "$TEST_USER" --export=ALL,IOSTAGE_SHIM_REPORT="$REPORT" \
		--io-profile="dl-train,data=$DS,out=$PFSOUT,trace=true" \
		-o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt 2>/dev/null)"
	assert_file_contains "LD_PRELOAD in the task" out.txt "PRELOAD=$SHIM_LIB"
	assert_file_contains "dataset class (PFS source)" out.txt "dataset=$DS"
	assert_file_contains "dataset class (staged copy)" out.txt \
		"dataset=$IOSTAGE_TIERS/nvme/jobs/$SUBMIT_JOBID/data/"
	assert_file_contains "output class (PFS destination)" out.txt "output=$PFSOUT"

	# dd read x.bin (300000 bytes): 73 full 4 KiB reads, one of 992 bytes,
	# one at EOF; all in phase read, class dataset, consecutive.
	n=$(summaries 'select(.counters.read.dataset.POSIX_BYTES_READ == 300000)
		| .counters.read.dataset | [.POSIX_READS, .POSIX_CONSEC_READS,
		.POSIX_SIZE_READ_1K_10K, .POSIX_MAX_BYTE_READ] | @tsv' | head -n1)
	assert_eq "dd's reads of x.bin (reads consec 1K_10K max_byte)" \
		"$(printf '75\t75\t73\t299999')" "$n"
	# The checkpoint: 4 writes of 64 KiB in phase checkpoint.
	n=$(summaries '.counters.checkpoint.output
		| select(. != null) | [.POSIX_WRITES, .POSIX_BYTES_WRITTEN,
		.POSIX_SIZE_WRITE_10K_100K] | @tsv' | head -n1)
	assert_eq "dd's checkpoint writes" "$(printf '4\t262144\t4')" "$n"
	n=$(summaries '.files[]? | select(.path | endswith("/model.ckpt"))
		| .written' | head -n1)
	assert_eq "model.ckpt in the files written" 262144 "$n"
	# Every summary says whose it is.
	n=$(summaries 'select(.node == null or .pid == null)' | wc -l)
	assert_eq "summaries without node or pid" 0 "$n"
	assert_ne "processes traced" 0 "$(summaries '.pid' | wc -l)"
}

test_trace_false_leaves_tasks_alone() {
	shim_fixture
	write_shim_job
	submit_wait "$TEST_USER" --export=ALL,IOSTAGE_SHIM_REPORT="$REPORT" \
		--io-profile="dl-train,data=$DS,out=$PFSOUT,trace=false" \
		-o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt 2>/dev/null)"
	assert_file_contains "no LD_PRELOAD" out.txt "PRELOAD="
	assert_file_not_contains_shim out.txt
	[ ! -s "$REPORT" ] || fail "untraced job wrote summaries: $(head -c 300 "$REPORT")"
}

assert_file_not_contains_shim() {
	grep -q "libiostage-preload" "$1" && fail "$1 mentions the shim: $(cat "$1")"
	grep -q "^CLASSES=." "$1" && fail "$1 has trace classes: $(cat "$1")"
	return 0
}

test_trace_keeps_the_users_preload() {
	local mine=/lib/x86_64-linux-gnu/libm.so.6
	shim_fixture
	write_shim_job
	submit_wait "$TEST_USER" \
		--export=ALL,IOSTAGE_SHIM_REPORT="$REPORT",LD_PRELOAD="$mine" \
		--io-profile="dl-train,data=$DS,out=$PFSOUT,trace=true" \
		-o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt 2>/dev/null)"
	assert_file_contains "shim first, the user's after" out.txt \
		"PRELOAD=$SHIM_LIB:$mine"
	assert_ne "summaries" 0 "$(summaries '.pid' | wc -l)"
}

test_srun_step_tasks_are_traced_with_their_rank() {
	local n
	shim_fixture
	write_shim_job
	# A job step inside the batch job: its task's summary carries the
	# step and rank from Slurm's environment.
	submit_wait "$TEST_USER" --export=ALL,IOSTAGE_SHIM_REPORT="$REPORT",EXTRA_STEP="srun -n1 dd if=$DS/train/b/y.bin of=/dev/null bs=1024 status=none" \
		--io-profile="dl-train,data=$DS,out=$PFSOUT,trace=true" \
		-o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt 2>/dev/null)"
	# y.bin is 4097 bytes under the PFS source: class dataset.
	n=$(summaries 'select(.counters.read.dataset.POSIX_BYTES_READ == 4097)
		| [.step, .rank, .local_rank, .identity] | @tsv' | head -n1)
	assert_eq "the step task's identity (step rank local_rank)" \
		"$(printf '0\t0\t0\tslurm')" "$n"
}

test_trace_to_the_daemon_socket_leaves_the_job_alone() {
	local before
	shim_fixture
	write_shim_job
	before=$(wc -l <"$IOSTAGED_LOG")
	# No IOSTAGE_SHIM_REPORT: every traced process sends its summary to
	# iostaged on IOSTAGE_SOCKET (the plugin's), bounded in time. Whatever
	# the daemon answers, the job's work and result are unchanged.
	submit_wait "$TEST_USER" \
		--io-profile="dl-train,data=$DS,out=$PFSOUT,trace=true" \
		-o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt 2>/dev/null)"
	assert_eq "job state" COMPLETED "$(job_state "$SUBMIT_JOBID")"
	assert_file_contains "the shim in the tasks" out.txt "PRELOAD=$SHIM_LIB"
	# The summaries reached the daemon (as the job's user, on its socket).
	# Before the daemon's shim_report op exists it answers "unknown op",
	# which is logged with the op's name; once it does, check the job's
	# telemetry record here instead (processes[].traced, run counters).
	tail -n +"$((before + 1))" "$IOSTAGED_LOG" | grep -q "shim_report" ||
		fail "no shim_report reached iostaged: $(tail -n +"$((before + 1))" "$IOSTAGED_LOG" | head -20)"
	iostage -c "$IOSTAGE_CONF" status >/dev/null || fail "iostaged stopped answering"
}

# with_conf_edit SED_SCRIPT: edit the node's iostage.conf for this test
# (the plugin reads it at every step); the original comes back when the
# test's shell exits, passed or failed.
with_conf_edit() {
	cp -p "$IOSTAGE_CONF" "$TEST_WORKDIR/iostage.conf.orig"
	trap 'cp -p "$TEST_WORKDIR/iostage.conf.orig" "$IOSTAGE_CONF"' EXIT
	sed -i "$1" "$IOSTAGE_CONF"
}

# A user profile that does not ask for tracing (trace defaults to false).
write_untraced_profile() {
	cat >"$TEST_WORKDIR/p.json" <<JSON
{"datasets":[{"name":"ds","path":"$DS"}],"outputs":[{"name":"run1","path":"$PFSOUT"}]}
JSON
	chmod 0644 "$TEST_WORKDIR/p.json"
}

test_site_trace_yes_traces_every_iostage_job() {
	shim_fixture
	write_shim_job
	write_untraced_profile
	with_conf_edit '$a Trace=yes'
	submit_wait "$TEST_USER" --export=ALL,IOSTAGE_SHIM_REPORT="$REPORT" \
		--io-profile="$TEST_WORKDIR/p.json" -o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt 2>/dev/null)"
	assert_file_contains "LD_PRELOAD in the task" out.txt "PRELOAD=$SHIM_LIB"
	assert_eq "dd's bytes from the dataset" 300000 \
		"$(summaries '.counters.read.dataset.POSIX_BYTES_READ // empty' | sort -n | tail -n1)"
	# A job without --io-profile is not an iostage job: untouched.
	submit_wait "$TEST_USER" -o plain.txt --wrap 'printf "PRELOAD=%s\n" "$LD_PRELOAD"' >/dev/null ||
		fail "plain job failed: $SUBMIT_OUT"
	assert_file_eq "no LD_PRELOAD without --io-profile" plain.txt "PRELOAD="
}

test_unreadable_trace_library_runs_the_job_untraced() {
	shim_fixture
	write_shim_job
	with_conf_edit "s|^TraceLibrary=.*|TraceLibrary=$TEST_WORKDIR/missing/libiostage-preload.so|"
	submit_wait "$TEST_USER" --export=ALL,IOSTAGE_SHIM_REPORT="$REPORT" \
		--io-profile="dl-train,data=$DS,out=$PFSOUT,trace=true" \
		-o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt 2>/dev/null)"
	grep -qx 'PRELOAD=' out.txt && grep -qx 'CLASSES=' out.txt ||
		fail "the task was given the shim anyway: $(cat out.txt)"
	[ ! -s "$REPORT" ] || fail "untraced job wrote summaries"
	# One clear line, which slurmstepd also copies to the job's stderr.
	assert_file_contains "why the job is untraced" out.txt \
		"iostage: trace: TraceLibrary $TEST_WORKDIR/missing/libiostage-preload.so: No such file or directory; job $SUBMIT_JOBID runs untraced"
}
