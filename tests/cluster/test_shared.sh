# shellcheck shell=bash
# Shared=yes tiers across nodes (issue 11, item 3; docs/STAGING.md): the
# tier "bb" is one directory every node sees. One copy for a multi-node job
# and for concurrent jobs on different nodes (one node builds, the others
# wait on K.lock and pin it); no node removes what another node's job uses;
# a node dying mid-build leaves nothing partial served, and the next job
# rebuilds or reuses cleanly.

BB_CACHE() { echo "$CLUSTER_SHARED/bb/cache"; }

# The step every node runs: diff the copy, say where it was.
DIFF_STEP='
	r=same
	diff -r "$IOSTAGE_DATA/" "$SRC/" >/dev/null || r=DIFFERENT
	echo "$(hostname): $r data=$IOSTAGE_DATA"'

# count_all REGEX: matching lines over every compute node's iostaged log
count_all() {
	local node n=0 c
	for node in $CLUSTER_COMPUTE_NODES; do
		c=$(log_count "$node" "$1")
		n=$((n + c))
	done
	echo "$n"
}

# builds_in_flight: .build.* directories on the shared tier
builds_in_flight() { (cd "$(BB_CACHE)" 2>/dev/null && ls -1d .build.* 2>/dev/null); }

# assert_clean_shared SRC: exactly one complete version of SRC on bb,
# nothing half-built or being removed, no job directory left, no pin.
assert_clean_shared() {
	local v
	v=$(cache_versions_of n1 bb "$1")
	assert_eq "versions of $1 on the shared tier" 1 "$(printf '%s\n' "$v" | grep -c .)"
	assert_eq "builds left on the shared tier" "" "$(builds_in_flight)"
	assert_eq "removals left on the shared tier" "" "$(cd "$(BB_CACHE)" && ls -1d .evict.* 2>/dev/null)"
	assert_eq "pins left on $v" "" "$(ls "$(BB_CACHE)/$v/pins")"
	assert_eq "job directories left on the shared tier" "" "$(ls "$CLUSTER_SHARED/bb/jobs")"
	[ -f "$(BB_CACHE)/$v/meta.json" ] && [ -f "$(BB_CACHE)/$v/manifest" ] ||
		fail "incomplete version $v: $(ls -a "$(BB_CACHE)/$v")"
}

# wait_build_started: a build with its data directory appears on bb;
# prints its name (.build.K.vN.NODE)
wait_build_started() {
	local b
	for _ in $(seq 1 1500); do
		b=$(cd "$(BB_CACHE)" 2>/dev/null && ls -1d .build.*/data 2>/dev/null | head -n1)
		[ -n "$b" ] && { echo "${b%/data}"; return 0; }
		sleep 0.02
	done
	return 1
}

test_shared_multinode_job_one_copy() {
	local ds jid v node
	ds=$(pfs_dataset bbimgs 50)
	# The job holds its pins until the test has looked at them.
	submit "$TEST_USER" -N 3 --io-profile="dl-train,data=$ds:bb" --export=ALL,SRC="$ds" \
		-o out.txt --wrap "srun bash -c '$DIFF_STEP'; touch started; while [ ! -e release ]; do sleep 0.2; done" \
		>/dev/null || fail "sbatch: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	wait_file started 60 || fail "job $jid did not start: $(cat out.txt 2>/dev/null)"
	for node in n1 n2 n3; do
		assert_file_contains "copy on $node" out.txt "$node: same"
	done
	assert_eq "copies built for the 3-node job" 1 "$(count_all "job $jid: dataset 'bbimgs': built")"
	assert_eq "nodes that reused it" 2 "$(count_all "job $jid: dataset 'bbimgs': cache hit")"
	v=$(cache_versions_of n1 bb "$ds")
	assert_eq "versions on the shared tier" 1 "$(printf '%s\n' "$v" | grep -c .)"
	assert_eq "pins while the job runs" "n1.$jid n2.$jid n3.$jid" \
		"$(ls "$(BB_CACHE)/$v/pins" | sort | tr '\n' ' ' | sed 's/ $//')"
	assert_eq "stale job directories removed" 0 "$(count_all "removed stale job directory")"
	touch release
	wait_job_state "$jid" COMPLETED 30 || fail "job $jid: $(job_state "$jid")"
	for node in n1 n2 n3; do wait_finished "$node" "$jid" || fail "not finished on $node"; done
	assert_clean_shared "$ds"
}

