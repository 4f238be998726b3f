# shellcheck shell=bash
# The job history and its recommendations through the real iostaged
# (docs/HISTORY.md): the DLIO-shaped replay, restart survival, user
# isolation, a damaged database, --io-profile=auto on sbatch, the notice
# when iostaged is down, and the submit-time hint.
. "$IT_DIR/datasets.sh"

TEST_UID=$(id -u "$TEST_USER")

# --- helpers -------------------------------------------------------------------

# recommend_json USER ARGS...: `iostage recommend --json` as USER.
recommend_json() {
	local u=$1
	shift
	as_user "$u" iostage -c "$IOSTAGE_CONF" recommend --json "$@" ||
		fail "iostage recommend $* as $u failed"
}

# put_line LINE: one history_put request as root; fails the test unless ok.
put_line() {
	local reply
	reply=$(iostaged_request "$1")
	assert_contains "history_put reply" "$reply" '"ok":true'
}

# put_record JOB USER UID NAME SOURCE BYTES [RESULT [END]]: a minimal
# record of a job that staged SOURCE (BYTES) to nvme and ended at END
# (default: an hour ago).
put_record() {
	local end=${8:-$(($(date +%s) - 3600))}
	put_line "$(printf '{"op":"history_put","record":{"schema":1,"job":%s,"user":"%s","uid":%s,"job_name":"%s","node":"%s","state":"completed","start":%s,"end":%s,"datasets":[{"name":"d","source":"%s","tier":"nvme","bytes":%s,"files":6,"result":"%s"}],"outputs":[],"phases":[{"name":"stage_in","seconds":1.5},{"name":"run","seconds":30},{"name":"stage_out","seconds":0}]}}' \
		"$1" "$2" "$3" "$4" "$CLUSTER_NODE" "$((end - 60))" "$end" "$5" "$6" "${7:-hit}")"
}

# rules_for JSON TARGET: the rule names recommended for TARGET, sorted.
rules_for() {
	printf '%s' "$1" | jq -r --arg t "$2" '[.recommendations[] | select(.target == $t) | .rule] | sort | join(",")'
}

# staged_paths JSON: every dataset path any recommendation would stage.
staged_paths() {
	printf '%s' "$1" | jq -r '[.recommendations[] | .profile.datasets[]?.path] | unique | join(",")'
}

# --- tests ---------------------------------------------------------------------

# DLIO-shaped trace (tests/replay/gen-records.sh) through history_put, then
# each application's recommendations: the expected ones, and none harmful.
test_history_replay() {
	local out json user=$TEST_USER
	while IFS= read -r line; do
		put_line "$line"
	done < <("$REPO_ROOT/tests/replay/gen-records.sh" "$user" "$TEST_UID" 700000)

	# repeated training on one dataset: cache it, stage it (random reads)
	json=$(recommend_json "$user" --job-name train-resnet)
	assert_eq "runs of train-resnet" 10 "$(printf '%s' "$json" | jq .runs)"
	assert_eq "rules for /pfs/imagenet" "cache,stage" "$(rules_for "$json" /pfs/imagenet)"
	assert_eq "cache evidence" "10" "$(printf '%s' "$json" | jq '[.recommendations[] | select(.rule == "cache")][0].evidence.jobs | length')"
	assert_eq "cache confidence >= 0.5" true "$(printf '%s' "$json" | jq '[.recommendations[] | select(.rule == "cache")][0].confidence >= 0.5')"
	assert_eq "auto profile" "/pfs/imagenet random nvme" \
		"$(printf '%s' "$json" | jq -r '.profile.datasets[0] | "\(.path) \(.access) \(.tier)"')"

	# checkpoint-heavy: local tier + async drain, NERSC striping for 4 GB
	json=$(recommend_json "$user" --job-name train-bert)
	assert_eq "rules for the checkpoint dir" "checkpoint,striping" \
		"$(rules_for "$json" "/pfs/$user/bert-ckpt")"
	assert_eq "checkpoint output" "async nvme" \
		"$(printf '%s' "$json" | jq -r '.profile.outputs[0] | "\(.drain) \(.tier)"')"
	assert_eq "striping command" "lfs setstripe -c 8 -S 4M /pfs/$user/bert-ckpt" \
		"$(printf '%s' "$json" | jq -r '[.recommendations[] | select(.rule == "striping")][0].commands[0]')"

	# one-pass inference over a dataset larger than its tier: stream it
	json=$(recommend_json "$user" --job-name infer-big)
	assert_eq "rules for /pfs/big-eval" "stream" "$(rules_for "$json" /pfs/big-eval)"
	assert_contains "skipped cache" "$(printf '%s' "$json" | jq -r '.skipped[].reason')" "larger than tier 'ram'"

	# nothing, asked any way, ever stages the too-large dataset
	for q in "--job-name train-resnet" "--job-name train-bert" "--job-name infer-big" "--dataset /pfs/big-eval" ""; do
		# shellcheck disable=SC2086
		json=$(recommend_json "$user" $q)
		assert_not_contains "datasets staged by '$q'" ",$(staged_paths "$json")," ",/pfs/big-eval,"
	done

	# the human table says the same
	out=$(as_user "$user" iostage -c "$IOSTAGE_CONF" recommend --job-name train-bert)
	assert_contains "table" "$out" "lfs setstripe -c 8 -S 4M /pfs/$user/bert-ckpt"
	assert_contains "table" "$out" "5 runs in the window"
}

