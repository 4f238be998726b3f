# shellcheck shell=bash
# StageBandwidth= on a node without a service (docs/SCHEDULING.md): the
# node is the whole cluster and takes the whole budget; its copies (here
# a warm-up through the stage worker) are held to it, and /metrics shows
# the budget.

cli() { as_user "$1" iostage -c "$IOSTAGE_CONF" "${@:2}"; }

test_stage_bandwidth_one_node() {
	local ds="$TEST_WORKDIR/pfs/bw" out t0 t1 secs i
	cp "$IOSTAGE_CONF" "$TEST_WORKDIR/node.conf"
	trap 'cp "$TEST_WORKDIR/node.conf" "$IOSTAGE_CONF"; iostaged_restart >/dev/null 2>&1' RETURN
	echo "StageBandwidth=16M/s" >>"$IOSTAGE_CONF"
	iostaged_restart || fail "iostaged did not restart with StageBandwidth="
	assert_contains "iostaged log" "$(cat "$IOSTAGED_LOG")" \
		"stage bandwidth: 16.0 MiB/s for this node's copies (StageBandwidth=, no ControllerHost=)"
	mkdir -p "$ds"
	for i in 0 1 2 3; do head -c $((8 << 20)) /dev/urandom >"$ds/f$i"; done
	chown -R "$TEST_USER:" "$ds"
	t0=$(date +%s.%N)
	out=$(cli "$TEST_USER" stage "$ds" 2>&1) || fail "iostage stage: $out"
	t1=$(date +%s.%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	echo "32 MiB at StageBandwidth=16M: ${secs} s"
	# 2 s at the rate (less one 50 ms burst); not much more either.
	awk -v s="$secs" 'BEGIN { exit !(s >= 1.8 && s <= 6) }' ||
		fail "32 MiB staged in ${secs} s at 16 MiB/s (want 1.8 to 6 s)"
	out=$(curl -s "http://127.0.0.1:$IOSTAGE_METRICS_PORT/metrics")
	assert_contains "/metrics budget" "$out" "iostage_stage_bandwidth_budget_bytes_per_second 16777216"
	assert_contains "/metrics copies" "$out" "iostage_stage_bandwidth_copies 0"
}
