# shellcheck shell=bash
# Nothing lost on the way to iostagectld (issue 12 items 3 and 4): each
# node's Epilog puts the job's record (its part, for a multi-node job) in
# the durable outbox StateDir/outbox, iostaged forwards it with `file`,
# retrying; the service files idempotently by (job, node) and merges a
# multi-node job's parts into one record, whatever their order, filing
# what arrived PartsDeadline (10 s here) after the first part.

# outbox_files NODE: the entries in NODE's outbox (names, one a line)
outbox_files() {
	local d
	d="$(node_local "$1")/state/outbox"
	(cd "$d" 2>/dev/null && ls -1 -- *.json 2>/dev/null)
}

# outbox_total: entries in every compute node's outbox
outbox_total() {
	local node n=0
	for node in $CLUSTER_COMPUTE_NODES; do
		n=$((n + $(outbox_files "$node" | grep -c .)))
	done
	echo "$n"
}

# wait_outboxes_empty [TIMEOUT_S=60]
wait_outboxes_empty() {
	local t=${1:-60} i
	for ((i = 0; i < t * 5; i++)); do
		[ "$(outbox_total)" = 0 ] && return 0
		sleep 0.2
	done
	echo "wait_outboxes_empty: $(outbox_total) entries left after ${t}s" >&2
	return 1
}

# ctld_job JOB: the service's record of JOB (JSON), or nothing
ctld_job() {
	ctld_request login root "{\"op\":\"history_get\",\"job\":$1}" | jq -c 'select(.ok) | .record'
}

# ctld_wait_job JOB [TIMEOUT_S=30] [JQ_CONDITION=true]: until the service
# has JOB's record and the condition holds of it
ctld_wait_job() {
	local t=${2:-30} cond=${3:-true} i rec
	for ((i = 0; i < t * 4; i++)); do
		rec=$(ctld_job "$1")
		[ -n "$rec" ] && [ "$(jq "$cond" <<<"$rec")" = true ] && return 0
		sleep 0.25
	done
	echo "ctld_wait_job: job $1 not filed (or not '$cond') after ${t}s" >&2
	return 1
}

# ctld_job_ids: the ids of every job the service lists, one a line
ctld_job_ids() {
	ctld_request login root '{"op":"history_list","limit":1000}' | jq -r '.records[].job'
}

# ctld_log_wait REGEX [TIMEOUT_S=30]
ctld_log_wait() {
	local t=${2:-30} i
	for ((i = 0; i < t * 10; i++)); do
		grep -qE -- "$1" "$(ctld_log)" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "ctld_log_wait: '$1' not in $(ctld_log) after ${t}s" >&2
	return 1
}

# submit_many N DATASET: N one-node jobs (not waited for); their ids in
# the array JOBS
submit_many() {
	local n=$1 ds=$2 i
	JOBS=()
	for ((i = 0; i < n; i++)); do
		submit "$TEST_USER" -N1 -o /dev/null --io-profile="dl-train,data=$ds" \
			--wrap "cat \"\$IOSTAGE_DATA\"/train/a/* >/dev/null" >/dev/null ||
			{ echo "submit failed: $SUBMIT_OUT" >&2; return 1; }
		JOBS+=("$SUBMIT_JOBID")
	done
}

# wait_all_done [TIMEOUT_S=120]: every job of JOBS left the queue
wait_all_done() {
	local t=${1:-120} i
	for ((i = 0; i < t * 2; i++)); do
		[ -z "$(squeue -h -o %i 2>/dev/null)" ] && return 0
		sleep 0.5
	done
	echo "wait_all_done: jobs still queued: $(squeue -h -o %i | tr '\n' ' ')" >&2
	return 1
}

# assert_filed_once: each of JOBS is listed by the service exactly once
assert_filed_once() {
	local ids j n missing=0 twice=0
	ids=$(ctld_job_ids)
	for j in "${JOBS[@]}"; do
		n=$(grep -cx -- "$j" <<<"$ids")
		[ "$n" = 0 ] && missing=$((missing + 1))
		[ "$n" -gt 1 ] && twice=$((twice + 1))
	done
	assert_eq "every one of the ${#JOBS[@]} jobs is filed" 0 "$missing"
	assert_eq "none is filed twice" 0 "$twice"
	assert_eq "the service lists each id once" \
		"$(sort <<<"$ids" | uniq | wc -l)" "$(grep -c . <<<"$ids")"
}

