# shellcheck shell=bash
# Cache-affinity placement (issue 13, item 1; docs/SCHEDULING.md,
# Placement): the nodes tell iostagectld what they cache, iostagectld
# shows it as Slurm node features (ios_XXXXXXXX), and a job for a cached
# dataset gets --prefer for them (plugin -> IOSTAGE_PREFER ->
# job_submit.lua). Slurm then starts it on the node holding the data when
# that node is free, and elsewhere at once when it is not.

# node_ios_features NODE: the ios_ features Slurm shows on NODE
node_ios_features() {
	scontrol show node -o "$1" 2>/dev/null | tr ' ' '\n' |
		sed -n 's/^ActiveFeatures=//p' | tr ',' '\n' | grep '^ios_' | sort | tr '\n' ' '
}

# wait_new_feature NODE BEFORE [TIMEOUT_S=20]: until Slurm shows an ios_
# feature on NODE that is not in BEFORE (node_ios_features earlier: other
# tests of the run leave their datasets cached); prints it
wait_new_feature() {
	local i f
	for ((i = 0; i < ${3:-20} * 5; i++)); do
		for f in $(node_ios_features "$1"); do
			case " $2 " in *" $f "*) ;; *) echo "$f"; return 0 ;; esac
		done
		sleep 0.2
	done
	echo "wait_new_feature: no new ios_ feature on $1 after ${3:-20}s" >&2
	return 1
}

job_node() { job_field "$1" NodeList; }

# stage_on NODE DS: one job for DS pinned on NODE; waits until its
# Epilog is done there
stage_on() {
	submit_wait "$TEST_USER" -w "$1" --io-profile="dl-train,data=$2" \
		-o /dev/null --wrap 'true' >/dev/null || fail "job on $1: $SUBMIT_OUT"
	wait_finished "$1" "$SUBMIT_JOBID" || fail "job $SUBMIT_JOBID not finished on $1"
}

# cached_on NODE DS: DS staged on NODE, and Slurm showing it there
cached_on() {
	local f0
	f0=$(node_ios_features "$1")
	stage_on "$1" "$2"
	wait_new_feature "$1" "$f0" >/dev/null || fail "$1 does not show its cached dataset"
}

test_cached_node_is_preferred() {
	local ds jid node on_n2=0 hits=0 i f0 f
	ds=$(pfs_dataset D 20)
	f0=$(node_ios_features n2)
	stage_on n2 "$ds"
	f=$(wait_new_feature n2 "$f0") || fail "n2 does not show its cached dataset: $(tail -5 "$(ctld_log)")"
	case " $(node_ios_features n1) $(node_ios_features n3) " in
		*" $f "*) fail "$f shown on a node that does not hold D" ;;
	esac
	# what a job for D is given (slurmctld shows Prefer while it pends)
	submit "$TEST_USER" --hold --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "held job: $SUBMIT_OUT"
	assert_eq "a held job's --prefer" "$f" "$(job_field "$SUBMIT_JOBID" Prefer)"
	scancel "$SUBMIT_JOBID"
	# Submitted one at a time, every node idle: Slurm alone would take n1.
	for ((i = 0; i < 10; i++)); do
		submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds" \
			-o /dev/null --wrap 'true' >/dev/null || fail "job $i: $SUBMIT_OUT"
		jid=$SUBMIT_JOBID
		node=$(job_node "$jid")
		wait_finished "$node" "$jid" || fail "job $jid not finished on $node"
		if [ "$node" = n2 ]; then
			on_n2=$((on_n2 + 1))
			grep -q "job $jid: dataset 'D': cache hit" "$(iostaged_log n2)" &&
				hits=$((hits + 1))
		fi
	done
	echo "jobs on n2: $on_n2 of 10, cache hits there: $hits"
	[ "$on_n2" -ge 9 ] || fail "only $on_n2 of 10 jobs ran on n2, which holds D"
	assert_eq "jobs on n2 that copied nothing (cache hit)" "$on_n2" "$hits"
	assert_eq "builds of D on n2 (only the first job's)" 1 "$(log_count n2 "dataset 'D': built")"
}

test_busy_cached_node_does_not_delay() {
	local ds blocker
	ds=$(pfs_dataset D 20)
	cached_on n2 "$ds"
	# n2 busy: all its CPUs taken by a long job of another user
	blocker=$(block n2) || return 1
	trap 'scancel $blocker 2>/dev/null' RETURN
	start_for "$ds" 10 "n2 busy"
	[ "$NODE" != n2 ] || fail "job ran on the busy n2"
	wait_finished "$NODE" "$JID" || fail "job $JID not finished on $NODE"
	assert_eq "D staged on $NODE" 1 "$(log_count "$NODE" "job $JID: dataset 'D': built")"
	[ "$(echo "$WAITED < 5" | bc)" = 1 ] || fail "job waited $WAITED s for a node"
}

