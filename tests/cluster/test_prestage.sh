# shellcheck shell=bash
# Staging while the job waits (issue 13, item 2; docs/SCHEDULING.md,
# Pre-staging): a job submitted with a profile is noted with iostagectld
# (plugin ticket -> cli_filter.lua -> `iostage job-note`); while it pends,
# the service asks the nodes Slurm's backfill plans for it to stage its
# datasets into their caches, then makes the job prefer the node that
# holds them. When the job starts, the Prolog finds a cache hit.

# block_all SECONDS: every compute node busy for SECONDS (2 CPUs each, a
# time limit of 1 minute so the backfill scheduler can plan the next job);
# the tests end them (scancel $BLOCKERS) once they have seen what they
# wanted while the job pends, rather than wait a fixed time
block_all() {
	local n
	BLOCKERS=
	declare -gA BLOCKER_ON=()
	for n in $CLUSTER_COMPUTE_NODES; do
		submit "$OTHER_USER" -w "$n" -c 2 -t 1 -o /dev/null --wrap "sleep $1" >/dev/null ||
			fail "blocker on $n: $SUBMIT_OUT"
		BLOCKERS="$BLOCKERS $SUBMIT_JOBID"
		BLOCKER_ON[$n]=$SUBMIT_JOBID
	done
	for n in $BLOCKERS; do
		wait_job_state "$n" RUNNING 20 || fail "blocker $n not running"
	done
}

# stage_seconds NODE JOBID: the seconds the job's staging took there
stage_seconds() {
	sed -n "s/.*job $2: staged [0-9]* datasets\{0,1\}, .* in \([0-9.]*\) s$/\1/p" "$(iostaged_log "$1")" | tail -n1
}

# wait_ctld_log REGEX [TIMEOUT_S=30]
wait_ctld_log() {
	local i
	for ((i = 0; i < ${2:-30} * 5; i++)); do
		grep -qE -- "$1" "$(ctld_log)" && return 0
		sleep 0.2
	done
	echo "wait_ctld_log: '$1' not in $(ctld_log) after ${2:-30}s" >&2
	return 1
}