# The history is the user's own: another user can neither read nor list
# the jobs, nor ask for their advice; only root files records.
test_history_user_isolation() {
	local reply
	put_record 710001 "$TEST_USER" "$TEST_UID" iso-job /pfs/iso 1000

	reply=$(iostaged_request "$TEST_USER" '{"op":"history_get","job":710001}')
	assert_contains "owner's get" "$reply" '"job_name":"iso-job"'
	reply=$(iostaged_request "$OTHER_USER" '{"op":"history_get","job":710001}')
	assert_contains "other's get" "$reply" '"error":"job 710001: not in your history"'

	reply=$(iostaged_request "$TEST_USER" '{"op":"history_list","limit":1000}')
	assert_contains "owner's list" "$reply" '"job":710001'
	reply=$(iostaged_request "$OTHER_USER" '{"op":"history_list","limit":1000}')
	assert_contains "other's list" "$reply" '"ok":true'
	assert_not_contains "other's list" "$reply" '710001'
	reply=$(iostaged_request "$OTHER_USER" "{\"op\":\"history_list\",\"user\":\"$TEST_USER\"}")
	assert_contains "other lists the owner" "$reply" "only root or AdminGroup may read another user's history"
	reply=$(iostaged_request '{"op":"history_list","limit":1000}')
	assert_contains "root's list" "$reply" '"job":710001'

	reply=$(iostaged_request "$OTHER_USER" "{\"op\":\"recommend\",\"user\":\"$TEST_USER\",\"job_name\":\"iso-job\"}")
	assert_contains "other's recommend" "$reply" "only root or AdminGroup may read another user's history"
	reply=$(iostaged_request "$OTHER_USER" '{"op":"recommend","dataset":"/pfs/iso"}')
	assert_contains "other's recommend by dataset" "$reply" '"runs":0'

	reply=$(iostaged_request "$TEST_USER" '{"op":"history_put","record":{"job":710002,"user":"x","uid":0,"end":5}}')
	assert_contains "user's put" "$reply" '"ok":false'
	reply=$(iostaged_request '{"op":"history_put","record":{"job":0,"user":"x","uid":0,"end":5}}')
	assert_contains "bad record" "$reply" "key 'job'"
}

# Records survive a restart; one older than HistoryRetention (90 days in
# the test config's default) is gone after it (retention runs at start).
test_history_survives_restart() {
	local reply old=$(($(date +%s) - 100 * 86400))
	put_record 720001 "$TEST_USER" "$TEST_UID" restart-job /pfs/restart 1234
	put_record 720002 "$TEST_USER" "$TEST_UID" restart-job /pfs/restart 1234 hit "$old"
	reply=$(iostaged_request '{"op":"history_get","job":720002}')
	assert_contains "old record before restart" "$reply" '"job":720002'
	iostaged_restart || fail "iostaged did not restart"
	reply=$(iostaged_request '{"op":"history_get","job":720001}')
	assert_contains "record after restart" "$reply" '"job_name":"restart-job"'
	assert_contains "record after restart" "$reply" '"name":"run"'
	reply=$(iostaged_request '{"op":"history_get","job":720002}')
	assert_contains "expired record" "$reply" "job 720002: not in your history"
	assert_contains "daemon log" "$(cat "$IOSTAGED_LOG")" "older than HistoryRetention removed"
}

