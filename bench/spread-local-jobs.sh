# shellcheck shell=bash
# spread-local-jobs.sh - the job of `make bench-spread-local` (issue 29
# item 3: reads of a spread dataset's local part at 90% or more of a plain
# local copy's speed), run by bench/spread-local.sh through the cluster
# runner (tests/cluster/run.sh). Not part of the test suite.
#
# A 3-node spread job over CLUSTER_PFS/SL_SRC holds its tasks (a file it waits for);
# meanwhile, on each node, root reads every file of that node's part two
# ways, SL_ROUNDS times each, in turn:
#   view   through the job's IOSTAGE_DATA (its bind mount of the overlay
#          of the part over the FUSE view: what a task reads), in the
#          node's mount namespace
#   plain  the same files in the part's cache version (a plain local
#          directory on the same tier: the overlay's upper layer)
# cold (page cache dropped before each read of the list) and warm (read
# again at once; the modes' order rotates by round). One JSON line per
# node and mode to SL_OUT: seconds, bytes, files. Figures come from
# `date +%s.%N` around one xargs cat of the node's part list.
# SL_SHAPE=chunks: the node's chunks of the dataset's files too large
# for one node instead, read by
# SL_CHUNK_READS (bench/chunk_reads.py): through the view, each chunk's
# range of its file; plain, the chunk's own file in the part's chunks/.
# SL_SHAPE=chunks-whole: every file of the dataset whole, through the
# view and from CLUSTER_PFS/SL_SRC (a plain directory on the same disk).
# With SL_LOCALREAD_LIB (the chunk shapes), a third way, localread: through
# the view as view does, with that library (libiostage-localread.so,
# localread/) preloaded as the plugin preloads it into a spread job's
# tasks, so this node's chunks are read from their files, not through FUSE.
# SL_PAUSE=FILE (for looking into a figure by hand): once measured, the
# job and its cluster stay up until FILE exists (the test's timeout at
# most); FILE.info says the job and the cluster directory.

# sl_read DIR LIST: seconds to cat every file of LIST (relative to DIR),
# run in NODE's mount namespace (SL_NODE), preloading SL_PRELOAD (may be
# empty)
sl_read() {
	local t0 t1
	t0=$(date +%s.%N)
	nsenter --mount="$CLUSTER_DIR/ns/$SL_NODE.mnt" -- env LD_PRELOAD="$SL_PRELOAD" \
		bash -c 'cd "$1" && xargs -0 -a "$2" cat >/dev/null' _ "$1" "$2" ||
		fail "cannot read $SL_NODE's part under $1"
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}

# sl_read_chunks MODE DIR LIST: the same for the chunks of LIST
sl_read_chunks() {
	local t0 t1
	t0=$(date +%s.%N)
	nsenter --mount="$CLUSTER_DIR/ns/$SL_NODE.mnt" -- env LD_PRELOAD="$SL_PRELOAD" \
		/usr/bin/python3 "$SL_CHUNK_READS" "$1" "$2" "$3" ||
		fail "cannot read $SL_NODE's chunks under $2"
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}

