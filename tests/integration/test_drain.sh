# shellcheck shell=bash
# Outputs: files closed under IOSTAGE_OUTPUT drain to the PFS while the job
# runs, the Epilog drains the rest, and both are recorded; the drain runs
# as the user (a planted symlink stays a symlink); what cannot be drained
# by the deadline is kept on the tier, never deleted.
. "$IT_DIR/datasets.sh"

# pfs_dir NAME: a directory on the "PFS" owned by the test user.
pfs_dir() {
	install -d -o "$TEST_USER" -g "$(id -gn "$TEST_USER")" -m 0755 "$TEST_WORKDIR/$1"
	printf '%s\n' "$TEST_WORKDIR/$1"
}

# wait_record JOBID [TIMEOUT_S=60]: the drain record once the job's drain
# is done (the Epilog may still run after sbatch --wait returns).
wait_record() {
	local f="$IOSTAGE_STATE/drain/$1.json" i
	for ((i = 0; i < ${2:-60} * 5; i++)); do
		grep -q '"phase":"done"' "$f" 2>/dev/null && { cat "$f"; return 0; }
		sleep 0.2
	done
	echo "no finished drain record $f" >&2
	return 1
}

# json_num JSON KEY: the number KEY in one-line JSON.
json_num() { printf '%s' "$1" | grep -o "\"$2\":[0-9.]*" | head -n1 | cut -d: -f2; }

# assert_owned_by_test_user PATH...: every entry below (links included).
assert_owned_by_test_user() {
	local bad
	bad=$(find "$@" ! -user "$TEST_USER" -printf '%p %u\n')
	[ -z "$bad" ] || fail "owned by someone other than $TEST_USER: $bad"
}