# A damaged database: iostaged says so, stages without history, changes
# nothing there; --repair-history brings every recorded job back.
test_history_damaged_db() {
	local reply mark out j
	DS="$TEST_WORKDIR/pfs/damaged"
	make_dataset "$DS"
	for j in 1 2 3 4 5; do
		put_record "73000$j" "$TEST_USER" "$TEST_UID" damaged-job /pfs/damaged 1000
	done
	iostaged_stop
	printf 'garbage\n' >"$IOSTAGE_STATE/history/CURRENT"
	mark=$(wc -l <"$IOSTAGED_LOG")
	iostaged_start || fail "iostaged did not start with a damaged history"
	out=$(tail -n +"$((mark + 1))" "$IOSTAGED_LOG")
	assert_contains "daemon log" "$out" "history disabled: history: cannot open $IOSTAGE_STATE/history"
	assert_contains "daemon log" "$out" "staging goes on"
	reply=$(iostaged_request '{"op":"history_list"}')
	assert_contains "list while disabled" "$reply" '"error":"history disabled: '
	assert_eq "CURRENT untouched" "garbage" "$(cat "$IOSTAGE_STATE/history/CURRENT")"

	# staging still works
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$DS" -o out.txt \
		--wrap 'echo "DATA=$IOSTAGE_DATA"; ls "$IOSTAGE_DATA/train/a"' >/dev/null ||
		fail "staging with a damaged history failed: $SUBMIT_OUT"
	assert_file_contains "job output" out.txt "DATA=$IOSTAGE_TIERS/nvme/jobs/$SUBMIT_JOBID/data/damaged"
	assert_file_contains "job output" out.txt "x.bin"

	iostaged_stop
	out=$("$IOSTAGE_SBINDIR/iostaged" --repair-history -c "$IOSTAGE_CONF" 2>&1) ||
		fail "repair failed: $out"
	assert_contains "repair report" "$out" "repaired"
	assert_contains "repair report" "$out" "damaged files are kept in $IOSTAGE_STATE/history.damaged."
	iostaged_start || fail "iostaged did not start after the repair"
	for j in 1 2 3 4 5; do
		reply=$(iostaged_request "{\"op\":\"history_get\",\"job\":73000$j}")
		assert_contains "job 73000$j after repair" "$reply" '"job_name":"damaged-job"'
	done
}

# --io-profile=auto applies a cached-dataset recommendation: the job gets
# the dataset staged in IOSTAGE_DATA.
test_auto_applies_cached_dataset() {
	local j name="auto-train-$$"
	DS="$TEST_WORKDIR/pfs/autods"
	make_dataset "$DS"
	for j in 1 2 3; do
		put_record "74000$j" "$TEST_USER" "$TEST_UID" "$name" "$DS" 310000
	done
	submit_wait "$TEST_USER" -J "$name" --io-profile=auto -o out.txt \
		--wrap 'echo "DATA=$IOSTAGE_DATA"; cat "$IOSTAGE_DATA/val/labels with space.csv"' >/dev/null ||
		fail "sbatch --io-profile=auto failed: $SUBMIT_OUT"
	assert_contains "sbatch output" "$SUBMIT_OUT" "--io-profile=auto: applying the history's advice for job '$name' (3 runs): cache $DS"
	assert_file_contains "job output" out.txt "DATA=$IOSTAGE_TIERS/nvme/jobs/$SUBMIT_JOBID/data/autods"
	assert_file_contains "job output" out.txt "label,file"

	# the name from the script's #SBATCH line works the same
	cat >job.sh <<JOB
#!/bin/bash
#SBATCH --job-name=$name
#SBATCH -o out2.txt
echo "DATA=\$IOSTAGE_DATA"
JOB
	submit_wait "$TEST_USER" --io-profile=auto job.sh >/dev/null ||
		fail "sbatch --io-profile=auto job.sh failed: $SUBMIT_OUT"
	assert_file_contains "job output" out2.txt "DATA=$IOSTAGE_TIERS/nvme/jobs/$SUBMIT_JOBID/data/autods"
}

# iostaged unreachable at submit: one notice line, the job runs anyway.
test_auto_daemon_down_notice() {
	local rc
	iostaged_stop
	submit_wait "$TEST_USER" --io-profile=auto -o out.txt --wrap 'echo ran' >/dev/null
	rc=$?
	iostaged_start || fail "iostaged did not restart"
	assert_eq "sbatch exit status" 0 "$rc"
	assert_contains "sbatch output" "$SUBMIT_OUT" "--io-profile=auto: no history advice (iostaged not reachable"
	assert_contains "sbatch output" "$SUBMIT_OUT" "the job runs without a profile"
	assert_eq "notice lines" 1 "$(printf '%s\n' "$SUBMIT_OUT" | grep -c 'iostage:')"
	assert_file_contains "job output" out.txt "ran"
}

