# shellcheck shell=bash
# Deep mode (docs/SHIM.md): a job with trace=true gets the LD_PRELOAD I/O
# shim in its tasks, ahead of the user's own LD_PRELOAD, with the job's
# dataset and output trees as file classes; each traced process leaves one
# summary (here in the file IOSTAGE_SHIM_REPORT names; in production on
# iostaged's socket) whose counters match what the job did.
. "$IT_DIR/datasets.sh"

SHIM_LIB="$IOSTAGE_SHIM"

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

# The traced job of the daemon-side tests: N 4 KiB preads at random
# offsets of the dataset's x.bin (300000 bytes) by one process, then a
# step of two tasks that each write 4 KiB at their own offset of one
# shared file and 8 KiB to a file of their own, all under the output.
write_traced_job() {
	cat >job.sh <<'JOB'
#!/bin/bash
set -e
printf 'PRELOAD=%s\n' "$LD_PRELOAD"
/usr/bin/python3 - "$IOSTAGE_DATA/train/a/x.bin" "$NREADS" <<'PY'
import os, random, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
r = random.Random(7)
for _ in range(int(sys.argv[2])):
    assert len(os.pread(fd, 4096, r.randrange(0, size - 4096))) == 4096
os.close(fd)
PY
srun -n2 bash -c 'dd if=/dev/zero of="$IOSTAGE_OUTPUT/shared.bin" bs=4096 count=1 seek=$SLURM_PROCID conv=notrunc status=none &&
	dd if=/dev/zero of="$IOSTAGE_OUTPUT/rank$SLURM_PROCID.bin" bs=4096 count=2 status=none'
echo done
JOB
	chmod 0755 job.sh
}

# wait_finished JOB: until iostaged logged the job's Epilog (finish).
wait_finished() {
	for _ in $(seq 1 300); do
		grep -q "job $1: finished" "$IOSTAGED_LOG" && return 0
		sleep 0.1
	done
	fail "job $1: no 'finished' in the iostaged log"
}

# run_traced_job NAME NREADS: submit it (2 tasks), wait for its Epilog.
run_traced_job() {
	submit_wait "$TEST_USER" -n2 -J "$1" --export=ALL,NREADS="$2" \
		--io-profile="dl-train,data=$DS,out=$PFSOUT,trace=true" \
		-o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt 2>/dev/null)"
	wait_finished "$SUBMIT_JOBID"
}