test_pending_job_finds_its_data_prestaged() {
	local ds jid node secs st pnode i
	# 8,000 files: the Prolog would copy them for a few seconds
	ds=$(slow_dataset P 8)
	block_all 50
	submit "$TEST_USER" -t 1 --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "job: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	assert_eq "job pends (all nodes busy)" PENDING "$(job_state "$jid")"
	wait_ctld_log "prestage: job $jid: .* staged on n[0-9]" 20 ||
		fail "not pre-staged: $(grep prestage "$(ctld_log)" | tail -3)"
	pnode=$(sed -n "s/.*prestage: job $jid: .* staged on \(n[0-9]*\)$/\1/p" "$(ctld_log)" | tail -n1)
	# a user on the login node sees what was staged where, and which
	# node the job now prefers (once Slurm shows that node's feature)
	for ((i = 0; i < 50; i++)); do
		st=$(on_node_as "$TEST_USER" login iostage -c "$IOSTAGE_CONF" status)
		grep -q "^$jid .* $pnode (ios_" <<<"$st" && break
		sleep 0.2
	done
	echo "$st"
	assert_contains "status names the job" "$st" "$jid "
	assert_contains "status: staged on a node" "$st" "$ds on $pnode: staged in "
	grep -q "^$jid .* $pnode (ios_" <<<"$st" || fail "status does not show the preference for $pnode"
	assert_eq "job still pends" PENDING "$(job_state "$jid")"
	# The pre-staged node frees up first. Freed all at once, the job
	# may start on whichever node is idle first: a preference never
	# delays a job, and in a run on Slurm 26.05 another node was idle first
	# (test_cached_node_is_preferred tests the preference itself).
	scancel "${BLOCKER_ON[$pnode]}"
	wait_job_state "$jid" COMPLETED 60 || fail "job $jid: $(job_state "$jid")"
	# shellcheck disable=SC2086
	scancel $BLOCKERS 2>/dev/null
	node=$(job_field "$jid" NodeList)
	assert_eq "the job ran where its data was pre-staged" "$pnode" "$node"
	wait_finished "$node" "$jid" || fail "job $jid not finished on $node"
	assert_eq "dataset on $node: cache hit (0 bytes copied at start)" 1 \
		"$(log_count "$node" "job $jid: dataset 'P': cache hit")"
	assert_eq "builds for the job itself" 0 "$(log_count "$node" "job $jid: dataset 'P': built")"
	secs=$(stage_seconds "$node" "$jid")
	echo "job $jid on $node: Prolog staging took $secs s"
	[ "$(echo "$secs < 1" | bc)" = 1 ] || fail "staging at start took $secs s"
	wait_ctld_log "prestage: job $jid started on $node, where its data was staged" 10 ||
		fail "start not counted as a hit"
	st=$(ctld_request login "$TEST_USER" '{"op":"sched_status"}')
	[ "$(jq '.prestage.hits' <<<"$st")" -ge 1 ] || fail "hits: $st"
	assert_eq "the started job is no longer listed as pending" "[]" \
		"$(jq -c "[.jobs[] | select(.job == $jid)]" <<<"$st")"
	[ "$(jq '.prestage.bytes' <<<"$st")" -gt 0 ] || fail "bytes: $st"
	echo "staging time saved at start: $(jq '.prestage.seconds_saved' <<<"$st") s"
	[ "$(jq '.prestage.seconds_saved > 0' <<<"$st")" = true ] || fail "time saved: $st"
	# the same figures on iostagectld's own /metrics, scraped from login
	ctld_metrics >metrics.prom || fail "GET ctl:9465/metrics failed"
	promtool check metrics <metrics.prom || fail "promtool: $(cat metrics.prom)"
	assert_eq "hits on /metrics" "$(jq '.prestage.hits' <<<"$st")" \
		"$(sample_value metrics.prom 'iostage_ctld_prestage_predictions_total{outcome="hit"}')"
	assert_eq "pre-staged bytes on /metrics" "$(jq '.prestage.bytes' <<<"$st")" \
		"$(sample_value metrics.prom iostage_ctld_prestage_bytes_total)"
	[ "$(sample_value metrics.prom iostage_ctld_prestage_saved_seconds_total | cut -d. -f1)" -ge 0 ] ||
		fail "saved seconds on /metrics"
}