test_outputs_drain_during_run_and_rest_at_end() {
	local ds="$TEST_WORKDIR/pfs/ds" pfsout rec jobdir log tel
	make_dataset "$ds"
	pfsout="$(pfs_dir pfs)/results"
	cat >job.sh <<'JOB'
#!/bin/bash
set -e
echo "OUTPUT=$IOSTAGE_OUTPUT"
echo "JOB_DIR=$IOSTAGE_JOB_DIR"
head -c 5000000 /dev/urandom >"$IOSTAGE_OUTPUT/file1"
for _ in $(seq 1 100); do [ -f "$PFSOUT/file1" ] && break; sleep 0.2; done
[ -f "$PFSOUT/file1" ] && echo DRAINED_DURING_RUN
cmp "$IOSTAGE_OUTPUT/file1" "$PFSOUT/file1" && echo SAME_DURING_RUN
for _ in $(seq 1 50); do
	"$IOSTAGE_CLI" -c "$IOSTAGE_CONF" status --json >status.json
	grep -q '"during_files":[[:space:]]*1,' status.json && break
	sleep 0.2
done
# While the job runs the drain worker yields the CPU to it (nice 10).
echo "WORKER_NICE=$(ps -o ni= -p "$(pgrep -u "$(id -u)" -f -- "--drain-worker $IOSTAGE_OUTPUT " | head -n1)" | tr -d ' ')"
# Hold our own drain worker: what follows is left for the end (the
# Epilog's finish continues it).
pkill -STOP -u "$(id -u)" -f -- "--drain-worker $IOSTAGE_OUTPUT " && echo WORKER_HELD
head -c 3000000 /dev/urandom >"$IOSTAGE_OUTPUT/file2"
mkdir "$IOSTAGE_OUTPUT/dir"
head -c 1000000 /dev/urandom >"$IOSTAGE_OUTPUT/dir/file3"
sleep 1
[ ! -e "$PFSOUT/file2" ] && echo FILE2_NOT_YET
(cd "$IOSTAGE_OUTPUT" && sha256sum file1 file2 dir/file3) | sed 's/^/SUM /'
JOB
	submit_wait "$TEST_USER" \
		--export=ALL,PFSOUT="$pfsout",IOSTAGE_CLI="$(command -v iostage)",IOSTAGE_CONF="$IOSTAGE_CONF" \
		--io-profile="dl-train,data=$ds,out=$pfsout" -o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt)"
	assert_file_contains "IOSTAGE_OUTPUT on the tier" out.txt \
		"OUTPUT=$IOSTAGE_TIERS/nvme/jobs/$SUBMIT_JOBID/out/results"
	assert_file_contains "file1 on the PFS while the job ran" out.txt DRAINED_DURING_RUN
	assert_file_contains "file1 complete while the job ran" out.txt SAME_DURING_RUN
	assert_file_contains "drain worker niced while the job runs" out.txt WORKER_NICE=10
	assert_file_contains "drain worker held by the job" out.txt WORKER_HELD
	assert_file_contains "file2 not drained while held" out.txt FILE2_NOT_YET
	grep -qE '"phase":[[:space:]]*"running"' status.json ||
		fail "status during the run: expected phase running, got $(cat status.json)"
	grep -qE '"during_files":[[:space:]]*1,' status.json ||
		fail "status during the run: expected during_files 1, got $(cat status.json)"

	rec=$(wait_record "$SUBMIT_JOBID") || fail "no drain record for job $SUBMIT_JOBID"
	# Byte for byte, as the job saw its files.
	sed -n 's/^SUM //p' out.txt >sums
	[ "$(wc -l <sums)" = 3 ] || fail "expected 3 checksums from the job, got: $(cat out.txt)"
	(cd "$pfsout" && sha256sum -c --quiet "$TEST_WORKDIR/sums") ||
		fail "PFS copy differs from what the job wrote"
	assert_eq "entries on the PFS" "dir dir/file3 file1 file2" \
		"$(cd "$pfsout" && find . -mindepth 1 -printf '%P\n' | sort | tr '\n' ' ' | sed 's/ $//')"
	assert_owned_by_test_user "$pfsout"
	[ -z "$(find "$pfsout" -name '.iostage-drain.*')" ] || fail "temporary files left on the PFS"

	# Recorded: what drained during the run and what was left for the end.
	assert_eq "record: during_files" 1 "$(json_num "$rec" during_files)"
	assert_eq "record: during_bytes" 5000000 "$(json_num "$rec" during_bytes)"
	assert_eq "record: end_files" 2 "$(json_num "$rec" end_files)"
	assert_eq "record: end_bytes" 4000000 "$(json_num "$rec" end_bytes)"
	assert_eq "record: failed_files" 0 "$(json_num "$rec" failed_files)"
	assert_contains "record: nothing kept" "$rec" '"kept":null'
	# Per output (RECORDS.md outputs[]): counts and the sizes of the
	# drained files in Darshan's buckets (5 MB, 3 MB, 1 MB).
	assert_eq "record: outputs[0] files bytes during end failed" \
		"$(printf 'results\t3\t9000000\t1\t5000000\t2\t4000000\t0')" \
		"$(printf '%s' "$rec" | jq -r '.outputs[0] | [.name, .files, .bytes, .during_files, .during_bytes, .end_files, .end_bytes, .failed_files] | @tsv')"
	assert_eq "record: outputs[0].size_hist" '{"100K_1M":1,"1M_4M":1,"4M_10M":1}' \
		"$(printf '%s' "$rec" | jq -c '.outputs[0].size_hist | with_entries(select(.value > 0))')"
	# The job's record, once finished, carries the same figures.
	for _ in $(seq 1 300); do
		tel=$(as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" telemetry "$SUBMIT_JOBID" --json 2>/dev/null)
		printf '%s' "$tel" | jq -e .end >/dev/null 2>&1 && break
		sleep 0.2
	done
	assert_eq "telemetry: outputs[0] as drained" \
		"$(printf '%s' "$rec" | jq -c '.outputs[0] | {files, bytes, during_files, during_bytes, end_files, end_bytes, failed_files, size_hist}')" \
		"$(printf '%s' "$tel" | jq -c '.outputs[0] | {files, bytes, during_files, during_bytes, end_files, end_bytes, failed_files, size_hist}')"
	log=$(grep "job $SUBMIT_JOBID: drained" "$IOSTAGED_LOG")
	assert_contains "log line" "$log" "drained 1 file (4.8 MiB) during the run, 2 files (3.8 MiB) at the end in"

	# The Epilog removed the job's directories, results and all.
	jobdir=$(sed -n 's/^JOB_DIR=//p' out.txt)
	for _ in $(seq 1 50); do [ -e "$jobdir" ] || break; sleep 0.2; done
	[ ! -e "$jobdir" ] || fail "epilog: $jobdir still exists"
	[ ! -e "$IOSTAGE_TIERS/nvme/jobs/.undrained/$SUBMIT_JOBID" ] || fail "results kept aside although drained"
}