# No IOSTAGE_SHIM_REPORT: every traced process sends its summary to
# iostaged, as the job's user. The job's telemetry record then has the
# shim's counters folded into the run phase, the processes marked traced,
# and shared vs file-per-process per output; the history files the same
# record at the Epilog.
test_traced_job_record_has_shim_counters_and_shared_files() {
	local rec hist run n
	shim_fixture
	write_traced_job
	run_traced_job "traced-$$" 1200
	assert_eq "job state" COMPLETED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "the shim in the tasks" out.txt "PRELOAD=$SHIM_LIB"
	assert_file_contains "the job ran to its end" out.txt "done"
	rec=$(as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" telemetry "$SUBMIT_JOBID" --json) ||
		fail "iostage telemetry $SUBMIT_JOBID failed: $rec"
	rec=$(printf '%s' "$rec" | jq -c '.record // .')
	assert_eq "record of the job" "$SUBMIT_JOBID" "$(printf '%s' "$rec" | jq -r .job)"
	n=$(printf '%s' "$rec" | jq '[.processes[] | select(.traced)] | length')
	[ "$n" -ge 3 ] || fail "traced processes: $n (want >= 3: python and two dd tasks): $(printf '%s' "$rec" | jq -c .processes)"
	assert_eq "traced step tasks (step 0, ranks 0 and 1)" "0,1" \
		"$(printf '%s' "$rec" | jq -r '[.processes[] | select(.traced and .step == 0) | .rank] | unique | map(tostring) | join(",")')"
	run=$(printf '%s' "$rec" | jq -c '.phases[] | select(.name == "run")')
	# The shim counts the preads in its automatic phase "read"; the run
	# phase holds the totals of all phases.
	assert_eq "run: dataset reads, bytes, 1K_10K requests" \
		"$(printf '1200\t4915200\t1200')" \
		"$(printf '%s' "$run" | jq -r '.counters.dataset | [.POSIX_READS, .POSIX_BYTES_READ, .POSIX_SIZE_READ_1K_10K] | @tsv')"
	assert_eq "run: no other dataset request size" 1200 \
		"$(printf '%s' "$run" | jq -r '[.counters.dataset | to_entries[] | select(.key | startswith("POSIX_SIZE_READ_")) | .value] | add')"
	assert_eq "read sub-phase: the same reads" 1200 \
		"$(printf '%s' "$rec" | jq -r '.phases[] | select(.name == "read" and .parent == "run") | .counters.dataset.POSIX_READS')"
	assert_eq "run: output writes (2 x 4 KiB + 2 x 2 x 4 KiB)" \
		"$(printf '6\t24576')" \
		"$(printf '%s' "$run" | jq -r '.counters.output | [.POSIX_WRITES, .POSIX_BYTES_WRITTEN] | @tsv')"
	[ "$(printf '%s' "$run" | jq -r '.io_seconds >= 0')" = true ] ||
		fail "run: no io_seconds: $run"
	assert_eq "outputs[0]: shared and file-per-process files" \
		"$(printf '1\t2')" \
		"$(printf '%s' "$rec" | jq -r '.outputs[0] | [.shared_files, .fpp_files] | @tsv')"
	assert_eq "run: the job's shared and fpp files" "$(printf '1\t2')" \
		"$(printf '%s' "$run" | jq -r '[.shared_files, .fpp_files] | @tsv')"
	# Drain figures per output: every drained copy is 4 or 8 KiB.
	n=$(printf '%s' "$rec" | jq -r '.outputs[0] | [.files, .size_hist["1K_10K"], ([.size_hist[]] | add), .failed_files, (.during_files + .end_files)] | @tsv')
	[ "$(printf '%s' "$n" | cut -f1)" -ge 3 ] || fail "outputs[0].files < 3: $n"
	assert_eq "outputs[0]: histogram and phase counts agree with files" \
		"$(printf '%s' "$n" | cut -f1)	$(printf '%s' "$n" | cut -f1)	$(printf '%s' "$n" | cut -f1)	0	$(printf '%s' "$n" | cut -f1)" "$n"
	assert_eq "the drained shared file" 8192 "$(stat -c %s "$PFSOUT/shared.bin")"
	# The dataset's own size (not only the job's totals).
	assert_eq "datasets[0] size = stage_in's (one dataset)" \
		"$(printf '%s' "$rec" | jq -r '.phases[] | select(.name == "stage_in") | [.bytes, .files] | @tsv')" \
		"$(printf '%s' "$rec" | jq -r '.datasets[0] | [.bytes, .files] | @tsv')"
	# The history has the same record, for its owner.
	hist=$(iostaged_request "$TEST_USER" "{\"op\":\"history_get\",\"job\":$SUBMIT_JOBID}")
	assert_contains "history_get as the owner" "$hist" '"ok":true'
	assert_eq "history's record = telemetry's" \
		"$(printf '%s' "$rec" | jq -S -c .)" \
		"$(printf '%s' "$hist" | jq -S -c .record)"
	iostage -c "$IOSTAGE_CONF" status >/dev/null || fail "iostaged stopped answering"
}

# A batch script's own processes are in the batch step, whatever Slurm
# release: reader.sh TAG FILE prints TAG and its pid, then becomes dd
# reading FILE. The script runs it directly (the batch step) and under
# srun (step 0), each once as the plugin leaves it and once with the
# plugin's IOSTAGE_STEP spoilt, so that the shim reads Slurm's own
# environment (shim/slurmstep.h). The task's `echo` keeps bash from
# exec'ing the last reader in place of the task (then it would be the
# registered task, whose step slurmstepd gives).
write_batch_step_job() {
	cat >reader.sh <<'SH'
#!/bin/bash
echo "$1 $$"
exec dd if="$2" of=/dev/null bs=4096 status=none
SH
	cat >job.sh <<'JOB'
#!/bin/bash
set -e
echo "ENV IOSTAGE_STEP=${IOSTAGE_STEP-unset} SLURM_STEP_ID=${SLURM_STEP_ID-unset} ENVIRONMENT=${ENVIRONMENT-unset}"
./reader.sh DIRECT "$IOSTAGE_DATA/train/a/x.bin"
IOSTAGE_STEP=none ./reader.sh DIRECT_ENV "$IOSTAGE_DATA/train/a/x.bin"
srun -n1 bash -c './reader.sh STEP "$IOSTAGE_DATA/train/b/y.bin" &&
	IOSTAGE_STEP=none ./reader.sh STEP_ENV "$IOSTAGE_DATA/train/b/y.bin" &&
	echo "TASK $$"'
echo done
JOB
	chmod 0755 reader.sh job.sh
}

test_batch_script_processes_are_in_the_batch_step() {
	local rec tab tag pid want n
	shim_fixture
	write_batch_step_job
	run_traced_job "batchstep-$$" 0
	assert_file_contains "the job ran to its end" out.txt "done"
	# The plugin names the step; Slurm leaves SLURM_STEP_ID unset in the
	# batch step before 26.05 and sets it to -5 from 26.05 on.
	assert_file_contains "the plugin's step in the batch script" out.txt \
		"ENV IOSTAGE_STEP=$SUBMIT_JOBID.4294967291 "
	grep -qE '^ENV .* SLURM_STEP_ID=(unset|-5) ENVIRONMENT=BATCH$' out.txt ||
		fail "the batch step's Slurm environment is not what shim/slurmstep.h expects: $(grep '^ENV' out.txt)"
	rec=$(as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" telemetry "$SUBMIT_JOBID" --json) ||
		fail "iostage telemetry $SUBMIT_JOBID failed: $rec"
	rec=$(printf '%s' "$rec" | jq -c '.record // .')
	for tag in DIRECT:4294967291 DIRECT_ENV:4294967291 STEP:0 STEP_ENV:0 TASK:0; do
		want=${tag#*:}
		tag=${tag%%:*}
		pid=$(sed -n "s/^$tag \([0-9][0-9]*\)$/\1/p" out.txt)
		[ -n "$pid" ] || fail "no '$tag PID' line in out.txt: $(cat out.txt)"
		assert_eq "$tag (pid $pid): its step" "$want" \
			"$(printf '%s' "$rec" | jq -r --argjson p "$pid" '.processes[] | select(.pid == $p) | .step')"
	done
	# The script itself, registered by slurmstepd, is in the batch step
	# too; every process of the job has a step, and only these two.
	assert_eq "the registered batch task" 1 \
		"$(printf '%s' "$rec" | jq '[.processes[] | select(.step == 4294967291 and .rchar != null)] | length')"
	assert_eq "processes without a step" 0 \
		"$(printf '%s' "$rec" | jq '[.processes[] | select(.step == null)] | length')"
	assert_eq "the job's steps" "0,4294967291" \
		"$(printf '%s' "$rec" | jq -r '[.processes[].step] | unique | map(tostring) | join(",")')"
	# The readers are the batch script's and the task's children, known
	# only from their shim summaries (traced, no /proc figure); the task
	# is registered.
	for tag in DIRECT DIRECT_ENV STEP STEP_ENV; do
		pid=$(sed -n "s/^$tag \([0-9][0-9]*\)$/\1/p" out.txt)
		assert_eq "$tag (pid $pid): traced, not a registered task" \
			"true null" \
			"$(printf '%s' "$rec" | jq -r --argjson p "$pid" '.processes[] | select(.pid == $p) | "\(.traced) \(.rchar)"')"
	done
	pid=$(sed -n 's/^TASK \([0-9][0-9]*\)$/\1/p' out.txt)
	assert_ne "the srun task is registered" null \
		"$(printf '%s' "$rec" | jq -r --argjson p "$pid" '.processes[] | select(.pid == $p) | .rchar')"
	# The table names the batch step as sacct does.
	tab=$(as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" telemetry "$SUBMIT_JOBID") ||
		fail "iostage telemetry $SUBMIT_JOBID failed: $tab"
	pid=$(sed -n 's/^DIRECT \([0-9][0-9]*\)$/\1/p' out.txt)
	printf '%s\n' "$tab" | grep -qE "^$pid +batch " ||
		fail "no '$pid batch' row in the table: $tab"
}

# The rules read what telemetry and the shim record: three traced jobs
# with small random reads of one dataset make the history advise staging
# it, with those jobs as evidence.
test_traced_small_random_reads_recommend_stage() {
	local ids=() j rec name="rand-reader-$$"
	shim_fixture
	write_traced_job
	for j in 1 2 3; do
		run_traced_job "$name" 1100
		ids+=("$SUBMIT_JOBID")
	done
	rec=$(as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" recommend --job-name "$name" --json) ||
		fail "iostage recommend failed: $rec"
	assert_eq "stage advised for the dataset" stage \
		"$(printf '%s' "$rec" | jq -r --arg t "$DS" '.recommendations[] | select(.target == $t and .rule == "stage") | .rule')"
	for j in "${ids[@]}"; do
		assert_contains "evidence names job $j" \
			"$(printf '%s' "$rec" | jq -c --arg t "$DS" '.recommendations[] | select(.rule == "stage" and .target == $t) | .evidence.jobs')" "$j"
	done
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
