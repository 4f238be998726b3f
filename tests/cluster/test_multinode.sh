# shellcheck shell=bash
# Jobs that span nodes (issue 11, item 2): every allocated node has the
# job's datasets staged before the batch script or the step starts, and a
# task on each node sees a complete copy through IOSTAGE_DATA*; nodes
# outside the allocation get nothing; a job array spread over the nodes
# makes one copy per node.

# A step on every node of the allocation: diff each dataset against its
# source, print "NODE: same" or "NODE: DIFFERENT".
DIFF_STEP='
	r=same
	diff -r "$IOSTAGE_DATA/" "$SRC/" || r=DIFFERENT
	if [ -n "${SRC2:-}" ]; then diff -r "$IOSTAGE_DATA_LABELS/" "$SRC2/" || r=DIFFERENT; fi
	echo "$(hostname): $r data=$IOSTAGE_DATA"'

# assert_same_on OUTFILE NODES...: each node printed "NODE: same"
assert_same_on() {
	local out=$1 node
	shift
	for node in "$@"; do
		assert_file_contains "copy on $node (diff -r from a task there)" "$out" "$node: same"
	done
	if grep -q DIFFERENT "$out"; then fail "a node saw a different copy: $(cat "$out")"; fi
}

# assert_nothing_on NODE JOBID SRC: the job left no trace on NODE
assert_nothing_on() {
	local node=$1 jid=$2 src=$3
	assert_eq "cache versions of $src on $node (not allocated)" "" "$(cache_versions_of "$node" nvme "$src")"
	assert_eq "job directories on $node" "" "$(ls "$(node_local "$node")/nvme/jobs" 2>/dev/null)"
	assert_eq "$node's iostaged heard of job $jid" 0 "$(log_count "$node" "job $jid:")"
}

test_sbatch_three_nodes_two_datasets() {
	local ds ds2 jid node
	ds=$(pfs_dataset imgs 20)
	ds2=$(pfs_dataset labels)
	# The first thing the script does is a step on all three nodes.
	cat >job.sh <<JOB
#!/bin/bash
#SBATCH -N 3 --ntasks-per-node=2
#SBATCH --io-profile=dl-train,data=$ds,data=$ds2
srun --ntasks-per-node=1 bash -c '$DIFF_STEP'
srun -n 6 --ntasks-per-node=2 bash -c 'diff -r "\$IOSTAGE_DATA_IMGS/" "\$SRC/" >/dev/null && echo "task \$SLURM_PROCID on \$(hostname): same"' >tasks.txt
JOB
	submit_wait "$TEST_USER" --export=ALL,SRC="$ds",SRC2="$ds2" -o out.txt job.sh >/dev/null ||
		fail "sbatch -N3: $SUBMIT_OUT $(cat out.txt 2>/dev/null)"
	jid=$SUBMIT_JOBID
	assert_same_on out.txt n1 n2 n3
	assert_eq "tasks (2 per node) that saw the same data" 6 "$(grep -c ': same$' tasks.txt)"
	assert_eq "nodes of those tasks" "n1 n2 n3" \
		"$(sed 's/.* on \(n[0-9]*\):.*/\1/' tasks.txt | sort -u | tr '\n' ' ' | sed 's/ $//')"
	assert_eq "job state" COMPLETED "$(job_end_state "$jid")"
	for node in n1 n2 n3; do
		wait_finished "$node" "$jid" || fail "job $jid not finished on $node"
		assert_eq "datasets staged on $node" 1 "$(log_count "$node" "job $jid: staged 2 datasets")"
		assert_eq "versions of imgs on $node" 1 "$(cache_versions_of "$node" nvme "$ds" | wc -l)"
		assert_eq "versions of labels on $node" 1 "$(cache_versions_of "$node" nvme "$ds2" | wc -l)"
		assert_eq "job directory left on $node" "" "$(ls "$(node_local "$node")/nvme/jobs")"
	done
}

test_sbatch_two_of_three_nodes() {
	local ds jid
	ds=$(pfs_dataset imgs 5)
	submit_wait "$TEST_USER" -N 2 -w n1,n3 --io-profile="dl-train,data=$ds" \
		--export=ALL,SRC="$ds" -o out.txt --wrap "srun bash -c '$DIFF_STEP'" >/dev/null ||
		fail "sbatch -N2: $SUBMIT_OUT $(cat out.txt 2>/dev/null)"
	jid=$SUBMIT_JOBID
	assert_same_on out.txt n1 n3
	assert_nothing_on n2 "$jid" "$ds"
}

test_salloc_srun_two_nodes() {
	local ds out jid
	ds=$(pfs_dataset imgs 5)
	out=$(as_user "$TEST_USER" salloc -N 2 -w n2,n3 --io-profile="dl-train,data=$ds" \
		env SRC="$ds" srun bash -c "$DIFF_STEP" 2>&1)
	printf '%s\n' "$out" >out.txt
	assert_same_on out.txt n2 n3
	jid=$(sed -n 's/^salloc: Granted job allocation \([0-9]*\).*/\1/p' out.txt)
	[ -n "$jid" ] || fail "no job id in salloc's output: $out"
	assert_nothing_on n1 "$jid" "$ds"
}

test_srun_two_nodes_alone() {
	local ds out
	ds=$(pfs_dataset imgs 5)
	out=$(as_user "$TEST_USER" env SRC="$ds" srun -N 2 -w n1,n2 \
		--io-profile="dl-train,data=$ds" bash -c "$DIFF_STEP" 2>&1)
	printf '%s\n' "$out" >out.txt
	assert_same_on out.txt n1 n2
	assert_eq "versions on n3" "" "$(cache_versions_of n3 nvme "$ds")"
}

test_sbatch_three_nodes_step_on_two() {
	local ds jid
	ds=$(pfs_dataset imgs 5)
	submit_wait "$TEST_USER" -N 3 --io-profile="dl-train,data=$ds" --export=ALL,SRC="$ds" \
		-o out.txt --wrap "srun -N 2 -w n2,n3 bash -c '$DIFF_STEP'; srun -N 1 -w n1 bash -c '$DIFF_STEP'" \
		>/dev/null || fail "sbatch: $SUBMIT_OUT $(cat out.txt 2>/dev/null)"
	assert_same_on out.txt n1 n2 n3
}

test_array_one_copy_per_node() {
	local ds node used=0 tasks hits builds
	ds=$(pfs_dataset arrimgs 200)
	# Six one-CPU tasks on three two-CPU nodes start at once: two per
	# node, both Prologs asking for the same dataset.
	submit_wait "$TEST_USER" --array=0-5 -n 1 --io-profile="dl-train,data=$ds" \
		--export=ALL,SRC="$ds" -o "arr.%a.out" --wrap "$DIFF_STEP; sleep 1" >/dev/null ||
		fail "array: $SUBMIT_OUT"
	cat arr.*.out >all.out
	assert_eq "array tasks that saw the same data" 6 "$(grep -c ': same' all.out)"
	for node in n1 n2 n3; do
		tasks=$(grep -c "^$node: same" all.out)
		[ "$tasks" -gt 0 ] || continue
		used=$((used + 1))
		builds=$(log_count "$node" "dataset 'arrimgs': built")
		hits=$(log_count "$node" "dataset 'arrimgs': cache hit")
		assert_eq "copies built on $node for its $tasks tasks" 1 "$builds"
		assert_eq "cache hits on $node" $((tasks - 1)) "$hits"
		assert_eq "versions on $node" 1 "$(cache_versions_of "$node" nvme "$ds" | wc -l)"
	done
	[ "$used" -ge 2 ] || fail "the array ran on $used node(s), expected it spread"
}
