# shellcheck shell=bash
# Telemetry: every iostage job gets stage_in / run / stage_out records; the
# run's I/O comes from /proc/PID/io of the registered tasks (no change to
# the application) and matches what the job did; phase markers carry the
# PMIx identity of each rank; records are private to their owner, survive
# a daemon restart, and shim reports are merged (and refused when forged).
. "$IT_DIR/datasets.sh"

MiB=1048576

pfs_dir() {
	install -d -o "$TEST_USER" -g "$(id -gn "$TEST_USER")" -m 0755 "$TEST_WORKDIR/$1"
	printf '%s\n' "$TEST_WORKDIR/$1"
}

# telemetry_json USER JOBID: the record as USER sees it (stdout), rc of the CLI.
telemetry_json() {
	as_user "$1" iostage -c "$IOSTAGE_CONF" telemetry "$2" --json
}

# wait_finished JOBID [TIMEOUT_S=60]: the record once the Epilog closed it.
wait_finished() {
	local i rec
	for ((i = 0; i < ${2:-60} * 5; i++)); do
		rec=$(iostage -c "$IOSTAGE_CONF" telemetry "$1" --json 2>/dev/null)
		if printf '%s' "$rec" | jq -e '.end' >/dev/null 2>&1; then
			printf '%s\n' "$rec"
			return 0
		fi
		sleep 0.2
	done
	echo "no finished telemetry record for job $1: $rec" >&2
	return 1
}

# wait_procs JOBID N: until the live record lists N processes.
wait_procs() {
	local i n
	for ((i = 0; i < 150; i++)); do
		n=$(iostage -c "$IOSTAGE_CONF" telemetry "$1" --json 2>/dev/null |
			jq '.processes | length' 2>/dev/null)
		[ "${n:-0}" -ge "$2" ] && return 0
		sleep 0.2
	done
	echo "job $1: expected $2 registered processes, got '${n:-}'" >&2
	return 1
}

# assert_within WHAT EXPECTED GOT PERCENT
assert_within() {
	awk -v e="$2" -v g="$3" -v p="$4" 'BEGIN {
		d = g - e; if (d < 0) d = -d; exit !(g != "" && d <= e * p / 100) }' ||
		fail "$1: expected $2 within $4%, got '$3'"
}

test_telemetry_job_io_recorded_within_5_percent() {
	local ds="$TEST_WORKDIR/pfs/ds" pfsout rec
	mkdir -p "$ds"
	head -c $((24 * MiB)) /dev/urandom >"$ds/big.bin"
	chown -R "$TEST_USER:" "$ds"
	pfsout="$(pfs_dir pfs)/out"
	# What the job does, in read(2)/write(2) bytes: sha256sum reads 24 MiB
	# of the staged dataset; dd reads 16 MiB of /dev/zero and writes 16 MiB
	# to the output. So: 40 MiB read, 16 MiB written. Both happen in
	# children that live less than a sampling interval, and the job ends
	# right after the write: the record must still have all of it.
	cat >job.sh <<'JOB'
#!/bin/bash
sha256sum "$IOSTAGE_DATA/big.bin" >/dev/null
dd if=/dev/zero of="$IOSTAGE_OUTPUT/out.bin" bs=1M count=16 status=none
JOB
	# Untraced (dl-train traces): only the registered task is listed, the
	# shim's summaries would add its children (test_shim.sh covers them).
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds,out=$pfsout,trace=false" \
		-J tel-io -o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt)"
	rec=$(wait_finished "$SUBMIT_JOBID") || fail "no finished record"
	assert_eq "phases" "stage_in run stage_out" \
		"$(printf '%s' "$rec" | jq -r '[.phases[] | select(.parent == null) | .name] | join(" ")')"
	assert_eq "job name" tel-io "$(printf '%s' "$rec" | jq -r .job_name)"
	assert_eq "state" completed "$(printf '%s' "$rec" | jq -r .state)"
	assert_eq "stage_in bytes" $((24 * MiB)) \
		"$(printf '%s' "$rec" | jq '.phases[] | select(.name == "stage_in") | .bytes')"
	assert_within "run read bytes" $((40 * MiB)) \
		"$(printf '%s' "$rec" | jq '.phases[] | select(.name == "run") | .read_bytes')" 5
	assert_within "run written bytes" $((16 * MiB)) \
		"$(printf '%s' "$rec" | jq '.phases[] | select(.name == "run") | .write_bytes')" 5
	# The timeline holds the same bytes as the totals.
	assert_eq "timeline sums to the run's write bytes" \
		"$(printf '%s' "$rec" | jq '.phases[] | select(.name == "run") | .write_bytes')" \
		"$(printf '%s' "$rec" | jq '[.phases[] | select(.name == "run") | .timeline[][2]] | add')"
	assert_eq "stage_out bytes" $((16 * MiB)) \
		"$(printf '%s' "$rec" | jq '.phases[] | select(.name == "stage_out") | .bytes')"
	assert_eq "one registered task (the batch script)" 1 \
		"$(printf '%s' "$rec" | jq '.processes | length')"
	assert_eq "its identity" slurm "$(printf '%s' "$rec" | jq -r '.processes[0].identity')"
	[ -f "$IOSTAGE_STATE/telemetry/$SUBMIT_JOBID.json" ] ||
		fail "record file: expected $IOSTAGE_STATE/telemetry/$SUBMIT_JOBID.json"
}

