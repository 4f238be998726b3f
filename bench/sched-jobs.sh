# shellcheck shell=bash
# sched-jobs.sh - the job stream of `make bench-sched` (issue 13 item 5),
# run by bench/sched-replay.sh through the cluster runner
# (tests/cluster/run.sh: slurmctld, 3 compute nodes with slurmd, the
# plugin, Prolog/Epilog and iostaged, iostagectld on ctl), once per mode.
# Not part of the test suite: the one function submits the stream, waits
# for every job and its record, and writes one JSON object of what the
# real sources say; it fails only when a job fails or a figure is missing.
#
# From sched-replay.sh: SCHED_MODE (a name), SCHED_STREAM (one job per
# line: "KIND DATASET_DIR COMPUTE_S"), SCHED_INTERVAL (seconds between
# submissions), SCHED_TIER (the tier the jobs stage to), SCHED_OUT (the
# JSON written).
#
# Where each figure comes from:
#   prolog wait   the job record iostaged filed to iostagectld: its "run"
#                 phase start (the first task registered with iostaged)
#                 minus its "stage_in" start (the Prolog's stage request)
#   queue wait    Slurm's StartTime minus its SubmitTime (whole seconds):
#                 what a hold (PlacementHold=) costs shows here
#   after staging the record's run start minus its stage_in end: the
#                 Prolog's exit, Slurm's batch launch and step start
#   registered    the record's run start minus the task's first line
#                 (the record's clock checked against the task's; Slurm's
#                 log lines were no such check: slurmctld writes a job's
#                 allocation line up to ~0.5 s after its Prolog asked to
#                 stage)
#   slurm wait    the first task's own clock (`date +%s.%N`, first line of
#                 the script) minus Slurm's StartTime (whole seconds: a
#                 cross-check, up to 1 s late)
#   bytes copied  the record's datasets[].copied_bytes (at start); and
#                 every node's iostage_stage_copied_bytes_total (/metrics),
#                 which counts pre-staging copies too
#   hit or not    the record's datasets[].result
#   pre-staging   iostagectld's /metrics (iostage_ctld_*)

sched_metric() { awk -v s="$2" 'index($0, s " ") == 1 { print $NF; exit }' <<<"$1"; }

# node_copied NODE: bytes NODE's iostaged copied since it started
node_copied() {
	sched_metric "$(on_node "$1" curl -sf --max-time 5 http://127.0.0.1:9464/metrics)" \
		iostage_stage_copied_bytes_total
}

