# shellcheck shell=bash
# Injected faults (issue 15 item 3, docs/RELIABILITY.md): a tier whose
# file system really fills up (setup.sh's tier 'full', a 32 MiB ext4 on a
# loop device), the source changing or vanishing under a copy, and a PFS
# that stops answering (an sshfs mount whose SFTP server is SIGSTOPped),
# during staging and during the drain. In every case: the job follows its
# policy, nothing partial is left on the tier or listed by the cache,
# outputs are kept, and iostaged goes on serving.
. "$IT_DIR/datasets.sh"

FULL="$IOSTAGE_TIERS/full"

# many_files DIR N SIZE: N files of SIZE bytes, the test user's, 0750.
many_files() {
	mkdir -p "$1"
	head -c $(($2 * $3)) /dev/urandom | (cd "$1" && split -b "$3" -a 5 - f)
	chown -R "$TEST_USER:" "$1"
	chmod 0750 "$1"
}

# stage_worker DS: the pid of the worker copying DS as its user (not the
# public attempt, which gives up at once on the tests' 0750 trees; 20 s).
stage_worker() {
	local pid
	for _ in $(seq 1 2000); do
		pid=$(pgrep -f -- "--stage-worker --verify [a-z]+ --(previous|manifest-out) .* $1 " | head -n1)
		[ -n "$pid" ] && { echo "$pid"; return 0; }
		sleep 0.01
	done
	return 1
}

# freeze_mid_copy DS TIERDIR: DS's worker stopped with its copy on
# TIERDIR under way (some files copied, not all); the pid on stdout. The
# worker is stopped as soon as it appears, then let run in slices of a few
# milliseconds until its build holds a file, whatever the speed of the copy.
freeze_mid_copy() {
	local pid
	pid=$(stage_worker "$1") || { echo "no stage worker for $1" >&2; return 1; }
	kill -STOP "$pid" || return 1
	for _ in $(seq 1 3000); do
		if [ -n "$(find "$2"/cache/.build.*/data -type f -print -quit 2>/dev/null)" ]; then
			echo "$pid"
			return 0
		fi
		kill -CONT "$pid" 2>/dev/null || break
		sleep 0.002
		kill -STOP "$pid" 2>/dev/null || break
	done
	echo "the copy of $1 never got under way (worker $pid)" >&2
	return 1
}

# assert_nothing_partial TIERDIR: no build left, and the cache index lists
# exactly the complete entries on every tier.
assert_nothing_partial() {
	compgen -G "$1/cache/.build.*" >/dev/null && fail "partial build left: $(ls -a "$1/cache")"
	assert_cache_index_matches_tiers
}

assert_serving() {
	assert_contains "iostaged status ($1)" "$(iostaged_request '{"op":"status"}')" '"ok":true'
}

assert_node_ok() {
	case "$(node_state)" in *drain* | *DRAIN* | *fail*) fail "node $(node_state): $(node_reason)" ;; esac
}

# digest_job OUT DS: a job that prints the digest of its staged data
digest_job() {
	local ds=$2
	cat >digest.sh <<'JOB'
#!/bin/bash
cd "$IOSTAGE_DATA" && find . -mindepth 1 -printf '%y %p %s %l\n' | sort &&
	find . -type f -print0 | sort -z | xargs -0 -r sha256sum
JOB
	chmod +x digest.sh
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds:full" -o "$1" digest.sh >/dev/null ||
		fail "digest job failed: $SUBMIT_OUT"
	[ "$(tree_digest "$ds")" = "$(cat "$1")" ] || fail "staged data differs from the source"
}

# fill_fs DIR: write to DIR's file system until it is full (another tenant)
fill_fs() {
	trap 'rm -f "$FULL/filler"' EXIT
	dd if=/dev/zero of="$1/filler" bs=64k 2>/dev/null
	sync -f "$1" 2>/dev/null
	[ "$(df -k --output=avail "$1" | tail -1)" -lt 1024 ] || fail "$1 not full: $(df -h "$1" | tail -1)"
}

# --- a tier that really fills up -------------------------------------------

