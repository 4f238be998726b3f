# shellcheck shell=bash
# bench/agents-cluster.sh - the filing rate of the 3 real node agents: the
# test cluster's own iostaged, each with a backlog in its outbox (as after
# iostagectld was away while jobs ended), forwarding it to iostagectld
# over TCP + MUNGE. Run by the cluster runner (make bench-history):
#
#   IT_VERBOSE=1 bash tests/cluster/run.sh bench/agents-cluster.sh
#
# Knobs: BENCH_AGENTS_JOBS (15000 jobs; one in ten on every node, whose
# parts each node files), BENCH_AGENTS_OUT (a JSON line is written there).

test_bench_real_agents() {
	local jobs=${BENCH_AGENTS_JOBS:-15000} out=${BENCH_AGENTS_OUT:-}
	local gen="$REPO_ROOT/build/bench/outboxgen" node list entries=0
	local t0 t1 left filed multi secs pids=()

	[ -x "$gen" ] || { echo "build $gen first (make bench-history)"; return 1; }
	list=$(echo "$CLUSTER_COMPUTE_NODES" | tr ' ' ',')
	for node in $CLUSTER_COMPUTE_NODES; do iostaged_stop "$node"; done
	ctld_stop
	# The backlog, written by the Epilog's path (outbox_put), in parallel.
	for node in $CLUSTER_COMPUTE_NODES; do
		"$gen" -o "$(node_local "$node")/state/outbox" -n "$node" \
			-N "$list" -j "$jobs" >"$TEST_WORKDIR/gen.$node" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || return 1; done
	for node in $CLUSTER_COMPUTE_NODES; do
		entries=$((entries + $(grep -o '[0-9]* entries' "$TEST_WORKDIR/gen.$node" | cut -d' ' -f1)))
	done
	ctld_start >/dev/null
	# The agents start together and forward what they hold at start.
	t0=$(date +%s.%N)
	for node in $CLUSTER_COMPUTE_NODES; do iostaged_start "$node" >/dev/null & done
	wait
	for _ in $(seq 1 3000); do
		left=0
		for node in $CLUSTER_COMPUTE_NODES; do
			left=$((left + $(find "$(node_local "$node")/state/outbox" -maxdepth 1 -name '*.json' | wc -l)))
		done
		[ "$left" = 0 ] && break
		sleep 0.1
	done
	t1=$(date +%s.%N)
	secs=$(echo "$t1 - $t0" | bc -l)
	filed=0
	for node in $CLUSTER_COMPUTE_NODES; do
		filed=$((filed + $(log_count "$node" 'record of node [^ ]* filed on iostagectld')))
	done
	multi=$(grep -c 'parts in (the last from node' "$(ctld_log)")
	printf 'bench-agents: %d jobs (%d outbox entries on %d nodes) forwarded by the real iostaged in %.2f s: %.0f jobs/s (%d entries filed, %d multi-node jobs merged; load %s)\n' \
		"$jobs" "$entries" "$(echo "$CLUSTER_COMPUTE_NODES" | wc -w)" "$secs" \
		"$(echo "$jobs / $secs" | bc -l)" "$filed" "$multi" "$(cut -d' ' -f1-3 /proc/loadavg)"
	[ -n "$out" ] && printf '{"jobs":%d,"entries":%d,"nodes":%d,"seconds":%.3f,"jobs_per_s":%.0f,"filed":%d,"multi_node_merged":%d}\n' \
		"$jobs" "$entries" "$(echo "$CLUSTER_COMPUTE_NODES" | wc -w)" "$secs" \
		"$(echo "$jobs / $secs" | bc -l)" "$filed" "$multi" >"$out"
	assert_eq "every outbox emptied" 0 "$left"
	assert_eq "every entry filed once" "$entries" "$filed"
	assert_eq "every multi-node job merged" "$((jobs / 10))" "$multi"
}