# sl_rotate N WORD...: the words, starting with word N (mod their count)
sl_rotate() {
	local n=$1
	shift
	local words=("$@") k
	for ((k = 0; k < ${#words[@]}; k++)); do
		echo "${words[(n + k) % ${#words[@]}]}"
	done
}

test_spread_local_reads() {
	local jid node v part view list name round mode d cold warm bytes files src modes rmode
	src=$CLUSTER_PFS/$SL_SRC
	name=$(basename "$src")
	as_user "$TEST_USER" sbatch --parsable -N 3 --io-profile="dl-train,data=$src,spread=yes" \
		--export=ALL,GO="$TEST_WORKDIR/go" -o "$TEST_WORKDIR/out.txt" \
		--wrap "srun bash -c 'touch \"\$GO.\$(hostname)\"; while [ ! -e \"\$GO\" ]; do sleep 0.2; done'" \
		>jid.txt 2>&1 || fail "sbatch: $(cat jid.txt)"
	jid=$(tail -n1 jid.txt)
	trap 'touch "$TEST_WORKDIR/go"' EXIT
	for node in n1 n2 n3; do
		wait_file "$TEST_WORKDIR/go.$node" 300 || fail "job $jid's task on $node never ran"
	done
	: >"$SL_OUT"
	modes="view plain"
	if [ "${SL_SHAPE:-files}" != files ] && [ -n "${SL_LOCALREAD_LIB:-}" ]; then
		[ -r "$SL_LOCALREAD_LIB" ] || fail "SL_LOCALREAD_LIB $SL_LOCALREAD_LIB: not readable"
		modes="view localread plain"
	fi
	for node in n1 n2 n3; do
		v=$(cache_parts_of "$node" nvme "$src" | tail -n1)
		[ -n "$v" ] || fail "$node holds no part of $src"
		part="$(tier_cache "$node" nvme)/$v/data"
		view="$CLUSTER_DIR/local/nvme/jobs/$jid/data/$name"
		list="$TEST_WORKDIR/list.$node"
		SL_NODE=$node
		if [ "${SL_SHAPE:-files}" = chunks-whole ]; then
			# every file whole, against the same files on a plain
			# directory of the same disk (the bench's PFS)
			part=$src
			(cd "$part" && find . -type f -print0) >"$list"
			files=$(tr -cd '\0' <"$list" | wc -c)
			bytes=$(cd "$part" && find . -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
		elif [ "${SL_SHAPE:-files}" = chunks ]; then
			part="$(tier_cache "$node" nvme)/$v/chunks"
			[ -d "$part" ] || fail "$node's part $v holds no chunks"
			nsenter --mount="$CLUSTER_DIR/ns/$node.mnt" -- \
				/usr/bin/python3 "$SL_CHUNK_READS" list "$view" "$part" "$list" ||
				fail "cannot list $node's chunks"
			files=$(wc -l <"$list")
			bytes=$(awk '{ s += $3 } END { print s + 0 }' "$list")
		else
			(cd "$part" && find . -type f -print0) >"$list"
			files=$(tr -cd '\0' <"$list" | wc -c)
			bytes=$(cd "$part" && find . -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
		fi
		for ((round = 0; round < SL_ROUNDS; round++)); do
			# each round starts with the next mode: the read right
			# after the view's (whose drop frees twice the pages)
			# and the VM's reclaim of idle pages fall on every mode
			# alike, not always on the same one
			for mode in $(sl_rotate "$round" $modes); do
				if [ "$mode" = plain ]; then d=$part; else d=$view; fi
				SL_PRELOAD=
				rmode=$mode
				if [ "$mode" = localread ]; then
					SL_PRELOAD=$SL_LOCALREAD_LIB
					rmode=view
				fi
				sync
				echo 3 >/proc/sys/vm/drop_caches
				if [ "${SL_SHAPE:-files}" = chunks ]; then
					cold=$(sl_read_chunks "$rmode" "$d" "$list")
					warm=$(sl_read_chunks "$rmode" "$d" "$list")
				else
					cold=$(sl_read "$d" "$list")
					warm=$(sl_read "$d" "$list")
				fi
				jq -nc --arg node "$node" --arg mode "$mode" --argjson round "$round" \
					--argjson cold "$cold" --argjson warm "$warm" \
					--argjson bytes "$bytes" --argjson files "$files" \
					'{node: $node, mode: $mode, round: $round, cold_s: $cold, warm_s: $warm, bytes: $bytes, files: $files}' >>"$SL_OUT"
			done
		done
		echo "spread-local $node: $files files, $bytes B of its part read $SL_ROUNDS times each way ($modes)" >&2
	done
	if [ -n "${SL_PAUSE:-}" ]; then
		echo "spread-local: job $jid paused until $SL_PAUSE exists" >&2
		echo "$jid $CLUSTER_DIR" >"$SL_PAUSE.info"
		wait_file "$SL_PAUSE" 850 || true
	fi
	touch "$TEST_WORKDIR/go"
	wait_job_state "$jid" "COMPLETED|FAILED|CANCELLED|TIMEOUT" 120 || fail "job $jid did not end"
	assert_eq "job $jid" COMPLETED "$(job_end_state "$jid")"
}