test_job_without_outputs_is_unaffected() {
	local ds="$TEST_WORKDIR/pfs/ds"
	make_dataset "$ds"
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds" -o out.txt \
		--wrap 'echo "OUT=${IOSTAGE_OUTPUT-unset}"; ls "$IOSTAGE_JOB_DIR"' >/dev/null ||
		fail "job failed: $SUBMIT_OUT"
	assert_file_contains "no IOSTAGE_OUTPUT" out.txt "OUT=unset"
	! grep -qx out out.txt || fail "an out/ directory was made for a job without outputs"
	sleep 1
	[ ! -e "$IOSTAGE_STATE/drain/$SUBMIT_JOBID.json" ] || fail "a drain record for a job without outputs"
	! grep -q "job $SUBMIT_JOBID: drained" "$IOSTAGED_LOG" || fail "a drain logged for a job without outputs"
}

test_planted_symlink_is_not_followed() {
	local pfsout rec
	pfsout="$(pfs_dir pfs)/res"
	submit_wait "$TEST_USER" --io-profile="dl-train,out=$pfsout" -o out.txt --wrap '
		echo real >"$IOSTAGE_OUTPUT/real"
		ln -s /etc/shadow "$IOSTAGE_OUTPUT/leak"
		ln -s /etc "$IOSTAGE_OUTPUT/etcdir"
		mkfifo "$IOSTAGE_OUTPUT/pipe"
		echo WROTE' >/dev/null || fail "job failed: $SUBMIT_OUT"
	assert_file_contains "job output" out.txt WROTE
	rec=$(wait_record "$SUBMIT_JOBID") || fail "no drain record"
	assert_file_eq "regular file drained" "$pfsout/real" real
	# Links are re-created as links, by the user, never read through.
	[ -L "$pfsout/leak" ] || fail "leak: expected a symlink on the PFS, got $(stat -c %F "$pfsout/leak" 2>&1)"
	assert_eq "leak target" /etc/shadow "$(readlink "$pfsout/leak")"
	[ -L "$pfsout/etcdir" ] || fail "etcdir: expected a symlink, got $(stat -c %F "$pfsout/etcdir" 2>&1)"
	[ ! -e "$pfsout/pipe" ] || fail "a fifo was copied"
	assert_owned_by_test_user "$pfsout"
	! grep -rqs '^root:' "$pfsout" || fail "shadow contents reached the PFS"
	assert_eq "record: files drained" 1 \
		"$(($(json_num "$rec" during_files) + $(json_num "$rec" end_files)))"
	assert_contains "record: nothing kept" "$rec" '"kept":null'
}

