# shellcheck shell=bash
# Spread datasets (issue 29 items 3 and 6; docs/STAGING.md, "Spread
# datasets"): with data=PATH,spread=yes each node of a job stages only
# its part (rendezvous hashing over the job's nodes), and every task on
# every node sees the whole tree at IOSTAGE_DATA: diff -r, a PyTorch
# DataLoader over an ImageFolder, h5py, read/pread/mmap give what the PFS
# holds, the other nodes' files read from their parts. A node whose
# iostaged stops mid-run: the others read its part from the PFS, and no
# read fails. A part is served for its job only (issue 29 item 6).

SPREAD_DIFF='
	r=same
	diff -r "$IOSTAGE_DATA/" "$SRC/" >/dev/null || r=DIFFERENT
	echo "$(hostname): $r"'

# what the task's node's view served (its --stats file), once its counts
# settled
SPREAD_STATS='
	sleep 2
	echo "$(hostname) view: $(cat "$(dirname "$(dirname "$IOSTAGE_DATA")")"/.iostage-view-*.json)"'

# held NODE JOB: "N M": NODE holds N of the spread dataset's M files
held() {
	grep -E "job $2: dataset '[^']*': this node holds [0-9]+ of its" "$(iostaged_log "$1")" |
		sed -E 's/.* holds ([0-9]+) of its ([0-9]+) files.*/\1 \2/' | head -n1
}

test_spread_three_nodes_each_hold_a_part_and_see_the_whole() {
	local ds jid node n m sum=0 total= i rec entry job dst
	ds=$(pfs_dataset imgs 60)
	submit_wait "$TEST_USER" -N 3 --io-profile="dl-train,data=$ds,spread=yes" \
		--export=ALL,SRC="$ds" -o out.txt --wrap "srun bash -c '$SPREAD_DIFF$SPREAD_STATS'" >/dev/null ||
		fail "sbatch -N3 spread: $SUBMIT_OUT $(cat out.txt 2>/dev/null)"
	jid=$SUBMIT_JOBID
	for node in n1 n2 n3; do
		assert_file_contains "the whole tree on $node (diff -r from a task there)" out.txt "$node: same"
		# the other nodes' files came from their parts: the sessions
		# named the job, which every node served (issue 29 item 6)
		grep -Eq "^$node view: .*\"peer_bytes\":[1-9]" out.txt ||
			fail "$node's view read nothing from the other nodes: $(cat out.txt)"
		read -r n m <<<"$(held "$node" "$jid")"
		[ -n "$n" ] || fail "$node never said what it holds of job $jid's dataset"
		[ -z "$total" ] || assert_eq "the dataset's files, as $node counts them" "$total" "$m"
		total=$m
		# 66 files over 3 nodes of equal weight: every node holds some,
		# none holds all
		[ "$n" -gt 0 ] && [ "$n" -lt "$m" ] || fail "$node holds $n of $m files"
		sum=$((sum + n))
	done
	assert_eq "files held by the three nodes together" "$total" "$sum"
	# n1's part asked for by hand from n2 by the job's user: without a
	# job, then for the job once over; refused, each with its reason
	# (the worker then copies from the PFS)
	wait_finished n1 "$jid" || fail "job $jid not finished on n1"
	entry=nvme/$(cache_parts_of n1 nvme "$ds")
	for job in "" "$jid"; do
		dst="$CLUSTER_PFS/$TEST_NAME/by-hand$job"
		install -d -o "$TEST_USER" -m 0700 "$dst"
		on_node_as "$TEST_USER" n2 "$IOSTAGE_ROOT/usr/sbin/iostaged" --stage-worker \
			--peer n1:6826 --peer-entry "$entry" ${job:+--peer-job "$job"} "$ds" "$dst" \
			>"worker$job.out" 2>&1 || fail "the worker on n2: $(cat "worker$job.out")"
	done
	assert_file_contains "n1's part for no job" worker.out \
		"is a part of a spread dataset: the request names no job"
	# n1 no longer runs the job, and Slurm (asked through iostagectld)
	# says it ended
	assert_file_contains "n1's part for job $jid, over" "worker$jid.out" "job $jid is not running"
	# the job's record (filed by iostagectld): the parts add up to the
	# whole dataset, all of it held on the nodes
	[ "$CLUSTER_CONTROLLER" = yes ] || return 0
	for ((i = 0; i < 160; i++)); do
		rec=$(ctld_request login root "{\"op\":\"history_get\",\"job\":$jid}" | jq -c '.record')
		[ "$(jq '.parts | length' <<<"$rec" 2>/dev/null)" = 3 ] && break
		sleep 0.25
	done
	assert_eq "files of the parts in job $jid's record" "$total" \
		"$(jq '.datasets[0].spread.part_files' <<<"$rec")"
	assert_eq "the dataset's share held on the nodes" 1 \
		"$(jq '.datasets[0].spread.held_fraction' <<<"$rec")"
	# every node's part of the record names the one plan they used
	assert_eq "distinct plans in the nodes' parts" 1 \
		"$(jq '[.parts[].datasets[0].spread.plan | select(. != null)] | unique | length' <<<"$rec")"
	assert_eq "nodes whose part names the plan" 3 \
		"$(jq '[.parts[].datasets[0].spread.plan | select(. != null)] | length' <<<"$rec")"
}