# full_mid_copy POLICY DS: a job whose copy to tier 'full' runs out of
# space half-way (a filler written while its worker is stopped).
full_mid_copy() {
	local pid
	submit "$TEST_USER" --io-profile="dl-train,data=$2:full,on-failure=$1" -o out.txt -e err.txt \
		--wrap 'echo "RAN FB=$IOSTAGE_FALLBACK DATA=$IOSTAGE_DATA"' >/dev/null || fail "sbatch: $SUBMIT_OUT"
	pid=$(freeze_mid_copy "$2" "$FULL") || fail "could not catch the copy"
	fill_fs "$FULL"
	kill -CONT "$pid"
	wait_job_state "$SUBMIT_JOBID" 'FAILED|COMPLETED' 60 || fail "job did not end"
	rm -f "$FULL/filler"
}

test_fault_tier_fs_full_mid_copy() {
	local ds="$TEST_WORKDIR/pfs/ds16"
	echo "tier 'full' is a $IOSTAGE_FULLFS_KIND file system"
	many_files "$ds" 2000 8192
	full_mid_copy fail "$ds"
	assert_eq "job state (on-failure=fail)" FAILED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "job stderr" err.txt "iostage: staging failed"
	assert_file_contains "job stderr" err.txt "No space left on device"
	! grep -q RAN out.txt 2>/dev/null || fail "the job script ran"
	assert_nothing_partial "$FULL"
	assert_node_ok
	assert_serving "after the full tier"
	full_mid_copy fallback "$ds"
	assert_eq "job state (on-failure=fallback)" COMPLETED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "job output" out.txt "RAN FB=1 DATA=$ds"
	assert_nothing_partial "$FULL"
	# With room again, the same dataset stages completely.
	digest_job d.txt "$ds"
	assert_nothing_partial "$FULL"
}

test_fault_tier_fs_full_mid_drain() {
	local pfsout rec kept f1
	install -d -o "$TEST_USER" -m 0755 "$TEST_WORKDIR/pfs"
	pfsout="$TEST_WORKDIR/pfs/res"
	# The job fills the tier its outputs are on: its last file is cut
	# short by ENOSPC, as any program's would be. Every byte it did
	# write reaches the PFS; the tier is empty afterwards.
	submit_wait "$TEST_USER" --io-profile="dl-train,tier=full,out=$pfsout" -o out.txt -e err.txt --wrap '
		head -c 4000000 /dev/urandom >"$IOSTAGE_OUTPUT/first"
		dd if=/dev/zero of="$IOSTAGE_OUTPUT/last" bs=1M 2>/dev/null || echo ENOSPC
		sha256sum "$IOSTAGE_OUTPUT/first" "$IOSTAGE_OUTPUT/last" | sed "s|$IOSTAGE_OUTPUT/||" >sums.txt
		df -k "$IOSTAGE_OUTPUT" | tail -1' >/dev/null
	assert_file_contains "job output" out.txt ENOSPC
	rec=$(wait_drain "$SUBMIT_JOBID") || fail "no drain record"
	assert_eq "job state" COMPLETED "$(job_end_state "$SUBMIT_JOBID")"
	(cd "$pfsout" && sha256sum -c "$TEST_WORKDIR/sums.txt") || fail "drained outputs differ from what the job wrote"
	[ "$(stat -c %s "$pfsout/last")" -gt 1000000 ] || fail "the output that filled the tier was not drained"
	assert_contains "drain record" "$rec" '"failed_files":0'
	[ ! -e "$FULL/jobs/$SUBMIT_JOBID" ] || fail "job directory left on the tier"
	assert_serving "after the outputs filled the tier"

	# The PFS side full: the drain fails, the outputs stay on the tier
	# (TIER/jobs/.undrained), the record and the log say so.
	mkdir -p "$TEST_WORKDIR/pfsfull"
	mount -t tmpfs -o size=1m,mode=0755 iostage-pfsfull "$TEST_WORKDIR/pfsfull" || fail "no tmpfs"
	trap 'umount -l "$TEST_WORKDIR/pfsfull" 2>/dev/null' EXIT
	install -d -o "$TEST_USER" -m 0755 "$TEST_WORKDIR/pfsfull/res"
	submit_wait "$TEST_USER" --io-profile="dl-train,tier=full,out=$TEST_WORKDIR/pfsfull/res" -o out2.txt --wrap '
		head -c 3000000 /dev/urandom >"$IOSTAGE_OUTPUT/big"
		echo small >"$IOSTAGE_OUTPUT/small"; sha256sum "$IOSTAGE_OUTPUT/big" | cut -d" " -f1' >/dev/null
	rec=$(wait_drain "$SUBMIT_JOBID") || fail "no drain record"
	kept="$FULL/jobs/.undrained/$SUBMIT_JOBID"
	assert_contains "record: kept" "$rec" "\"kept\":\"$kept\""
	[ "$(json_field "$rec" failed_files)" -ge 1 ] || fail "record: no failed files: $rec"
	f1=$(sha256sum "$kept/res/big" | cut -d' ' -f1)
	assert_file_contains "kept output is the job's" out2.txt "$f1"
	assert_file_eq "kept small output" "$kept/res/small" small
	assert_contains "log" "$(grep "job $SUBMIT_JOBID: outputs not fully drained" "$IOSTAGED_LOG")" "kept in $kept"
	[ -z "$(find "$TEST_WORKDIR/pfsfull/res" -name '.*' -type f)" ] || fail "temporary files left on the PFS"
	assert_node_ok
	assert_serving "after a full PFS"
	rm -rf "$kept"
}