test_undrainable_outputs_are_kept_not_deleted() {
	local pfsout rec kept
	pfs_dir pfs >/dev/null
	pfsout=$(pfs_dir pfs/locked)
	submit "$TEST_USER" --hold --io-profile="dl-train,out=$pfsout" -o out.txt --wrap '
		echo precious >"$IOSTAGE_OUTPUT/result.txt"; echo WROTE' >/dev/null ||
		fail "sbatch failed: $SUBMIT_OUT"
	# Writable at submit (checked), not any more when the job runs.
	chmod 0555 "$pfsout"
	scontrol release "$SUBMIT_JOBID"
	wait_job_state "$SUBMIT_JOBID" 'FAILED|COMPLETED' 60 || fail "job did not end"
	rec=$(wait_record "$SUBMIT_JOBID") || fail "no drain record"
	chmod 0755 "$pfsout"
	assert_file_contains "job output" out.txt WROTE
	assert_eq "job state (the Epilog never fails)" COMPLETED "$(job_end_state "$SUBMIT_JOBID")"
	kept="$IOSTAGE_TIERS/nvme/jobs/.undrained/$SUBMIT_JOBID"
	assert_contains "record: kept" "$rec" "\"kept\":\"$kept\""
	assert_file_eq "kept result" "$kept/locked/result.txt" precious
	assert_owned_by_test_user "$kept"
	[ "$(json_num "$rec" failed_files)" -ge 1 ] || fail "record: expected failed files, got $rec"
	assert_contains "log" "$(grep "job $SUBMIT_JOBID: outputs not fully drained" "$IOSTAGED_LOG")" "kept in $kept"
	[ ! -e "$IOSTAGE_TIERS/nvme/jobs/$SUBMIT_JOBID" ] || fail "job directory not removed"
	case "$(node_state)" in *drain* | *DRAIN*) fail "node drained: $(node_reason)" ;; esac
	rm -rf "$kept"
}

# --- a private iostaged with a short DrainTimeout, driven over its socket --

private_start() {
	mkdir -p "$TEST_WORKDIR/t"
	cat >"$TEST_WORKDIR/d.conf" <<CONF
SocketPath=$TEST_WORKDIR/d.sock
StateDir=$TEST_WORKDIR/state
ProfileDir=$IOSTAGE_SYSCONFDIR/slurm/iostage.d
Tier=nvme Path=$TEST_WORKDIR/t/nvme
DrainTimeout=${1:-2}
CONF
	iostaged -f -c "$TEST_WORKDIR/d.conf" >>"$TEST_WORKDIR/d.log" 2>&1 &
	PRIVATE_PID=$!
	for _ in $(seq 1 50); do [ -S "$TEST_WORKDIR/d.sock" ] && return 0; sleep 0.1; done
	fail "private iostaged did not start: $(cat "$TEST_WORKDIR/d.log")"
}

private_stop() {
	kill -TERM "$PRIVATE_PID" 2>/dev/null
	wait "$PRIVATE_PID" 2>/dev/null
}

private_request() {
	printf '%s\n' "$1" | socat -t "${2:-5}" - "UNIX-CONNECT:$TEST_WORKDIR/d.sock"
}

# private_stage JOBID PFSOUT: a staged job whose one output is PFSOUT.
private_stage() {
	local r
	r=$(private_request "{\"op\":\"stage\",\"job\":$1,\"uid\":$(id -u "$TEST_USER"),\"gid\":$(id -g "$TEST_USER"),\"user\":\"$TEST_USER\",\"profile\":{\"outputs\":[{\"name\":\"res\",\"path\":\"$2\"}]}}")
	assert_contains "stage" "$r" '"ok":true'
	r=$(private_request "{\"op\":\"wait\",\"job\":$1,\"timeout\":20}" 25)
	assert_contains "wait" "$r" '"state":"staged"'
}

