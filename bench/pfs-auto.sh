# shellcheck shell=bash
# pfs-auto.sh - closing the loop over the remote PFS (issue 14 item 6), run
# by bench/pfs-bench.sh through the multi-node test cluster
# (tests/cluster/run.sh: slurmctld, three compute nodes with slurmd and
# iostaged, iostagectld holding the history) started with bench/pfs.sh's
# GlusterFS mount as its PFS (CLUSTER_PFS_DIR) and PfsPath= naming it
# (CLUSTER_PFS_OBSERVE=yes). Not part of the test suite: it measures,
# appends JSON lines to PFSA_RUNS and fails only when a job fails or an
# advice would stage more than its tier holds.
#
# From pfs-bench.sh: PFSA_RUNS (JSON lines), PFSA_READER (dlio_reader),
# PFSA_RARGS (its options), PFSA_DS and PFSA_BIG (dataset names under the
# PFS: one that fits the nvme tier, one that does not), PFSA_N (jobs of the
# loop, 10), PFSA_BIG_N (jobs of the big one, 4), PFSA_BIG_RARGS,
# PFSA_RTT_MS.

pfsa_now() { date +%s.%N; }

# pfsa_cold: nothing of the last job in any page cache (the PFS client's
# and the node-local tiers' alike). The GlusterFS client is not remounted:
# the nodes hold the mount they were made with; its metadata cache and
# FUSE's attribute and entry caches time out after 1 s, and jobs are
# further apart than that.
pfsa_cold() {
	sync
	echo 3 >/proc/sys/vm/drop_caches || fail "cannot drop the page cache"
	sleep 1.1
}

# pfsa_advice NAME: `iostage recommend --json` for job name NAME as the
# user, from login (what --io-profile=auto is about to apply)
pfsa_advice() {
	on_node_as "$TEST_USER" login iostage -c "$IOSTAGE_CONF" recommend --json --job-name "$1" 2>/dev/null
}