# wait_drain JOBID: the finished drain record
wait_drain() {
	local f="$IOSTAGE_STATE/drain/$1.json"
	for _ in $(seq 1 300); do
		grep -q '"phase":"done"' "$f" 2>/dev/null && { cat "$f"; return 0; }
		sleep 0.2
	done
	return 1
}

json_field() { printf '%s' "$1" | grep -o "\"$2\":[0-9.]*" | head -n1 | cut -d: -f2; }

# --- the source changing or vanishing during the copy ----------------------

test_fault_source_changes_mid_copy() {
	local ds="$TEST_WORKDIR/pfs/chg" pid
	many_files "$ds" 2000 8192
	submit "$TEST_USER" --io-profile="dl-train,data=$ds:full" -o out.txt -e err.txt --wrap 'echo RAN' >/dev/null ||
		fail "sbatch: $SUBMIT_OUT"
	pid=$(freeze_mid_copy "$ds" "$FULL") || fail "could not catch the copy"
	# Every file rewritten (new content, same size) while the copy is
	# half done: what is left to copy no longer matches the walk.
	for f in "$ds"/f*; do head -c 8192 /dev/urandom >"$f"; done
	kill -CONT "$pid"
	wait_job_state "$SUBMIT_JOBID" 'FAILED|COMPLETED' 60 || fail "job did not end"
	assert_eq "job state" FAILED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "job stderr" err.txt "changed while being staged"
	assert_nothing_partial "$FULL"
	# The next job gets the new content, all of it.
	digest_job d.txt "$ds"
	assert_nothing_partial "$FULL"
}

test_fault_source_vanishes_mid_copy() {
	local ds="$TEST_WORKDIR/pfs/gone" pid
	many_files "$ds" 2000 8192
	submit "$TEST_USER" --io-profile="dl-train,data=$ds:full" -o out.txt -e err.txt --wrap 'echo RAN' >/dev/null ||
		fail "sbatch: $SUBMIT_OUT"
	pid=$(freeze_mid_copy "$ds" "$FULL") || fail "could not catch the copy"
	rm -rf "$ds"
	kill -CONT "$pid"
	wait_job_state "$SUBMIT_JOBID" 'FAILED|COMPLETED' 60 || fail "job did not end"
	assert_eq "job state" FAILED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "job stderr" err.txt "iostage: staging failed"
	assert_file_contains "job stderr" err.txt "$ds"
	assert_nothing_partial "$FULL"
	assert_node_ok
	assert_serving "after the source vanished"
}

# --- a PFS that stops answering ---------------------------------------------

