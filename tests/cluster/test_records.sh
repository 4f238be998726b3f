# shellcheck shell=bash
# One record per multi-node job (issue 11 item 4), over the node-to-node
# channel: each node keeps its part, the other nodes send theirs to the
# head node (the first of the job's nodes) at the Epilog, the head files
# ONE merged record; `iostage telemetry J` on any node shows the whole job;
# a node whose iostaged died is listed as missing. And the channel itself:
# forged, replayed, credential-less and non-root requests are refused.

# With iostagectld (CLUSTER_CONTROLLER=yes, the default) every node's part
# goes to the service, which merges and files (test_outbox.sh tests that
# path in depth); without it (CLUSTER_CONTROLLER=no) the head node does.

# head_record JOB: the job's filed record, as JSON: the service's, or the
# one in the head node's (n1's) history
head_record() {
	if [ "$CLUSTER_CONTROLLER" = yes ]; then
		ctld_request login root "{\"op\":\"history_get\",\"job\":$1}" | jq -c '.record'
	else
		iostaged_request n1 "{\"op\":\"history_get\",\"job\":$1}" | jq -c '.record'
	fi
}

# wait_filed JOB [TIMEOUT_S=40]: until JOB's merged record of 3 parts is
# filed (on the service, or by n1)
wait_filed() {
	local i
	if [ "$CLUSTER_CONTROLLER" = yes ]; then
		for ((i = 0; i < ${2:-40} * 4; i++)); do
			[ "$(head_record "$1" | jq '.parts | length' 2>/dev/null)" = 3 ] && return 0
			sleep 0.25
		done
		echo "wait_filed: job $1 not filed with 3 parts on iostagectld" >&2
		return 1
	fi
	wait_log n1 "job $1: one record for 3 nodes filed" "${2:-40}"
}

# filed_count JOB: how many times the history lists JOB (the service's,
# or n1's)
filed_count() {
	if [ "$CLUSTER_CONTROLLER" = yes ]; then
		ctld_request login root '{"op":"history_list","limit":1000}'
	else
		iostaged_request n1 '{"op":"history_list","limit":1000}'
	fi | jq "[.records[] | select(.job==$1)] | length"
}

# A 3-node job whose tasks read their copy on every node.
run_three_node_job() {
	local ds=$1 extra=${2:-}
	submit_wait "$TEST_USER" -N3 -o "out.%j" \
		--io-profile="dl-train,data=$ds" \
		--wrap "srun -N3 bash -c 'cat \"\$IOSTAGE_DATA\"/train/a/* >/dev/null; $extra echo \$(hostname) done'" \
		>/dev/null
}

test_one_record_for_three_nodes() {
	local ds j rec sum n
	ds=$(pfs_dataset rec 8)
	run_three_node_job "$ds"
	j=$SUBMIT_JOBID
	assert_eq "job completed" COMPLETED "$(job_end_state "$j")"
	wait_filed "$j" || return 1
	rec=$(head_record "$j")
	assert_eq "the record names every node" '["n1","n2","n3"]' \
		"$(jq -c '.nodes' <<<"$rec")"
	assert_eq "no node missing" '[]' "$(jq -c '.missing_nodes' <<<"$rec")"
	assert_eq "one part per node" '["n1","n2","n3"]' \
		"$(jq -c '[.parts[].node]' <<<"$rec")"
	assert_eq "filed by the head" n1 "$(jq -r '.node' <<<"$rec")"
	# totals are the sums of the parts
	for key in bytes files copied_bytes cached_bytes; do
		sum=$(jq "[.parts[].phases[] | select(.name==\"stage_in\") | .$key] | add" <<<"$rec")
		assert_eq "stage_in $key: job total = sum of the parts" "$sum" \
			"$(jq ".phases[] | select(.name==\"stage_in\") | .$key" <<<"$rec")"
	done
	n=$(jq '.phases[] | select(.name=="stage_in") | .bytes' <<<"$rec")
	assert_eq "every node staged its copy" \
		"$((3 * $(jq '.datasets[0].bytes' <<<"$rec")))" "$n"
	for key in read_bytes write_bytes read_syscalls; do
		sum=$(jq "[.parts[].phases[] | select(.name==\"run\") | .$key] | add" <<<"$rec")
		assert_eq "run $key: job total = sum of the parts" "$sum" \
			"$(jq ".phases[] | select(.name==\"run\") | .$key" <<<"$rec")"
	done
	assert_eq "processes: the job's = the parts'" \
		"$(jq '[.parts[].processes] | add' <<<"$rec")" \
		"$(jq '.processes | length' <<<"$rec")"
	assert_eq "tasks on every node" '["n1","n2","n3"]' \
		"$(jq -c '[.processes[].node] | unique' <<<"$rec")"
	# one record, in the history that files it
	assert_eq "the history lists the job once" 1 "$(filed_count "$j")"
	if [ "$CLUSTER_CONTROLLER" != yes ]; then
		for node in n2 n3; do
			assert_contains "$node files no record of its own" \
				"$(iostaged_request "$node" "{\"op\":\"history_get\",\"job\":$j}")" \
				"not in your history"
		done
	fi
	# the job's owner sees the whole job from any node
	for node in n1 n2 n3; do
		out=$(on_node_as "$TEST_USER" "$node" iostage -c "$IOSTAGE_CONF" telemetry "$j" --json)
		assert_eq "telemetry $j on $node: 3 nodes" '["n1","n2","n3"]' \
			"$(jq -c '.nodes' <<<"$out")"
		assert_eq "telemetry $j on $node: the filed record" \
			"$(jq -c '.phases' <<<"$rec")" "$(jq -c '.phases' <<<"$out")"
	done
	out=$(on_node_as "$TEST_USER" n3 iostage -c "$IOSTAGE_CONF" telemetry "$j")
	assert_contains "the table names the nodes" "$out" "nodes: n1 n2 n3"
	# another user sees none of it, from any node
	assert_contains "another user is refused" \
		"$(on_node_as "$OTHER_USER" n2 iostage -c "$IOSTAGE_CONF" telemetry "$j" 2>&1)" \
		"permission denied"
}

