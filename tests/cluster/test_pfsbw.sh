# shellcheck shell=bash
# The PFS as a scheduled resource (issue 13, item 3; docs/SCHEDULING.md).
#
# Streaming jobs: the cluster's slurm.conf says Licenses=pfs_bw:4 and
# CliFilterPlugins=cli_filter/lua with the shipped cli_filter.lua;
# iostage.conf says PfsLicense=pfs_bw PfsLicensePerJob=2. A job whose
# --io-profile streams a dataset gets -L pfs_bw:2: two fit, a third waits
# with reason Licenses and starts when one ends; a staging job takes none.
#
# Staging copies: with StageBandwidth= the nodes' copies share the budget
# through iostagectld's leases; measured from the bytes the copies write
# over time (the tiers' allocated bytes, sampled every 0.25 s).

BW_MIB=24 # StageBandwidth= in these tests, MiB/s

# stream_job USER SLEEP DATASET [SBATCH_ARGS...]: submit a job that
# streams DATASET; its id on stdout
stream_job() {
	local u=$1 s=$2 ds=$3
	shift 3
	submit "$u" --io-profile="none,stream=$ds" -o /dev/null "$@" --wrap "sleep $s" >/dev/null ||
		{ echo "sbatch: $SUBMIT_OUT" >&2; return 1; }
	echo "$SUBMIT_JOBID"
}

job_reason() { squeue -h -j "$1" -o %r 2>/dev/null; }

test_streaming_jobs_take_licenses_third_waits() {
	local ds j1 j2 j3 js st end1 start3
	ds=$(pfs_dataset stream 2)
	j1=$(stream_job "$TEST_USER" 4 "$ds") || fail "submit 1"
	j2=$(stream_job "$TEST_USER" 60 "$ds") || fail "submit 2"
	wait_job_state "$j1" RUNNING 20 || fail "job $j1 not running"
	wait_job_state "$j2" RUNNING 20 || fail "job $j2 not running"
	assert_eq "licenses of a streaming job" "pfs_bw:2" "$(job_field "$j1" Licenses)"
	j3=$(stream_job "$TEST_USER" 1 "$ds") || fail "submit 3"
	# The scheduler's next pass gives the reason.
	for _ in $(seq 1 50); do
		[ "$(job_reason "$j3")" = Licenses ] && break
		sleep 0.2
	done
	assert_eq "third streaming job's state (4 licenses, 2 each)" PENDING "$(job_state "$j3")"
	assert_eq "its reason in squeue" Licenses "$(job_reason "$j3")"
	# A staging job beside them takes no license and starts at once.
	submit_wait "$TEST_USER" --io-profile="none,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "staging job: $SUBMIT_OUT"
	js=$SUBMIT_JOBID
	assert_eq "licenses of a staging job" "" "$(job_field "$js" Licenses | sed 's/(null)//')"
	assert_eq "staging job state" COMPLETED "$(job_end_state "$js")"
	# Job 1 ends: job 3 starts then, not before.
	wait_job_state "$j3" 'RUNNING|COMPLETED' 30 || fail "job $j3 never started: $(job_reason "$j3")"
	wait_job_state "$j1" COMPLETED 10 || fail "job $j1 not completed"
	end1=$(date -d "$(job_field "$j1" EndTime)" +%s)
	start3=$(date -d "$(job_field "$j3" StartTime)" +%s)
	[ "$start3" -ge "$end1" ] || fail "job $j3 started at $start3, before job $j1 ended ($end1)"
	wait_job_state "$j3" COMPLETED 20 || fail "job $j3 not completed"
	st=$(job_state "$j2")
	assert_eq "job 2 still running" RUNNING "$st"
	scancel "$j2"
}

