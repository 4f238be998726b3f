# shellcheck shell=bash
# The cluster's NVMe as one cache (issue 29 items 1, 2 and 6; docs/
# STAGING.md, "Filling from another node"): a multi-node job's nodes each
# read a share of the PFS and fill the rest from each other (NodeFill=
# parts), or its head reads it all and the others fill from the head's
# copy (NodeFill=head); a node with no
# copy of a dataset another node holds fills from that node, found
# through iostagectld; a holder that stops mid-fill leaves the PFS, never
# a half copy; another user's entry is never given.

DIFF_STEP='
	r=same
	diff -r "$IOSTAGE_DATA/" "$SRC/" >/dev/null || r=DIFFERENT
	echo "$(hostname): $r"'

# wait_ctld_holds NODE SRC [TIMEOUT_S=20]: iostagectld names NODE among
# the holders of SRC's entry on nvme (cache_holders, asked as root)
wait_ctld_holds() {
	local v key i
	v=$(cache_versions_of "$1" nvme "$2" | head -n1)
	key=${v%%.v*}
	[ -n "$key" ] || return 1
	for ((i = 0; i < ${3:-20} * 5; i++)); do
		ctld_request n1 root "{\"op\":\"cache_holders\",\"tier\":\"nvme\",\"key\":\"$key\"}" |
			grep -q "\"$1\"" && return 0
		sleep 0.2
	done
	return 1
}

# built_from NODE JOB: "PFS" or the node NODE's copy came from
built_from() {
	local from
	from=$(grep -E "job $2: dataset '[^']*': [0-9]+ files \(.*\) from node " "$(iostaged_log "$1")" |
		sed -E 's/.* from node ([^,]*),.*/\1/' | head -n1)
	echo "${from:-PFS}"
}

# pfs_files NODE JOB: files NODE copied from the PFS for JOB (its log)
pfs_files() {
	grep -E "job $2: dataset '[^']*': built .*: [0-9]+ files copied" "$(iostaged_log "$1")" |
		sed -E 's/.*: ([0-9]+) files copied.*/\1/' | head -n1
}

# share_files NODE JOB: files in NODE's share of a fill by parts (its log)
share_files() {
	grep -E "job $2: dataset '[^']*': its share .*: [0-9]+ files," "$(iostaged_log "$1")" |
		sed -E 's/.*: ([0-9]+) files,.*/\1/' | head -n1
}

# parts_from NODE JOB: the nodes whose shares NODE's copy took files from
parts_from() {
	grep -E "job $2: dataset '[^']*': [0-9]+ files \(.*\) from nodes " "$(iostaged_log "$1")" |
		sed -E 's/.* from nodes ([^,]*(,[^, ]+)*), .*/\1/' | head -n1
}

# node_fill MODE: every node's iostaged restarted with NodeFill=MODE
# (the cluster's one iostage.conf; "" takes the line out again)
node_fill() {
	local conf=$CLUSTER_DIR/iostage/iostage.conf node
	sed -i '/^NodeFill=/d' "$conf"
	[ -n "$1" ] && echo "NodeFill=$1" >>"$conf"
	for node in n1 n2 n3; do
		iostaged_stop "$node"
		iostaged_start "$node" || return 1
	done
}

# NodeFill=parts (the default): every node reads its share of the PFS
# and takes the rest from the other two; between them the three read
# each file of the PFS once.
test_fill_three_node_job_reads_the_pfs_once() {
	local ds jid node sum=0 share others
	ds=$(pfs_dataset imgs 40)
	submit_wait "$TEST_USER" -N 3 --io-profile="dl-train,data=$ds" \
		--export=ALL,SRC="$ds" -o out.txt --wrap "srun bash -c '$DIFF_STEP'" >/dev/null ||
		fail "sbatch -N3: $SUBMIT_OUT $(cat out.txt 2>/dev/null)"
	jid=$SUBMIT_JOBID
	for node in n1 n2 n3; do
		assert_file_contains "copy on $node (diff -r from a task there)" out.txt "$node: same"
		share=$(share_files "$node" "$jid")
		assert_eq "$node staged a share of its own (1..39 of the files)" yes \
			"$([ "${share:-0}" -gt 0 ] && [ "$share" -lt 40 ] && echo yes)"
		# what it read of the PFS is its share, nothing more
		assert_eq "files $node read from the PFS" "$share" "$(pfs_files "$node" "$jid")"
		others=$(echo n1 n2 n3 | tr ' ' '\n' | grep -vx "$node" | paste -sd,)
		# its share is in its copy as hard links (a user's entry: the
		# files are the user's, so the user's worker may link them)
		assert_eq "files $node linked from its share" "$share" \
			"$(grep -E "job $jid: dataset '[^']*': .* from nodes " "$(iostaged_log "$node")" |
				sed -E 's/.*, ([0-9]+) linked and [0-9]+ copied from its own share.*/\1/' | head -n1)"
		assert_eq "nodes $node's copy took the rest from" "$others" \
			"$(parts_from "$node" "$jid" | tr , '\n' | sort | paste -sd,)"
		sum=$((sum + share))
	done
	# the shares partition the dataset (make_dataset's files + 40)
	assert_eq "files of the three shares" "$(find "$ds" -type f | wc -l)" "$sum"
}