test_live_telemetry_from_a_non_head_node() {
	local ds j out
	ds=$(pfs_dataset live 2)
	submit "$TEST_USER" -N3 -o "out.%j" --io-profile="dl-train,data=$ds" \
		--wrap "srun -N3 bash -c 'cat \"\$IOSTAGE_DATA\"/train/a/* >/dev/null; touch $TEST_WORKDIR/ran.\$(hostname); sleep 8'" \
		>/dev/null
	j=$SUBMIT_JOBID
	for _ in $(seq 1 100); do
		[ -e "$TEST_WORKDIR/ran.n1" ] && [ -e "$TEST_WORKDIR/ran.n2" ] &&
			[ -e "$TEST_WORKDIR/ran.n3" ] && break
		sleep 0.2
	done
	sleep 1.5 # a sample of every node
	out=$(on_node_as "$TEST_USER" n3 iostage -c "$IOSTAGE_CONF" telemetry "$j" --json)
	assert_eq "live, from n3: every node" '["n1","n2","n3"]' \
		"$(jq -c '[.parts[].node]' <<<"$out")"
	assert_eq "live: nothing missing" '[]' "$(jq -c '.missing_nodes' <<<"$out")"
	assert_eq "live: the run is live" true \
		"$(jq '.phases[] | select(.name=="run") | .live' <<<"$out")"
	wait_job_state "$j" COMPLETED 60
	wait_filed "$j"
}

