# shellcheck shell=bash
# cluster-spread-jobs.sh - the jobs of `make bench-cluster-spread` (issue
# 29 item 7), run by bench/cluster-spread.sh through the cluster runner
# (tests/cluster/run.sh) with bench/pfs.sh's GlusterFS as the cluster's PFS
# (CLUSTER_PFS_DIR), one GlusterFS client per compute node. Not part of the
# test suite: the one test function runs every (case, reader) job in turn,
# writes one JSON line per job to CS_OUT, goes on after a job that fails
# (its line says why) and fails at the end if any did.
#
# Every job is a 3-node job (one task per node, srun) that trains CS_EPOCHS
# epochs over the whole dataset, each node a disjoint third per epoch,
# shuffled per epoch (DistributedSampler's split), with one of the readers:
#   dlio   bench/dlio_reader.c -r RANK -w 3 (reader threads, prefetch, a
#          modelled accelerator computing CS_COMPUTE_MS per batch)
#   torch  bench/torch_reader.py: a DataLoader, CS_WORKERS workers, over a
#          Dataset of the files with a DistributedSampler, CS_COMPUTE_MS of
#          sleep per batch
# and --io-profile by case (CS_PROFILE is the base, dl-train):
#   pfs     BASE,stream=PFS/DS           reads the PFS in place
#   local   BASE,data=PFS/DS:LOCALTIER   a full copy on every node (a tier
#                                        big enough), at $IOSTAGE_DATA
#   spread  BASE,data=PFS/DS[:TIER],spread=yes  on a tier of dataset/2.5
#                                        per node: the job sees the whole
#                                        dataset at $IOSTAGE_DATA
# Each staged job has a dataset of its own on the PFS (a hard-linked copy,
# CS_DS_<CASE>_<READER>), so every job stages cold; the pfs jobs share one.
# Before each job: new PFS clients, page cache dropped (bcj_cold).
#
# Where each figure comes from:
#   epochs          each task's reader prints its epochs' seconds; per
#                   epoch the slowest node's (the job's step waits for it)
#   first task      the batch script's first line minus the host's clock at
#                   sbatch (the job starts once every Prolog is done)
#   staging         the job record's stage_in per node (iostagectld's merged
#                   record; none for pfs, which stages nothing)
#   PFS bytes       the RX counter of the host end of the PFS's veth
#                   (`pfs.sh link`), at sbatch, at the batch script's start
#                   and end (it reads the same sysfs file: `pfs.sh
#                   link-file`) and after the job's record is complete: in
#                   all, before the first task (staging), during the
#                   readers, after them (Epilogs); headers included
#   spread stats    not yet wired: the spread view's counters per node and
#                   dataset (local_bytes, peer_bytes, pfs_bytes), read from
#                   CS_STATS (a path template: {node} {job} {dataset}
#                   {data} {cluster}) by each task at its end and, after
#                   the job, by root on each node; the file's three numbers
#                   are kept when found
#
# From cluster-spread.sh: BCJ_PFS, BCJ_CLIENTS, BCJ_STATE (bench/cluster-
# jobs-lib.sh), CS_CASES, CS_READERS, CS_DS_PFS and CS_DS_<CASE>_<READER>
# (dataset names on the PFS), CS_FILES, CS_BYTES, CS_LOCAL_TIER,
# CS_SPREAD_TIER (empty: the default tier), CS_PROFILE, CS_EPOCHS,
# CS_COMPUTE_MS, CS_BATCH, CS_THREADS, CS_WORKERS, CS_STATS, CS_DLIO (the
# reader's binary), CS_TORCH (torch_reader.py), CS_RATE_BPS, CS_OUT.

# shellcheck source=bench/cluster-jobs-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster-jobs-lib.sh"

# cs_profile CASE SRC: the --io-profile of CASE over SRC
cs_profile() {
	case $1 in
	pfs) echo "$CS_PROFILE,stream=$2" ;;
	local) echo "$CS_PROFILE,data=$2:$CS_LOCAL_TIER" ;;
	spread) echo "$CS_PROFILE,data=$2${CS_SPREAD_TIER:+:$CS_SPREAD_TIER},spread=yes" ;;
	esac
}