# Markers split the run exactly where the job put them, not at sampling
# intervals: the job is sampled at every begin and end. The phases are
# shorter than the 1 s sampling interval, so whole-interval attribution
# would smear the reads into compute and the writes into read.
test_telemetry_markers_split_io_exactly() {
	local ds="$TEST_WORKDIR/pfs/mark" pfsout rec
	mkdir -p "$ds"
	head -c $((8 * MiB)) /dev/urandom >"$ds/part.bin"
	chown -R "$TEST_USER:" "$ds"
	pfsout="$(pfs_dir pfs)/ckpt"
	cat >job.sh <<'JOB'
#!/bin/bash
iostage phase begin read
sha256sum "$IOSTAGE_DATA/part.bin" >/dev/null
iostage phase end read
iostage phase begin compute
sleep 0.3
iostage phase end compute
iostage phase begin checkpoint
dd if=/dev/zero of="$IOSTAGE_OUTPUT/ckpt.bin" bs=1M count=4 status=none
iostage phase end checkpoint
JOB
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds,out=$pfsout,trace=false" \
		-o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt)"
	rec=$(wait_finished "$SUBMIT_JOBID") || fail "no finished record"
	sub() { printf '%s' "$rec" | jq -r --arg n "$1" ".phases[] | select(.name == \$n) | .$2"; }
	assert_within "read phase: bytes read" $((8 * MiB)) "$(sub read read_bytes)" 5
	assert_within "checkpoint phase: bytes written" $((4 * MiB)) "$(sub checkpoint write_bytes)" 5
	# dd reads 4 MiB of /dev/zero inside checkpoint: none of it in compute
	[ "$(sub compute read_bytes)" -lt $((MiB / 2)) ] ||
		fail "compute phase got the reads of its neighbours: $(sub compute read_bytes) bytes"
	[ "$(sub compute write_bytes)" -lt $((MiB / 2)) ] ||
		fail "compute phase got the writes of its neighbours: $(sub compute write_bytes) bytes"
	[ "$(sub read write_bytes)" -lt $((MiB / 2)) ] ||
		fail "read phase got the checkpoint's writes: $(sub read write_bytes) bytes"
}