test_user_licenses_kept_and_no_license_without_stream() {
	local ds j out
	ds=$(pfs_dataset stream2 1)
	# The user's own pfs_bw count wins; other licenses are kept.
	j=$(stream_job "$TEST_USER" 0 "$ds" -L pfs_bw:1) || fail "submit"
	assert_eq "user's own count kept" "pfs_bw:1" "$(job_field "$j" Licenses)"
	# A job without --io-profile, and one that only stages: none.
	submit "$TEST_USER" -o /dev/null --wrap true >/dev/null || fail "plain: $SUBMIT_OUT"
	assert_eq "licenses of a job without a profile" "" "$(job_field "$SUBMIT_JOBID" Licenses | sed 's/(null)//')"
	# What the filter runs, by hand: the same answers.
	assert_eq "pfs-license for a stream" "pfs_bw:2" \
		"$(on_node_as "$TEST_USER" login iostage -c "$IOSTAGE_CONF" pfs-license --io-profile "none,stream=$ds")"
	assert_eq "pfs-license merged with other licenses" "x:1,pfs_bw:2" \
		"$(on_node_as "$TEST_USER" login iostage -c "$IOSTAGE_CONF" pfs-license --io-profile "none,stream=$ds" --licenses x:1)"
	assert_eq "pfs-license for staging" "" \
		"$(on_node_as "$TEST_USER" login iostage -c "$IOSTAGE_CONF" pfs-license --io-profile "none,data=$ds")"
	# salloc and srun make their own allocations: they ask too; a step
	# inside an allocation does not (the job holds the licenses).
	out=$(as_user "$TEST_USER" timeout 60 salloc --io-profile="none,stream=$ds" bash -c \
		"echo job=\$SLURM_JOB_ID; srun --io-profile='none,stream=$ds' true && echo step-ok" 2>&1)
	assert_contains "a step inside the allocation" "$out" "step-ok"
	j=$(sed -n 's/^job=//p' <<<"$out")
	assert_eq "licenses of a salloc allocation that streams" "pfs_bw:2" "$(job_field "$j" Licenses)"
	out=$(as_user "$TEST_USER" timeout 60 srun --io-profile="none,stream=$ds" bash -c 'echo job=$SLURM_JOB_ID' 2>&1)
	j=$(sed -n 's/^job=//p' <<<"$out")
	assert_eq "licenses of an srun job that streams" "pfs_bw:2" "$(job_field "$j" Licenses)"
	# A stream the user cannot read is refused at submit, like data=.
	submit "$TEST_USER" --io-profile="none,stream=/root" -o /dev/null --wrap true >/dev/null &&
		fail "a stream of /root was queued"
	assert_contains "refusal" "$SUBMIT_OUT" "/root"
}

# --- StageBandwidth= ---------------------------------------------------------------

# bw_conf on|off: set or remove StageBandwidth= in the cluster's one
# iostage.conf and restart iostagectld and every iostaged to read it
bw_conf() {
	local conf=$IOSTAGE_CONF node
	sed -i '/^StageBandwidth/d' "$conf"
	[ "$1" = on ] && echo "StageBandwidth=${BW_MIB}M" >>"$conf"
	ctld_stop
	ctld_start >/dev/null || return 1
	# In parallel: each restart waits for its daemon.
	for node in $CLUSTER_COMPUTE_NODES; do
		(iostaged_stop "$node" && iostaged_start "$node" >/dev/null) &
	done
	wait
	for node in $CLUSTER_COMPUTE_NODES; do
		iostaged_pid "$node" >/dev/null || return 1
	done
}

# big_dataset NAME MIB: MIB MiB in 8 MiB files
big_dataset() {
	local d="$CLUSTER_PFS/$TEST_NAME/$1" i
	mkdir -p "$d"
	for ((i = 0; i < $2 / 8; i++)); do head -c $((8 << 20)) /dev/urandom >"$d/f$i"; done
	chown -R "$TEST_USER:" "$CLUSTER_PFS/$TEST_NAME"
	echo "$d"
}

# tier_bytes NODES...: bytes allocated on their nvme tiers, summed
tier_bytes() {
	local node sum=0 b
	for node in "$@"; do
		b=$(du -s -B1 "$(node_local "$node")/nvme" 2>/dev/null | cut -f1)
		sum=$((sum + ${b:-0}))
	done
	echo "$sum"
}

# sample_start FILE NODES...: "SECONDS BYTES" lines every 0.25 s, in the
# background (SAMPLER_PID)
sample_start() {
	local f=$1
	shift
	(while :; do echo "$(date +%s.%N) $(tier_bytes "$@")"; sleep 0.25; done) >"$f" &
	SAMPLER_PID=$!
}

# max_rate FILE MIN_S: the highest bytes/s between two samples at least
# MIN_S apart, in MiB/s; and the mean over the whole copy (first growth to
# last growth) as the second word
rates() {
	awk -v min="$2" '
		{ t[NR] = $1; b[NR] = $2 }
		END {
			first = 0; last = 0
			for (i = 2; i <= NR; i++) if (b[i] > b[i-1]) { if (!first) first = i - 1; last = i }
			max = 0
			for (i = first; i <= last; i++)
				for (j = i + 1; j <= last; j++)
					if (t[j] - t[i] >= min) {
						r = (b[j] - b[i]) / (t[j] - t[i])
						if (r > max) max = r
						break
					}
			mean = (last > first) ? (b[last] - b[first]) / (t[last] - t[first]) : 0
			printf "%.1f %.1f\n", max / 1048576, mean / 1048576
		}' "$1"
}