# NodeFill=head: the head (first of the node list) reads the PFS, the
# others take every file from it.
test_fill_head_mode_three_node_job() {
	local ds jid node
	trap 'node_fill ""' EXIT
	node_fill head || fail "iostaged did not restart with NodeFill=head"
	ds=$(pfs_dataset imgs 40)
	submit_wait "$TEST_USER" -N 3 --io-profile="dl-train,data=$ds" \
		--export=ALL,SRC="$ds" -o out.txt --wrap "srun bash -c '$DIFF_STEP'" >/dev/null ||
		fail "sbatch -N3: $SUBMIT_OUT $(cat out.txt 2>/dev/null)"
	jid=$SUBMIT_JOBID
	for node in n1 n2 n3; do
		assert_file_contains "copy on $node (diff -r from a task there)" out.txt "$node: same"
	done
	assert_eq "where n1's copy came from" PFS "$(built_from n1 "$jid")"
	for node in n2 n3; do
		assert_eq "where $node's copy came from" n1 "$(built_from "$node" "$jid")"
		assert_eq "files $node read from the PFS" 0 "$(pfs_files "$node" "$jid")"
	done
}

test_fill_next_job_fills_from_the_node_that_holds_it() {
	local ds jid1 jid2
	ds=$(pfs_dataset imgs 30)
	submit_wait "$TEST_USER" -w n1 --io-profile="dl-train,data=$ds" \
		--export=ALL,SRC="$ds" -o out1.txt --wrap "bash -c '$DIFF_STEP'" >/dev/null ||
		fail "job on n1: $SUBMIT_OUT"
	jid1=$SUBMIT_JOBID
	# iostagectld learns of n1's copy from its cache report
	wait_ctld_holds n1 "$ds" 20 || fail "iostagectld never heard that n1 holds $ds"
	submit_wait "$TEST_USER" -w n3 --io-profile="dl-train,data=$ds" \
		--export=ALL,SRC="$ds" -o out2.txt --wrap "bash -c '$DIFF_STEP'" >/dev/null ||
		fail "job on n3: $SUBMIT_OUT"
	jid2=$SUBMIT_JOBID
	assert_file_contains "copy on n3" out2.txt "n3: same"
	assert_eq "where n1's copy came from (job $jid1)" PFS "$(built_from n1 "$jid1")"
	assert_eq "where n3's copy came from (job $jid2)" n1 "$(built_from n3 "$jid2")"
	assert_eq "files n3 read from the PFS" 0 "$(pfs_files n3 "$jid2")"
	assert_eq "versions of the dataset on n3" 1 "$(cache_versions_of n3 nvme "$ds" | wc -l)"
}

# A changed file on the PFS is read from there, not from the holder's
# older copy: the worker compares the PFS with the holder's manifest.
test_fill_changed_file_comes_from_the_pfs() {
	local ds jid
	ds=$(pfs_dataset imgs 10)
	submit_wait "$TEST_USER" -w n1 --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "job on n1: $SUBMIT_OUT"
	wait_ctld_holds n1 "$ds" 20 || fail "iostagectld never heard that n1 holds $ds"
	head -c 5000 /dev/urandom >"$ds/train/a/f3.bin"
	chown "$TEST_USER:" "$ds/train/a/f3.bin"
	submit_wait "$TEST_USER" -w n2 --io-profile="dl-train,data=$ds" \
		--export=ALL,SRC="$ds" -o out.txt --wrap "bash -c '$DIFF_STEP'" >/dev/null ||
		fail "job on n2: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	assert_file_contains "copy on n2 matches the changed PFS" out.txt "n2: same"
	assert_eq "where n2's copy came from" n1 "$(built_from n2 "$jid")"
	assert_eq "files n2 read from the PFS (the changed one)" 1 "$(pfs_files n2 "$jid")"
}