test_telemetry_pmix_ranks_and_markers() {
	local ds="$TEST_WORKDIR/pfs/ds" rec out mpi=pmix src=pmix
	make_dataset "$ds"
	# Debian's Slurm 26.05 ships no mpi/pmix plugin (slurm-wlm-basic-
	# plugins 26.05.5): there the ranks come from Slurm's environment,
	# which is what libiostage falls back to without PMIx.
	if ! srun --mpi=list 2>&1 | grep -qw pmix; then
		echo "this Slurm has no mpi/pmix plugin: ranks from SLURM_PROCID"
		mpi=none src=slurm
	fi
	# A tiny application built against the installed header and library.
	cat >app.c <<'C'
#include <stdio.h>
#include <iostage.h>
int main(void)
{
	struct iostage_identity id;
	if (iostage_identity(&id) < 0) { perror("identity"); return 1; }
	if (iostage_phase_begin("compute") < 0) { perror("begin"); return 1; }
	if (iostage_phase_end("compute") < 0) { perror("end"); return 1; }
	printf("APP rank %lld local %lld source %s\n", (long long)id.rank,
	       (long long)id.local_rank, id.source);
	return 0;
}
C
	gcc -o app app.c -I"$IOSTAGE_INCLUDEDIR" -L"$IOSTAGE_LIBDIR" \
		-liostage || fail "cannot build a program against libiostage"
	chmod 0755 app
	cat >job.sh <<'JOB'
#!/bin/bash
srun --mpi=$MPI -n 2 "$IOSTAGE_CLI" phase begin load || echo MARK_FAILED
srun --mpi=$MPI -n 2 "$IOSTAGE_CLI" phase end load || echo MARK_FAILED
LD_LIBRARY_PATH="$LIBDIR" srun --mpi=$MPI -n 2 ./app
"$IOSTAGE_CLI" phase begin 'bad name' 2>&1 | sed 's/^/REFUSED /'
JOB
	submit_wait "$TEST_USER" -n 2 \
		--export=ALL,MPI=$mpi,IOSTAGE_CLI="$(command -v iostage)",LIBDIR="$IOSTAGE_LIBDIR" \
		--io-profile="dl-train,data=$ds" -o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt)"
	out=$(cat out.txt)
	assert_not_contains "markers from srun --mpi=$mpi" "$out" MARK_FAILED
	assert_contains "app rank 0 through $src" "$out" "APP rank 0 local 0 source $src"
	assert_contains "app rank 1 through $src" "$out" "APP rank 1 local 1 source $src"
	assert_contains "a bad phase name is refused" "$out" "REFUSED iostage: phase begin bad name: 'bad name' is not a phase name"
	rec=$(wait_finished "$SUBMIT_JOBID") || fail "no finished record"
	assert_eq "ranks of the $src processes" "0 1" \
		"$(printf '%s' "$rec" | jq -r --arg s "$src" '[.processes[] | select(.identity == $s and .step < 3) | .rank] | unique | map(tostring) | join(" ")')"
	# (the batch step's own processes are "slurm" too, in step 4294967291)
	assert_eq "$src processes (2 ranks x 3 steps)" 6 \
		"$(printf '%s' "$rec" | jq --arg s "$src" '[.processes[] | select(.identity == $s and .step < 3)] | length')"
	assert_eq "sub-phase load: marker, ranks 0 and 1" "marker 0,1" \
		"$(printf '%s' "$rec" | jq -r '.phases[] | select(.name == "load") | "\(.source) \(.ranks | sort | map(tostring) | join(","))"')"
	assert_eq "sub-phase compute from the C API" "run" \
		"$(printf '%s' "$rec" | jq -r '.phases[] | select(.name == "compute") | .parent')"
	printf '%s' "$rec" | jq -e '.phases[] | select(.name == "load") | .end >= .start' >/dev/null ||
		fail "load: expected end >= start, got $(printf '%s' "$rec" | jq -c '.phases')"
}