test_killed_node_is_missing() {
	local ds j rec
	if [ "$CLUSTER_CONTROLLER" = yes ]; then
		echo "skipped: the head path (CLUSTER_CONTROLLER=no); with iostagectld:" \
			"test_outbox.sh test_outbox_node_never_reports_is_missing"
		return 0
	fi
	ds=$(pfs_dataset kill 2)
	submit "$TEST_USER" -N3 -o "out.%j" --io-profile="dl-train,data=$ds" \
		--wrap "srun -N3 bash -c 'touch $TEST_WORKDIR/ran.\$(hostname); sleep 4'" >/dev/null
	j=$SUBMIT_JOBID
	for _ in $(seq 1 100); do
		[ -e "$TEST_WORKDIR/ran.n3" ] && break
		sleep 0.2
	done
	assert_rc "n3's task ran" 0 test -e "$TEST_WORKDIR/ran.n3"
	iostaged_kill n3
	wait_job_state "$j" "COMPLETED|FAILED" 60
	wait_log n1 "job $j: one record for 3 nodes filed \(2 parts, missing: n3\)" 40 ||
		return 1
	rec=$(head_record "$j")
	assert_eq "n3 is missing" '["n3"]' "$(jq -c '.missing_nodes' <<<"$rec")"
	assert_eq "still every node named" '["n1","n2","n3"]' "$(jq -c '.nodes' <<<"$rec")"
	assert_eq "the parts that arrived" '["n1","n2"]' "$(jq -c '[.parts[].node]' <<<"$rec")"
	assert_eq "no process of n3 counted" '[]' \
		"$(jq -c '[.processes[] | select(.node=="n3")]' <<<"$rec")"
	iostaged_start n3
	for node in n1 n2 n3; do
		assert_ne "$node not drained" drain "$(node_state "$node" | sed 's/drain.*/drain/')"
	done
	# n3's part turns up late (here: sent by hand, twice, as root on n3):
	# the head files the record again, with it, counted once
	on_node n3 munge -s "{\"op\":\"telemetry_part\",\"job\":$j}" | jq -R -c '{cred:.}' |
		on_node n3 socat -t 5 -T 5 - TCP:n3:6826 >"$TEST_WORKDIR/n3part.json"
	assert_eq "n3's own part, from n3" n3 "$(jq -r '.record.node' "$TEST_WORKDIR/n3part.json")"
	jq -c "{op:\"part_put\",job:$j,node:\"n3\",record:(.record + {end:(.record.start + 5)})}" \
		"$TEST_WORKDIR/n3part.json" >"$TEST_WORKDIR/late.json"
	for _ in 1 2; do
		out=$(on_node n3 munge --input="$TEST_WORKDIR/late.json" |
			jq -R -c '{cred:.}' | on_node n3 socat -t 5 -T 5 - TCP:n1:6826)
		assert_contains "the late part is taken" "$out" '"ok":true'
	done
	rec=$(head_record "$j")
	assert_eq "late part: nothing missing now" '[]' "$(jq -c '.missing_nodes' <<<"$rec")"
	assert_eq "late part: counted once" '["n1","n2","n3"]' "$(jq -c '[.parts[].node]' <<<"$rec")"
	assert_eq "late part: processes once" \
		"$(jq '[.parts[].processes] | add' <<<"$rec")" "$(jq '.processes | length' <<<"$rec")"
	assert_eq "still one record in n1's history" 1 \
		"$(iostaged_request n1 '{"op":"history_list","limit":1000}' |
			jq "[.records[] | select(.job==$j)] | length")"
	scontrol update NodeName=n3 State=RESUME >/dev/null 2>&1
	wait_node_state n3 idle 30
}

# send_line FROM_NODE JSON_LINE: one raw line to n1's peer port from a node
send_line() {
	printf '%s\n' "$2" | on_node "$1" socat -t 5 -T 5 - TCP:n1:6826
}

test_peer_refuses_bad_credentials() {
	local cred line out before
	before=$(log_count n1 'peer .*refused')
	# no credential
	out=$(send_line n2 '{"op":"stage_state","job":1}')
	assert_contains "no credential: refused" "$out" '"ok":false'
	assert_contains "no credential: says why" "$out" "cred"
	# forged
	out=$(send_line n2 '{"cred":"MUNGE:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA:"}')
	assert_contains "forged: refused" "$out" "credential refused"
	# a user's credential, valid but not root's
	cred=$(on_node_as "$TEST_USER" n2 munge -s '{"op":"stage_state","job":1}')
	out=$(send_line n2 "{\"cred\":\"$cred\"}")
	assert_contains "non-root: refused" "$out" "permission denied"
	# root's, twice: the second is a replay
	cred=$(on_node n2 munge -s '{"op":"peer_ping"}')
	line="{\"cred\":\"$cred\"}"
	out=$(send_line n2 "$line")
	assert_contains "root's credential: served" "$out" '"node":"n1"'
	out=$(send_line n3 "$line")
	assert_contains "replayed: refused" "$out" "replayed"
	# expired: a credential that lived 1 s, used after 2.5 s
	cred=$(on_node n2 munge -t 1 -s '{"op":"peer_ping"}')
	sleep 2.5
	out=$(send_line n2 "{\"cred\":\"$cred\"}")
	assert_contains "expired: refused" "$out" "expired"
	# one log line each
	assert_eq "one log line per refusal" $((before + 5)) "$(log_count n1 'peer .*refused')"
	assert_contains "the log names the uid" "$(grep 'not root' "$(iostaged_log n1)" | tail -n1)" \
		"uid $(id -u "$TEST_USER")"
}