test_outbox_service_down_20_jobs_filed_once() {
	local ds n node
	[ "$CLUSTER_CONTROLLER" = yes ] || { echo "skipped: CLUSTER_CONTROLLER=no"; return 0; }
	ds=$(pfs_dataset obx20 2)
	declare -A log0
	for node in n1 n2 n3; do log0[$node]=$(wc -l <"$(iostaged_log "$node")"); done
	ctld_stop
	submit_many 20 "$ds" || return 1
	wait_all_done 180 || return 1
	# Every record waits on disk, on the node that ran it.
	for _ in $(seq 1 50); do [ "$(outbox_total)" = 20 ] && break; sleep 0.2; done
	assert_eq "20 records wait in the outboxes" 20 "$(outbox_total)"
	n=$(cat "$(node_local n1)"/state/outbox/*.json | jq -s 'map(select(.outbox == 1 and .record.job == .job)) | length')
	assert_eq "n1's entries are whole entries" "$(outbox_files n1 | grep -c .)" "$n"
	# Retried every 1.5-3 s (OutboxRetryMax=3) over the whole outage, and
	# logged once per node that holds records, not once per retry.
	for node in n1 n2 n3; do
		[ -n "$(outbox_files "$node")" ] || continue
		assert_eq "the loss of the service is logged once on $node" 1 \
			"$(tail -n +$((log0[$node] + 1)) "$(iostaged_log "$node")" |
				grep -c "wait in the outbox, retried with backoff")"
	done
	# The cluster's OutboxLimit=5: a node holding more says so, loudly,
	# and drops nothing (a node has at least 7 of the 20).
	for _ in $(seq 1 150); do
		grep -q "more than OutboxLimit=5" "$(iostaged_log n1)" "$(iostaged_log n2)" \
			"$(iostaged_log n3)" && break
		sleep 0.2
	done
	assert_contains "an outbox over OutboxLimit is an error line" \
		"$(cat "$(iostaged_log n1)" "$(iostaged_log n2)" "$(iostaged_log n3)")" \
		"more than OutboxLimit=5: iostagectld at ctl:6827 is not taking them"
	assert_eq "still 20 records" 20 "$(outbox_total)"
	ctld_start
	# The backoff is at most OutboxRetryMax=3 s: every node retries
	# within 3 s of the start.
	wait_outboxes_empty 30 || return 1
	assert_filed_once
	assert_contains "the nodes say the service answers again" \
		"$(cat "$(iostaged_log n1)" "$(iostaged_log n2)" "$(iostaged_log n3)")" \
		"answers again"
}

test_outbox_kill9_between_write_and_forward() {
	local ds j
	[ "$CLUSTER_CONTROLLER" = yes ] || { echo "skipped: CLUSTER_CONTROLLER=no"; return 0; }
	ds=$(pfs_dataset obxkill 2)
	ctld_stop
	submit_wait "$TEST_USER" -N1 -w n2 -o /dev/null --io-profile="dl-train,data=$ds" \
		--wrap "cat \"\$IOSTAGE_DATA\"/train/a/* >/dev/null" >/dev/null
	j=$SUBMIT_JOBID
	wait_finished n2 "$j" || return 1
	assert_eq "the record is in n2's outbox" "$j.n2.json" "$(outbox_files n2)"
	# The record was written, not forwarded: the node dies now.
	iostaged_kill n2
	ctld_start
	sleep 2
	assert_eq "not filed while n2's iostaged is down" "" "$(ctld_job "$j")"
	iostaged_start n2 >/dev/null
	wait_log n2 "outbox .*: 1 job record to send" 10
	ctld_wait_job "$j" 30 || return 1
	assert_eq "filed from the outbox after the restart" n2 "$(ctld_job "$j" | jq -r .node)"
	wait_outboxes_empty 10
	assert_eq "and gone from the outbox" "" "$(outbox_files n2)"
	JOBS=("$j")
	assert_filed_once
}

test_outbox_service_kill9_mid_batch() {
	local ds filed filed_before
	[ "$CLUSTER_CONTROLLER" = yes ] || { echo "skipped: CLUSTER_CONTROLLER=no"; return 0; }
	ds=$(pfs_dataset obxbatch 2)
	ctld_stop
	submit_many 20 "$ds" || return 1
	wait_all_done 180 || return 1
	for _ in $(seq 1 50); do [ "$(outbox_total)" = 20 ] && break; sleep 0.2; done
	assert_eq "20 records wait" 20 "$(outbox_total)"
	filed_before=$(cat "$(iostaged_log n1)" "$(iostaged_log n2)" "$(iostaged_log n3)" |
		grep -c "filed on iostagectld")
	ctld_start
	# kill -9 once the batch is under way (some filed, not all)
	for _ in $(seq 1 200); do
		filed=$(cat "$(iostaged_log n1)" "$(iostaged_log n2)" "$(iostaged_log n3)" |
			grep -c "filed on iostagectld")
		[ $((filed - filed_before)) -ge 3 ] && break
		sleep 0.02
	done
	ctld_kill
	echo "killed iostagectld after $((filed - filed_before)) records; $(outbox_total) still in outboxes"
	assert_ne "killed before the batch ended" 0 "$(outbox_total)"
	ctld_start
	wait_outboxes_empty 90 || return 1
	assert_filed_once
}

test_outbox_three_nodes_report_out_of_order() {
	local ds j rec node out
	[ "$CLUSTER_CONTROLLER" = yes ] || { echo "skipped: CLUSTER_CONTROLLER=no"; return 0; }
	ds=$(pfs_dataset obx3 4)
	ctld_stop
	submit_wait "$TEST_USER" -N3 -o /dev/null --io-profile="dl-train,data=$ds" \
		--wrap "srun -N3 bash -c 'cat \"\$IOSTAGE_DATA\"/train/a/* >/dev/null'" >/dev/null
	j=$SUBMIT_JOBID
	for node in n1 n2 n3; do wait_finished "$node" "$j" || return 1; done
	for node in n1 n2 n3; do
		assert_eq "$node's part is in its outbox" "$j.$node.json" "$(outbox_files "$node")"
		assert_eq "$node's entry names the job's nodes" '["n1","n2","n3"]' \
			"$(jq -c .nodes "$(node_local "$node")/state/outbox/$j.$node.json")"
	done
	# Report in the order n3, n1, n2 (the head, n1, is not first).
	iostaged_stop n1
	iostaged_stop n2
	ctld_start
	for _ in $(seq 1 100); do [ -z "$(outbox_files n3)" ] && break; sleep 0.2; done
	assert_eq "n3's part went first" "" "$(outbox_files n3)"
	assert_eq "one part is not a record" "" "$(ctld_job "$j")"
	iostaged_start n1 >/dev/null
	for _ in $(seq 1 100); do [ -z "$(outbox_files n1)" ] && break; sleep 0.2; done
	assert_eq "n1's part went second" "" "$(outbox_files n1)"
	assert_eq "two parts are not a record" "" "$(ctld_job "$j")"
	iostaged_start n2 >/dev/null
	ctld_wait_job "$j" 30 || return 1
	ctld_log_wait "job $j: all 3 parts in \(the last from node n2\): one record filed" 5
	rec=$(ctld_job "$j")
	assert_eq "one record names the 3 nodes" '["n1","n2","n3"]' "$(jq -c .nodes <<<"$rec")"
	assert_eq "nothing missing" '[]' "$(jq -c .missing_nodes <<<"$rec")"
	assert_eq "one part per node" '["n1","n2","n3"]' "$(jq -c '[.parts[].node]' <<<"$rec")"
	assert_eq "stage_in: every node's copy counted once" \
		"$((3 * $(jq '.datasets[0].bytes' <<<"$rec")))" \
		"$(jq '.phases[] | select(.name=="stage_in") | .bytes' <<<"$rec")"
	assert_eq "the service lists the job once" 1 "$(ctld_job_ids | grep -cx -- "$j")"
	# A part sent again (a retry after a lost reply) changes nothing:
	# n1's closed record, as its outbox held it.
	out=$(jq -c "{op:\"file\",job:$j,node:\"n1\",nodes:[\"n1\",\"n2\",\"n3\"],record:.}" \
		"$(node_local n1)/state/telemetry/$j.json")
	out=$(ctld_request n1 root "$out")
	assert_contains "a repeated part is a duplicate" "$out" '"duplicate":true'
	assert_eq "still the same record" "$(jq -c .phases <<<"$rec")" "$(ctld_job "$j" | jq -c .phases)"
}

test_outbox_node_never_reports_is_missing() {
	local ds j rec out
	[ "$CLUSTER_CONTROLLER" = yes ] || { echo "skipped: CLUSTER_CONTROLLER=no"; return 0; }
	ds=$(pfs_dataset obxmiss 2)
	submit "$TEST_USER" -N3 -o /dev/null --io-profile="dl-train,data=$ds" \
		--wrap "srun -N3 bash -c 'touch $TEST_WORKDIR/ran.\$(hostname); sleep 4'" >/dev/null
	j=$SUBMIT_JOBID
	for _ in $(seq 1 100); do
		[ -e "$TEST_WORKDIR/ran.n3" ] && break
		sleep 0.2
	done
	assert_rc "n3's task ran" 0 test -e "$TEST_WORKDIR/ran.n3"
	# n3's iostaged dies: its Epilog cannot finish the job, no part
	# (it asks again for 30 s, the job COMPLETING meanwhile: n1's and
	# n2's finishes are what count here).
	iostaged_kill n3
	wait_finished n1 "$j" 60 && wait_finished n2 "$j" 60 || return 1
	for _ in $(seq 1 50); do
		[ -z "$(outbox_files n1)$(outbox_files n2)" ] && break
		sleep 0.2
	done
	assert_eq "n1 and n2 sent their parts" "" "$(outbox_files n1)$(outbox_files n2)"
	assert_eq "not filed before the deadline" "" "$(ctld_job "$j")"
	# The deadline is the service's, kept in its database: a kill -9 now
	# does not lose it.
	ctld_kill
	ctld_start
	ctld_wait_job "$j" 30 || return 1
	ctld_log_wait "job $j: filed after PartsDeadline=10s with 2 of 3 parts; missing: n3" 5
	rec=$(ctld_job "$j")
	assert_eq "n3 is missing" '["n3"]' "$(jq -c .missing_nodes <<<"$rec")"
	assert_eq "every node named" '["n1","n2","n3"]' "$(jq -c .nodes <<<"$rec")"
	assert_eq "the parts that arrived" '["n1","n2"]' "$(jq -c '[.parts[].node]' <<<"$rec")"
	assert_eq "no process of n3 counted" '[]' \
		"$(jq -c '[.processes[] | select(.node=="n3")]' <<<"$rec")"
	iostaged_start n3 >/dev/null
	# n3 comes back and finishes the job as its Epilog would have: its
	# part goes through its outbox, late; the service files the job again
	# with it, counted once.
	out=$(iostaged_request n3 "{\"op\":\"finish\",\"job\":$j}")
	assert_contains "n3 finishes the job" "$out" '"ok":true'
	ctld_log_wait "job $j: late part from node n3 .*: record filed again with 3 of 3 parts" 30
	for _ in $(seq 1 25); do [ -z "$(outbox_files n3)" ] && break; sleep 0.2; done
	assert_eq "n3's outbox is empty" "" "$(outbox_files n3)"
	out=$(jq -c "{op:\"file\",job:$j,node:\"n3\",nodes:[\"n1\",\"n2\",\"n3\"],record:.}" \
		"$(node_local n3)/state/telemetry/$j.json")
	assert_contains "n3's part sent again: a duplicate" \
		"$(ctld_request n3 root "$out")" '"duplicate":true'
	rec=$(ctld_job "$j")
	assert_eq "late part: nothing missing now" '[]' "$(jq -c .missing_nodes <<<"$rec")"
	assert_eq "late part: counted once" '["n1","n2","n3"]' "$(jq -c '[.parts[].node]' <<<"$rec")"
	assert_eq "late part: processes once" \
		"$(jq '[.parts[].processes] | add' <<<"$rec")" "$(jq '.processes | length' <<<"$rec")"
	assert_eq "still one record on the service" 1 "$(ctld_job_ids | grep -cx -- "$j")"
	scontrol update NodeName=n3 State=RESUME >/dev/null 2>&1
	wait_node_state n3 idle 30
}

test_outbox_bad_entry_quarantined() {
	local d
	[ "$CLUSTER_CONTROLLER" = yes ] || { echo "skipped: CLUSTER_CONTROLLER=no"; return 0; }
	d="$(node_local n1)/state/outbox"
	iostaged_stop n1
	printf '{"outbox":1,"job":7,"node":"n1"' >"$d/7.n1.json" # cut short
	printf 'half' >"$d/.8.n1.json.99.1.tmp"                  # a torn put
	iostaged_start n1 >/dev/null
	wait_log n1 "outbox .*/7.n1.json: not JSON; moved to .*/bad/7.n1.json" 15
	assert_eq "the bad entry is gone from the outbox" "" "$(outbox_files n1)"
	assert_eq "kept aside, not deleted" '{"outbox":1,"job":7,"node":"n1"' \
		"$(cat "$d"/bad/7.n1.json.*)"
	assert_rc "the torn temporary file was removed" 1 test -e "$d/.8.n1.json.99.1.tmp"
	assert_contains "and that was logged" "$(cat "$(iostaged_log n1)")" \
		"1 torn temporary file of a crash removed"
}