# hang_pfs_up [USER=root]: $HANG_SRC served by sftp-server as USER (behind
# socat on a port of this cluster's) and mounted with sshfs at $HANG_MNT;
# the trap resumes and unmounts whatever happens. A server of the test
# user's is killed with the user's processes when a job of theirs ends
# (and the mount goes with it): only a test that writes files through it
# (which must be the user's) runs it so.
hang_pfs_up() {
	local as=${1:-root}
	local port=$((${CLUSTER_SLURMD_PORT:-16818} + 110))
	HANG_SRC="$TEST_WORKDIR/hang/src" HANG_MNT="$TEST_WORKDIR/hang/mnt"
	# remember=-1: libfuse keeps its inode numbers. Without it sshfs gives
	# a file a new one after the kernel forgets it, and the copy engine
	# (rightly, not knowing better) calls the file changed while staged.
	mkdir -p "$HANG_SRC" "$HANG_MNT"
	chmod 0755 "$TEST_WORKDIR/hang" "$HANG_SRC" "$HANG_MNT"
	socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr" \
		EXEC:"setpriv --reuid=$as --regid=$(id -g "$as") --init-groups /usr/lib/openssh/sftp-server" &
	HANG_SOCAT=$!
	trap hang_pfs_down EXIT
	for _ in $(seq 1 50); do ss -ltn "sport = :$port" | grep -q LISTEN && break; sleep 0.1; done
	sshfs -o "directport=$port,allow_other,default_permissions,remember=-1" \
		"127.0.0.1:$HANG_SRC" "$HANG_MNT" || fail "sshfs did not mount"
	HANG_SERVER=$(pgrep -P "$HANG_SOCAT" -f sftp-server) || fail "no sftp-server"
	# The mount's own server, the FUSE daemon: stopped, every request to
	# the mount waits (killably: requests it never read) until it resumes.
	HANG_FUSE=$(pgrep -f "^sshfs .* $HANG_MNT\$") || fail "no sshfs"
}

hang_pfs_down() {
	[ -n "${HANG_SERVER:-}" ] && kill -CONT "$HANG_SERVER" 2>/dev/null
	[ -n "${HANG_FUSE:-}" ] && kill -CONT "$HANG_FUSE" 2>/dev/null
	[ -n "${HANG_MNT:-}" ] && { fusermount -u -z "$HANG_MNT" 2>/dev/null || umount -l "$HANG_MNT" 2>/dev/null; }
	[ -n "${HANG_SOCAT:-}" ] && kill "$HANG_SOCAT" 2>/dev/null
	HANG_SERVER='' HANG_FUSE='' HANG_MNT='' HANG_SOCAT=''
}

test_fault_pfs_hangs_during_staging() {
	local ok="$TEST_WORKDIR/pfs/ok" nvme="$IOSTAGE_TIERS/nvme" pid jid t0
	hang_pfs_up
	many_files "$HANG_SRC/ds" 2000 32768
	make_dataset "$ok"
	submit "$TEST_USER" --hold --io-profile="dl-train,data=$HANG_MNT/ds:nvme,timeout=5" -o out.txt -e err.txt \
		--wrap 'echo RAN' >/dev/null || fail "sbatch: $SUBMIT_OUT"
	# The mount stops answering once the job is submitted (the submit
	# checks the source), before its staging starts: the walk, the
	# copy, everything waits on it.
	jid=$SUBMIT_JOBID
	kill -STOP "$HANG_FUSE"
	scontrol release "$jid"
	t0=$SECONDS
	# Another job, from a PFS that answers, is served meanwhile.
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ok" -o ok.txt \
		--wrap 'test -s "$IOSTAGE_DATA/train/a/x.bin" && echo OTHER_OK' >/dev/null ||
		fail "the other job failed while the PFS hung: $SUBMIT_OUT"
	assert_file_contains "other job" ok.txt OTHER_OK
	wait_job_state "$jid" 'FAILED|COMPLETED' 60 || fail "job did not end while the PFS hung"
	[ $((SECONDS - t0)) -le 40 ] || fail "the timeout took $((SECONDS - t0)) s"
	assert_file_contains "job stderr" err.txt "staging timed out after 5 s"
	! grep -q RAN out.txt 2>/dev/null || fail "the job script ran"
	assert_serving "while the PFS hangs"
	assert_node_ok
	# The PFS answers again: the worker (killed, but stuck in the mount
	# until then) goes, and nothing of its copy is left or listed.
	kill -CONT "$HANG_FUSE"
	for _ in $(seq 1 100); do pid=$(pgrep -f -- "--stage-worker.* $HANG_MNT/ds ") || break; sleep 0.1; done
	[ -z "$pid" ] || fail "worker $pid still there after the PFS came back"
	for _ in $(seq 1 50); do compgen -G "$nvme/cache/.build.*" >/dev/null || break; sleep 0.1; done
	assert_nothing_partial "$nvme"
	hang_pfs_down
}