# training_reads DATA: a 3-node spread job over DATA (the profile's
# data=..., the dataset a make_data.py tree chowned to the user) whose
# every task runs spread_read.py over its IOSTAGE_DATA; each node's line
# must equal the PFS copy's (DataLoader, h5py, read/pread/mmap)
training_reads() {
	local data=$1 ds=${1%%:*} want node
	want=$(/usr/bin/python3 "$CL_DIR/spread_read.py" "$ds") || fail "spread_read.py on the PFS: $want"
	cp "$CL_DIR/spread_read.py" "$TEST_WORKDIR/" && chmod 0755 "$TEST_WORKDIR/spread_read.py"
	submit_wait "$TEST_USER" -N 3 --io-profile="dl-train,data=$data,spread=yes" -o out.txt \
		--wrap "srun bash -c 'echo \$(hostname): \$(/usr/bin/python3 $TEST_WORKDIR/spread_read.py \"\$IOSTAGE_DATA\" 2>&1 | tail -n1)'" \
		>/dev/null || fail "sbatch -N3 spread over $data: $SUBMIT_OUT $(cat out.txt 2>/dev/null)"
	for node in n1 n2 n3; do
		assert_file_contains "DataLoader, h5py, read/pread/mmap on $node" out.txt "$node: $want"
	done
}

test_spread_training_reads_see_what_the_pfs_holds() {
	local ds="$CLUSTER_PFS/$TEST_NAME/shapes"
	/usr/bin/python3 "$REPO_ROOT/examples/pytorch/make_data.py" "$ds" ||
		fail "make_data.py $ds"
	chown -R "$TEST_USER:" "$CLUSTER_PFS/$TEST_NAME"
	training_reads "$ds"
}

# The same reads where an HDF5 file is too large for one node (tier
# small, 3 MiB: a 2.5 MiB big.h5 is cut into chunks over the nodes): h5py
# reads it, and read, pread and mmap give the PFS's bytes, across the
# chunks' edges and whichever node holds each.
test_spread_training_reads_a_file_cut_into_chunks() {
	local ds="$CLUSTER_PFS/$TEST_NAME/shapes" node n held=0
	/usr/bin/python3 "$REPO_ROOT/examples/pytorch/make_data.py" "$ds" ||
		fail "make_data.py $ds"
	/usr/bin/python3 -c 'import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["noise"] = np.random.default_rng(5).integers(0, 255, size=2621440, dtype=np.uint8)' "$ds/big.h5" ||
		fail "cannot write $ds/big.h5"
	chown -R "$TEST_USER:" "$CLUSTER_PFS/$TEST_NAME"
	training_reads "$ds:small"
	for node in n1 n2 n3; do
		n=$(chunks_held "$node" "$SUBMIT_JOBID")
		held=$((held + ${n:-0}))
	done
	[ "$held" -ge 2 ] || fail "big.h5 is not held in chunks over the nodes ($held chunks held)"
}