test_telemetry_visible_to_owner_only() {
	local ds="$TEST_WORKDIR/pfs/ds" out rc
	make_dataset "$ds"
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds" -o out.txt \
		--wrap 'cat "$IOSTAGE_DATA"/train/a/x.bin >/dev/null' >/dev/null ||
		fail "job failed: $SUBMIT_OUT"
	wait_finished "$SUBMIT_JOBID" >/dev/null || fail "no finished record"
	out=$(as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" telemetry "$SUBMIT_JOBID" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	assert_eq "owner: exit code" 0 "$rc"
	assert_contains "owner: phases table" "$out" "PHASE"
	assert_contains "owner: stage_in row" "$out" "stage_in"
	assert_contains "owner: timeline" "$out" "run timeline"
	out=$(as_user "$OTHER_USER" iostage -c "$IOSTAGE_CONF" telemetry "$SUBMIT_JOBID" 2>&1)
	rc=$?
	assert_eq "other user: exit code" 1 "$rc"
	assert_contains "other user: refused" "$out" "permission denied: job $SUBMIT_JOBID belongs to another user"
	out=$(iostage -c "$IOSTAGE_CONF" telemetry "$SUBMIT_JOBID" --json 2>&1) ||
		fail "root: expected the record, got $out"
	assert_eq "root sees the owner's record" "$TEST_USER" "$(printf '%s' "$out" | jq -r .user)"
	out=$(iostage -c "$IOSTAGE_CONF" telemetry 4000000 2>&1)
	assert_contains "unknown job" "$out" "unknown job 4000000"
}

test_telemetry_record_survives_restart() {
	local ds="$TEST_WORKDIR/pfs/ds" pfsout rec before
	make_dataset "$ds"
	pfsout="$(pfs_dir pfs)/out"
	# The job writes 8 MiB before and 8 MiB after the daemon restarts.
	cat >job.sh <<'JOB'
#!/bin/bash
dd if=/dev/zero of="$IOSTAGE_OUTPUT/a.bin" bs=1M count=8 status=none
while [ ! -e "$FLAG" ]; do sleep 0.2; done
dd if=/dev/zero of="$IOSTAGE_OUTPUT/b.bin" bs=1M count=8 status=none
JOB
	# Untraced: the record lists the one registered task.
	submit "$TEST_USER" --export=ALL,FLAG="$TEST_WORKDIR/go" \
		--io-profile="dl-train,data=$ds,out=$pfsout,trace=false" -o out.txt job.sh >/dev/null ||
		fail "submit failed: $SUBMIT_OUT"
	wait_procs "$SUBMIT_JOBID" 1 || fail "task never registered"
	# Until the first 8 MiB are in the record (and on disk: it is
	# rewritten every few seconds while it changes).
	for _ in $(seq 1 100); do
		before=$(jq '.phases[] | select(.name == "run") | .write_bytes' \
			"$IOSTAGE_STATE/telemetry/$SUBMIT_JOBID.json" 2>/dev/null)
		[ "${before:-0}" -ge $((8 * MiB)) ] && break
		sleep 0.2
	done
	[ "${before:-0}" -ge $((8 * MiB)) ] || fail "persisted write bytes before the restart: got '${before:-}'"
	iostaged_restart || fail "iostaged did not restart"
	grep -q "job $SUBMIT_JOBID: telemetry resumed (1 processes)" "$IOSTAGED_LOG" ||
		fail "expected 'telemetry resumed' for job $SUBMIT_JOBID in the log"
	touch "$TEST_WORKDIR/go"
	wait_job_state "$SUBMIT_JOBID" COMPLETED 60 || fail "job did not complete"
	rec=$(wait_finished "$SUBMIT_JOBID") || fail "no finished record"
	assert_within "written bytes across the restart" $((16 * MiB)) \
		"$(printf '%s' "$rec" | jq '.phases[] | select(.name == "run") | .write_bytes')" 5
	# A finished record is answered from disk after another restart.
	iostaged_restart || fail "iostaged did not restart"
	rec=$(telemetry_json "$TEST_USER" "$SUBMIT_JOBID") || fail "record gone after a restart: $rec"
	assert_eq "phases after a restart" "stage_in run stage_out" \
		"$(printf '%s' "$rec" | jq -r '[.phases[] | select(.parent == null) | .name] | join(" ")')"
}

test_telemetry_shim_report_merged_and_forgeries_refused() {
	local ds="$TEST_WORKDIR/pfs/ds" r rec big
	make_dataset "$ds"
	submit "$TEST_USER" --export=ALL,FLAG="$TEST_WORKDIR/go" \
		--io-profile="dl-train,data=$ds" -o out.txt \
		--wrap 'while [ ! -e "$FLAG" ]; do sleep 0.2; done' >/dev/null ||
		fail "submit failed: $SUBMIT_OUT"
	wait_procs "$SUBMIT_JOBID" 1 || fail "task never registered"
	local J=$SUBMIT_JOBID
	r=$(iostaged_request "{\"op\":\"shim_report\",\"job\":$J,\"pid\":424242,\"rank\":3,\"counters\":{\"run\":{\"dataset\":{\"POSIX_READS\":10,\"POSIX_BYTES_READ\":40960,\"POSIX_SIZE_READ_1K_10K\":10}},\"checkpoint\":{\"output\":{\"POSIX_WRITES\":2,\"POSIX_BYTES_WRITTEN\":8192}}},\"io_seconds\":{\"run\":0.5,\"checkpoint\":0.5},\"unoverlapped\":{\"run\":0.25,\"checkpoint\":0.5},\"ppid\":1,\"identity\":\"slurm\",\"reason\":\"exec\",\"files\":[{\"path\":\"$TEST_WORKDIR/o/ckpt\",\"class\":\"output\",\"written\":8192}]}")
	assert_contains "shim_report by hand" "$r" '"ok":true'
	# The same process after its exec: a second summary, added up.
	r=$(iostaged_request "{\"op\":\"shim_report\",\"job\":$J,\"pid\":424242,\"ppid\":1,\"rank\":3,\"reason\":\"exit\",\"counters\":{\"read\":{\"dataset\":{\"POSIX_READS\":5,\"POSIX_BYTES_READ\":20480,\"POSIX_SIZE_READ_1K_10K\":5}}},\"files\":[{\"path\":\"$TEST_WORKDIR/o/ckpt\",\"class\":\"output\",\"written\":4096}]}")
	assert_contains "second shim_report of the pid" "$r" '"ok":true'
	r=$(iostaged_request "{\"op\":\"shim_report\",\"job\":$J,\"files\":[{\"path_class\":\"output\",\"written\":1,\"shared\":true}]}")
	assert_contains "the old files format" "$r" "unknown key 'path_class'"
	# Forged or oversized reports are refused, one clear line each.
	r=$(iostaged_request "{\"op\":\"shim_report\",\"job\":$J,\"counters\":{\"run\":{\"dataset\":{\"POSIX_EVIL\":1}}}}")
	assert_contains "unknown counter" "$r" "unknown counter 'POSIX_EVIL'"
	r=$(iostaged_request "{\"op\":\"shim_report\",\"job\":$J,\"counters\":{\"run\":{\"etc\":{\"POSIX_READS\":1}}}}")
	assert_contains "unknown file class" "$r" "unknown file class 'etc'"
	r=$(iostaged_request "{\"op\":\"shim_report\",\"job\":$J,\"counters\":{\"run\":{\"dataset\":{\"POSIX_READS\":-5}}}}")
	assert_contains "negative counter" "$r" "must be a number >= 0"
	r=$(iostaged_request "{\"op\":\"shim_report\",\"job\":$J,\"uid\":0}")
	assert_contains "unknown key" "$r" "unknown key 'uid'"
	r=$(iostaged_request "{\"op\":\"shim_report\",\"job\":$J,\"pid\":424243,\"step\":4294967296}")
	assert_contains "a step id beyond uint32" "$r" "key 'step': must be a step id"
	r=$(iostaged_request "$TEST_USER" "{\"op\":\"shim_report\",\"job\":$J,\"pid\":1,\"counters\":{}}")
	assert_contains "a user cannot report for another pid" "$r" "is not the sender"
	r=$(iostaged_request "$OTHER_USER" "{\"op\":\"shim_report\",\"job\":$J,\"counters\":{}}")
	assert_contains "another user's job" "$r" "permission denied"
	r=$(iostaged_request "$OTHER_USER" "{\"op\":\"task_register\",\"job\":$J,\"pid\":$$}")
	assert_contains "task_register is root's" "$r" '"ok":false'
	big=$(head -c 300000 /dev/zero | tr '\0' a)
	r=$(iostaged_request "{\"op\":\"shim_report\",\"job\":$J,\"node\":\"$big\"}")
	assert_contains "oversized line refused" "$r" '"ok":false'
	big=$(for i in $(seq 1 40); do printf '"p%d":{"other":{"POSIX_READS":1}},' "$i"; done)
	r=$(iostaged_request "{\"op\":\"shim_report\",\"job\":$J,\"counters\":{${big%,}}}")
	assert_contains "too many phases" "$r" "more than 32 phases"
	r=$(iostaged_request '{"op":"ping"}')
	assert_contains "the daemon keeps serving" "$r" '"ok":true'

	touch "$TEST_WORKDIR/go"
	wait_job_state "$J" COMPLETED 60 || fail "job did not complete"
	rec=$(wait_finished "$J") || fail "no finished record"
	# The run phase holds the totals of every phase of both reports.
	assert_eq "run counters from the reports (reads bytes 1K_10K written)" \
		"$(printf '15\t61440\t15\t8192')" \
		"$(printf '%s' "$rec" | jq -r '.phases[] | select(.name == "run") | .counters | [.dataset.POSIX_READS, .dataset.POSIX_BYTES_READ, .dataset.POSIX_SIZE_READ_1K_10K, .output.POSIX_BYTES_WRITTEN] | @tsv')"
	# (The job's own traced shell and sleeps add their few microseconds.)
	assert_eq "run I/O and unoverlapped I/O seconds (1, 0.75 and the shell's)" true \
		"$(printf '%s' "$rec" | jq -r '.phases[] | select(.name == "run") | .io_seconds >= 1 and .io_seconds < 1.1 and .unoverlapped_io_seconds >= 0.75 and .unoverlapped_io_seconds < 0.85')"
	assert_eq "read sub-phase (auto) from the second report" 20480 \
		"$(printf '%s' "$rec" | jq '.phases[] | select(.name == "read") | .counters.dataset.POSIX_BYTES_READ')"
	assert_eq "one process wrote the file twice: file-per-process" \
		"$(printf '0\t1')" \
		"$(printf '%s' "$rec" | jq -r '.phases[] | select(.name == "run") | [.shared_files, .fpp_files] | @tsv')"
	assert_eq "the reporting process listed once" 1 \
		"$(printf '%s' "$rec" | jq '[.processes[] | select(.pid == 424242)] | length')"
	assert_eq "checkpoint sub-phase (auto, from the shim)" "auto 8192" \
		"$(printf '%s' "$rec" | jq -r '.phases[] | select(.name == "checkpoint") | "\(.source) \(.counters.output.POSIX_BYTES_WRITTEN)"')"
	assert_eq "the reporting process, traced" "true 3" \
		"$(printf '%s' "$rec" | jq -r '.processes[] | select(.pid == 424242) | "\(.traced) \(.rank)"')"
	assert_eq "its reports named no step: none invented (not 0)" false \
		"$(printf '%s' "$rec" | jq -r '.processes[] | select(.pid == 424242) | has("step")')"
	assert_eq "the refused reports left no trace" null \
		"$(printf '%s' "$rec" | jq '.phases[] | select(.name == "run") | .counters.dataset.POSIX_EVIL')"
}

# Each dataset's own size in the record (staging used to keep only the
# job's totals): built on the first run, a cache hit with cached_bytes on
# the second.
test_telemetry_dataset_sizes_per_dataset() {
	local a="$TEST_WORKDIR/pfs/dsa" b="$TEST_WORKDIR/pfs/dsb" rec run
	mkdir -p "$a" "$b/sub"
	head -c 5000 /dev/urandom >"$a/one"
	head -c 1000 /dev/urandom >"$b/x"
	head -c 2000 /dev/urandom >"$b/sub/y"
	chown -R "$TEST_USER:" "$a" "$b"
	cat >"$TEST_WORKDIR/p.json" <<JSON
{"datasets":[{"name":"a","path":"$a"},{"name":"b","path":"$b"}]}
JSON
	chmod 0644 "$TEST_WORKDIR/p.json"
	for run in built hit; do
		submit_wait "$TEST_USER" --io-profile="$TEST_WORKDIR/p.json" -o out.txt \
			--wrap 'cat "$IOSTAGE_DATA_A/one" "$IOSTAGE_DATA_B/x" >/dev/null' >/dev/null ||
			fail "job failed: $SUBMIT_OUT; output: $(cat out.txt 2>/dev/null)"
		rec=$(wait_finished "$SUBMIT_JOBID") || fail "no finished record"
		assert_eq "$run: datasets (name bytes files result)" \
			"$(printf 'a 5000 1 %s\nb 3000 2 %s' "$run" "$run")" \
			"$(printf '%s' "$rec" | jq -r '.datasets[] | "\(.name) \(.bytes) \(.files) \(.result)"')"
	done
	assert_eq "hit: cached_bytes per dataset" "5000 3000" \
		"$(printf '%s' "$rec" | jq -r '[.datasets[].cached_bytes] | map(tostring) | join(" ")')"
	assert_eq "stage_in: the sum" "8000 3" \
		"$(printf '%s' "$rec" | jq -r '.phases[] | select(.name == "stage_in") | "\(.bytes) \(.files)"')"
}

# The record's clock: stage_in starts at the Prolog's request, to the
# microsecond like the run phase (the task's own clock), so stage_in's end
# and the run's start can be compared. Whole seconds moved stage_in up to
# 1 s early: a submit right before it shows that, and so does its
# fraction.
test_telemetry_stage_in_start_to_the_microsecond() {
	local ds="$TEST_WORKDIR/pfs/clock" rec t0 si
	mkdir -p "$ds"
	head -c 1000 /dev/urandom >"$ds/x"
	chown -R "$TEST_USER:" "$ds"
	t0=$(date +%s.%N)
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds" -o out.txt \
		--wrap 'date +%s.%N' >/dev/null || fail "job failed: $SUBMIT_OUT"
	rec=$(wait_finished "$SUBMIT_JOBID") || fail "no finished record"
	si=$(jq -r '.phases[] | select(.name == "stage_in") | .start' <<<"$rec")
	awk -v si="$si" -v t0="$t0" 'BEGIN { exit !(si >= t0) }' ||
		fail "stage_in starts at $si, before the submit at $t0"
	awk -v si="$si" 'BEGIN { exit !(si != int(si)) }' || fail "stage_in start $si: whole seconds"
	assert_eq "the record's start is stage_in's" "$si" "$(jq -r .start <<<"$rec")"
	awk -v e="$(jq -r '.phases[] | select(.name == "stage_in") | .end' <<<"$rec")" \
		-v r="$(run_value "$rec" start)" -v task="$(cat out.txt)" \
		'BEGIN { exit !(e <= r && r <= task + 0.05) }' ||
		fail "stage_in end, run start, task clock out of order: $(jq -c .phases <<<"$rec"), task $(cat out.txt)"
}

# Issue 11 item 6: the run's bytes are file I/O, as Darshan counts them.
# cat reads 128 MiB of the dataset into /dev/null; dd reads 32 MiB of
# /dev/zero and writes them to the output (its summary goes to out.txt,
# a file: ~100 bytes). /proc's rchar/wchar count ~160 MiB each (pipes,
# devices and all); the shim counts 128 MiB read and 32 MiB written.
bytes_job() {
	BYTES_DS="$TEST_WORKDIR/pfs/bytes"
	mkdir -p "$BYTES_DS"
	head -c $((128 * MiB)) /dev/urandom >"$BYTES_DS/big.bin"
	chown -R "$TEST_USER:" "$BYTES_DS"
	BYTES_OUT="$(pfs_dir pfs)/bytes-out"
	cat >job.sh <<'JOB'
#!/bin/bash
cat "$IOSTAGE_DATA/big.bin" >/dev/null
dd if=/dev/zero of="$IOSTAGE_OUTPUT/x" bs=1M count=32
JOB
}

# run_value REC KEY: KEY of the record's run phase.
run_value() { printf '%s' "$1" | jq -r --arg k "$2" '.phases[] | select(.name == "run") | .[$k]'; }

test_telemetry_run_bytes_are_file_io_with_the_shim() {
	local rec out hist metrics
	bytes_job
	# dl-train traces (trace=true): the shim's summaries go to iostaged.
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$BYTES_DS,out=$BYTES_OUT" \
		-o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt)"
	rec=$(wait_finished "$SUBMIT_JOBID") || fail "no finished record"
	assert_eq "bytes_source" shim "$(run_value "$rec" bytes_source)"
	assert_within "run read_bytes: the dataset file only" $((128 * MiB)) \
		"$(run_value "$rec" read_bytes)" 5
	assert_within "run write_bytes: the output file only" $((32 * MiB)) \
		"$(run_value "$rec" write_bytes)" 5
	# /proc's figures stay, under their own names: pipes and devices in.
	assert_within "run rchar (cat's 128 MiB + dd's 32 MiB of /dev/zero)" \
		$((160 * MiB)) "$(run_value "$rec" rchar)" 5
	assert_within "run wchar (cat's 128 MiB to /dev/null + dd's 32 MiB)" \
		$((160 * MiB)) "$(run_value "$rec" wchar)" 5
	assert_eq "timeline still /proc's (sums to wchar)" \
		"$(run_value "$rec" wchar)" \
		"$(printf '%s' "$rec" | jq '[.phases[] | select(.name == "run") | .timeline[][2]] | add')"
	# Per process: cat read exactly the file; dd wrote exactly 32 MiB
	# plus its summary line on stderr (out.txt, a file).
	assert_eq "cat's file reads" 1 \
		"$(printf '%s' "$rec" | jq "[.processes[] | select(.read_bytes == $((128 * MiB)) and .write_bytes == 0)] | length")"
	assert_eq "dd's file writes" 1 \
		"$(printf '%s' "$rec" | jq "[.processes[] | select(.write_bytes >= $((32 * MiB)) and .write_bytes < $((32 * MiB + 4096)) and .read_bytes == 0)] | length")"
	# Shown as what they are.
	out=$(as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" telemetry "$SUBMIT_JOBID" 2>&1) ||
		fail "iostage telemetry: $out"
	printf '%s\n' "$out"
	assert_contains "telemetry table: file I/O" "$out" "file I/O (shim); rchar"
	assert_contains "telemetry table: timeline named" "$out" "run timeline (/proc rchar/wchar)"
	metrics=$(curl -sf --max-time 10 "http://127.0.0.1:$IOSTAGE_METRICS_PORT/metrics") ||
		fail "no /metrics"
	assert_contains "/metrics: the run's source" "$metrics" \
		"iostage_job_phase_bytes_source{jobid=\"$SUBMIT_JOBID\",phase=\"run\",source=\"shim\"} 1"
	assert_within "/metrics: the run's bytes read" $((128 * MiB)) \
		"$(printf '%s\n' "$metrics" | sed -n "s/^iostage_job_phase_bytes{jobid=\"$SUBMIT_JOBID\",phase=\"run\",direction=\"read\"} //p")" 5
	# The history files the same figures; the CSV export says their source.
	hist=$(iostaged_request "$TEST_USER" "{\"op\":\"history_get\",\"job\":$SUBMIT_JOBID}")
	assert_eq "history: the same run figures" \
		"$(printf '%s' "$rec" | jq -c '.phases[] | select(.name == "run") | [.bytes_source, .read_bytes, .write_bytes, .rchar, .wchar]')" \
		"$(printf '%s' "$hist" | jq -c '.record.phases[] | select(.name == "run") | [.bytes_source, .read_bytes, .write_bytes, .rchar, .wchar]')"
	out=$(as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" export --format csv --job "$SUBMIT_JOBID") ||
		fail "export csv: $out"
	assert_eq "CSV: run_bytes_source" shim \
		"$(printf '%s\n' "$out" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "run_bytes_source") c = i } NR == 2 { print $c }')"
}

test_telemetry_run_bytes_without_the_shim_say_rchar() {
	local rec out
	bytes_job
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$BYTES_DS,out=$BYTES_OUT,trace=false" \
		-o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt)"
	rec=$(wait_finished "$SUBMIT_JOBID") || fail "no finished record"
	assert_eq "bytes_source" proc_rchar "$(run_value "$rec" bytes_source)"
	assert_eq "read_bytes is rchar" "$(run_value "$rec" rchar)" "$(run_value "$rec" read_bytes)"
	assert_eq "write_bytes is wchar" "$(run_value "$rec" wchar)" "$(run_value "$rec" write_bytes)"
	assert_within "rchar: pipes and devices included" $((160 * MiB)) \
		"$(run_value "$rec" rchar)" 5
	assert_eq "no process claims file bytes" 0 \
		"$(printf '%s' "$rec" | jq '[.processes[] | select(.read_bytes != null)] | length')"
	out=$(as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" telemetry "$SUBMIT_JOBID" 2>&1) ||
		fail "iostage telemetry: $out"
	printf '%s\n' "$out"
	assert_contains "telemetry table: rchar" "$out" "rchar/wchar (every read and write call"
	out=$(as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" export --format html --job "$SUBMIT_JOBID") ||
		fail "export html: $out"
	assert_contains "HTML: what the bytes are" "$out" "Run bytes are /proc rchar and wchar"
}

# The file bytes and the /proc figures both survive an iostaged restart
# (the record is re-read: read_bytes of a process is its shim's, rchar is
# /proc's; records written before bytes_source are read as rchar).
test_telemetry_file_bytes_survive_restart() {
	local ds="$TEST_WORKDIR/pfs/ds" pfsout rec src
	make_dataset "$ds"
	pfsout="$(pfs_dir pfs)/out"
	cat >job.sh <<'JOB'
#!/bin/bash
dd if=/dev/zero of="$IOSTAGE_OUTPUT/a.bin" bs=1M count=8 status=none
while [ ! -e "$FLAG" ]; do sleep 0.2; done
dd if=/dev/zero of="$IOSTAGE_OUTPUT/b.bin" bs=1M count=8 status=none
JOB
	submit "$TEST_USER" --export=ALL,FLAG="$TEST_WORKDIR/go" \
		--io-profile="dl-train,data=$ds,out=$pfsout" -o out.txt job.sh >/dev/null ||
		fail "submit failed: $SUBMIT_OUT"
	wait_procs "$SUBMIT_JOBID" 1 || fail "task never registered"
	# Until the first dd's summary is in the persisted record.
	for _ in $(seq 1 100); do
		src=$(jq -r '.phases[] | select(.name == "run") | "\(.bytes_source) \(.write_bytes)"' \
			"$IOSTAGE_STATE/telemetry/$SUBMIT_JOBID.json" 2>/dev/null)
		[ "$src" = "shim $((8 * MiB))" ] && break
		sleep 0.2
	done
	assert_eq "persisted before the restart" "shim $((8 * MiB))" "$src"
	iostaged_restart || fail "iostaged did not restart"
	touch "$TEST_WORKDIR/go"
	wait_job_state "$SUBMIT_JOBID" COMPLETED 60 || fail "job did not complete"
	rec=$(wait_finished "$SUBMIT_JOBID") || fail "no finished record"
	assert_eq "file bytes across the restart" "shim $((16 * MiB))" \
		"$(printf '%s' "$rec" | jq -r '.phases[] | select(.name == "run") | "\(.bytes_source) \(.write_bytes)"')"
	assert_within "wchar across the restart" $((16 * MiB)) \
		"$(printf '%s' "$rec" | jq '.phases[] | select(.name == "run") | .wchar')" 5
	assert_eq "the two dd processes' file writes" "$((8 * MiB)) $((8 * MiB))" \
		"$(printf '%s' "$rec" | jq -r "[.processes[] | select(.write_bytes == $((8 * MiB))) | .write_bytes] | map(tostring) | join(\" \")")"
	assert_eq "the batch task: sampled, /proc's figure kept" true \
		"$(printf '%s' "$rec" | jq "[.processes[] | select(.step == 4294967291 and .wchar >= $((16 * MiB)))] | length == 1")"
}