# A job without --io-profile whose history has advice gets one hint line;
# RecommendHint=no (the site switch) silences it.
test_hint_line() {
	local j name="hint-job-$$"
	for j in 1 2 3; do
		put_record "75000$j" "$TEST_USER" "$TEST_UID" "$name" /pfs/hinted 1000
	done
	submit_wait "$TEST_USER" -J "$name" -o out.txt --wrap 'echo ran' >/dev/null ||
		fail "sbatch failed: $SUBMIT_OUT"
	assert_contains "sbatch output" "$SUBMIT_OUT" "iostage: hint: the history has advice for job '$name' (cache /pfs/hinted): add --io-profile=auto"
	assert_eq "hint lines" 1 "$(printf '%s\n' "$SUBMIT_OUT" | grep -c 'iostage: hint')"

	submit_wait "$TEST_USER" -J "no-history-$$" -o out2.txt --wrap 'echo ran' >/dev/null ||
		fail "sbatch failed: $SUBMIT_OUT"
	assert_not_contains "sbatch output without history" "$SUBMIT_OUT" "iostage: hint"

	cp "$IOSTAGE_CONF" conf.saved
	echo "RecommendHint=no" >>"$IOSTAGE_CONF"
	submit_wait "$TEST_USER" -J "$name" -o out3.txt --wrap 'echo ran' >/dev/null
	cp conf.saved "$IOSTAGE_CONF"
	assert_not_contains "sbatch output with RecommendHint=no" "$SUBMIT_OUT" "iostage: hint"
	assert_file_contains "job output" out3.txt "ran"
}

# The loop closed with real jobs: three jobs staging the same dataset are
# filed by their Epilog (record built by telemetry), the history then
# advises caching it, and a fourth job submitted with --io-profile=auto
# gets it staged.
test_epilog_files_real_jobs_then_auto_applies() {
	local j ids=() rec name="real-train-$$"
	DS="$TEST_WORKDIR/pfs/realds"
	make_dataset "$DS"
	for j in 1 2 3; do
		submit_wait "$TEST_USER" -J "$name" --io-profile="dl-train,data=$DS" -o "out$j.txt" \
			--wrap 'cat "$IOSTAGE_DATA/val/labels with space.csv" >/dev/null && echo ran' >/dev/null ||
			fail "job $j failed: $SUBMIT_OUT"
		ids+=("$SUBMIT_JOBID")
		for _ in $(seq 1 100); do
			grep -q "job $SUBMIT_JOBID: finished" "$IOSTAGED_LOG" && break
			sleep 0.1
		done
	done
	rec=$(printf '{"op":"history_get","job":%s}\n' "${ids[2]}" |
		as_user "$TEST_USER" socat -t 30 - "UNIX-CONNECT:$IOSTAGE_SOCKET")
	assert_contains "history_get as the owner" "$rec" '"ok":true'
	assert_eq "phases filed" "stage_in,run,stage_out" \
		"$(printf '%s' "$rec" | jq -r '[.record.phases[] | select(.parent == null) | .name] | join(",")')"
	assert_eq "dataset filed" "$DS" "$(printf '%s' "$rec" | jq -r '.record.datasets[0].source')"
	assert_eq "job name filed" "$name" "$(printf '%s' "$rec" | jq -r '.record.job_name')"

	rec=$(recommend_json "$TEST_USER" --job-name "$name")
	assert_eq "cache advice from the real jobs" cache "$(rules_for "$rec" "$DS" | tr ',' '\n' | grep -x cache)"
	for j in "${ids[@]}"; do
		assert_contains "evidence names job $j" \
			"$(printf '%s' "$rec" | jq -c --arg t "$DS" '.recommendations[] | select(.rule == "cache" and .target == $t) | .evidence.jobs')" "$j"
	done

	submit_wait "$TEST_USER" -J "$name" --io-profile=auto -o auto.txt \
		--wrap 'echo "DATA=$IOSTAGE_DATA"' >/dev/null ||
		fail "sbatch --io-profile=auto failed: $SUBMIT_OUT"
	assert_file_contains "auto job staged the dataset" auto.txt "DATA=$IOSTAGE_TIERS/nvme/jobs/$SUBMIT_JOBID/data/realds"
}