# daemon_stops_mid_run DATA NODE [PICK]: a 3-node job over DATA (the
# profile's data=...); once every task runs, NODE's iostaged stops (PICK
# set: the first node whose part of SRC on tier PICK holds chunks); the
# other views read NODE's files (or chunks) from the PFS, nothing fails,
# and NODE's own tasks still see the whole tree (its view outlives
# iostaged).
daemon_stops_mid_run() {
	local data=$1 node=$2 pick=${3:-} ds=${1%%:*} jid n i v
	trap 'iostaged_pid "$node" >/dev/null || iostaged_start "$node"' EXIT
	as_user "$TEST_USER" sbatch --parsable -N 3 --io-profile="dl-train,data=$data,spread=yes" \
		--export=ALL,SRC="$ds",GO="$TEST_WORKDIR/go" -o "$TEST_WORKDIR/out.txt" \
		--wrap "srun bash -c 'touch \"\$GO.\$(hostname)\"; while [ ! -e \"\$GO\" ]; do sleep 0.2; done
			$SPREAD_DIFF
			cmp -s \"\$IOSTAGE_DATA/big.bin\" \"\$SRC/big.bin\" 2>/dev/null && echo \"\$(hostname): cmp same\"
			sleep 2; cat \"\$(dirname \"\$(dirname \"\$IOSTAGE_DATA\")\")\"/.iostage-view-*.json; echo'" \
		>jid.txt 2>&1 || fail "sbatch: $(cat jid.txt)"
	jid=$(tail -n1 jid.txt)
	# every task runs (a task starting on a node without iostaged fails
	# at once: the Prolog's contract), then NODE's iostaged goes
	for n in n1 n2 n3; do
		wait_file "$TEST_WORKDIR/go.$n" 60 || fail "job $jid's task on $n never ran"
	done
	if [ -n "$pick" ]; then
		node=
		for n in n1 n2 n3; do
			v=$(cache_parts_of "$n" "$pick" "$ds" | tail -n1)
			[ -n "$v" ] && [ -n "$(ls -A "$(tier_cache "$n" "$pick")/$v/chunks" 2>/dev/null)" ] &&
				{ node=$n; break; }
		done
		[ -n "$node" ] || fail "no node's part holds a chunk of $ds"
		trap 'iostaged_pid "$node" >/dev/null || iostaged_start "$node"' EXIT
	fi
	iostaged_kill "$node"
	touch "$TEST_WORKDIR/go"
	wait_file "$TEST_WORKDIR/out.txt" 60 || fail "job $jid wrote nothing"
	for ((i = 0; i < 300; i++)); do
		[ "$(grep -c '"pfs_reads"' "$TEST_WORKDIR/out.txt")" = 3 ] && break
		grep -q DIFFERENT "$TEST_WORKDIR/out.txt" && break
		sleep 0.2
	done
	iostaged_start "$node"
	for n in n1 n2 n3; do
		assert_file_contains "the whole tree on $n with $node's iostaged gone" \
			"$TEST_WORKDIR/out.txt" "$n: same"
	done
	# Some view read NODE's part from the PFS
	grep -Eq '"pfs_bytes":[1-9]' "$TEST_WORKDIR/out.txt" ||
		fail "no view read the PFS: $(cat "$TEST_WORKDIR/out.txt")"
	wait_finished n1 "$jid" 60 || fail "job $jid never finished on n1"
}

test_spread_node_daemon_stops_mid_run_reads_go_to_the_pfs() {
	daemon_stops_mid_run "$(pfs_dataset imgs 60)" n2
}

# The same for a file cut into chunks (issue 29 items 3 and 6): the
# chunks of the node whose iostaged stops are read from the PFS, and the
# file is whole on every node.
test_spread_node_daemon_stops_mid_run_chunks_go_to_the_pfs() {
	local ds="$CLUSTER_PFS/$TEST_NAME/big" n
	mkdir -p "$ds/a"
	head -c 3670016 /dev/urandom >"$ds/big.bin"
	head -c 1000 /dev/urandom >"$ds/a/one"
	chown -R "$TEST_USER:" "$CLUSTER_PFS/$TEST_NAME"
	daemon_stops_mid_run "$ds:small" "" small
	for n in n1 n2 n3; do
		assert_file_contains "big.bin byte for byte on $n" "$TEST_WORKDIR/out.txt" "$n: cmp same"
	done
}