test_fault_pfs_hangs_during_drain() {
	local rec kept pid ni
	hang_pfs_up "$TEST_USER"
	install -d -o "$TEST_USER" -m 0755 "$HANG_SRC/res"
	# A short DrainTimeout for this test (the Epilog waits it + 300 s).
	cp "$IOSTAGE_CONF" "$TEST_WORKDIR/node.conf"
	trap 'hang_pfs_down; cp "$TEST_WORKDIR/node.conf" "$IOSTAGE_CONF"; iostaged_restart' EXIT
	echo "DrainTimeout=4" >>"$IOSTAGE_CONF"
	iostaged_restart || fail "iostaged did not restart"
	submit "$TEST_USER" --io-profile="dl-train,tier=full,out=$HANG_MNT/res" -o out.txt --wrap '
		echo early >"$IOSTAGE_OUTPUT/early"
		for _ in $(seq 1 100); do [ -f "$PFSOUT/early" ] && break; sleep 0.1; done
		echo "EARLY=$(cat "$PFSOUT/early")"
		sleep 2
		head -c 2000000 /dev/urandom >"$IOSTAGE_OUTPUT/late"; sha256sum "$IOSTAGE_OUTPUT/late" | cut -d" " -f1' \
		--export=ALL,PFSOUT="$HANG_MNT/res" >/dev/null || fail "sbatch: $SUBMIT_OUT"
	for _ in $(seq 1 200); do [ -f "$HANG_SRC/res/early" ] && break; sleep 0.1; done
	[ -f "$HANG_SRC/res/early" ] || fail "nothing drained before the hang"
	sleep 0.5
	kill -STOP "$HANG_SERVER"
	# The worker hangs on the PFS; it ran at nice 10 beside the job and is
	# back at 0 once the Epilog waits for it (drain.c, DRAIN_RUN_NICE).
	for _ in $(seq 1 300); do
		pid=$(pgrep -f -- "--drain-worker .* $HANG_MNT/res\$" | head -n1)
		ni=$([ -z "$pid" ] || ps -o ni= -p "$pid" | tr -d ' ')
		[ "$ni" = 0 ] && break
		sleep 0.1
	done
	assert_eq "drain worker's nice while the Epilog waits" 0 "$ni"
	wait_job_state "$SUBMIT_JOBID" 'FAILED|COMPLETED' 60 || fail "job did not end"
	rec=$(wait_drain "$SUBMIT_JOBID") || fail "no finished drain record while the PFS hangs"
	assert_file_contains "job output" out.txt "EARLY=early"
	assert_serving "while the drain's PFS hangs"
	kept="$FULL/jobs/.undrained/$SUBMIT_JOBID"
	assert_contains "record: kept" "$rec" "\"kept\":\"$kept\""
	assert_contains "record: timed out" "$rec" '"timed_out":true'
	assert_file_contains "kept late output is the job's" out.txt "$(sha256sum "$kept/res/late" | cut -d' ' -f1)"
	assert_node_ok
	kill -CONT "$HANG_SERVER"
	rm -rf "$kept"
}

# --- iostaged down while its jobs run ---------------------------------------

