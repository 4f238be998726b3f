# shellcheck shell=bash
# Load on one node (issue 15 item 4): many Prologs at once, many short
# jobs, /metrics scrapes and queries against a busy iostaged, hostile
# clients holding connections. Every legitimate request must be answered,
# root never starved of a connection, iostaged's RSS bounded and its file
# descriptors back to their count before. The counts are reduced here
# (`make check`); `make load` (LOAD_FULL=1) runs the full sizes. Each test
# prints its figures on a "LOAD" line (IT_VERBOSE=1 shows them) and
# appends them to $LOAD_FIGURES when set; docs/RELIABILITY.md has them.
. "$IT_DIR/datasets.sh"

if [ "${LOAD_FULL:-0}" = 1 ]; then
	LOAD_PROLOGS=64 LOAD_JOBS=1000 LOAD_SCRAPES=10000 LOAD_QUERIES=10000
	LOAD_HOSTILE=150 LOAD_HOLD_S=30 LOAD_WAIT_S=1500 LOAD_ROUNDS=2
else
	LOAD_PROLOGS=16 LOAD_JOBS=24 LOAD_SCRAPES=400 LOAD_QUERIES=400
	LOAD_HOSTILE=150 LOAD_HOLD_S=8 LOAD_WAIT_S=100 LOAD_ROUNDS=1
fi
LOADGEN=${LOADGEN:-$REPO_ROOT/${BUILD:-build}/tests/loadgen}
# iostaged's RSS may grow by this much over a test (KiB): the job table,
# telemetry and history of the jobs it ran; and never peak above the cap.
LOAD_RSS_GROWTH_KB=${LOAD_RSS_GROWTH_KB:-65536}
LOAD_RSS_PEAK_KB=${LOAD_RSS_PEAK_KB:-524288}

proc_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
fd_count() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 | wc -l; }

# load_begin: the daemon's figures before; its peak RSS is reset (clear_refs
# 5), so VmHWM at the end is this test's peak.
load_begin() {
	[ -x "$LOADGEN" ] || fail "no $LOADGEN (make all builds it)"
	PID=$(iostaged_pid)
	echo 5 >"/proc/$PID/clear_refs"
	RSS0=$(proc_kb "$PID" VmRSS)
	FD0=$(fd_count "$PID")
	LOG0=$(wc -l <"$IOSTAGED_LOG")
	# what earlier tests of the suite left (a job directory kept on
	# purpose, a job still ending) is not this test's
	JOBDIRS0=$(job_dirs)
	JOBS0=$(iostaged_request '{"op":"status"}' | jq '.jobs | length')
	T0=$(date +%s.%N)
}

# load_end WHAT EXTRA: fds back to their count (connection threads end
# asynchronously: up to 20 s), RSS bounded; prints and keeps the figures.
load_end() {
	local fd1 rss1 hwm line
	for _ in $(seq 1 100); do
		fd1=$(fd_count "$PID")
		[ "$fd1" -le "$FD0" ] && break
		sleep 0.2
	done
	rss1=$(proc_kb "$PID" VmRSS)
	hwm=$(proc_kb "$PID" VmHWM)
	line="LOAD $1: $2 time_s=$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
	line="$line rss_kb_before=$RSS0 rss_kb_peak=$hwm rss_kb_after=$rss1 fds_before=$FD0 fds_after=$fd1"
	# connections iostaged refused for want of a slot (clients retry them)
	line="$line busy_refusals=$(tail -n +"$((LOG0 + 1))" "$IOSTAGED_LOG" | grep -c 'refused: too many connections')"
	echo "$line"
	[ -z "${LOAD_FIGURES:-}" ] || echo "$line" >>"$LOAD_FIGURES"
	assert_eq "iostaged still the same process" "$PID" "$(iostaged_pid)"
	[ "$fd1" -le "$FD0" ] || fail "file descriptors: $FD0 before, $fd1 after; open: $(ls -l "/proc/$PID/fd" | tail -n +2 | awk '{print $NF}' | sort | uniq -c | sort -rn | head -5)"
	# not under ASan, whose shadow memory and quarantine are most of the RSS
	[ "${SANITIZE:-0}" = 1 ] || [ "$rss1" -le $((RSS0 + LOAD_RSS_GROWTH_KB)) ] ||
		fail "RSS grew from $RSS0 to $rss1 KiB"
	[ "${SANITIZE:-0}" = 1 ] || [ "$hwm" -le "$LOAD_RSS_PEAK_KB" ] || fail "RSS peaked at $hwm KiB"
}