# n1's iostaged stops while the others fill from its share: they finish
# from the PFS, every copy is whole, and no half copy is left or served.
test_fill_node_stops_mid_fill_others_finish_from_the_pfs() {
	local ds jid node
	ds=$(slow_dataset big 10)
	# n1 back at the end whatever happens: its Epilog must finish the job
	trap 'iostaged_pid n1 >/dev/null || iostaged_start n1' EXIT
	as_user "$TEST_USER" sbatch --parsable -N 3 --io-profile="dl-train,data=$ds,timeout=120" \
		--export=ALL,SRC="$ds" -o "$TEST_WORKDIR/out.txt" \
		--wrap "srun bash -c '$DIFF_STEP'" >jid.txt 2>&1 || fail "sbatch: $(cat jid.txt)"
	jid=$(tail -n1 jid.txt)
	for node in n2 n3; do
		wait_log "$node" "job $jid: dataset '[^']*': filling by parts: .*n1" 60 ||
			fail "$node never filled from n1's share"
	done
	# n1 goes while they fill (their workers held meanwhile, so that
	# they cannot be done before it)
	stage_worker_stop "$ds"
	iostaged_kill n1
	stage_worker_cont "$ds"
	for node in n2 n3; do
		wait_log "$node" "job $jid: staged" 120 || fail "job $jid never staged on $node"
	done
	# n1 back before the job ends there: its Epilog gives a missing
	# iostaged 30 s
	iostaged_start n1
	for node in n2 n3; do
		# what n1 did not give came from the PFS: a session cut
		# mid-copy, or none opened at all: more than the node's share
		assert_eq "files $node read from the PFS (n1 gone) > its share" yes \
			"$([ "$(pfs_files "$node" "$jid")" -gt "$(share_files "$node" "$jid")" ] && echo yes)"
		assert_eq "builds left on $node" "" "$(cd "$(tier_cache "$node" nvme)" && ls -1d .build.* 2>/dev/null)"
	done
	wait_job_state "$jid" "COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|BOOT_FAIL" 120 ||
		fail "job $jid did not end"
	for node in n2 n3; do
		if [ "$(job_end_state "$jid")" = COMPLETED ]; then
			assert_file_contains "copy on $node" out.txt "$node: same"
		fi
		assert_eq "versions of the dataset on $node (its share aside)" 1 \
			"$(cache_versions_of "$node" nvme "$ds" | wc -l)"
		assert_eq "its shares on $node" 1 "$(cache_parts_of "$node" nvme "$ds" | wc -l)"
	done
	assert_eq "a node saw a different copy" "" "$(grep DIFFERENT out.txt 2>/dev/null)"
	wait_finished n1 "$jid" 60 || fail "job $jid never finished on n1"
}

# A dataset that fits a node's tier, but not twice: its share takes no
# room beside the copy that links it (the copy's reservation leaves the
# share out), so a fill by parts stages what a node could stage alone.
test_fill_by_parts_fits_where_the_dataset_fits() {
	local ds jid node
	# about 2.3 MB on the 3 MB tier 'small'
	ds=$(pfs_dataset imgs 20)
	submit_wait "$TEST_USER" -N 3 --io-profile="dl-train,data=$ds:small" \
		--export=ALL,SRC="$ds" -o out.txt --wrap "srun bash -c '$DIFF_STEP'" >/dev/null ||
		fail "sbatch -N3 on tier small: $SUBMIT_OUT $(cat out.txt 2>/dev/null)"
	jid=$SUBMIT_JOBID
	for node in n1 n2 n3; do
		assert_file_contains "copy on $node" out.txt "$node: same"
		grep -qE "job $jid: dataset '[^']*': filling by parts" "$(iostaged_log "$node")" ||
			fail "$node did not fill job $jid by parts"
	done
}