test_fault_iostaged_killed_while_job_runs() {
	local ds="$TEST_WORKDIR/pfs/ds" pfsout="$TEST_WORKDIR/pfs/res" pid rec
	make_dataset "$ds"
	install -d -o "$TEST_USER" -m 0755 "$pfsout"
	submit "$TEST_USER" --io-profile="dl-train,data=$ds,out=$pfsout" -o out.txt -e err.txt --wrap '
		echo one >"$IOSTAGE_OUTPUT/one"
		while [ ! -e "$FLAG" ]; do sleep 0.1; done
		cmp -s "$IOSTAGE_DATA/train/a/x.bin" "$DS/train/a/x.bin" && echo DATA_OK
		echo two >"$IOSTAGE_OUTPUT/two"' "--export=ALL,FLAG=$TEST_WORKDIR/flag,DS=$ds" >/dev/null ||
		fail "sbatch: $SUBMIT_OUT"
	wait_job_state "$SUBMIT_JOBID" RUNNING 60 || fail "job did not start"
	for _ in $(seq 1 100); do [ -f "$pfsout/one" ] && break; sleep 0.1; done
	# iostaged dies (kill -9) while the job runs; the job goes on, writes
	# its last output and ends while iostaged is down. Its Epilog asks
	# for the finish again until iostaged is back.
	pid=$(iostaged_pid)
	kill -KILL "$pid"
	for _ in $(seq 1 50); do pid_running "$pid" || break; sleep 0.1; done
	rm -f "$IOSTAGE_DIR/iostaged.test.pid"
	touch "$TEST_WORKDIR/flag"
	for _ in $(seq 1 100); do grep -q "job $SUBMIT_JOBID: .*asking again" "$CLUSTER_DIR/log/epilog.log" && break; sleep 0.1; done
	assert_contains "Epilog" "$(grep "job $SUBMIT_JOBID:" "$CLUSTER_DIR/log/epilog.log")" "asking again for up to 30 s"
	sleep 2
	iostaged_start || fail "iostaged did not restart"
	wait_job_state "$SUBMIT_JOBID" 'COMPLETED|FAILED' 90 || fail "job did not end"
	for _ in $(seq 1 300); do [ -z "$(squeue -h -j "$SUBMIT_JOBID" -o %i 2>/dev/null)" ] && break; sleep 0.2; done
	assert_eq "job state" COMPLETED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "job output" out.txt DATA_OK
	rec=$(wait_drain "$SUBMIT_JOBID") || fail "the job's drain never finished"
	assert_file_eq "output written before the kill" "$pfsout/one" one
	assert_file_eq "output written while iostaged was down" "$pfsout/two" two
	assert_contains "Epilog" "$(grep "job $SUBMIT_JOBID:" "$CLUSTER_DIR/log/epilog.log")" "released"
	[ ! -e "$IOSTAGE_TIERS/nvme/jobs/$SUBMIT_JOBID" ] || fail "job directory left on the tier"
	assert_not_contains "status after the finish" "$(iostaged_request '{"op":"status"}')" "\"job\":$SUBMIT_JOBID,"
	assert_nothing_partial "$IOSTAGE_TIERS/nvme"
	assert_node_ok
}

# --- iostagectld killed while it answers queries ----------------------------

# ctld_file_job JOB: file a small one-node job record as root
ctld_file_job() {
	ctld_request root "$(jq -cn --argjson j "$1" --argjson e "$(date +%s)" --arg u "$TEST_USER" \
		--argjson uid "$(id -u "$TEST_USER")" \
		'{op:"file",job:$j,node:"node1",nodes:["node1"],record:{schema:1,
		  job:$j,user:$u,uid:$uid,job_name:"q",node:"node1",
		  state:"completed",start:($e - 60),end:$e,datasets:[],outputs:[],
		  phases:[{name:"run",seconds:30}]}}')"
}

test_fault_ctld_killed_while_querying() {
	local pid j out mark busy=()
	ctld_pid >/dev/null || ctld_start || fail "iostagectld did not start"
	mark=$(wc -l <"$CTLD_LOG")
	trap 'for p in "${busy[@]}"; do kill "$p" 2>/dev/null; done; ctld_stop' EXIT
	for j in $(seq 940001 940040); do
		assert_contains "filed $j" "$(ctld_file_job "$j")" '"ok":true'
	done
	# Four clients querying as fast as they can, root and the user, and
	# one filing more: iostagectld is killed with all of them under way.
	for _ in 1 2 3; do
		(while :; do ctld_request root '{"op":"history_list","limit":1000}' >/dev/null 2>&1
			ctld_request "$TEST_USER" '{"op":"history_get","job":940007}' >/dev/null 2>&1; done) &
		busy+=($!)
	done
	(for j in $(seq 940041 940200); do ctld_file_job "$j" >/dev/null 2>&1; done) &
	busy+=($!)
	sleep 2
	pid=$(ctld_pid) || fail "iostagectld died under load"
	kill -KILL "$pid"
	for _ in $(seq 1 50); do pid_running "$pid" || break; sleep 0.1; done
	rm -f "$CTLD_DIR/iostagectld.test.pid"
	ctld_start || fail "iostagectld did not start after kill -9: $(tail -5 "$CTLD_LOG")"
	for p in "${busy[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	busy=()
	# Everything filed before the kill is there, once; queries answer.
	out=$(ctld_request root '{"op":"history_list","limit":1000}')
	for j in $(seq 940001 940040); do
		assert_eq "job $j listed once" 1 "$(jq "[.records[] | select(.job == $j)] | length" <<<"$out")"
	done
	assert_eq "no job listed twice" "" "$(jq -r '.records[].job' <<<"$out" | sort | uniq -d)"
	assert_contains "the user's record" "$(ctld_request "$TEST_USER" '{"op":"history_get","job":940007}')" '"job":940007'
	# What the filer sent again after the restart is a duplicate, not a
	# second record.
	assert_contains "refiled" "$(ctld_file_job 940001)" '"ok":true'
	out=$(ctld_request root '{"op":"history_list","limit":1000}')
	assert_eq "job 940001 still once" 1 "$(jq '[.records[] | select(.job == 940001)] | length' <<<"$out")"
	out=$(tail -n +"$((mark + 1))" "$CTLD_LOG")
	! grep -qi -E 'corrupt|damaged|disabled' <<<"$out" || fail "history damaged: $(grep -i -E 'corrupt|damaged|disabled' <<<"$out")"
}