# pfs_files NODE JOB: files NODE copied from the PFS for JOB's dataset
pfs_files() {
	grep -E "job $2: dataset '[^']*': built .*: [0-9]+ files copied" "$(iostaged_log "$1")" |
		sed -E 's/.*: ([0-9]+) files copied.*/\1/' | head -n1
}

# A node joins the dataset's nodes (issue 29 item 5): the files the new
# plan moves to n3 come from the parts n1 and n2 hold from the last job,
# n1 and n2 keep theirs (links): the job reads no file from the PFS.
test_spread_new_node_takes_its_part_from_the_others() {
	local ds jid node n m
	ds=$(pfs_dataset imgs 60)
	submit_wait "$TEST_USER" -N 2 -w n1,n2 --io-profile="dl-train,data=$ds,spread=yes" \
		--export=ALL,SRC="$ds" -o out1.txt --wrap "srun bash -c '$SPREAD_DIFF'" >/dev/null ||
		fail "sbatch -N2 spread: $SUBMIT_OUT $(cat out1.txt 2>/dev/null)"
	submit_wait "$TEST_USER" -N 3 -w n1,n2,n3 --io-profile="dl-train,data=$ds,spread=yes" \
		--export=ALL,SRC="$ds" -o out2.txt --wrap "srun bash -c '$SPREAD_DIFF'" >/dev/null ||
		fail "sbatch -N3 spread: $SUBMIT_OUT $(cat out2.txt 2>/dev/null)"
	jid=$SUBMIT_JOBID
	for node in n1 n2 n3; do
		assert_file_contains "the whole tree on $node" out2.txt "$node: same"
		assert_eq "files $node read from the PFS for job $jid" 0 "$(pfs_files "$node" "$jid")"
	done
	# n3 held nothing: every file of its part came from n1 and n2
	read -r n m <<<"$(held n3 "$jid")"
	[ "${n:-0}" -gt 0 ] || fail "n3 holds no part of job $jid's dataset"
	assert_eq "files of n3's part that came from n1 and n2" "$n" \
		"$(grep -E "job $jid: dataset '[^']*': [0-9]+ files \(.*\) from nodes " "$(iostaged_log n3)" |
			sed -E 's/.*: ([0-9]+) files \(.*/\1/' | head -n1)"
}