test_deadline_keeps_what_is_left() {
	local pfsout out t0 t1 r pid holder kept
	pfsout="$(pfs_dir pfs)/res"
	private_start 2
	private_stage 4242 "$pfsout"
	out="$TEST_WORKDIR/t/nvme/jobs/4242/out/res"
	as_user "$TEST_USER" sh -c "echo first >'$out/first'"
	for _ in $(seq 1 50); do [ -f "$pfsout/first" ] && break; sleep 0.2; done
	[ -f "$pfsout/first" ] || fail "first file not drained during the run"
	pid=$(pgrep -u "$TEST_USER" -f -- "--drain-worker $out") || fail "no drain worker"
	# Keep the worker stopped whatever it is sent (finish sends SIGCONT
	# once) until it is killed at the deadline; with 2000 files waiting,
	# the moments it runs between two SIGSTOPs are not enough.
	(while kill -STOP "$pid" 2>/dev/null; do :; done) &
	holder=$!
	as_user "$TEST_USER" sh -c "cd '$out' && i=0 && while [ \$i -lt 2000 ]; do i=\$((i + 1)); echo \$i >late\$i; done"
	t0=$(date +%s)
	r=$(private_request '{"op":"finish","job":4242}' 60)
	t1=$(date +%s)
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	assert_contains "finish after the deadline" "$r" '"ok":true'
	[ $((t1 - t0)) -ge 2 ] && [ $((t1 - t0)) -le 15 ] ||
		fail "finish took $((t1 - t0)) s, expected about DrainTimeout=2"
	kept="$TEST_WORKDIR/t/nvme/jobs/.undrained/4242"
	assert_file_eq "kept late file" "$kept/res/late2000" 2000
	assert_eq "kept files" 2001 "$(find "$kept/res" -type f | wc -l)"
	[ ! -e "$TEST_WORKDIR/t/nvme/jobs/4242" ] || fail "job directory not removed"
	assert_file_contains "log" "$TEST_WORKDIR/d.log" "timed out after 2 s (DrainTimeout) with"
	assert_file_contains "record" "$TEST_WORKDIR/state/drain/4242.json" "\"kept\":\"$kept\""
	assert_file_contains "record" "$TEST_WORKDIR/state/drain/4242.json" '"timed_out":true'
	! pgrep -f -- "--drain-worker $out" >/dev/null || fail "drain worker still running"
	private_stop
}

test_restart_resumes_watching() {
	local pfsout out r rec
	pfsout="$(pfs_dir pfs)/res"
	private_start 30
	private_stage 4343 "$pfsout"
	out="$TEST_WORKDIR/t/nvme/jobs/4343/out/res"
	# the largest file (24 bytes) drained before the restart
	as_user "$TEST_USER" sh -c "echo one-the-largest-of-all >'$out/one'"
	for _ in $(seq 1 50); do [ -f "$pfsout/one" ] && break; sleep 0.2; done
	[ -f "$pfsout/one" ] || fail "first file not drained"
	private_stop
	as_user "$TEST_USER" sh -c "echo two >'$out/two'"
	private_start 30
	# Written while iostaged was down: found when it comes back.
	for _ in $(seq 1 50); do [ -f "$pfsout/two" ] && break; sleep 0.2; done
	[ -f "$pfsout/two" ] || fail "file written while iostaged was down not drained after restart"
	as_user "$TEST_USER" sh -c "mkdir '$out/sub' && echo three >'$out/sub/three'"
	for _ in $(seq 1 50); do [ -f "$pfsout/sub/three" ] && break; sleep 0.2; done
	[ -f "$pfsout/sub/three" ] || fail "watching did not resume after restart"
	r=$(private_request '{"op":"finish","job":4343}' 60)
	assert_contains "finish" "$r" '"ok":true'
	rec=$(cat "$TEST_WORKDIR/state/drain/4343.json")
	assert_eq "record: during_files across the restart" 3 "$(json_num "$rec" during_files)"
	assert_eq "record: outputs[0] during_files and 0_100 files across the restart" \
		"$(printf '3\t3')" \
		"$(printf '%s' "$rec" | jq -r '.outputs[0] | [.during_files, .size_hist["0_100"]] | @tsv')"
	assert_eq "record: the largest file across the restart" 23 \
		"$(printf '%s' "$rec" | jq -r '.outputs[0].max_file_bytes')"
	assert_eq "record: end_files" 0 "$(json_num "$rec" end_files)"
	assert_eq "PFS tree" "one sub sub/three two" \
		"$(cd "$pfsout" && find . -mindepth 1 -printf '%P\n' | sort | tr '\n' ' ' | sed 's/ $//')"
	private_stop
}