test_shared_concurrent_jobs_on_three_nodes() {
	local ds node jids=() jid build builder
	ds=$(slow_dataset conc 10)
	for node in n1 n2 n3; do
		submit "$TEST_USER" -w "$node" --io-profile="dl-train,data=$ds:bb" --export=ALL,SRC="$ds" \
			-o "out.$node" --wrap "$DIFF_STEP" >/dev/null || fail "sbatch: $SUBMIT_OUT"
		jids+=("$SUBMIT_JOBID")
	done
	# One node builds; with its copy held still, the other two wait.
	build=$(wait_build_started) || fail "no build seen on the shared tier"
	stage_worker_stop "$ds" || fail "no stage worker for $ds"
	# shellcheck disable=SC2064
	trap "stage_worker_cont '$ds'" EXIT
	builder=${build##*.}
	for node in n1 n2 n3; do
		wait_log "$node" "job ${jids[${node#n} - 1]}: staging 1 dataset" || fail "no staging on $node"
	done
	sleep 1
	assert_eq "builds in flight while $builder copies" "$build" "$(builds_in_flight)"
	assert_eq "copies done while $builder copies" 0 \
		"$(count_all "dataset 'conc': (built|cache hit)")"
	for node in n1 n2 n3; do
		[ ! -e "out.$node" ] || fail "the job on $node started before its data was there"
	done
	stage_worker_cont "$ds"
	for jid in "${jids[@]}"; do
		wait_job_state "$jid" COMPLETED 90 || fail "job $jid: $(job_state "$jid")"
	done
	for node in n1 n2 n3; do
		assert_file_contains "copy on $node" "out.$node" "$node: same"
	done
	assert_eq "copies built for three concurrent jobs" 1 "$(count_all "dataset 'conc': built")"
	assert_eq "the builder" 1 "$(log_count "$builder" "dataset 'conc': built")"
	assert_eq "jobs that waited and reused it" 2 "$(count_all "dataset 'conc': cache hit")"
	wait_finished n1 "${jids[0]}" && wait_finished n2 "${jids[1]}" &&
		wait_finished n3 "${jids[2]}" || fail "jobs not finished"
	assert_clean_shared "$ds"
}

test_shared_no_node_removes_what_another_uses() {
	local ds ja jb v1 v2 r
	ds=$(pfs_dataset keep 10)
	tree_digest "$ds" >v1.digest
	chmod 0644 v1.digest
	# Job A on n1 holds version 1 and checks it again at the end.
	cat >a.sh <<JOB
#!/bin/bash
. "$IT_DIR/datasets.sh"
touch started
while [ ! -e release ]; do sleep 0.2; done
if [ "\$(tree_digest "\$IOSTAGE_DATA")" = "\$(cat v1.digest)" ]; then echo A-INTACT; else echo A-CHANGED; fi
JOB
	submit "$TEST_USER" -w n1 --io-profile="dl-train,data=$ds:bb" -o a.out a.sh \
		>/dev/null || fail "sbatch A: $SUBMIT_OUT"
	ja=$SUBMIT_JOBID
	wait_file started 60 || fail "job A did not start"
	v1=$(cache_versions_of n1 bb "$ds")
	assert_eq "A's pin" "n1.$ja" "$(ls "$(BB_CACHE)/$v1/pins")"
	# n2 is asked to evict it: refused, by the owner and by root.
	r=$(iostaged_request n2 "$TEST_USER" "{\"op\":\"cache_evict\",\"path\":\"$ds\",\"tier\":\"bb\"}")
	assert_contains "user evicts on n2 what n1's job pins" "$r" "is pinned by n1.$ja"
	r=$(iostage_on n2 cache evict --key "${v1%.v*}" 2>&1)
	assert_contains "root evicts on n2 what n1's job pins" "$r" "pinned by n1.$ja"
	r=$(iostaged_request n3 '{"op":"cache_ls"}')
	assert_contains "n3 lists n1's pin" "$r" "\"pinned_by\":[\"n1.$ja\"]"
	# The source changes; job B on n2 builds version 2, and its clean-up
	# of older versions must leave version 1 to A.
	head -c 5000 /dev/urandom >"$ds/train/new.bin"
	chown "$TEST_USER:" "$ds/train/new.bin"
	submit_wait "$TEST_USER" -w n2 --io-profile="dl-train,data=$ds:bb" --export=ALL,SRC="$ds" \
		-o b.out --wrap "$DIFF_STEP" >/dev/null || fail "job B: $SUBMIT_OUT"
	jb=$SUBMIT_JOBID
	assert_file_contains "job B's copy" b.out "n2: same"
	assert_contains "B built a new version" "$(grep "job $jb: dataset" "$(iostaged_log n2)")" "built"
	wait_finished n2 "$jb" || fail "B not finished"
	[ -d "$(BB_CACHE)/$v1/data" ] || fail "n2 removed $v1, pinned by n1's job $ja"
	# A restart of n2's and n3's daemons (reconciling the shared tier)
	# leaves it too.
	iostaged_stop n2 && iostaged_start n2 || fail "n2's iostaged did not restart"
	iostaged_stop n3 && iostaged_start n3 || fail "n3's iostaged did not restart"
	[ -d "$(BB_CACHE)/$v1/data" ] || fail "a restart on n2/n3 removed $v1, pinned by n1's job $ja"
	assert_eq "A's pin after restarts elsewhere" "n1.$ja" "$(ls "$(BB_CACHE)/$v1/pins")"
	touch release
	wait_job_state "$ja" COMPLETED 30 || fail "job A: $(job_state "$ja")"
	assert_file_contains "job A's data through it all" a.out A-INTACT
	wait_finished n1 "$ja" || fail "A not finished"
	# Unpinned now: the old version goes, the new one stays.
	v2=$(cache_versions_of n1 bb "$ds")
	assert_eq "versions once A is done" "${v1%.v1}.v2" "$v2"
}

# start_frozen_build NAME: a 3-node job (timeout 120 s) on a new slow
# dataset NAME on bb, its build frozen mid-copy (the other two nodes wait
# on K.lock meanwhile); sets DS, JID, BUILD (.build.K.vN.NODE), BUILDER
start_frozen_build() {
	DS=$(slow_dataset "$1" 20)
	submit "$TEST_USER" -N 3 --io-profile="dl-train,data=$DS:bb,timeout=120" --export=ALL,SRC="$DS" \
		-o out.txt -e err.txt --wrap "srun bash -c '$DIFF_STEP'" >/dev/null || fail "sbatch: $SUBMIT_OUT"
	JID=$SUBMIT_JOBID
	BUILD=$(wait_build_started) || fail "no build seen on the shared tier"
	stage_worker_stop "$DS" || fail "no stage worker for $DS"
	BUILDER=${BUILD##*.}
	sleep 1
}

# kill -9 of the building node's iostaged during a 3-node job: the build
# is not served; another node builds, the third reuses; after the restart
# the dead build is gone and the next job reuses the copy cleanly.
test_shared_kill_builder_mid_build() {
	local ds jid build builder node other jid2 v
	start_frozen_build crash
	ds=$DS jid=$JID build=$BUILD builder=$BUILDER
	assert_eq "versions while $builder builds" "" "$(cache_versions_of n1 bb "$ds")"
	assert_eq "builds while $builder builds" "$build" "$(builds_in_flight)"
	iostaged_kill "$builder"
	# The other two nodes got a complete copy: one built, one reused.
	for node in n1 n2 n3; do
		[ "$node" = "$builder" ] && continue
		other=$node
		wait_log "$node" "job $jid: staged 1 dataset" 120 ||
			fail "$node did not stage job $jid: $(job_state "$jid")"
		assert_eq "$node staged job $jid" 1 "$(log_count "$node" "job $jid: staged 1 dataset")"
	done
	assert_eq "builds by the survivors" 1 "$(count_all "job $jid: dataset 'crash': built")"
	v=$(cache_versions_of n1 bb "$ds")
	assert_eq "versions after the survivors" 1 "$(printf '%s\n' "$v" | grep -c .)"
	assert_not_contains "the version's builder" "$(cat "$(BB_CACHE)/$v/meta.json")" "\"node\":\"$builder\""
	assert_eq "the dead build is still on the tier (its node is down)" "$build" \
		"$(builds_in_flight | grep -Fx "$build")"
	# Restarted once the job ends (its Epilogs run: COMPLETING), so the
	# builder's Epilog, which asks again for up to 30 s, finds it rather
	# than giving up. (Back while the others still stage:
	# test_shared_builder_back_while_others_stage.)
	wait_job_state "$jid" 'COMPLETING|COMPLETED|FAILED' 120 || fail "job $jid: $(job_state "$jid")"
	iostaged_start "$builder" || fail "iostaged on $builder did not restart"
	wait_job_state "$jid" 'COMPLETED|FAILED' 60 || fail "job $jid: $(job_state "$jid")"
	assert_eq "builds left after $builder restarted" "" "$(builds_in_flight)"
	assert_eq "$builder's journal" "" "$(ls "$(node_local "$builder")/state/journal")"
	# The job's last steps may still be completing there ("mixed"); a
	# drained node would never come back to idle.
	wait_node_state "$builder" idle 30 >/dev/null 2>&1
	assert_eq "$builder's state: not drained" idle "$(node_state "$builder")"
	# The next job on the restarted node reuses the copy cleanly.
	submit_wait "$TEST_USER" -w "$builder" --io-profile="dl-train,data=$ds:bb" --export=ALL,SRC="$ds" \
		-o next.out --wrap "$DIFF_STEP" >/dev/null || fail "next job: $SUBMIT_OUT"
	jid2=$SUBMIT_JOBID
	assert_file_contains "next job on $builder" next.out "$builder: same"
	assert_contains "next job reused the copy" "$(grep "job $jid2: dataset" "$(iostaged_log "$builder")")" "cache hit"
	wait_finished "$builder" "$jid2" || fail "next job not finished"
	: "$other"
	assert_clean_shared "$ds"
}

# The builder's iostaged is killed and comes back at once, while the other
# nodes still stage: the job fails on the builder (its Prolog lost the
# daemon, its script ran and failed) and its Epilog finishes it there.
# The other nodes, waiting for the job-wide outcome, must learn that the
# job is over there ("finished") rather than wait for it until their
# staging timeout (120 s) with the job already COMPLETING.
test_shared_builder_back_while_others_stage() {
	local jid builder t0 t1 node
	start_frozen_build back
	jid=$JID builder=$BUILDER
	iostaged_kill "$builder"
	iostaged_start "$builder" || fail "iostaged on $builder did not restart"
	t0=$(date +%s)
	wait_job_state "$jid" 'COMPLETED|FAILED' 60 ||
		fail "job $jid still $(job_state "$jid") 60 s after $builder came back"
	t1=$(date +%s)
	for node in n1 n2 n3; do
		assert_eq "$node: no staging timeout" 0 "$(log_count "$node" "job $jid: aborted: staging timed out")"
	done
	echo "    job $jid ended $((t1 - t0)) s after $builder came back"
	wait_node_state "$builder" idle 30 >/dev/null 2>&1
	for node in n1 n2 n3; do
		wait_node_state "$node" idle 30 >/dev/null 2>&1
		assert_eq "$node not drained" idle "$(node_state "$node")"
	done
}

# A node stopped mid-build (every process on it killed, as at a power
# loss): nothing partial is served; a job on another node rebuilds; when
# the node comes back its dead build goes.
test_shared_stop_node_mid_build() {
	local ds jid build jid2 v
	ds=$(slow_dataset down 20)
	submit "$TEST_USER" -w n1 --io-profile="dl-train,data=$ds:bb,timeout=120" --export=ALL,SRC="$ds" \
		-o out.txt --wrap "$DIFF_STEP" >/dev/null || fail "sbatch: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	build=$(wait_build_started) || fail "no build seen on the shared tier"
	stage_worker_stop "$ds" || fail "no stage worker for $ds"
	assert_eq "builder" n1 "${build##*.}"
	node_stop n1
	assert_eq "versions right after the stop" "" "$(cache_versions_of n2 bb "$ds")"
	assert_eq "the dead build" "$build" "$(builds_in_flight)"
	scancel "$jid"
	# Another node builds its own copy; the dead one is never served.
	submit_wait "$TEST_USER" -w n2 --io-profile="dl-train,data=$ds:bb,timeout=120" --export=ALL,SRC="$ds" \
		-o next.out --wrap "$DIFF_STEP" >/dev/null || fail "job on n2: $SUBMIT_OUT"
	jid2=$SUBMIT_JOBID
	assert_file_contains "job on n2" next.out "n2: same"
	assert_contains "n2 rebuilt" "$(grep "job $jid2: dataset" "$(iostaged_log n2)")" "built"
	v=$(cache_versions_of n2 bb "$ds")
	assert_eq "one version" 1 "$(printf '%s\n' "$v" | grep -c .)"
	node_start n1 || fail "n1 did not come back"
	assert_eq "builds left after n1 came back" "" "$(builds_in_flight)"
	wait_finished n2 "$jid2" || fail "job on n2 not finished"
	assert_clean_shared "$ds"
}

# A job requeued runs again under the same id (daemon/jobs.c,
# jobs_finished_here): each node remembers it finished the first run, and
# must not answer "finished" to a node staging the second one, or that
# node would fail the job. The source changes between the runs, so the
# second run builds anew and the nodes wait on each other again.
test_shared_requeued_job_stages_again() {
	local ds jid node t0 t1
	ds=$(pfs_dataset requeue 20)
	submit "$TEST_USER" -N 3 --requeue --io-profile="dl-train,data=$ds:bb" --export=ALL,SRC="$ds" \
		-o out.txt --open-mode=append \
		--wrap "if [ -e run1 ]; then srun bash -c '$DIFF_STEP'; else touch run1; while :; do sleep 0.2; done; fi" \
		>/dev/null || fail "sbatch: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	wait_file run1 60 || fail "job $jid did not start: $(job_state "$jid")"
	for node in n1 n2 n3; do
		wait_log "$node" "job $jid: staged" 60 || fail "job $jid not staged on $node"
	done
	head -c 110000 /dev/urandom >"$ds/train/a/new.bin"
	chown "$TEST_USER:" "$ds/train/a/new.bin"
	t0=$(date +%s)
	scontrol requeue "$jid" || fail "scontrol requeue $jid"
	# Slurm holds a requeued job for its credentials' lifetime (CredExpire,
	# 120 s); an admin may release it at once, as here, once the first
	# run's credential is revoked (a new one must be later, in seconds).
	wait_job_state "$jid" PENDING 60 || fail "job $jid not requeued: $(job_state "$jid")"
	sleep 2
	# n3's Prolog starts late: n1 and n2 stage and ask n3, which finished
	# the first run and has not begun the second.
	slurmd_signal n3 STOP
	trap 'slurmd_signal n3 CONT' EXIT
	scontrol update JobId="$jid" StartTime=now || fail "cannot release job $jid"
	for node in n1 n2; do
		wait_log_count "$node" "job $jid: staged" 2 60 || fail "second run not staged on $node"
	done
	sleep 1
	slurmd_signal n3 CONT
	wait_job_state "$jid" 'COMPLETED|FAILED' 150 ||
		fail "requeued job $jid still $(job_state "$jid")"
	t1=$(date +%s)
	echo "    requeued job $jid ran again and ended $((t1 - t0)) s after the requeue"
	assert_eq "the second run" COMPLETED "$(job_end_state "$jid")"
	for node in n1 n2 n3; do
		assert_file_contains "second run's copy on $node" out.txt "$node: same"
		assert_eq "$node: no staging timeout" 0 "$(log_count "$node" "job $jid: aborted: staging timed out")"
	done
	assert_eq "copies built, one per run" 2 "$(count_all "job $jid: dataset 'requeue': built")"
}