# The tasks of a spread job read their node's chunks of a cut file from
# the chunk files, not through the view (issue 29 item 3;
# docs/STAGING.md, "Reading a node's own chunks in the task"): the
# plugin preloads libiostage-localread.so, the view's user.iostage.chunks
# says which chunks are here, own_chunks.py reads them (the PFS's bytes)
# and the view served none of them; with IOSTAGE_LOCALREAD=0 the same
# reads went through the view. The whole file stays byte for byte.
test_spread_tasks_read_their_own_chunks_from_the_chunk_files() {
	local ds jid node off own served sum_own=0 big=3670016 run preload
	ds="$CLUSTER_PFS/$TEST_NAME/big"
	mkdir -p "$ds"
	head -c "$big" /dev/urandom >"$ds/big.bin"
	head -c 1000 /dev/urandom >"$ds/one"
	chown -R "$TEST_USER:" "$CLUSTER_PFS/$TEST_NAME"
	cp "$CL_DIR/own_chunks.py" "$TEST_WORKDIR/" && chmod 0755 "$TEST_WORKDIR/own_chunks.py"
	for off in 1 0; do
		run=out.$off.txt
		submit_wait "$TEST_USER" -N 3 --io-profile="dl-train,data=$ds:small,spread=yes" \
			--export=ALL,SRC="$ds",IOSTAGE_LOCALREAD=$((1 - off)) -o "$run" --wrap "srun bash -c '
				echo \"\$(hostname) preload: \$LD_PRELOAD\"
				echo \"\$(hostname) \$(/usr/bin/python3 $TEST_WORKDIR/own_chunks.py \"\$IOSTAGE_DATA/big.bin\" \"\$SRC/big.bin\" 2>&1 | tail -n1)\"
				$SPREAD_STATS
				cmp \"\$IOSTAGE_DATA/big.bin\" \"\$SRC/big.bin\" && echo \"\$(hostname): cmp same\"'" >/dev/null ||
			fail "sbatch -N3 spread (IOSTAGE_LOCALREAD=$((1 - off))): $SUBMIT_OUT $(cat "$run" 2>/dev/null)"
		jid=$SUBMIT_JOBID
		for node in n1 n2 n3; do
			# one entry of LD_PRELOAD; the trace shim comes before it
			# where the profile traces (spank/localread.c)
			preload=$(grep -E "^$node preload: " "$run" | sed "s/^$node preload: //")
			case ":$preload:" in
			*":$CLUSTER_DIR/iostage/root/usr/lib/iostage/libiostage-localread.so:"*) ;;
			*) fail "libiostage-localread.so not in $node's LD_PRELOAD: '$preload'" ;;
			esac
			assert_file_contains "big.bin byte for byte on $node" "$run" "$node: cmp same"
			own=$(grep -E "^$node own chunks: " "$run" | sed -E 's/.*own chunks: ([0-9]+) bytes same.*/\1/')
			[ -n "$own" ] || fail "$node: own_chunks.py: $(grep "^$node" "$run")"
			served=$(grep -E "^$node view: " "$run" | sed -E 's/.*"local_bytes":([0-9]+).*/\1/')
			if [ "$off" = 0 ]; then
				assert_eq "bytes of $node's own chunks the view served, the library on" 0 "${served:-?}"
				sum_own=$((sum_own + own))
			elif [ "$own" -gt 0 ]; then
				[ "${served:-0}" -ge "$own" ] ||
					fail "$node's view served ${served:-?} of its $own own chunk bytes with IOSTAGE_LOCALREAD=0"
			fi
			wait_finished "$node" "$jid" || fail "job $jid not finished on $node"
		done
	done
	[ "$sum_own" -gt 0 ] || fail "no node read an own chunk: $(cat out.0.txt)"
}

# chunks NODE JOB: the chunks NODE's part holds for JOB's dataset
chunks_held() {
	grep -E "job $2: dataset '[^']*': this node holds .*, and [0-9]+ chunks" "$(iostaged_log "$1")" |
		sed -E 's/.*, and ([0-9]+) chunks.*/\1/' | head -n1
}

# pfs_bytes NODE JOB: what NODE's build read from the PFS for JOB's
# dataset, as iostaged logged it ("0 B", "1.0 MiB")
pfs_bytes() {
	grep -E "job $2: dataset '[^']*': built .*: [0-9]+ files copied" "$(iostaged_log "$1")" |
		sed -E 's/.*files copied \(([^)]*)\).*/\1/' | head -n1
}