# start_for DS TIMEOUT_S WHAT: a job of the test user for DS submitted
# now, waited for until it starts (else fail, saying WHAT held it); sets
# JID, NODE and WAITED (seconds from submission to start)
start_for() {
	local t0
	t0=$(date +%s.%N)
	submit "$TEST_USER" --io-profile="dl-train,data=$1" -o /dev/null --wrap true >/dev/null ||
		fail "job: $SUBMIT_OUT"
	JID=$SUBMIT_JOBID
	wait_job_state "$JID" 'RUNNING|COMPLETING|COMPLETED' "$2" ||
		fail "job $JID still $(job_state "$JID") after ${2}s ($3)"
	WAITED=$(echo "$(date +%s.%N) - $t0" | bc)
	NODE=$(job_node "$JID")
	echo "job $JID started on $NODE $WAITED s after its submission ($3)"
}

# placement_count FIELD: one counter of the service's sched_status
placement_count() {
	ctld_request login "$TEST_USER" '{"op":"sched_status"}' | jq ".placement.$1"
}

test_placement_counters() {
	local ds rep blocker i h0 n0
	ds=$(pfs_dataset D 5)
	h0=$(placement_count honoured)
	n0=$(placement_count not_honoured)
	cached_on n3 "$ds"
	# honoured: the job runs on n3
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "job: $SUBMIT_OUT"
	assert_eq "job ran on n3" n3 "$(job_field "$SUBMIT_JOBID" NodeList)"
	# not honoured: n3 busy, the job runs elsewhere
	submit "$OTHER_USER" -w n3 -c 2 -o /dev/null --wrap 'sleep 30' >/dev/null || fail "blocker: $SUBMIT_OUT"
	blocker=$SUBMIT_JOBID
	wait_job_state "$blocker" RUNNING 20 || fail "blocker not running"
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "job: $SUBMIT_OUT"
	scancel "$blocker"
	for ((i = 0; i < 25; i++)); do # the service reads Slurm's jobs every 2 s
		rep=$(ctld_request login "$TEST_USER" '{"op":"sched_status"}')
		[ "$(jq ".placement.honoured + .placement.not_honoured - $h0 - $n0" <<<"$rep")" -ge 2 ] && break
		sleep 0.2
	done
	echo "$rep"
	assert_eq "status ok" true "$(jq -r .ok <<<"$rep")"
	assert_eq "placements honoured" 1 "$(jq ".placement.honoured - $h0" <<<"$rep")"
	assert_eq "placements not honoured" 1 "$(jq ".placement.not_honoured - $n0" <<<"$rep")"
	[ "$(jq '.placement.preferred' <<<"$rep")" -ge 2 ] || fail "preferences given: $rep"
	assert_eq "nodes reporting" 3 "$(jq '.placement.nodes_reporting' <<<"$rep")"
	# the same counters for Prometheus (a textfile), from the login node
	on_node_as "$TEST_USER" login iostage -c "$IOSTAGE_CONF" status --prom >metrics.prom ||
		fail "iostage status --prom: $(cat metrics.prom)"
	promtool check metrics <metrics.prom || fail "promtool: $(cat metrics.prom)"
	assert_file_contains "placements honoured" metrics.prom 'iostage_ctld_placements_total{outcome="honoured"}'
	assert_file_contains "nodes reporting" metrics.prom 'iostage_ctld_nodes_reporting 3'
}

# placement_conf on|off: iostagectld restarted with Placement=yes|no
placement_conf() {
	sed -i '/^Placement=/d' "$IOSTAGE_CONF"
	[ "$1" = off ] && echo "Placement=no" >>"$IOSTAGE_CONF"
	ctld_stop
	ctld_start >/dev/null
}