test_sched_replay() {
	local kind ds secs profile n=0 jid jobs=() t_sub t_done i left rec start submitted task node t_job
	local rows="$TEST_WORKDIR/rows.jsonl" ctl_before ctl_after
	local -A copied0
	[ -s "$SCHED_STREAM" ] || fail "no stream: $SCHED_STREAM"
	for node in $CLUSTER_COMPUTE_NODES; do copied0[$node]=$(node_copied "$node"); done
	ctl_before=$(on_node login curl -sf --max-time 5 http://ctl:9465/metrics)
	cat >"$TEST_WORKDIR/job.sh" <<'JOB'
#!/bin/bash
# the first task's clock, then one pass over the staged data (DLIO's
# reading, page cache permitting), then the model's compute ($1 s)
echo "TASK $(date +%s.%N)"
find "$IOSTAGE_DATA" -type f -exec cat {} + >/dev/null
sleep "$1"
JOB
	chmod 0755 "$TEST_WORKDIR/job.sh"
	: >"$rows"
	t_sub=$(date +%s.%N)
	while read -r kind ds secs; do
		[ -n "$kind" ] || continue
		# a whole node (2 CPUs), a time limit so backfill can plan it;
		# the site profile a user picks for the kind of job. The
		# compute time is an argument, not --export=ALL,VAR=...: any
		# --export but ALL makes sbatch set SLURM_GET_USER_ENV, and
		# slurmd then runs `su - USER` before each batch launch, which
		# takes 0.02-0.1 s and, when su has not exited by the time it is
		# killed, a sleep(1) more (Slurm 22.05, src/common/env.c).
		profile=dl-train
		[ "$kind" = infer ] && profile=inference
		t_job=$(date +%s.%N)
		submit "$TEST_USER" -c 2 -t 1 -J "$kind-$(basename "$ds")" \
			--io-profile="$profile,data=$ds:$SCHED_TIER" \
			-o "$TEST_WORKDIR/out.%j" "$TEST_WORKDIR/job.sh" "$secs" >/dev/null ||
			fail "submit $n: $SUBMIT_OUT"
		jobs+=("$SUBMIT_JOBID")
		echo "$SUBMIT_JOBID $kind $ds $t_job" >>"$TEST_WORKDIR/submitted"
		n=$((n + 1))
		sleep "$SCHED_INTERVAL"
	done <"$SCHED_STREAM"
	for ((i = 0; i < 3000; i++)); do
		left=$(squeue -h -o %i 2>/dev/null | wc -l)
		[ "$left" = 0 ] && break
		sleep 0.2
	done
	[ "$left" = 0 ] || fail "$left jobs still queued after 600 s"
	t_done=$(date +%s.%N)
	echo "sched-replay[$SCHED_MODE]: $n jobs done in $(awk -v a="$(date +%s.%N)" -v b="$t_sub" 'BEGIN { printf "%.0f", a - b }') s"
	for jid in "${jobs[@]}"; do
		assert_eq "job $jid" COMPLETED "$(job_state "$jid")"
		node=$(job_field "$jid" NodeList)
		start=$(date -d "$(job_field "$jid" StartTime)" +%s)
		submitted=$(date -d "$(job_field "$jid" SubmitTime)" +%s)
		task=$(sed -n 's/^TASK //p' "$TEST_WORKDIR/out.$jid")
		# the record is filed at the Epilog, through the node's outbox
		for ((i = 0; i < 150; i++)); do
			rec=$(ctld_request '{"op":"history_get","job":'"$jid"'}')
			[ "$(jq -r .ok <<<"$rec")" = true ] && break
			sleep 0.2
		done
		[ "$(jq -r .ok <<<"$rec")" = true ] || fail "no record of job $jid: $rec"
		jq -c --arg node "$node" --argjson start "$start" --argjson task "${task:-null}" \
			--argjson submitted "$submitted" \
			--arg kind "$(awk -v j="$jid" '$1 == j { print $2 }' "$TEST_WORKDIR/submitted")" \
			--arg dataset "$(awk -v j="$jid" '$1 == j { n = split($3, p, "/"); print p[n] }' "$TEST_WORKDIR/submitted")" \
			--argjson sbatch_at "$(awk -v j="$jid" '$1 == j { print $4 }' "$TEST_WORKDIR/submitted")" '
			.record as $r
			| ($r.phases | map(select(.name == "stage_in"))[0]) as $si
			| ($r.phases | map(select(.name == "run"))[0]) as $run
			| { job: $r.job, kind: $kind, dataset: $dataset, node: $node,
			    prolog_wait_s: ($run.start - $si.start),
			    stage_in_s: $si.seconds,
			    slurm_start_to_task_s: (if $task then $task - $start else null end),
			    queue_wait_s: ($start - $submitted),
			    submit_to_task_s: (if $task then $task - $sbatch_at else null end),
			    after_staging_s: ($run.start - $si.start - $si.seconds),
			    registered_after_task_s: (if $task then $run.start - $task else null end),
			    copied_bytes: ([$r.datasets[].copied_bytes] | add),
			    bytes: ([$r.datasets[].bytes] | add),
			    hits: ([$r.datasets[] | select(.result == "hit")] | length),
			    datasets: ($r.datasets | length) }' <<<"$rec" >>"$rows" ||
			fail "job $jid: bad record: $rec"
	done
	ctl_after=$(on_node login curl -sf --max-time 5 http://ctl:9465/metrics)
	local copied_nodes=0 c
	for node in $CLUSTER_COMPUTE_NODES; do
		c=$(node_copied "$node")
		copied_nodes=$((copied_nodes + ${c:-0} - ${copied0[$node]:-0}))
	done
	jq -s --arg mode "$SCHED_MODE" --argjson nodes_copied "$copied_nodes" \
		--argjson prestage_bytes "$(( $(sched_metric "$ctl_after" iostage_ctld_prestage_bytes_total) - $(sched_metric "$ctl_before" iostage_ctld_prestage_bytes_total) ))" \
		--argjson pred_hit "$(sched_metric "$ctl_after" 'iostage_ctld_prestage_predictions_total{outcome="hit"}')" \
		--argjson pred_missed "$(sched_metric "$ctl_after" 'iostage_ctld_prestage_predictions_total{outcome="missed"}')" \
		--argjson pred_late "$(sched_metric "$ctl_after" 'iostage_ctld_prestage_predictions_total{outcome="late"}')" \
		--argjson prestaged "$(sched_metric "$ctl_after" 'iostage_ctld_prestage_datasets_total{result="staged"}')" \
		--argjson prestage_failed "$(sched_metric "$ctl_after" 'iostage_ctld_prestage_datasets_total{result="failed"}')" \
		--argjson saved "$(sched_metric "$ctl_after" iostage_ctld_prestage_saved_seconds_total)" \
		--argjson honoured "$(sched_metric "$ctl_after" 'iostage_ctld_placements_total{outcome="honoured"}')" \
		--argjson not_honoured "$(sched_metric "$ctl_after" 'iostage_ctld_placements_total{outcome="not_honoured"}')" \
		--argjson held "$(sched_metric "$ctl_after" 'iostage_ctld_placement_holds_total{outcome="held"}')" \
		--argjson held_started "$(sched_metric "$ctl_after" 'iostage_ctld_placement_holds_total{outcome="started"}')" \
		--argjson hold_released "$(sched_metric "$ctl_after" 'iostage_ctld_placement_holds_total{outcome="released"}')" \
		--argjson makespan "$(awk -v a="$t_done" -v b="$t_sub" 'BEGIN { printf "%.1f", a - b }')" \
		'{ mode: $mode, jobs: ., nodes_copied_bytes: $nodes_copied, makespan_s: $makespan,
		   ctld: { prestage_bytes: $prestage_bytes, predictions_hit: $pred_hit,
			   predictions_missed: $pred_missed, predictions_late: $pred_late,
			   prestaged_datasets: $prestaged, prestage_failed: $prestage_failed,
			   saved_seconds: $saved,
			   placements_honoured: $honoured, placements_not_honoured: $not_honoured,
			   held: $held, held_started: $held_started, hold_released: $hold_released } }' \
		"$rows" >"$SCHED_OUT" || fail "cannot write $SCHED_OUT"
	echo "sched-replay[$SCHED_MODE]: $(jq -c '.ctld' "$SCHED_OUT"), nodes copied $copied_nodes bytes"
}