# The same for a file too large for one node (issue 29 items 3 and 5):
# the chunks the new plan gives n3 come from the parts n1 and n2 hold
# from the last job, over the peer channel; n1 and n2 keep theirs; no
# node reads a byte from the PFS, and big.bin is whole on every node.
test_spread_new_node_takes_its_chunks_from_the_others() {
	local ds jid node n got
	ds="$CLUSTER_PFS/$TEST_NAME/big"
	mkdir -p "$ds/a"
	# 2.5 MiB on the 3 MiB tier small: cut into 3 chunks, which two
	# nodes hold between them whatever the draw
	head -c 2621440 /dev/urandom >"$ds/big.bin"
	head -c 1000 /dev/urandom >"$ds/a/one"
	chown -R "$TEST_USER:" "$CLUSTER_PFS/$TEST_NAME"
	for n in 2 3; do
		submit_wait "$TEST_USER" -N "$n" -w "$([ "$n" = 2 ] && echo n1,n2 || echo n1,n2,n3)" \
			--io-profile="dl-train,data=$ds:small,spread=yes" --export=ALL,SRC="$ds" -o "out$n.txt" \
			--wrap "srun bash -c '$SPREAD_DIFF
				cmp \"\$IOSTAGE_DATA/big.bin\" \"\$SRC/big.bin\" && echo \"\$(hostname): cmp same\"'" >/dev/null ||
			fail "sbatch -N$n spread on tier small: $SUBMIT_OUT $(cat "out$n.txt" 2>/dev/null)"
	done
	jid=$SUBMIT_JOBID
	for node in n1 n2 n3; do
		assert_file_contains "the whole tree on $node" out3.txt "$node: same"
		assert_file_contains "big.bin byte for byte on $node" out3.txt "$node: cmp same"
	done
	n=$(chunks_held n3 "$jid")
	[ "${n:-0}" -gt 0 ] || fail "n3 holds no chunk of big.bin for job $jid (the plan gave it none): $(grep "job $jid:" "$(iostaged_log n3)")"
	got=$(grep -E "job $jid: dataset '[^']*': [0-9]+ files \(.*\) and [0-9]+ chunks \(.*\) from nodes " "$(iostaged_log n3)" |
		sed -E 's/.* and ([0-9]+) chunks \(.*/\1/' | head -n1)
	assert_eq "chunks of n3's part that came from n1 and n2" "$n" "${got:-0}"
	for node in n1 n2 n3; do
		[ -z "$(pfs_bytes "$node" "$jid")" ] || assert_eq "bytes $node read from the PFS for job $jid" "0 B" "$(pfs_bytes "$node" "$jid")"
	done
	assert_eq "bytes n3 read from the PFS for job $jid" "0 B" "$(pfs_bytes n3 "$jid")"
}

# A node outside the job (issue 29 items 2, 5 and 6): job 2 runs on n2
# and n3 only, and what its plan moves off n1, whose part is from job 1,
# comes from n1 all the same, files and chunks: n1 does not run job 2,
# so it asks Slurm, through iostagectld, that job 2 runs, is the user's
# and has the asking node, then serves it. Neither node of job 2 reads
# the PFS, and the tree is whole on both.
test_spread_node_outside_the_job_gives_its_part() {
	local ds jid node i from
	ds="$CLUSTER_PFS/$TEST_NAME/mixed"
	mkdir -p "$ds/a"
	# 2.5 MiB cut into chunks, 20 small files: the two nodes' tiers
	# small (3 MiB each) hold it all
	head -c 2621440 /dev/urandom >"$ds/big.bin"
	for ((i = 0; i < 20; i++)); do
		head -c 10000 /dev/urandom >"$ds/a/f$i"
	done
	chown -R "$TEST_USER:" "$CLUSTER_PFS/$TEST_NAME"
	chmod -R go-rwx "$CLUSTER_PFS/$TEST_NAME"
	for nodes in n1,n2 n2,n3; do
		submit_wait "$TEST_USER" -N 2 -w "$nodes" \
			--io-profile="dl-train,data=$ds:small,spread=yes" --export=ALL,SRC="$ds" -o "out.$nodes.txt" \
			--wrap "srun bash -c '$SPREAD_DIFF
				cmp \"\$IOSTAGE_DATA/big.bin\" \"\$SRC/big.bin\" && echo \"\$(hostname): cmp same\"'" >/dev/null ||
			fail "sbatch -w $nodes spread on tier small: $SUBMIT_OUT $(cat "out.$nodes.txt" 2>/dev/null)"
	done
	jid=$SUBMIT_JOBID
	for node in n2 n3; do
		assert_file_contains "the whole tree on $node" out.n2,n3.txt "$node: same"
		assert_file_contains "big.bin byte for byte on $node" out.n2,n3.txt "$node: cmp same"
		[ -z "$(pfs_bytes "$node" "$jid")" ] ||
			assert_eq "bytes $node read from the PFS for job $jid" "0 B" "$(pfs_bytes "$node" "$jid")"
	done
	# n3 held nothing: its part came from n2 and from n1, outside the job
	from=$(grep -E "job $jid: dataset '[^']*': [0-9]+ files \(.*from nodes " "$(iostaged_log n3)" |
		sed -E 's/.* from nodes ([^ ,]*(,[^ ,]*)*),.*/\1/' | head -n1)
	[[ ",$from," == *,n1,* ]] || fail "n3 did not fill from n1 (outside job $jid): from '${from}': $(grep "job $jid:" "$(iostaged_log n3)")"
	assert_eq "bytes n3 read from the PFS for job $jid" "0 B" "$(pfs_bytes n3 "$jid")"
	! grep -E "fetch_open refused: .*job $jid" "$(iostaged_log n1)" ||
		fail "n1 refused a session of job $jid"
}