test_placement_off_by_config() {
	local ds f0 f i m
	ds=$(pfs_dataset D 5)
	f0=$(node_ios_features n2)
	stage_on n2 "$ds"
	f=$(wait_new_feature n2 "$f0") || fail "n2 does not show its cached dataset"
	trap 'placement_conf on' RETURN
	placement_conf off || fail "iostagectld does not start with Placement=no"
	# withdrawn at once, without waiting for the nodes' next reports
	for ((i = 0; i < 50; i++)); do
		[ -z "$(node_ios_features n2)" ] && break
		sleep 0.2
	done
	assert_eq "ios_ features on n2 with Placement=no" "" "$(node_ios_features n2)"
	submit "$TEST_USER" --hold --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "held job: $SUBMIT_OUT"
	assert_eq "a held job's --prefer" "" "$(job_field "$SUBMIT_JOBID" Prefer | sed 's/(null)//')"
	scancel "$SUBMIT_JOBID"
	assert_eq "sched_status: placement off" false \
		"$(ctld_request login "$TEST_USER" '{"op":"sched_status"}' | jq .placement.enabled)"
	assert_contains "iostage status says why" \
		"$(on_node_as "$TEST_USER" login iostage -c "$IOSTAGE_CONF" status)" "placement off (Placement=no in iostage.conf)"
	m=$(on_node login curl -sf --max-time 10 http://ctl:9465/metrics)
	assert_contains "/metrics: placement off" "$m" $'\niostage_ctld_placement_enabled 0\n'
}

# hold_conf SECONDS: iostagectld restarted with PlacementHold=SECONDS
hold_conf() {
	sed -i '/^PlacementHold=/d' "$IOSTAGE_CONF"
	[ "$1" = 0 ] || echo "PlacementHold=$1" >>"$IOSTAGE_CONF"
	ctld_stop
	ctld_start >/dev/null
}

# block NODE: a whole-node job of another user on NODE; prints its id
block() {
	submit "$OTHER_USER" -w "$1" -c 2 -o /dev/null --wrap 'sleep 120' >/dev/null ||
		fail "blocker on $1: $SUBMIT_OUT"
	wait_job_state "$SUBMIT_JOBID" RUNNING 20 || fail "blocker on $1 not running"
	echo "$SUBMIT_JOBID"
}

# wait_held JOB: until Slurm shows our features as JOB's constraint
wait_held() {
	local i
	for ((i = 0; i < 50; i++)); do
		case $(job_field "$1" Features) in ios_*) return 0 ;; esac
		sleep 0.2
	done
	return 1
}

# PlacementHold=: a queued job waits a bounded time for the node holding
# its data while another node frees (without the hold, it would take that
# node and copy), and starts anywhere once the bound is reached.
test_hold_waits_for_cached_node() {
	local ds b1 b2 b3 jid t0 t1 rep
	ds=$(pfs_dataset H 5)
	# first the restart: a restarted service asks the nodes for their
	# cache reports, so n2's is known again before the staging below
	trap 'hold_conf 0' RETURN
	hold_conf 8 || fail "iostagectld does not start with PlacementHold=8"
	cached_on n2 "$ds"
	b1=$(block n1) && b2=$(block n2) && b3=$(block n3) || return 1
	trap 'scancel $b1 $b2 $b3 2>/dev/null; hold_conf 0' RETURN
	# within the hold: n1 frees first, the job waits for n2
	submit "$TEST_USER" --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "job: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	wait_held "$jid" || fail "job $jid not held: Features=$(job_field "$jid" Features); $(tail -5 "$(ctld_log)")"
	scancel "$b1"
	sleep 2
	assert_eq "job $jid with n1 free, within its hold" PENDING "$(job_state "$jid")"
	scancel "$b2"
	wait_job_state "$jid" 'RUNNING|COMPLETING|COMPLETED' 10 || fail "job $jid still $(job_state "$jid") with n2 free"
	assert_eq "held job's node" n2 "$(job_node "$jid")"
	wait_finished n2 "$jid" || fail "job $jid not finished on n2"
	grep -q "job $jid: dataset 'H': cache hit" "$(iostaged_log n2)" || fail "job $jid: no cache hit on n2"
	# the bound: n2 busy again, n1 free; the job starts on n1 after the hold
	b1=$(block n1) && b2=$(block n2) || return 1
	submit "$TEST_USER" --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "job: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	wait_held "$jid" || fail "job $jid not held"
	t0=$(date +%s.%N)
	scancel "$b1"
	wait_job_state "$jid" 'RUNNING|COMPLETING|COMPLETED' 15 || fail "job $jid still $(job_state "$jid") after its hold"
	t1=$(date +%s.%N)
	echo "job $jid started on $(job_node "$jid") $(echo "$t1 - $t0" | bc) s after n1 freed (hold 8 s)"
	assert_eq "released job's node" n1 "$(job_node "$jid")"
	assert_eq "released job's constraint" "" "$(job_field "$jid" Features | sed 's/(null)//')"
	[ "$(echo "$t1 - $t0 > 2" | bc)" = 1 ] || fail "job did not wait for its hold"
	rep=$(ctld_request login "$TEST_USER" '{"op":"sched_status"}')
	echo "$rep" | jq -c .placement
	assert_eq "hold_s" 8 "$(jq .placement.hold_s <<<"$rep")"
	assert_eq "jobs held" 2 "$(jq .placement.held <<<"$rep")"
	assert_eq "holds released at the bound" 1 "$(jq .placement.hold_released <<<"$rep")"
	assert_eq "held jobs started within the hold" 1 "$(jq .placement.held_started <<<"$rep")"
	assert_contains "iostage status on the login node" \
		"$(on_node_as "$TEST_USER" login iostage -c "$IOSTAGE_CONF" status)" \
		"holds (PlacementHold=8 s): 2 jobs held, 1 started where their data was, 1 released at the bound"
	assert_contains "/metrics" "$(on_node login curl -sf --max-time 10 http://ctl:9465/metrics)" \
		'iostage_ctld_placement_holds_total{outcome="released"} 1'
}

