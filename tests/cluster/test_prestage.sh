# shellcheck shell=bash
# Staging while the job waits (issue 13, item 2; docs/SCHEDULING.md,
# Pre-staging): a job submitted with a profile is noted with iostagectld
# (plugin ticket -> cli_filter.lua -> `iostage job-note`); while it pends,
# the service asks the nodes Slurm's backfill plans for it to stage its
# datasets into their caches, then makes the job prefer the node that
# holds them. When the job starts, the Prolog finds a cache hit.

# block_all SECONDS: every compute node busy for SECONDS (2 CPUs each, a
# time limit of 1 minute so the backfill scheduler can plan the next job)
block_all() {
	local n
	BLOCKERS=
	for n in $CLUSTER_COMPUTE_NODES; do
		submit "$OTHER_USER" -w "$n" -c 2 -t 1 -o /dev/null --wrap "sleep $1" >/dev/null ||
			fail "blocker on $n: $SUBMIT_OUT"
		BLOCKERS="$BLOCKERS $SUBMIT_JOBID"
	done
	for n in $BLOCKERS; do
		wait_job_state "$n" RUNNING 20 || fail "blocker $n not running"
	done
}

# stage_seconds NODE JOBID: the seconds the job's staging took there
stage_seconds() {
	sed -n "s/.*job $2: staged [0-9]* datasets\{0,1\}, .* in \([0-9.]*\) s$/\1/p" "$(iostaged_log "$1")" | tail -n1
}

# wait_ctld_log REGEX [TIMEOUT_S=30]
wait_ctld_log() {
	local i
	for ((i = 0; i < ${2:-30} * 5; i++)); do
		grep -qE -- "$1" "$(ctld_log)" && return 0
		sleep 0.2
	done
	echo "wait_ctld_log: '$1' not in $(ctld_log) after ${2:-30}s" >&2
	return 1
}

test_pending_job_finds_its_data_prestaged() {
	local ds jid node secs st
	# 8,000 files: the Prolog would copy them for a few seconds
	ds=$(slow_dataset P 8)
	block_all 15
	submit "$TEST_USER" -t 1 --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "job: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	assert_eq "job pends (all nodes busy)" PENDING "$(job_state "$jid")"
	wait_ctld_log "prestage: job $jid: .* staged on n[0-9]" 20 ||
		fail "not pre-staged: $(grep prestage "$(ctld_log)" | tail -3)"
	# a user on the login node sees what was staged where
	st=$(on_node_as "$TEST_USER" login iostage -c "$IOSTAGE_CONF" status)
	echo "$st"
	assert_contains "status names the job" "$st" "$jid "
	assert_contains "status: staged on a node" "$st" ": staged"
	assert_eq "job still pends" PENDING "$(job_state "$jid")"
	wait_job_state "$jid" COMPLETED 60 || fail "job $jid: $(job_state "$jid")"
	node=$(job_field "$jid" NodeList)
	wait_finished "$node" "$jid" || fail "job $jid not finished on $node"
	assert_eq "dataset on $node: cache hit (0 bytes copied at start)" 1 \
		"$(log_count "$node" "job $jid: dataset 'P': cache hit")"
	assert_eq "builds for the job itself" 0 "$(log_count "$node" "job $jid: dataset 'P': built")"
	secs=$(stage_seconds "$node" "$jid")
	echo "job $jid on $node: Prolog staging took $secs s"
	[ "$(echo "$secs < 1" | bc)" = 1 ] || fail "staging at start took $secs s"
	wait_ctld_log "prestage: job $jid started on $node, where its data was staged" 10 ||
		fail "start not counted as a hit"
	st=$(ctld_request login "$TEST_USER" '{"op":"sched_status"}')
	[ "$(jq '.prestage.hits' <<<"$st")" -ge 1 ] || fail "hits: $st"
	assert_eq "the started job is no longer listed as pending" "[]" \
		"$(jq -c "[.jobs[] | select(.job == $jid)]" <<<"$st")"
	[ "$(jq '.prestage.bytes' <<<"$st")" -gt 0 ] || fail "bytes: $st"
	echo "staging time saved at start: $(jq '.prestage.seconds_saved' <<<"$st") s"
	[ "$(jq '.prestage.seconds_saved > 0' <<<"$st")" = true ] || fail "time saved: $st"
}

test_without_prestage_the_prolog_copies() {
	local ds jid node
	ds=$(slow_dataset Q 8)
	# no service: no note, no pre-staging (records wait in the outboxes)
	ctld_stop
	block_all 10
	submit "$TEST_USER" -t 1 --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "job: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	wait_job_state "$jid" COMPLETED 60 || fail "job $jid: $(job_state "$jid")"
	ctld_start || fail "iostagectld does not start again"
	node=$(job_field "$jid" NodeList)
	wait_finished "$node" "$jid" || fail "job $jid not finished on $node"
	assert_eq "dataset on $node copied by the Prolog" 1 \
		"$(log_count "$node" "job $jid: dataset 'Q': built .* 8000 files copied")"
	echo "job $jid on $node: Prolog staging took $(stage_seconds "$node" "$jid") s"
}

test_job_note_needs_the_ticket_owner() {
	local rep
	rep=$(ctld_request login "$OTHER_USER" '{"op":"job_note","job":99999,"ticket":"00000000000000000000000000000000"}')
	assert_eq "unknown ticket refused" false "$(jq -r .ok <<<"$rep")"
	assert_contains "why" "$(jq -r .error <<<"$rep")" "no such ticket"
}