# n2's iostaged is killed while its worker copies n2's part (the worker
# held, so that it is caught mid-part): the job fails on every node, n2
# comes back with its half part removed and nothing published, and the
# next job's parts are whole (diff -r from every node).
test_spread_node_killed_mid_part_serves_no_half_part() {
	local ds jid node i
	ds=$(slow_dataset big 6)
	trap 'stage_worker_cont "$ds"; iostaged_pid n2 >/dev/null || iostaged_start n2' EXIT
	as_user "$TEST_USER" sbatch --parsable -N 3 --io-profile="dl-train,data=$ds,spread=yes,timeout=60" \
		-o "$TEST_WORKDIR/out1.txt" --wrap true >jid.txt 2>&1 || fail "sbatch: $(cat jid.txt)"
	jid=$(tail -n1 jid.txt)
	# catch n2's worker while it builds n2's part
	for ((i = 0; i < 1500; i++)); do
		pkill -STOP -f -- "--stage-worker .*--spread-self n2 .*$ds " && break
		sleep 0.02
	done
	[ "$i" -lt 1500 ] || fail "n2's stage worker for job $jid never ran"
	assert_eq "n2's part being built" yes \
		"$(cd "$(tier_cache n2 nvme)" && ls -1d .build.* >/dev/null 2>&1 && echo yes)"
	iostaged_kill n2
	pkill -KILL -f -- "--stage-worker .*--spread-self n2 .*$ds "
	assert_eq "n2's published parts of the dataset while it is down" "" \
		"$(cache_parts_of n2 nvme "$ds")"
	iostaged_start n2
	stage_worker_cont "$ds"
	wait_job_state "$jid" "COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|BOOT_FAIL" 120 ||
		fail "job $jid did not end"
	assert_eq "job $jid's end (a node failed its staging)" FAILED "$(job_end_state "$jid")"
	assert_eq "n2's half part after its restart" "" \
		"$(cd "$(tier_cache n2 nvme)" && ls -1d .build.* 2>/dev/null)"
	wait_finished n2 "$jid" 60 || fail "job $jid never finished on n2"
	submit_wait "$TEST_USER" -N 3 --io-profile="dl-train,data=$ds,spread=yes" \
		--export=ALL,SRC="$ds" -o out2.txt --wrap "srun bash -c '$SPREAD_DIFF'" >/dev/null ||
		fail "the next spread job: $SUBMIT_OUT $(cat out2.txt 2>/dev/null)"
	for node in n1 n2 n3; do
		assert_file_contains "the whole tree on $node (the next job)" out2.txt "$node: same"
	done
}

# Larger than the three nodes' tiers together (issue 29 item 4): each
# node keeps what fits of its part, the views read the rest from the
# PFS, every task still sees the whole tree, and the record says what
# share of the dataset the nodes held.
test_spread_larger_than_the_nodes_holds_what_fits() {
	local ds jid i rec frac
	# 130 files of 110 kB (14 MB) over tiers of 3 MB
	ds=$(pfs_dataset imgs 130)
	submit_wait "$TEST_USER" -N 3 --io-profile="dl-train,data=$ds:small,spread=yes" \
		--export=ALL,SRC="$ds" -o out.txt \
		--wrap "srun bash -c '$SPREAD_DIFF
			sleep 2; cat \"\$(dirname \"\$(dirname \"\$IOSTAGE_DATA\")\")\"/.iostage-view-*.json; echo'" >/dev/null ||
		fail "sbatch -N3 spread on tier small: $SUBMIT_OUT $(cat out.txt 2>/dev/null)"
	jid=$SUBMIT_JOBID
	for node in n1 n2 n3; do
		assert_file_contains "the whole tree on $node" out.txt "$node: same"
	done
	grep -Eq '"pfs_bytes":[1-9]' out.txt || fail "no view read the PFS: $(cat out.txt)"
	[ "$CLUSTER_CONTROLLER" = yes ] || return 0
	for ((i = 0; i < 160; i++)); do
		rec=$(ctld_request login root "{\"op\":\"history_get\",\"job\":$jid}" | jq -c '.record')
		[ "$(jq '.parts | length' <<<"$rec" 2>/dev/null)" = 3 ] && break
		sleep 0.25
	done
	frac=$(jq '.datasets[0].spread.held_fraction' <<<"$rec")
	# at most 9 MB of 14 MB held: more than none, less than 0.7
	assert_eq "the dataset's share held on the nodes (0 < $frac < 0.7)" yes \
		"$(jq -n --argjson f "${frac:-null}" 'if $f != null and $f > 0 and $f < 0.7 then "yes" else "no" end' -r)"
}