# Striping advice from what the drain saw (issue 12, item 6): three jobs
# without the shim (checkpoint-heavy: trace=false) each write one 1.6 GB
# file to their output; the drain records its size, and the history then
# advises `lfs setstripe` for the output directory by NERSC's table
# (1-10 GiB: 8 stripes) with the default 1 MiB stripe size, citing the
# three jobs. Disk use stays at one file on the tier plus its PFS copy:
# each copy is removed once its job is filed.
test_striping_from_drained_outputs_without_trace() {
	local j ids=() rec json name="ckpt-big-$$" pfsout="$TEST_WORKDIR/pfs-ckpt"
	install -d -o "$TEST_USER" -g "$(id -gn "$TEST_USER")" -m 0755 "$pfsout"
	# whatever happens, no 1.6 GB file outlives the test
	trap 'rm -rf "$pfsout"; for j in "${ids[@]}"; do rm -rf "$IOSTAGE_TIERS/nvme/jobs/$j"; done' EXIT
	trap 'exit 143' TERM
	for j in 1 2 3; do
		submit_wait "$TEST_USER" -J "$name" --io-profile="checkpoint-heavy,out=$pfsout" -o "out$j.txt" \
			--wrap 'fallocate -l 1600000000 "$IOSTAGE_OUTPUT/model.ckpt" && echo wrote' >/dev/null ||
			fail "job $j failed: $SUBMIT_OUT"
		[ -n "$SUBMIT_JOBID" ] || fail "job $j: no job id in: $SUBMIT_OUT"
		ids+=("$SUBMIT_JOBID")
		for _ in $(seq 1 300); do
			grep -q "job $SUBMIT_JOBID: finished" "$IOSTAGED_LOG" && break
			sleep 0.1
		done
		grep -q "job $SUBMIT_JOBID: finished" "$IOSTAGED_LOG" || fail "job $SUBMIT_JOBID: not finished in 30 s"
		assert_file_contains "job $j output" "out$j.txt" wrote
		assert_eq "job $j: drained copy's size" 1600000000 "$(stat -c %s "$pfsout/model.ckpt")"
		rm -f "$pfsout/model.ckpt"
	done

	rec=$(printf '{"op":"history_get","job":%s}\n' "${ids[2]}" |
		as_user "$TEST_USER" socat -t 30 - "UNIX-CONNECT:$IOSTAGE_SOCKET")
	assert_contains "history_get" "$rec" '"ok":true'
	assert_eq "output filed: files, bytes, largest file" "1 1600000000 1600000000" \
		"$(printf '%s' "$rec" | jq -r '.record.outputs[0] | "\(.files) \(.bytes) \(.max_file_bytes)"')"
	assert_eq "no shim: no shared/fpp counts" "null null" \
		"$(printf '%s' "$rec" | jq -r '.record.outputs[0] | "\(.shared_files) \(.fpp_files)"')"

	json=$(recommend_json "$TEST_USER" --job-name "$name")
	rec=$(printf '%s' "$json" | jq -c --arg t "$pfsout" '[.recommendations[] | select(.rule == "striping" and .target == $t)][0]')
	[ "$rec" != null ] || fail "no striping advice for $pfsout: $json"
	assert_eq "striping command" "lfs setstripe -c 8 -S 1M $pfsout" "$(printf '%s' "$rec" | jq -r '.commands[0]')"
	assert_eq "evidence: the three jobs" "$(printf '%s\n' "${ids[@]}" | sort -n | paste -sd,)" \
		"$(printf '%s' "$rec" | jq -r '.evidence.jobs | sort | join(",")')"
	assert_eq "evidence: from the drain, the largest file" "drain 1600000000 8" \
		"$(printf '%s' "$rec" | jq -r '.evidence.figures | "\(.source) \(.largest_file_bytes) \(.nersc_stripe_count)"')"
	assert_contains "evidence says the stripe size is the default" \
		"$(printf '%s' "$rec" | jq -r '.evidence.figures.notes | join("; ")')" "1 MiB default"
	assert_eq "confident from 3 runs" true "$(printf '%s' "$rec" | jq '.confidence >= 0.5')"
	# the table a user reads
	json=$(as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" recommend --job-name "$name") ||
		fail "iostage recommend failed: $json"
	assert_contains "table: the command" "$json" "\$ lfs setstripe -c 8 -S 1M $pfsout"
	assert_contains "table: the jobs, newest first" "$json" "jobs: ${ids[2]} ${ids[1]} ${ids[0]}"
}