# cs_stats_path TEMPLATE NODE JOB DATASET DATA: the template expanded
cs_stats_path() {
	local p=$1
	p=${p//\{node\}/$2}
	p=${p//\{job\}/$3}
	p=${p//\{dataset\}/$4}
	p=${p//\{data\}/$5}
	echo "${p//\{cluster\}/$CLUSTER_DIR}"
}

# cs_job CASE READER DATASET: one job; appends its JSON line to CS_OUT.
# Returns 1 when the job failed (the line says why).
cs_job() {
	local kase=$1 reader=$2 ds=$3 src=$CLUSTER_PFS/$3 prof t0 l0 l2 rec out err='' node p stats=()
	prof=$(cs_profile "$kase" "$src")
	bcj_cold
	l0=$("$BCJ_PFS" link | cut -d' ' -f1) || fail "cannot read the PFS link's counters"
	t0=$(bcj_now)
	# the dataset's directory for the pfs case; the staged ones use
	# $IOSTAGE_DATA (empty argument)
	submit_wait "$TEST_USER" -N 3 --ntasks-per-node=1 -J "cs-$kase-$reader" \
		--io-profile="$prof" -o "$TEST_WORKDIR/out.%j" \
		"$TEST_WORKDIR/job.sh" "$reader" "$([ "$kase" = pfs ] && echo "$src")" "$ds" >/dev/null ||
		err="job failed: $(tr '\n' ' ' <<<"$SUBMIT_OUT" | cut -c1-400)"
	out=$TEST_WORKDIR/out.${SUBMIT_JOBID:-none}
	rec=null
	if [ -n "$SUBMIT_JOBID" ]; then
		rec=$(bcj_record "$SUBMIT_JOBID" 3) || { rec=null; err=${err:-"no complete record of job $SUBMIT_JOBID"}; }
	fi
	# The Epilogs are done once every part is filed: nothing reads the
	# PFS for this job any more.
	l2=$("$BCJ_PFS" link | cut -d' ' -f1) || fail "cannot read the PFS link's counters"
	if [ -n "$err" ] && [ -s "$out" ]; then
		err="$err; output: $(grep -v '^RESULT ' "$out" | tail -n 5 | tr '\n' ' ' | cut -c1-400)"
	fi
	# the spread view's counters, read as root on each node after the job
	# (not yet wired: CS_STATS says where, once the feature does)
	if [ -n "$CS_STATS" ] && [ -n "$SUBMIT_JOBID" ]; then
		for node in $CLUSTER_COMPUTE_NODES; do
			p=$(cs_stats_path "$CS_STATS" "$node" "$SUBMIT_JOBID" "$ds" "")
			stats+=("$(on_node "$node" cat "$p" 2>/dev/null | jq -c --arg node "$node" --arg path "$p" \
				'{node: $node, path: $path, when: "after the job", local_bytes, peer_bytes, pfs_bytes}' 2>/dev/null)")
		done
	fi
	{
		[ -s "$out" ] && cat "$out"
		printf 'STATSHOST %s\n' "${stats[@]}"
	} | jq -R -s -c --arg case "$kase" --arg reader "$reader" --arg prof "$prof" --arg src "$src" \
		--arg job "${SUBMIT_JOBID:-}" --arg err "$err" --argjson t0 "$t0" --argjson l0 "$l0" --argjson l2 "$l2" \
		--argjson files "$CS_FILES" --argjson bytes "$CS_BYTES" --argjson rate "$CS_RATE_BPS" \
		--argjson rec "$rec" "$bcj_parts_jq"'
		def num: if . == null or . == "" then null else tonumber end;
		def field($k): [split("\n")[] | select(startswith($k + " ")) | .[($k | length) + 1:]];
		. as $o
		| ($o | field("TASK")[0] | num) as $task
		| ($o | field("LINK0")[0] | num) as $l1
		| ($o | field("LINK1")[0] | num) as $l3
		| [$o | field("RESULT")[] | (index(" ")) as $i | .[$i + 1:] | try fromjson catch null | select(. != null)] as $tasks
		| [$o | field("STATS")[] | (index(" ")) as $i | {node: .[:$i]} + (.[$i + 1:] | try fromjson catch {})
			| {node, when: "in the job", local_bytes, peer_bytes, pfs_bytes}] as $in_job
		| [$o | field("STATSHOST")[] | select(. != "") | fromjson] as $after
		| (if $rec == null then null else ($rec | parts($t0)) end) as $parts
		# a job refused at submit read nothing: no bytes to count
		| (if $job == "" then null else $l2 - $l0 end) as $rx
		| {
			case: $case, reader: $reader, job: (if $job == "" then null else ($job | tonumber) end),
			profile: $prof, dataset: {source: $src, files: $files, bytes: $bytes},
			error: (if $err == "" then null else $err end),
			nodes: [$tasks[] | .node // null],
			epoch_s: (if ($tasks | length) == 0 then [] else
				[range(0; [$tasks[] | .epochs | length] | min) as $e | [$tasks[] | .epochs[$e].seconds] | max] end),
			epoch_s_per_node: [$tasks[] | {node: (.node // null), rank, epochs: [.epochs[].seconds]}],
			submit_to_first_task_s: (if $task then ($task - $t0) | r3 else null end),
			submit_to_staged_all_s: (if $parts then ([$parts[].staged_s] | max) else null end),
			stage_in_max_s: (if $parts then ([$parts[].stage_in_s] | max) else null end),
			pfs_rx_bytes: $rx,
			pfs_rx_before_task: (if $l1 then $l1 - $l0 else null end),
			pfs_rx_readers: (if $l1 and $l3 then $l3 - $l1 else null end),
			pfs_rx_after: (if $l3 then $l2 - $l3 else null end),
			pfs_rx_per_dataset: (if $rx then ($rx / $bytes) | r3 else null end),
			bytes_read_by_tasks: ([$tasks[] | .bytes_read] | add),
			link_rate_bytes_per_s: $rate, bound_once_s: (($bytes / $rate) | r3),
			state: ($rec.state // null), missing_nodes: ($rec.missing_nodes // []),
			parts: $parts,
			spread_stats: (if ($after | length) > 0 then $after elif ($in_job | length) > 0 then $in_job
				elif ($ENV.CS_STATS // "") == "" then "not yet wired" else "no stats file at \($ENV.CS_STATS)" end),
			spread_stats_in_job: $in_job,
			readers: $tasks
		}' >>"$CS_OUT" || fail "$kase/$reader: cannot summarize job ${SUBMIT_JOBID:-}"
	tail -n1 "$CS_OUT" | jq -r '"cluster-spread \(.case)-\(.reader): job \(.job): " +
		(if .error then "FAILED: \(.error)" else
		"epochs \(.epoch_s | map(tostring) | join(" / ")) s, first task \(.submit_to_first_task_s) s, staged on all \(.submit_to_staged_all_s) s, PFS read \(.pfs_rx_bytes) B = \(.pfs_rx_per_dataset)x the dataset (before the task \(.pfs_rx_before_task), readers \(.pfs_rx_readers))" end)'
	[ -z "$err" ]
}

test_cluster_spread() {
	local kase reader ds v failed=0 link
	link=$("$BCJ_PFS" link-file) || fail "cannot find the PFS link's counter"
	[ -r "$link" ] || fail "cannot read $link"
	[ -d "$CLUSTER_PFS/$CS_DS_PFS" ] || fail "no $CLUSTER_PFS/$CS_DS_PFS on the cluster's PFS"
	install -m 0755 "$CS_DLIO" "$TEST_WORKDIR/dlio_reader"
	install -m 0644 "$CS_TORCH" "$TEST_WORKDIR/torch_reader.py"
	# The batch script: its clock and the PFS link's counter around one
	# srun of the reader, one task per node.
	cat >"$TEST_WORKDIR/job.sh" <<JOB
#!/bin/bash
# \$1 reader (dlio, torch), \$2 the dataset's directory (empty: \$IOSTAGE_DATA), \$3 its name
echo "TASK \$(date +%s.%N)"
echo "LINK0 \$(cat $link)"
srun -N "\$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 $TEST_WORKDIR/task.sh "\$@"
rc=\$?
echo "LINK1 \$(cat $link)"
exit \$rc
JOB
	cat >"$TEST_WORKDIR/task.sh" <<TASK
#!/bin/bash
# One node's reader: this rank's third of every epoch; then the spread
# view's counters, when a stats file is where CS_STATS says.
dir=\${2:-\$IOSTAGE_DATA}
case \$1 in
dlio) out=\$($TEST_WORKDIR/dlio_reader -t $CS_THREADS -b $CS_BATCH -c $CS_COMPUTE_MS -e $CS_EPOCHS \\
	-r "\$SLURM_PROCID" -w "\$SLURM_NTASKS" "\$dir") ;;
torch) out=\$(/usr/bin/python3 $TEST_WORKDIR/torch_reader.py --epochs $CS_EPOCHS --batch $CS_BATCH \\
	--workers $CS_WORKERS --compute-ms $CS_COMPUTE_MS "\$dir") ;;
*) echo "task.sh: unknown reader '\$1'" >&2; exit 2 ;;
esac
rc=\$?
# dlio_reader does not know its node
echo "RESULT \$(hostname) \$(jq -c --arg n "\$(hostname)" '.node //= \$n' <<<"\$out" 2>/dev/null || echo "\$out")"
stats='$CS_STATS'
if [ -n "\$stats" ]; then
	sleep 1.5 # the view writes its counters every second
	p=\${stats//\{node\}/\$(hostname)}; p=\${p//\{job\}/\$SLURM_JOB_ID}; p=\${p//\{dataset\}/\$3}
	p=\${p//\{data\}/\$IOSTAGE_DATA}; p=\${p//\{cluster\}/$CLUSTER_DIR}
	[ -r "\$p" ] && echo "STATS \$(hostname) \$(tr -d '\n' <"\$p")"
fi
exit \$rc
TASK
	chmod 0755 "$TEST_WORKDIR/job.sh" "$TEST_WORKDIR/task.sh"
	: >"$CS_OUT"
	for kase in $CS_CASES; do
		for reader in $CS_READERS; do
			if [ "$kase" = pfs ]; then
				ds=$CS_DS_PFS
			else
				v="CS_DS_${kase^^}_${reader^^}"
				ds=${!v}
			fi
			cs_job "$kase" "$reader" "$ds" || failed=$((failed + 1))
		done
	done
	bcj_clients_down
	[ "$failed" -eq 0 ] || fail "$failed of the jobs failed"
}