# A file larger than one node's tier (3.5 MiB over tiers of 3 MiB) is cut
# into chunks over the nodes (issue 29 item 3): no part's data holds it,
# each node's part holds the chunks the plan gives it, no chunk is on two
# nodes, and every task reads the whole file as the PFS has it, mostly
# from the nodes' chunks (before chunks, every view read all of it from
# the PFS).
test_spread_file_larger_than_a_node_is_held_in_chunks() {
	local ds jid node v d names="" n all=0 big=3670016 pfs peer sum_peer=0
	ds="$CLUSTER_PFS/$TEST_NAME/big"
	mkdir -p "$ds/a"
	head -c "$big" /dev/urandom >"$ds/big.bin"
	head -c 1000 /dev/urandom >"$ds/a/one"
	head -c 1000 /dev/urandom >"$ds/a/two"
	chown -R "$TEST_USER:" "$CLUSTER_PFS/$TEST_NAME"
	submit_wait "$TEST_USER" -N 3 --io-profile="dl-train,data=$ds:small,spread=yes" \
		--export=ALL,SRC="$ds" -o out.txt --wrap "srun bash -c '$SPREAD_DIFF
			cmp \"\$IOSTAGE_DATA/big.bin\" \"\$SRC/big.bin\" && echo \"\$(hostname): cmp same\"
			$SPREAD_STATS'" >/dev/null ||
		fail "sbatch -N3 spread on tier small: $SUBMIT_OUT $(cat out.txt 2>/dev/null)"
	jid=$SUBMIT_JOBID
	for node in n1 n2 n3; do
		assert_file_contains "the whole tree on $node" out.txt "$node: same"
		assert_file_contains "big.bin byte for byte on $node" out.txt "$node: cmp same"
		pfs=$(grep -E "^$node view: " out.txt | sed -E 's/.*"pfs_bytes":([0-9]+).*/\1/')
		peer=$(grep -E "^$node view: " out.txt | sed -E 's/.*"peer_bytes":([0-9]+).*/\1/')
		[ -n "$pfs" ] && [ "$pfs" -lt "$big" ] ||
			fail "$node's view read ${pfs:-?} bytes from the PFS, not less than big.bin's $big: $(cat out.txt)"
		sum_peer=$((sum_peer + ${peer:-0}))
		wait_finished "$node" "$jid" || fail "job $jid not finished on $node"
		v=$(cache_parts_of "$node" small "$ds" | tail -n1)
		[ -n "$v" ] || fail "$node has no part of $ds on tier small"
		d="$(tier_cache "$node" small)/$v"
		[ ! -e "$d/data/big.bin" ] || fail "$node's part holds big.bin whole"
		if [ -d "$d/chunks" ]; then
			n=$(find "$d/chunks" -type f | wc -l)
			all=$((all + n))
			names="$names $(cd "$d/chunks" && ls)"
		fi
	done
	[ "$sum_peer" -gt 0 ] || fail "no view read a chunk from another node: $(cat out.txt)"
	# 4 chunks (1 MiB each, the last 0.5): most held, none twice
	[ "$all" -ge 2 ] && [ "$all" -le 4 ] || fail "$all chunk files over the nodes:$names"
	assert_eq "distinct chunks over the nodes" "$all" \
		"$(tr ' ' '\n' <<<"$names" | sed '/^$/d' | sort -u | wc -l)"
}
