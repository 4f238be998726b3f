# shellcheck shell=bash
# cluster-jobs-lib.sh - the job side shared by the benches' jobs files
# (bench/cluster-cache-jobs.sh, bench/cluster-spread-jobs.sh), which the
# cluster runner (tests/cluster/run.sh) sources as test files; each sources
# this. Needs the cluster's helpers (tests/cluster/lib.sh: on_node,
# ctld_request, fail) and, from bench/cluster-lib.sh's bcl_run_jobs:
#   BCJ_PFS      bench/pfs.sh (with the PFS_* environment)
#   BCJ_CLIENTS  node: one GlusterFS client per compute node, mounted here
#                in the node's mount namespace over the host's bind mount
#                at CLUSTER_PFS (its own FUSE connection and page cache, as
#                a real node has); shared: the host's one client for all
#   BCJ_STATE    where the per-node clients' pid files go (the host side
#                stops what is left)

bcj_now() { date +%s.%N; }

# bcj_nsmount NODE CMD...: CMD in NODE's mount namespace only (the host's
# network: a node's own network does not reach the PFS's /24)
bcj_nsmount() {
	local node=$1
	shift
	nsenter --mount="$CLUSTER_DIR/ns/$node.mnt" -- "$@"
}

# bcj_clients_down / bcj_clients_up: each compute node's own GlusterFS
# client on $CLUSTER_PFS (BCJ_CLIENTS=node).
bcj_clients_down() {
	local node
	[ "$BCJ_CLIENTS" = node ] || return 0
	for node in $CLUSTER_COMPUTE_NODES; do
		bcj_nsmount "$node" "$BCJ_PFS" unclient "$CLUSTER_PFS" "$BCJ_STATE/client.$node.pid"
	done
}
bcj_clients_up() {
	local node
	[ "$BCJ_CLIENTS" = node ] || return 0
	for node in $CLUSTER_COMPUTE_NODES; do
		bcj_nsmount "$node" "$BCJ_PFS" client "$CLUSTER_PFS" "$BCJ_STATE/client.$node.pid" ||
			fail "cannot mount a PFS client on $node"
	done
}

# bcj_cold: new PFS clients, nothing in any page cache, the clients'
# metadata timeouts (1 s) past.
bcj_cold() {
	bcj_clients_down
	sync
	echo 3 >/proc/sys/vm/drop_caches || fail "cannot drop the page cache"
	bcj_clients_up
	sleep 1.1
}

# bcj_record JOB NODES: the job's record as iostagectld holds it, once all
# NODES (a count) parts are in (waits up to 60 s for it)
bcj_record() {
	local i rec
	for ((i = 0; i < 300; i++)); do
		rec=$(ctld_request '{"op":"history_get","job":'"$1"'}')
		if [ "$(jq -r .ok <<<"$rec" 2>/dev/null)" = true ] &&
			[ "$(jq '(.record.nodes // [.record.node]) | length' <<<"$rec")" = "$2" ] &&
			[ "$(jq '(.record.parts // [.record]) | length' <<<"$rec")" = "$2" ]; then
			jq -c .record <<<"$rec"
			return 0
		fi
		sleep 0.2
	done
	echo "no complete record of job $1: $rec" >&2
	return 1
}

# bcj_parts_jq: a jq definition, parts($t0): each node's part of a job
# record (its stage_in start, end and seconds against the sbatch time $t0,
# and its datasets' entries less their source, tier and name)
# shellcheck disable=SC2034,SC2016 # the jobs files' jq programs use it
bcj_parts_jq='
	def r3: if . == null then null else (. * 1000 | round) / 1000 end;
	def stagein: (.phases // []) | map(select(.name == "stage_in"))[0];
	def parts($t0): [(.parts // [.])[] | (stagein) as $si | {
		node,
		stage_in_start_s: (if $si then ($si.start - $t0) | r3 else null end),
		staged_s: (if $si then ($si.end - $t0) | r3 else null end),
		stage_in_s: ($si.seconds | r3),
		datasets: ((.datasets // []) | map(del(.source, .tier, .name)))
	}];'
