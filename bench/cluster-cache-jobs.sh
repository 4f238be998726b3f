# shellcheck shell=bash
# cluster-cache-jobs.sh - the jobs of `make bench-cluster-cache` (issue 29
# items 1 and 2), run by bench/cluster-cache.sh through the cluster runner
# (tests/cluster/run.sh: slurmctld, 3 compute nodes with slurmd, the
# plugin, Prolog/Epilog and iostaged, iostagectld on ctl) started with
# bench/pfs.sh's GlusterFS mount as its PFS (CLUSTER_PFS_DIR). Not part of
# the test suite: the one function runs the cases, writes one JSON line per
# case to CC_OUT and fails only when a job fails or its record is missing.
#
# The cases, in this order (each on a fresh PFS client per node, page cache
# dropped; "cold" = the dataset is in no node's cache):
#   cold    a 1-node job on n1 over dataset CC_DS_PEER: from the PFS
#   peer    a 1-node job on n2 (cold) over the same dataset, which n1 now
#           holds: today from the PFS; with node-to-node fill, from n1
#   fanout-no    a 3-node job over dataset CC_DS_FAN-no, cold on every
#                node, with NodeFill=no: every node reads the whole PFS
#                (what iostage did before node-to-node fill: "today")
#   fanout-head  the same over CC_DS_FAN-head with NodeFill=head: the head
#                reads the PFS, the others fill from its copy once done
#   fanout  the same over CC_DS_FAN with NodeFill=parts (the default): each
#           node reads a third, then takes the rest from the other two
# (NodeFill is the cluster's one iostage.conf: the line is written and
# every node's iostaged restarted before the case, taken out after.)
#
# Where each figure comes from:
#   staged on all   the job record iostagectld holds (merged from the
#                   nodes' parts): the latest stage_in end of any node
#                   minus the host's clock at sbatch (the nodes share it)
#   per node        each part's stage_in start/end/seconds, copied and
#                   cached bytes, result
#   first task      the batch script's first line (`date +%s.%N`) minus
#                   the sbatch time: the job waited for every Prolog
#   PFS bytes       `pfs.sh link` before sbatch and after the job and its
#                   Epilogs: the bytes the host end of the PFS's veth
#                   received (server to clients, headers included)
#   verified        every node of the job has a published cache version
#                   of the dataset with its file count and bytes
#
# From cluster-cache.sh: BCJ_PFS, BCJ_CLIENTS, BCJ_STATE (the PFS clients:
# bench/cluster-jobs-lib.sh), CC_DS_PEER, CC_DS_FAN (dataset names under the PFS), CC_FILES, CC_BYTES
# (their size, both the same), CC_TIER (nvme), CC_CASES ("cold peer
# fanout"), CC_RATE_BPS (the link's cap in bytes/s), CC_OUT (JSON lines).

# shellcheck source=bench/cluster-jobs-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster-jobs-lib.sh"

# cc_verify NODE SRC: "FILES BYTES" of NODE's largest published whole
# version of SRC (a fill by parts keeps the node's share beside it)
cc_verify() {
	local v d
	for v in $(cache_versions_of "$1" "$CC_TIER" "$2"); do
		d="$(tier_cache "$1" "$CC_TIER")/$v"
		find "$d/data" -type f -printf '%s\n' 2>/dev/null |
			awk '{ s += $1 } END { printf "%d %d\n", NR, s }'
	done | sort -n | tail -n1 | grep . || echo "0 0"
}

# cc_node_fill MODE: NodeFill=MODE on every node ("" takes the line out),
# each iostaged restarted to read it
cc_node_fill() {
	local conf=$CLUSTER_DIR/iostage/iostage.conf node
	sed -i '/^NodeFill=/d' "$conf"
	[ -n "$1" ] && echo "NodeFill=$1" >>"$conf"
	for node in $CLUSTER_COMPUTE_NODES; do
		iostaged_stop "$node"
		iostaged_start "$node" || fail "iostaged did not start on $node with NodeFill=$1"
	done
}

