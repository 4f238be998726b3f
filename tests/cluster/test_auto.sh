# shellcheck shell=bash
# --io-profile=auto closes the loop by itself (issue 14 item 6): jobs of
# one user submitted with `auto` and no other hint, before the history has
# any advice, run from the PFS *observed* (PfsPath= in iostage.conf: the
# shim is preloaded and notes which tree they read there and its size);
# their records reach iostagectld with that tree; after three of them the
# next job is staged on the history's advice, and one after it is a cache
# hit. The test turns PfsPath= on for itself (iostaged reads it at start)
# and off again after.

# auto_conf_on / auto_conf_off: PfsPath=CLUSTER_PFS in the shared
# iostage.conf, every node's iostaged restarted to read it
auto_conf_on() {
	local node
	grep -q '^PfsPath=' "$IOSTAGE_CONF" || echo "PfsPath=$CLUSTER_PFS" >>"$IOSTAGE_CONF"
	for node in $CLUSTER_COMPUTE_NODES; do
		iostaged_stop "$node"
		iostaged_start "$node" || return 1
	done
}

auto_conf_off() {
	local node
	sed -i '/^PfsPath=/d' "$IOSTAGE_CONF"
	for node in $CLUSTER_COMPUTE_NODES; do
		iostaged_stop "$node"
		iostaged_start "$node"
	done
}

# service_record J: the record of job J as the service holds it (root,
# from login), or nothing yet
service_record() {
	on_node login iostage -c "$IOSTAGE_CONF" export --format json 2>/dev/null |
		jq -c --argjson j "$1" '.[] | select(.job == $j)' 2>/dev/null
}

# wait_service_record J: until the service has J's record; prints it
wait_service_record() {
	local i rec
	for ((i = 0; i < 120; i++)); do
		rec=$(service_record "$1")
		[ -n "$rec" ] && { printf '%s\n' "$rec"; return 0; }
		sleep 0.5
	done
	echo "wait_service_record: the service has no record of job $1" >&2
	return 1
}

test_auto_learns_from_observed_jobs() {
	local ds name="auto-loop-$$" i rec out bytes files advice cap
	auto_conf_on || { auto_conf_off; fail "iostaged did not restart with PfsPath="; }
	trap auto_conf_off RETURN
	# 60 files of 110 KB beside make_dataset's tree (train/, val/)
	ds=$(pfs_dataset autoloop 60)
	files=$(find "$ds" -type f | wc -l)
	bytes=$(find "$ds" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
	# The job reads every file of the dataset where it is told to (a
	# staged copy on advice, else the PFS): train/ and val/.
	cat >"$TEST_WORKDIR/train.sh" <<EOF
#!/bin/bash
src=\${IOSTAGE_DATA:-$ds}
echo "DATA=\$src on \$(hostname)"
find "\$src" -type f -exec cat {} + >/dev/null && echo READ-OK
EOF
	chmod 0755 "$TEST_WORKDIR/train.sh"

	for i in 1 2 3; do
		submit_wait "$TEST_USER" -J "$name" --io-profile=auto -o "obs.%j" \
			"$TEST_WORKDIR/train.sh" >/dev/null ||
			fail "observed job $i failed: $SUBMIT_OUT"
		assert_contains "job $i: sbatch says it is observed" "$SUBMIT_OUT" \
			"runs from the PFS, observed (deep mode)"
		out=$(cat "$TEST_WORKDIR/obs.$SUBMIT_JOBID")
		assert_contains "job $i read the PFS" "$out" "DATA=$ds on"
		assert_contains "job $i read every file" "$out" "READ-OK"
		rec=$(wait_service_record "$SUBMIT_JOBID") || fail "job $i never reached the service"
		assert_eq "job $i: the tree it read" "$ds" "$(jq -r .observed.source <<<"$rec")"
		assert_eq "job $i: its files, each once" "$files" "$(jq -r .observed.files <<<"$rec")"
		assert_eq "job $i: their bytes" "$bytes" "$(jq -r .observed.bytes <<<"$rec")"
		assert_eq "job $i: staged nothing" 0 "$(jq '.datasets | length' <<<"$rec")"
	done

	advice=$(on_node_as "$TEST_USER" login iostage -c "$IOSTAGE_CONF" recommend --json --job-name "$name") ||
		fail "recommend failed: $advice"
	assert_eq "cache advice for the tree" cache \
		"$(jq -r --arg t "$ds" '[.recommendations[] | select(.target == $t and .rule == "cache")][0].rule' <<<"$advice")"
	# Never more than the tier holds: the advice's size against nvme's
	cap=$(jq -r --arg t "$ds" '[.recommendations[] | select(.target == $t and .rule == "cache")][0].evidence.figures | "\(.bytes) \(.tier_capacity)"' <<<"$advice")
	assert_eq "the advice knows the tree's size" "$bytes" "${cap%% *}"
	[ "${cap%% *}" -le "${cap##* }" ] || fail "advised $cap: more than the tier holds"

	submit_wait "$TEST_USER" -J "$name" --io-profile=auto -o "adv.%j" \
		"$TEST_WORKDIR/train.sh" >/dev/null || fail "advised job failed: $SUBMIT_OUT"
	assert_contains "sbatch applies the advice" "$SUBMIT_OUT" \
		"--io-profile=auto: applying the history's advice for job '$name' (3 runs): cache $ds"
	out=$(cat "$TEST_WORKDIR/adv.$SUBMIT_JOBID")
	assert_contains "the advised job read a staged copy" "$out" \
		"DATA=$CLUSTER_DIR/local/nvme/jobs/$SUBMIT_JOBID/data/autoloop"
	assert_contains "of every file" "$out" "READ-OK"
	rec=$(wait_service_record "$SUBMIT_JOBID") || fail "the advised job never reached the service"
	assert_eq "the advised job built the cache" built "$(jq -r '.datasets[0].result' <<<"$rec")"
	assert_eq "the advised job was not observed" null "$(jq -r '.observed' <<<"$rec")"

	# The next one lands where the copy is (placement) and hits it.
	submit_wait "$TEST_USER" -J "$name" --io-profile=auto -o "hit.%j" \
		"$TEST_WORKDIR/train.sh" >/dev/null || fail "second advised job failed: $SUBMIT_OUT"
	rec=$(wait_service_record "$SUBMIT_JOBID") || fail "the second advised job never reached the service"
	assert_contains "the second advised job read a staged copy" \
		"$(cat "$TEST_WORKDIR/hit.$SUBMIT_JOBID")" "/data/autoloop on"
	echo "second advised job: $(jq -r '.datasets[0].result' <<<"$rec") on $(jq -r .node <<<"$rec")"
}