# wait_user_jobs_gone USER SECONDS
wait_user_jobs_gone() {
	local i
	for ((i = 0; i < $2 * 2; i++)); do
		[ -z "$(squeue -h -u "$1" -o %i)" ] && return 0
		sleep 0.5
	done
	fail "jobs of $1 still queued after $2 s: $(squeue -h -u "$1" -o '%i %T' | head -5)"
}

# count_states JOBID...: "STATE N" lines over every job and array task
count_states() {
	local id
	for id in "$@"; do scontrol show job -o "$id"; done |
		grep -o 'JobState=[A-Z_]*' | sort | uniq -c | awk '{ sub("JobState=", "", $2); print $2, $1 }'
}

job_dirs() { find "$IOSTAGE_TIERS"/*/jobs -mindepth 1 -maxdepth 1 ! -name .undrained 2>/dev/null | sort; }

# no job of this test left on the tiers or in iostaged's table
assert_daemon_idle() {
	local left n
	for _ in $(seq 1 50); do
		left=$(comm -13 <(echo "$JOBDIRS0") <(job_dirs))
		[ -z "$left" ] && break
		sleep 0.2
	done
	[ -z "$left" ] || fail "job directories left on the tiers: $(echo "$left" | head -3)"
	n=$(iostaged_request '{"op":"status"}' | jq '.jobs | length')
	[ "$n" -le "$JOBS0" ] || fail "iostaged's job table: $n jobs, $JOBS0 before the test"
}

# LOAD_PROLOGS jobs, half an array on one shared dataset, half jobs of
# their own datasets, held then released together: every Prolog at once.
# Each job waits until all have started, so all ran at the same time.
test_load_many_prologs_at_once() {
	local half=$((LOAD_PROLOGS / 2)) shared="$TEST_WORKDIR/pfs/shared" ids=() i st
	load_begin
	make_dataset "$shared"
	for ((i = 0; i < half; i++)); do
		mkdir -p "$TEST_WORKDIR/pfs/own$i"
		head -c $((20000 + i)) /dev/urandom >"$TEST_WORKDIR/pfs/own$i/f$i.bin"
		chown -R "$TEST_USER:" "$TEST_WORKDIR/pfs/own$i"
		chmod 0750 "$TEST_WORKDIR/pfs/own$i"
	done
	cat >job.sh <<JOB
#!/bin/bash
touch "started.\$SLURM_JOB_ID"
for i in \$(seq 1 600); do
	[ "\$(ls started.* | wc -l)" -ge $LOAD_PROLOGS ] && { echo ALL_AT_ONCE; break; }
	sleep 0.2
done
cmp -s "\$IOSTAGE_DATA/train/a/x.bin" "$shared/train/a/x.bin" && echo SHARED_OK
[ -n "\$OWN" ] && cmp -s "\$IOSTAGE_DATA/\$OWN" "$TEST_WORKDIR/pfs/\$OWNDIR/\$OWN" && echo OWN_OK
exit 0
JOB
	chmod 0755 job.sh
	submit "$TEST_USER" -H -p load --array=0-$((half - 1)) -o 'arr-%a.out' \
		--io-profile="dl-train,data=$shared,timeout=300" job.sh >/dev/null || fail "sbatch: $SUBMIT_OUT"
	ids+=("$SUBMIT_JOBID")
	for ((i = 0; i < half; i++)); do
		submit "$TEST_USER" -H -p load -o "own-$i.out" --export="ALL,OWN=f$i.bin,OWNDIR=own$i" \
			--io-profile="dl-train,data=$TEST_WORKDIR/pfs/own$i,timeout=300" job.sh >/dev/null ||
			fail "sbatch: $SUBMIT_OUT"
		ids+=("$SUBMIT_JOBID")
	done
	T0=$(date +%s.%N)
	scontrol release "${ids[@]}" || fail "scontrol release"
	wait_user_jobs_gone "$TEST_USER" "$LOAD_WAIT_S"
	st=$(count_states "${ids[@]}")
	assert_eq "job states" "COMPLETED $LOAD_PROLOGS" "$st"
	assert_eq "jobs that saw all $LOAD_PROLOGS running" "$LOAD_PROLOGS" "$(cat arr-*.out own-*.out | grep -c ALL_AT_ONCE)"
	assert_eq "array tasks with the shared dataset" "$half" "$(cat arr-*.out | grep -c SHARED_OK)"
	assert_eq "jobs with their own dataset" "$half" "$(cat own-*.out | grep -c OWN_OK)"
	assert_daemon_idle
	load_end prologs "jobs=$LOAD_PROLOGS completed=$(echo "$st" | awk '{print $2}')"
}

# LOAD_JOBS short jobs through the node (an array, 64 at a time) while
# /metrics is scraped and the socket queried, each LOAD_SCRAPES /
# LOAD_QUERIES times, 4 at a time: root's and a user's queries. All of it
# LOAD_ROUNDS times: iostaged's RSS after each round shows where it levels
# off (the history's RocksDB memtables and block cache fill up to their
# configured sizes).
test_load_short_jobs_scrapes_and_queries() {
	local ds="$TEST_WORKDIR/pfs/ds" arr st q s qu r rounds="" figs=""
	load_begin
	make_dataset "$ds"
	for ((r = 1; r <= LOAD_ROUNDS; r++)); do
		submit "$TEST_USER" -p load --array=0-$((LOAD_JOBS - 1))%64 -o /dev/null \
			--io-profile="dl-train,data=$ds,timeout=300" \
			--wrap 'test -s "$IOSTAGE_DATA/train/a/x.bin"' >/dev/null || fail "sbatch: $SUBMIT_OUT"
		arr=$SUBMIT_JOBID
		"$LOADGEN" http 127.0.0.1 "$IOSTAGE_METRICS_PORT" "$LOAD_SCRAPES" 4 >scrapes.txt 2>&1 &
		s=$!
		"$LOADGEN" unix "$IOSTAGE_SOCKET" $((LOAD_QUERIES / 2)) 2 '{"op":"status"}' '{"op":"ping"}' \
			'{"op":"cache_ls"}' '{"op":"history_list"}' >queries-root.txt 2>&1 &
		q=$!
		runuser -u "$TEST_USER" -- "$LOADGEN" unix "$IOSTAGE_SOCKET" $((LOAD_QUERIES / 2)) 2 \
			'{"op":"status"}' '{"op":"cache_ls"}' '{"op":"history_list"}' \
			"{\"op\":\"telemetry\",\"job\":$arr}" >queries-user.txt 2>&1 &
		qu=$!
		wait "$s" || fail "scrapes: $(cat scrapes.txt)"
		wait "$q" || fail "root's queries: $(cat queries-root.txt)"
		# telemetry of a job not yet running (or gone) is an answer too
		wait "$qu"
		grep -q ' lost=0 ' queries-user.txt || fail "user's queries: $(cat queries-user.txt)"
		grep -q ' refused=0 ' queries-user.txt || fail "user's queries: $(cat queries-user.txt)"
		wait_user_jobs_gone "$TEST_USER" "$LOAD_WAIT_S"
		st=$(count_states "$arr")
		assert_eq "job states, round $r" "COMPLETED $LOAD_JOBS" "$st"
		assert_daemon_idle
		rounds="$rounds${rounds:+,}$(proc_kb "$PID" VmRSS)"
		figs="$figs round$r[jobs=$LOAD_JOBS completed=$(echo "$st" | awk '{print $2}') scrapes[$(cat scrapes.txt)] root_queries[$(cat queries-root.txt)] user_queries[$(grep '^sent=' queries-user.txt)]]"
	done
	load_end short-jobs "$figs rss_kb_after_each_round=$rounds"
}

# LOAD_HOSTILE connections of one user (garbage, a line that never ends,
# silence; more than the 112 a user may hold) held LOAD_HOLD_S seconds: root, another user and a real job are
# served all along; the hostile user gets at most its share of the slots.
test_load_hostile_clients_starve_nobody() {
	local h root user held
	load_begin
	make_dataset "$TEST_WORKDIR/pfs/ds"
	runuser -u "$OTHER_USER" -- "$LOADGEN" hostile "$IOSTAGE_SOCKET" "$LOAD_HOSTILE" "$LOAD_HOLD_S" >hostile.txt 2>&1 &
	h=$!
	sleep 1
	root=$("$LOADGEN" unix "$IOSTAGE_SOCKET" 200 4 '{"op":"ping"}' '{"op":"status"}') || fail "root starved: $root"
	user=$(runuser -u "$TEST_USER" -- "$LOADGEN" unix "$IOSTAGE_SOCKET" 100 4 '{"op":"ping"}' '{"op":"status"}') ||
		fail "another user starved: $user"
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$TEST_WORKDIR/pfs/ds" \
		--wrap 'test -s "$IOSTAGE_DATA/train/a/x.bin"' >/dev/null || fail "job during the hold: $SUBMIT_OUT"
	kill -0 "$h" 2>/dev/null || fail "the hold ended before the job did (raise LOAD_HOLD_S): $(cat hostile.txt)"
	wait "$h"
	grep -q "^opened=$LOAD_HOSTILE " hostile.txt || fail "hostile connections: $(cat hostile.txt)"
	# MaxConnections=256 (the default): 32 kept for root, a user half of
	# the other 224
	held=$(sed -n 's/.* held=\([0-9]*\).*/\1/p' hostile.txt)
	[ "$held" -le 112 ] || fail "one user held $held connections (share: 112)"
	assert_daemon_idle
	load_end hostile "hostile[$(cat hostile.txt)] root[$root] user[$user] job=COMPLETED"
}