test_stage_bandwidth_shared_by_three_nodes() {
	local d1 d2 d3 d4 j node r max mean st
	trap 'kill $SAMPLER_PID 2>/dev/null; bw_conf off >/dev/null 2>&1' RETURN
	bw_conf on || fail "restart with StageBandwidth=${BW_MIB}M"
	d1=$(big_dataset a 48)
	d2=$(big_dataset b 48)
	d3=$(big_dataset c 48)
	d4=$(big_dataset d 48)
	sample_start samples.txt n1 n2 n3
	sleep 0.5
	j=()
	for node in n1 n2 n3; do
		case $node in n1) ds=$d1 ;; n2) ds=$d2 ;; n3) ds=$d3 ;; esac
		submit "$TEST_USER" -w "$node" --io-profile="none,data=$ds" -o /dev/null --wrap true >/dev/null ||
			fail "submit on $node: $SUBMIT_OUT"
		j+=("$SUBMIT_JOBID")
	done
	# While they copy: the service leases to three nodes, within budget.
	for _ in $(seq 1 40); do
		st=$(ctld_request '{"op":"stage_bw_status"}')
		[ "$(jq -r .nodes <<<"$st")" = 3 ] && break
		sleep 0.25
	done
	assert_eq "nodes holding a lease while all three copy" 3 "$(jq -r .nodes <<<"$st")"
	[ "$(jq -r '.granted <= .budget' <<<"$st")" = true ] || fail "leases above the budget: $st"
	assert_contains "iostage status on a node" "$(iostage_on n1 status)" \
		"leased of ${BW_MIB}.0 MiB/s (StageBandwidth=) to"
	assert_contains "a node's /metrics" \
		"$(on_node n1 curl -s "http://127.0.0.1:${IOSTAGE_METRICS_PORT:-9464}/metrics")" \
		"iostage_stage_bandwidth_budget_bytes_per_second $((BW_MIB << 20))"
	for jid in "${j[@]}"; do wait_job_state "$jid" COMPLETED 60 || fail "job $jid: $(job_state "$jid")"; done
	sleep 0.5
	kill "$SAMPLER_PID"
	read -r max mean < <(rates samples.txt 2)
	echo "three nodes: highest ${max} MiB/s over 2 s, mean ${mean} MiB/s (budget ${BW_MIB})"
	awk -v m="$max" -v b="$BW_MIB" 'BEGIN { exit !(m <= b * 1.15) }' ||
		fail "three nodes copied at ${max} MiB/s over 2 s, above the budget ${BW_MIB} MiB/s (+15%)"
	awk -v m="$mean" -v b="$BW_MIB" 'BEGIN { exit !(m >= b * 0.6) }' ||
		fail "three nodes copied at only ${mean} MiB/s on average: the budget (${BW_MIB}) is not used"

	# One node alone may use the whole budget.
	sample_start alone.txt n1
	sleep 0.5
	submit_wait "$TEST_USER" -w n1 --io-profile="none,data=$d4" -o /dev/null --wrap true >/dev/null ||
		fail "alone: $SUBMIT_OUT"
	sleep 0.5
	kill "$SAMPLER_PID"
	read -r max mean < <(rates alone.txt 1)
	echo "one node: highest ${max} MiB/s over 1 s, mean ${mean} MiB/s"
	awk -v m="$max" -v b="$BW_MIB" 'BEGIN { exit !(m <= b * 1.15) }' ||
		fail "one node copied at ${max} MiB/s, above the budget ${BW_MIB} MiB/s"
	# It gets the whole budget: at full rate over a second, and most of
	# it on average (the mean includes its first lease and the walk).
	awk -v m="$max" -v b="$BW_MIB" 'BEGIN { exit !(m >= b * 0.85) }' ||
		fail "one node alone copied at most ${max} MiB/s: it should get the whole budget (${BW_MIB})"
	awk -v m="$mean" -v b="$BW_MIB" 'BEGIN { exit !(m >= b * 0.6) }' ||
		fail "one node alone copied at only ${mean} MiB/s on average (budget ${BW_MIB})"
	assert_eq "fallback lines (the service answered)" 0 "$(log_count n1 'no share from iostagectld')"
}

test_stage_bandwidth_without_service_falls_back() {
	local ds before
	trap 'ctld_start >/dev/null 2>&1; bw_conf off >/dev/null 2>&1' RETURN
	bw_conf on || fail "restart with StageBandwidth=${BW_MIB}M"
	ctld_stop
	ds=$(big_dataset e 8)
	before=$(log_count n2 'no share from iostagectld')
	submit_wait "$TEST_USER" -w n2 --io-profile="none,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "staging without the service: $SUBMIT_OUT"
	assert_eq "job state" COMPLETED "$(job_end_state "$SUBMIT_JOBID")"
	assert_eq "one fallback line" $((before + 1)) "$(log_count n2 'no share from iostagectld')"
	assert_contains "the line names the local share" \
		"$(grep 'no share from iostagectld' "$(iostaged_log n2)" | tail -n1)" "3.0 MiB/s, a conservative local share"
}
