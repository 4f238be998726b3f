# shellcheck shell=bash
# Staging fails on one node of a multi-node job (issue 11 item 8): the
# job's policy applies to the whole job, the same on every node. `fail`:
# the job ends FAILED naming that node and its reason on its stderr and in
# its Comment (set once, by that node's Prolog); `fallback`: every node's
# tasks get the PFS paths and IOSTAGE_FALLBACK=1. No node is drained.

# lock_on NODE DIR: DIR unreadable for users on NODE only (a root-only
# directory bind-mounted over it in NODE's mount namespace)
lock_on() {
	mkdir -p "$TEST_WORKDIR/locked" && chmod 0700 "$TEST_WORKDIR/locked"
	on_node "$1" mount --bind "$TEST_WORKDIR/locked" "$2"
}

no_node_drained() {
	local node
	for node in $CLUSTER_COMPUTE_NODES; do
		assert_not_contains "$node not drained" "$(node_state "$node")" drain
	done
}

test_one_node_fails_fail_policy() {
	local ds j err
	ds=$(pfs_dataset fail 2)
	lock_on n2 "$ds" || return 1
	trap 'on_node n2 umount "$ds"' EXIT
	submit_wait "$TEST_USER" -N3 -o "out.%j" -e "err.%j" \
		--io-profile="dl-train,data=$ds,on-failure=fail" \
		--wrap "srun -N3 bash -c 'echo \$(hostname) ran'" >/dev/null
	j=$SUBMIT_JOBID
	assert_eq "the job failed" FAILED "$(job_end_state "$j")"
	err=$(cat "err.$j")
	assert_contains "its stderr names the node" "$err" \
		"staging failed, job not run (on-failure=fail): node n2: "
	assert_contains "and the reason" "$err" "ermission denied"
	assert_not_contains "no task ran" "$(cat "out.$j" 2>/dev/null)" ran
	assert_contains "the Comment names the node" "$(job_comment "$j")" \
		"iostage: staging failed on node n2: "
	# set once: by n2's Prolog only
	assert_eq "n1's Prolog left the Comment alone" 1 \
		"$(grep -c "job $j: failed on node n2; its Prolog sets" "$CLUSTER_DIR/log/prolog.n1.log")"
	assert_eq "n3's Prolog left the Comment alone" 1 \
		"$(grep -c "job $j: failed on node n2; its Prolog sets" "$CLUSTER_DIR/log/prolog.n3.log")"
	# every node's iostaged holds the same outcome
	assert_contains "n1 learnt n2's failure" "$(cat "$(iostaged_log n1)")" \
		"job $j: staging failed on node n2: "
	no_node_drained
}

test_one_node_fails_fallback_policy() {
	local ds j out node
	ds=$(pfs_dataset fallback 2)
	lock_on n3 "$ds" || return 1
	trap 'on_node n3 umount "$ds"' EXIT
	submit_wait "$TEST_USER" -N3 -o "out.%j" -e "err.%j" \
		--io-profile="dl-train,data=$ds,on-failure=fallback" \
		--wrap "srun -N3 bash -c 'echo \$(hostname) fallback=\${IOSTAGE_FALLBACK:-0} data=\$IOSTAGE_DATA'" \
		>/dev/null
	j=$SUBMIT_JOBID
	assert_eq "the job ran" COMPLETED "$(job_end_state "$j")"
	out=$(cat "out.$j")
	for node in n1 n2 n3; do
		assert_contains "$node runs on the PFS paths" "$out" \
			"$node fallback=1 data=$ds"
	done
	assert_contains "the notice names the node" "$(cat "err.$j")" \
		"node n3: "
	assert_contains "the Comment names the node" "$(job_comment "$j")" \
		"staging failed on node n3: "
	assert_contains "and the policy" "$(job_comment "$j")" "on-failure=fallback"
	no_node_drained
}

# A node whose iostaged is down cannot stage: that counts as its failure.
test_one_node_without_iostaged() {
	local ds j
	ds=$(pfs_dataset down 1)
	iostaged_stop n3
	trap 'iostaged_start n3' EXIT
	submit_wait "$TEST_USER" -N3 -o "out.%j" -e "err.%j" \
		--io-profile="dl-train,data=$ds,on-failure=fail" \
		--wrap "srun -N3 bash -c 'echo \$(hostname) ran'" >/dev/null
	j=$SUBMIT_JOBID
	# (COMPLETING while the head waits for n3's part, PeerPartsTimeout)
	wait_job_state "$j" FAILED 60
	assert_eq "the job failed" FAILED "$(job_end_state "$j")"
	assert_contains "its stderr names the node" "$(cat "err.$j")" "node n3: "
	assert_contains "the Comment names the node" "$(job_comment "$j")" \
		"staging failed on node n3: "
	assert_contains "n1 found n3 unreachable" "$(cat "$(iostaged_log n1)")" \
		"job $j: staging failed on node n3: iostaged unreachable"
	no_node_drained
}