# pfsa_check_advice ADVICE: every recommendation that stages a dataset
# knows its size and it is within its tier's capacity; else fail.
pfsa_check_advice() {
	local bad
	bad=$(jq -c '[.recommendations[]? | select(.profile.datasets != null and (.profile.datasets | length) > 0)
		| select((.evidence.figures.bytes // -1) < 0 or (.evidence.figures.tier_capacity // 0) <= 0
			or .evidence.figures.bytes > .evidence.figures.tier_capacity)
		| {rule, target, bytes: .evidence.figures.bytes, cap: .evidence.figures.tier_capacity}]' <<<"$1")
	[ "$bad" = "[]" ] || fail "advice stages more than its tier holds (or of unknown size): $bad"
}

# pfsa_record J: the job's record as iostagectld holds it (waits for it)
pfsa_record() {
	local i rec
	for ((i = 0; i < 120; i++)); do
		rec=$(on_node login iostage -c "$IOSTAGE_CONF" export --format json 2>/dev/null |
			jq -c --argjson j "$1" '.[] | select(.job == $j)' 2>/dev/null)
		[ -n "$rec" ] && { printf '%s\n' "$rec"; return 0; }
		sleep 0.5
	done
	return 1
}

# pfsa_job KIND N NAME DATA RARGS: one training job of the user, submitted
# from login with --io-profile=auto and nothing else; appends its line.
pfsa_job() {
	local kind=$1 n=$2 name=$3 data=$4 rargs=$5 advice t0 rec start end out
	advice=$(pfsa_advice "$name")
	pfsa_check_advice "$advice"
	pfsa_cold
	t0=$(pfsa_now)
	submit_wait "$TEST_USER" -J "$name" --io-profile=auto -o "$kind.$n.%j" \
		--export=ALL,PFSA_RD="$RD",PFSA_RARGS="$rargs",PFSA_DATA="$data" \
		"$TEST_WORKDIR/pfsa-job.sh" >/dev/null ||
		fail "$kind job $n failed: $SUBMIT_OUT; $(cat "$TEST_WORKDIR/$kind.$n.$SUBMIT_JOBID" 2>/dev/null)"
	out=$TEST_WORKDIR/$kind.$n.$SUBMIT_JOBID
	rec=$(pfsa_record "$SUBMIT_JOBID") || fail "job $SUBMIT_JOBID never reached iostagectld"
	start=$(sed -n 's/^START //p' "$out")
	end=$(sed -n 's/^END //p' "$out")
	# Unoverlapped I/O: the time the job could not compute because of I/O
	# = the Prolog's staging (the job waits for it) + the job's wall time
	# minus the compute it did (the reader's AU x epoch time: listing the
	# files, reading what the prefetch could not hide).
	jq -c --arg kind "$kind" --argjson n "$n" --argjson t0 "$t0" --argjson t_start "$start" \
		--argjson t_end "$end" --arg sbatch "$(grep 'iostage:' <<<"$SUBMIT_OUT")" \
		--argjson advice "${advice:-null}" --argjson rec "$rec" '
		($rec.phases // [] | map(select(.name == "stage_in")) | .[0].seconds // 0) as $stage
		| ([.epochs[] | .seconds * .au] | add) as $compute
		| {kind:"auto", loop:$kind, n:$n, job:$rec.job, node:$rec.node, rtt_ms:(env.PFSA_RTT_MS|tonumber),
		   sbatch:$sbatch, data:.dir,
		   staged:(($rec.datasets // []) | map({source:.source, result, bytes, tier}) ),
		   observed:$rec.observed,
		   advice:{runs:($advice.runs // 0),
		     rules:[($advice.recommendations // [])[] | select(.confidence >= 0.5)
		       | {rule, target, confidence, bytes:.evidence.figures.bytes, tier_capacity:.evidence.figures.tier_capacity,
			  stages:((.profile.datasets // []) | length > 0)}],
		     skipped:[($advice.skipped // [])[] | select(.reason | test("larger than tier"))]},
		   submit_to_start_s:(($t_start - $t0) * 1000 | round / 1000),
		   stage_in_s:($stage * 1000 | round / 1000),
		   job_wall_s:(($t_end - $t_start) * 1000 | round / 1000),
		   compute_s:($compute * 1000 | round / 1000),
		   unoverlapped_io_s:(($stage + ($t_end - $t_start) - $compute) * 1000 | round / 1000),
		   run_s:(($t_end - $t0) * 1000 | round / 1000),
		   reader:{files, bytes, epochs, first_batch_s, total_s}}' \
		"$TEST_WORKDIR/reader.$SUBMIT_JOBID.json" >>"$PFSA_RUNS" ||
		fail "cannot summarize job $SUBMIT_JOBID"
	echo "$kind $n: job $SUBMIT_JOBID on $(jq -r .node <<<"$rec"): $(tail -1 "$PFSA_RUNS" | jq -r '"unoverlapped I/O \(.unoverlapped_io_s) s, run \(.run_s) s, staged \(.staged | map(.result) | join(",")), observed \(.observed.source // "-")"')"
}

test_pfs_auto() {
	local n ds big name="dlio-auto" bigname="dlio-auto-big"
	ds=$CLUSTER_PFS/$PFSA_DS big=$CLUSTER_PFS/$PFSA_BIG
	if [ ! -d "$ds" ] || [ ! -d "$big" ]; then fail "no $ds or $big on the cluster's PFS"; fi
	grep -q "^PfsPath=$CLUSTER_PFS\$" "$IOSTAGE_CONF" || fail "the cluster's iostage.conf has no PfsPath=$CLUSTER_PFS"
	RD=$TEST_WORKDIR/dlio_reader
	install -m 0755 "$PFSA_READER" "$RD"
	cat >"$TEST_WORKDIR/pfsa-job.sh" <<'JOB'
#!/bin/bash
# A DLIO-shaped training job: it reads where iostage says (a staged copy),
# else the PFS path it was given.
echo "START $(date +%s.%N)"
# shellcheck disable=SC2086
"$PFSA_RD" $PFSA_RARGS "${IOSTAGE_DATA:-$PFSA_DATA}" >"reader.$SLURM_JOB_ID.json" || exit 1
echo "END $(date +%s.%N)"
JOB
	chmod 0755 "$TEST_WORKDIR/pfsa-job.sh"
	# The loop: PFSA_N jobs of one name over a dataset that fits nvme.
	for ((n = 1; n <= PFSA_N; n++)); do
		pfsa_job loop "$n" "$name" "$ds" "$PFSA_RARGS" || return 1
	done
	# The same user's other training, over a dataset larger than nvme's
	# capacity: observed, and never advised for staging there.
	for ((n = 1; n <= PFSA_BIG_N; n++)); do
		pfsa_job big "$n" "$bigname" "$big" "$PFSA_BIG_RARGS" || return 1
		[ "$(tail -1 "$PFSA_RUNS" | jq '.staged | length')" = 0 ] ||
			fail "a dataset larger than its tier was staged: $(tail -1 "$PFSA_RUNS")"
	done
	pfsa_check_advice "$(pfsa_advice "$bigname")"
}