# The file server itself stops (not the FUSE daemon): sshfs has taken the
# worker's request and waits for an answer that does not come, so the
# worker is stuck in the kernel and not even SIGKILL ends it until the
# server resumes, as on an NFS hard mount.
test_fault_pfs_server_stops_during_staging() {
	local ok="$TEST_WORKDIR/pfs/ok" nvme="$IOSTAGE_TIERS/nvme" jid t0 pid
	hang_pfs_up
	many_files "$HANG_SRC/ds" 200 32768
	make_dataset "$ok"
	submit "$TEST_USER" --hold --io-profile="dl-train,data=$HANG_MNT/ds:nvme,timeout=5" -o out.txt -e err.txt \
		--wrap 'echo RAN' >/dev/null || fail "sbatch: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	kill -STOP "$HANG_SERVER"
	scontrol release "$jid"
	t0=$SECONDS
	for _ in $(seq 1 100); do pid=$(pgrep -f -- "--stage-worker.* $HANG_MNT/ds ") && break; sleep 0.1; done
	[ -n "$pid" ] || fail "no stage worker"
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ok" -o ok.txt \
		--wrap 'test -s "$IOSTAGE_DATA/train/a/x.bin" && echo OTHER_OK' >/dev/null ||
		fail "the other job failed while the PFS server was stopped: $SUBMIT_OUT"
	assert_file_contains "other job" ok.txt OTHER_OK
	# The job fails (its policy) with the server still stopped.
	for _ in $(seq 1 300); do grep -q "iostage: staging failed" err.txt 2>/dev/null && break; sleep 0.2; done
	echo "job $jid failed after $((SECONDS - t0)) s; worker $pid: $(ps -o stat=,wchan= -p "$pid")"
	assert_file_contains "job stderr" err.txt "iostage: staging failed"
	[ $((SECONDS - t0)) -le 40 ] || fail "the failure took $((SECONDS - t0)) s"
	! grep -q RAN out.txt 2>/dev/null || fail "the job script ran"
	assert_serving "while the PFS server is stopped"
	# Its Epilog asks for the finish until the worker is gone: the
	# server resumes while that finish waits for the worker.
	for _ in $(seq 1 100); do
		grep -q "epilog job $jid " "$CLUSTER_DIR/log/epilog.log" && break
		sleep 0.2
	done
	assert_file_contains "the Epilog runs" "$CLUSTER_DIR/log/epilog.log" "epilog job $jid "
	sleep 1
	kill -CONT "$HANG_SERVER"
	wait_job_state "$jid" 'FAILED|COMPLETED' 90 || fail "job did not end after the PFS server came back"
	for _ in $(seq 1 100); do pid=$(pgrep -f -- "--stage-worker.* $HANG_MNT/ds ") || break; sleep 0.1; done
	[ -z "$pid" ] || fail "worker $pid still there after the PFS server came back"
	assert_contains "iostaged log" "$(grep "job $jid:" "$IOSTAGED_LOG")" "staging timed out after 5 s"
	assert_contains "iostaged log" "$(grep "job $jid:" "$IOSTAGED_LOG")" "job $jid: finished, private directories removed"
	[ ! -e "$nvme/jobs/$jid" ] || fail "job directory left on the tier"
	for _ in $(seq 1 50); do compgen -G "$nvme/cache/.build.*" >/dev/null || break; sleep 0.1; done
	assert_nothing_partial "$nvme"
	# The dataset stages now.
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$HANG_MNT/ds:nvme" -o again.txt \
		--wrap 'ls "$IOSTAGE_DATA" | wc -l' >/dev/null || fail "staging after the server came back: $SUBMIT_OUT"
	assert_file_contains "staged after the server came back" again.txt 200
	hang_pfs_down
}