# PlacementHold= from submission (delay scheduling): a job for data cached
# on n2, submitted while n2 is busy and n1 and n3 are idle, is constrained
# to n2 at once (job_submit.lua) and waits for it instead of copying on an
# idle node; with n2 kept busy it starts on an idle node once its hold,
# counted from its submission, is over.
test_hold_from_submission_waits_for_cached_node() {
	local ds b2 jid
	ds=$(pfs_dataset S 5)
	trap 'hold_conf 0' RETURN
	hold_conf 8 || fail "iostagectld does not start with PlacementHold=8"
	cached_on n2 "$ds"
	b2=$(block n2) || return 1
	trap 'scancel $b2 2>/dev/null; hold_conf 0' RETURN
	submit "$TEST_USER" --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "job: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	assert_eq "job $jid's constraint as submitted" "$(job_field "$jid" Prefer)" "$(job_field "$jid" Features)"
	case $(job_field "$jid" Features) in ios_*) ;; *) fail "job $jid not held at submission: Features=$(job_field "$jid" Features)" ;; esac
	# not a two-node job (a constraint holds on every node), nor one
	# with a preference of its own
	submit "$TEST_USER" --hold -N 2 --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "two-node job: $SUBMIT_OUT"
	assert_eq "two-node job's constraint" "" "$(job_field "$SUBMIT_JOBID" Features | sed 's/(null)//')"
	assert_eq "two-node job's preference" "$(job_field "$jid" Prefer)" "$(job_field "$SUBMIT_JOBID" Prefer)"
	scancel "$SUBMIT_JOBID"
	submit "$TEST_USER" --hold --prefer=bigmem --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "job with its own preference: $SUBMIT_OUT"
	assert_eq "the user's own preference" bigmem "$(job_field "$SUBMIT_JOBID" Prefer)"
	assert_eq "its constraint" "" "$(job_field "$SUBMIT_JOBID" Features | sed 's/(null)//')"
	scancel "$SUBMIT_JOBID"
	sleep 3
	assert_eq "job $jid with n1 and n3 idle, within its hold" PENDING "$(job_state "$jid")"
	assert_contains "iostage status on the login node, job $jid" \
		"$(on_node_as "$TEST_USER" login iostage -c "$IOSTAGE_CONF" status)" \
		"waits for a node with its data until"
	scancel "$b2"
	wait_job_state "$jid" 'RUNNING|COMPLETING|COMPLETED' 10 || fail "job $jid still $(job_state "$jid") with n2 free"
	assert_eq "held job's node" n2 "$(job_node "$jid")"
	wait_finished n2 "$jid" || fail "job $jid not finished on n2"
	grep -q "job $jid: dataset 'S': cache hit" "$(iostaged_log n2)" || fail "job $jid: no cache hit on n2"
	# the bound, from submission: n2 stays busy
	b2=$(block n2) || return 1
	start_for "$ds" 20 "n2 busy, hold 8 s"
	[ "$NODE" != n2 ] || fail "job $JID started on the busy n2"
	[ "$(echo "$WAITED >= 7 && $WAITED <= 14" | bc)" = 1 ] ||
		fail "job $JID started $WAITED s after submission, not after its 8 s hold"
	assert_eq "released job's constraint" "" "$(job_field "$JID" Features | sed 's/(null)//')"
}

# A restarted iostagectld knows no node's cache; it asks every node up for
# its report at once instead of waiting up to CACHEREPORT_INTERVAL_S (60 s)
# for the nodes' next ones (idle nodes tell it nothing else).
test_restarted_service_asks_nodes_for_their_cache() {
	local i n node t0 c0=()
	for node in n1 n2 n3; do c0+=("$(log_count "$node" 'cache report asked by')"); done
	ctld_stop
	ctld_start >/dev/null || fail "iostagectld does not start"
	t0=$SECONDS
	for ((i = 0; i < 75; i++)); do
		n=$(ctld_request login root '{"op":"sched_status","jobs":false}' | jq '.placement.nodes_reporting')
		[ "$n" = 3 ] && break
		sleep 0.2
	done
	echo "3 nodes reporting $((SECONDS - t0)) s after the restart"
	assert_eq "nodes reporting within 15 s of the restart" 3 "$n"
	i=0
	for node in n1 n2 n3; do
		[ "$(log_count "$node" 'cache report asked by')" -gt "${c0[i]}" ] ||
			fail "$node was not asked for its cache report: $(tail -n 5 "$(iostaged_log "$node")")"
		i=$((i + 1))
	done
}