# ctld_metrics: iostagectld's /metrics, as a Prometheus on login gets it
ctld_metrics() { on_node login curl -sf --max-time 10 http://ctl:9465/metrics; }

# sample_value FILE SERIES: the value of the exact series line
sample_value() { awk -v s="$2" 'index($0, s " ") == 1 { print $NF; exit }' "$1"; }

# wait_nodes_reporting: until every compute node has sent iostagectld its
# cache report. A service restarted by an earlier test (Placement=no and
# back) asks every node for it at start, so this takes a second or two
# (test_placement.sh: test_restarted_service_asks_nodes_for_their_cache).
wait_nodes_reporting() {
	local i n=
	for ((i = 0; i < 70; i++)); do
		n=$(ctld_request login root '{"op":"sched_status","jobs":false}' |
			jq '.placement.nodes_reporting')
		[ "$n" = 3 ] && return 0
		sleep 1
	done
	echo "wait_nodes_reporting: $n of 3 nodes after 70 s" >&2
	return 1
}

test_ctld_metrics_endpoint() {
	local code
	wait_nodes_reporting
	ctld_metrics >metrics.prom || fail "GET ctl:9465/metrics failed"
	promtool check metrics <metrics.prom || fail "promtool: $(cat metrics.prom)"
	assert_file_contains "version" metrics.prom 'iostage_ctld_build_info{version="'
	assert_file_contains "placements" metrics.prom 'iostage_ctld_placements_total{outcome="not_honoured"} '
	assert_file_contains "predictions" metrics.prom 'iostage_ctld_prestage_predictions_total{outcome="missed"} '
	assert_file_contains "requests per op" metrics.prom 'iostage_ctld_requests_total{op="cache_report",result="ok"} '
	assert_file_contains "bandwidth" metrics.prom 'iostage_ctld_stage_bandwidth_budget_bytes_per_second '
	assert_eq "nodes reporting" 3 "$(sample_value metrics.prom iostage_ctld_nodes_reporting)"
	assert_eq "placement on" 1 "$(sample_value metrics.prom iostage_ctld_placement_enabled)"
	[ "$(sample_value metrics.prom iostage_ctld_slurm_last_ok_seconds)" -gt $(($(date +%s) - 30)) ] ||
		fail "slurmctld not answering: $(grep slurm_ metrics.prom)"
	code=$(on_node login curl -s -o /dev/null -w '%{http_code}' http://ctl:9465/)
	assert_eq "only /metrics" 404 "$code"
}

# A real Prometheus on the login node scrapes iostagectld on ctl.
test_prometheus_scrapes_ctld() {
	local dir="$TEST_WORKDIR/prom" pid i up="" v
	mkdir -p "$dir/data"
	cat >"$dir/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: iostagectld
    static_configs:
      - targets: ['ctl:9465']
YML
	promtool check config "$dir/prometheus.yml" >/dev/null || fail "promtool rejects the config"
	on_node login prometheus --config.file="$dir/prometheus.yml" \
		--storage.tsdb.path="$dir/data" --web.listen-address=127.0.0.1:9090 \
		--log.level=warn >"$dir/log" 2>&1 &
	pid=$!
	# shellcheck disable=SC2064
	trap "kill $pid 2>/dev/null; wait $pid 2>/dev/null" EXIT
	for ((i = 0; i < 150; i++)); do
		up=$(prom_query 'up{job="iostagectld"}')
		[ "$up" = 1 ] && break
		sleep 0.2
	done
	assert_eq "Prometheus sees iostagectld up" 1 "$up"
	v=$(prom_query 'iostage_ctld_nodes_reporting')
	assert_eq "nodes reporting, through Prometheus" 3 "$v"
	v=$(prom_query 'iostage_ctld_build_info')
	assert_eq "build_info, through Prometheus" 1 "$v"
}

# prom_query QUERY: the first result's value through Prometheus's API
prom_query() {
	on_node login curl -sf --max-time 5 -G http://127.0.0.1:9090/api/v1/query \
		--data-urlencode "query=$1" |
		jq -r 'select(.status == "success") | .data.result[0].value[1] // empty'
}

test_without_prestage_the_prolog_copies() {
	local ds jid node
	ds=$(slow_dataset Q 8)
	# no service: no note, no pre-staging (records wait in the outboxes)
	ctld_stop
	block_all 50
	submit "$TEST_USER" -t 1 --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "job: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	assert_eq "job pends (all nodes busy)" PENDING "$(job_state "$jid")"
	# (however long it pends: without the service nothing pre-stages)
	# shellcheck disable=SC2086
	scancel $BLOCKERS
	wait_job_state "$jid" COMPLETED 60 || fail "job $jid: $(job_state "$jid")"
	ctld_start || fail "iostagectld does not start again"
	node=$(job_field "$jid" NodeList)
	wait_finished "$node" "$jid" || fail "job $jid not finished on $node"
	assert_eq "dataset on $node copied by the Prolog" 1 \
		"$(log_count "$node" "job $jid: dataset 'Q': built .* 8000 files copied")"
	echo "job $jid on $node: Prolog staging took $(stage_seconds "$node" "$jid") s"
}

test_job_note_needs_the_ticket_owner() {
	local rep
	rep=$(ctld_request login "$OTHER_USER" '{"op":"job_note","job":99999,"ticket":"00000000000000000000000000000000"}')
	assert_eq "unknown ticket refused" false "$(jq -r .ok <<<"$rep")"
	assert_contains "why" "$(jq -r .error <<<"$rep")" "no such ticket"
}