# cc_case NAME DATASET NODELIST: one job; appends its JSON line to CC_OUT
cc_case() {
	local name=$1 src=$CLUSTER_PFS/$2 nodes=$3 n t0 link0 link1 rec out task verified=true node got
	n=$(tr ',' '\n' <<<"$nodes" | wc -l)
	bcj_cold
	link0=$("$BCJ_PFS" link) || fail "cannot read the PFS link's counters"
	t0=$(bcj_now)
	submit_wait "$TEST_USER" -N "$n" -w "$nodes" -J "cc-$name" \
		--io-profile="dl-train,data=$src:$CC_TIER" -o "$TEST_WORKDIR/out.%j" \
		"$TEST_WORKDIR/job.sh" >/dev/null ||
		fail "case $name: job failed: $SUBMIT_OUT; $(cat "$TEST_WORKDIR/out.$SUBMIT_JOBID" 2>/dev/null)"
	out=$TEST_WORKDIR/out.$SUBMIT_JOBID
	rec=$(bcj_record "$SUBMIT_JOBID" "$n") || fail "case $name: job $SUBMIT_JOBID has no complete record"
	# The Epilogs are done once every part is filed: nothing reads the
	# PFS any more.
	link1=$("$BCJ_PFS" link) || fail "cannot read the PFS link's counters"
	task=$(sed -n 's/^TASK //p' "$out")
	local checks=()
	for node in $(tr ',' ' ' <<<"$nodes"); do
		got=$(cc_verify "$node" "$src")
		[ "$got" = "$CC_FILES $CC_BYTES" ] || verified=false
		checks+=("$node:$got")
	done
	jq -c --arg case "$name" --arg src "$src" --arg nodes "$nodes" --argjson t0 "$t0" \
		--argjson task "${task:-null}" --argjson verified "$verified" --arg checks "${checks[*]}" \
		--argjson rx "$(($(cut -d' ' -f1 <<<"$link1") - $(cut -d' ' -f1 <<<"$link0")))" \
		--argjson tx "$(($(cut -d' ' -f2 <<<"$link1") - $(cut -d' ' -f2 <<<"$link0")))" \
		--argjson files "$CC_FILES" --argjson bytes "$CC_BYTES" --argjson rate "$CC_RATE_BPS" \
		--arg clients "$BCJ_CLIENTS" "$bcj_parts_jq"'
		. as $r
		| ($r | parts($t0)) as $parts
		| {
			case: $case, job: $r.job, nodes: ($nodes | split(",")), clients: $clients,
			dataset: {source: $src, files: $files, bytes: $bytes},
			submit_to_staged_all_s: ([$parts[].staged_s] | max),
			submit_to_first_task_s: (if $task then ($task - $t0) | r3 else null end),
			stage_in_max_s: ([$parts[].stage_in_s] | max),
			pfs_rx_bytes: $rx, pfs_tx_bytes: $tx,
			pfs_rx_per_dataset: (($rx / $bytes) | r3),
			link_rate_bytes_per_s: $rate,
			bound_once_s: (($bytes / $rate) | r3),
			bound_every_node_s: (($bytes * ($parts | length) / $rate) | r3),
			copied_bytes: ([$r.datasets[]?.copied_bytes] | add),
			state: $r.state, missing_nodes: ($r.missing_nodes // []),
			verified: $verified, cache_check: $checks,
			parts: $parts
		}' <<<"$rec" >>"$CC_OUT" || fail "case $name: cannot summarize record: $rec"
	tail -n1 "$CC_OUT" | jq -r '"cluster-cache \(.case): job \(.job) on \(.nodes | join(",")): staged on all \(.submit_to_staged_all_s) s after sbatch (first task \(.submit_to_first_task_s) s), PFS read \(.pfs_rx_bytes) B = \(.pfs_rx_per_dataset)x the dataset, bound \(.bound_once_s) s once; verified \(.verified) (\(.cache_check | join(" ")))"'
}

test_cluster_cache() {
	local c
	for c in "$CC_DS_PEER" "$CC_DS_FAN" "$CC_DS_FAN-no" "$CC_DS_FAN-head"; do
		[ -d "$CLUSTER_PFS/$c" ] || fail "no $CLUSTER_PFS/$c on the cluster's PFS"
	done
	cat >"$TEST_WORKDIR/job.sh" <<'JOB'
#!/bin/bash
# The first task's clock: the job starts once every node's Prolog is done.
echo "TASK $(date +%s.%N)"
JOB
	chmod 0755 "$TEST_WORKDIR/job.sh"
	: >"$CC_OUT"
	for c in $CC_CASES; do
		case $c in
		cold) cc_case cold "$CC_DS_PEER" n1 ;;
		peer) cc_case peer "$CC_DS_PEER" n2 ;;
		fanout) cc_case fanout "$CC_DS_FAN" n1,n2,n3 ;;
		fanout-no | fanout-head)
			cc_node_fill "${c#fanout-}"
			cc_case "$c" "$CC_DS_FAN-${c#fanout-}" n1,n2,n3
			cc_node_fill ""
			;;
		*) fail "unknown case '$c' (cold, peer, fanout, fanout-no, fanout-head)" ;;
		esac
	done
	bcj_clients_down
}