# The same against /metrics: LOAD_HOSTILE TCP connections of one local
# user held open (HTTP garbage, a request that never ends, silence). The
# scrapes of root (Prometheus on this host) and of another user go on.
test_load_metrics_hostile_clients_starve_nobody() {
	local h scr user
	load_begin
	runuser -u "$OTHER_USER" -- "$LOADGEN" hostile "127.0.0.1:$IOSTAGE_METRICS_PORT" "$LOAD_HOSTILE" "$LOAD_HOLD_S" \
		>hostile-http.txt 2>&1 &
	h=$!
	sleep 1
	scr=$("$LOADGEN" http 127.0.0.1 "$IOSTAGE_METRICS_PORT" 200 2) || fail "root's scrapes starved: $scr"
	user=$(runuser -u "$TEST_USER" -- "$LOADGEN" http 127.0.0.1 "$IOSTAGE_METRICS_PORT" 50 1) ||
		fail "another user's scrapes starved: $user"
	kill -0 "$h" 2>/dev/null || fail "the hold ended before the scrapes did: $(cat hostile-http.txt)"
	wait "$h"
	grep -q "^opened=$LOAD_HOSTILE " hostile-http.txt || fail "hostile connections: $(cat hostile-http.txt)"
	load_end metrics-hostile "hostile[$(cat hostile-http.txt)] root_scrapes[$scr] user_scrapes[$user]"
}
