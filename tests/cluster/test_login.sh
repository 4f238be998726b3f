# shellcheck shell=bash
# From a login node (issue 12 item 5): the login node runs no iostaged, yet
# `sbatch --io-profile=auto`, the submit-time hint, `iostage recommend`,
# `iostage export` and `iostage telemetry J` of a finished job work there,
# against iostagectld on the controller (ControllerHost=), in the user's own
# MUNGE credential. Three jobs on three different nodes earn the advice a
# fourth job submitted from login gets; a user sees only their own jobs;
# with iostagectld stopped, sbatch says one notice line and the job runs.

# the_train_jobs NAME DS: three jobs named NAME reading DS, one on each of
# n1, n2, n3 (pinned); their ids in TRAIN_IDS
the_train_jobs() {
	local name=$1 ds=$2 node
	TRAIN_IDS=()
	for node in n1 n2 n3; do
		submit_wait "$TEST_USER" -J "$name" -w "$node" \
			--io-profile="dl-train,data=$ds" -o "train.$node.%j" \
			--wrap 'cat "$IOSTAGE_DATA"/train/a/* >/dev/null && echo "ran on $(hostname)"' \
			>/dev/null || { fail "training job on $node: $SUBMIT_OUT"; return 1; }
		assert_eq "training job on $node completed" COMPLETED "$(job_end_state "$SUBMIT_JOBID")"
		assert_file_contains "training job ran on $node" \
			"$TEST_WORKDIR/train.$node.$SUBMIT_JOBID" "ran on $node"
		TRAIN_IDS+=("$SUBMIT_JOBID")
	done
}

# login_iostage USER ARGS...: the iostage CLI as USER on the login node
login_iostage() {
	local u=$1
	shift
	on_node_as "$u" login iostage -c "$IOSTAGE_CONF" "$@"
}

# wait_service_has JOB... : until the service lists every JOB (their
# records forwarded by the nodes), as root from the login node
wait_service_has() {
	local i j have missing
	for ((i = 0; i < 120; i++)); do
		have=$(on_node login iostage -c "$IOSTAGE_CONF" export --format json 2>/dev/null |
			jq -c '[.[].job]' 2>/dev/null)
		missing=0
		for j in "$@"; do
			grep -qE "(\[|,)$j(,|\])" <<<"$have" || missing=1
		done
		[ "$missing" = 0 ] && return 0
		sleep 0.5
	done
	echo "wait_service_has: the service lacks some of $* (has ${have:-nothing})" >&2
	return 1
}

test_login_node_runs_no_iostaged() {
	assert_eq "no iostaged socket on login" no \
		"$(on_node login sh -c '[ -S /run/iostage/iostaged.sock ] && echo yes || echo no')"
	assert_contains "the conf names the service" "$(cat "$IOSTAGE_CONF")" "ControllerHost="
}

# The loop closed across nodes: three jobs on n1, n2, n3 earn the cache
# advice; a fourth, submitted from login with auto, gets it: its dataset
# staged wherever it runs, the advice citing the three jobs.
test_auto_from_login_gets_the_advice_of_three_nodes() {
	local ds name="login-train-$$" rec j out
	ds=$(pfs_dataset logintrain 4)
	the_train_jobs "$name" "$ds" || return 1
	wait_service_has "${TRAIN_IDS[@]}" || return 1

	rec=$(login_iostage "$TEST_USER" recommend --json --job-name "$name") ||
		fail "recommend from login failed: $rec"
	assert_eq "three runs in the window" 3 "$(jq .runs <<<"$rec")"
	assert_eq "cache advice for the dataset" cache \
		"$(jq -r --arg t "$ds" '[.recommendations[] | select(.target == $t) | .rule] | map(select(. == "cache")) | .[0]' <<<"$rec")"
	for j in "${TRAIN_IDS[@]}"; do
		assert_contains "the evidence cites job $j" \
			"$(jq -c --arg t "$ds" '.recommendations[] | select(.rule == "cache" and .target == $t) | .evidence.jobs' <<<"$rec")" "$j"
	done

	submit_wait "$TEST_USER" -J "$name" --io-profile=auto -o "auto.%j" \
		--wrap 'echo "DATA=$IOSTAGE_DATA on $(hostname)"; diff -r "$IOSTAGE_DATA/" "'"$ds"'/" && echo SAME' \
		>/dev/null || fail "sbatch --io-profile=auto from login failed: $SUBMIT_OUT"
	assert_contains "sbatch output" "$SUBMIT_OUT" \
		"--io-profile=auto: applying the history's advice for job '$name' (3 runs): cache $ds"
	assert_eq "one iostage line" 1 "$(grep -c 'iostage:' <<<"$SUBMIT_OUT")"
	out=$(cat "$TEST_WORKDIR/auto.$SUBMIT_JOBID")
	assert_contains "the auto job's dataset was staged" "$out" \
		"DATA=$CLUSTER_DIR/local/nvme/jobs/$SUBMIT_JOBID/data/logintrain"
	assert_contains "a complete copy" "$out" "SAME"

	# the hint, without --io-profile, from login
	submit_wait "$TEST_USER" -J "$name" -o "hint.%j" --wrap 'echo ran' >/dev/null ||
		fail "sbatch without a profile failed: $SUBMIT_OUT"
	assert_contains "hint from login" "$SUBMIT_OUT" \
		"iostage: hint: the history has advice for job '$name' (cache $ds): add --io-profile=auto"
}

# recommend, export and telemetry of finished jobs from login; a compute
# node that never ran a job shows it too (from the service).
test_cli_from_login() {
	local ds name="login-cli-$$" out j
	ds=$(pfs_dataset logincli 2)
	the_train_jobs "$name" "$ds" || return 1
	wait_service_has "${TRAIN_IDS[@]}" || return 1
	j=${TRAIN_IDS[1]} # ran on n2

	out=$(login_iostage "$TEST_USER" recommend --job-name "$name") ||
		fail "recommend (table) from login: $out"
	assert_contains "recommend table" "$out" "3 runs in the window"
	assert_contains "recommend table: cache" "$out" "cache"

	out=$(login_iostage "$TEST_USER" export --format json) ||
		fail "export from login: $out"
	for j in "${TRAIN_IDS[@]}"; do
		assert_eq "export lists job $j once" 1 "$(jq "[.[] | select(.job == $j)] | length" <<<"$out")"
	done
	assert_eq "export: only the user's own jobs" "[\"$TEST_USER\"]" \
		"$(jq -c '[.[].user] | unique' <<<"$out")"
	out=$(login_iostage "$TEST_USER" export --format csv --job "${TRAIN_IDS[0]}") ||
		fail "export csv from login: $out"
	assert_contains "csv row of the job" "$out" "${TRAIN_IDS[0]}"

	j=${TRAIN_IDS[1]}
	out=$(login_iostage "$TEST_USER" telemetry "$j") || fail "telemetry $j from login: $out"
	assert_contains "telemetry table from login" "$out" "job $j ($name) user $TEST_USER on n2"
	assert_contains "telemetry: the stage_in phase" "$out" "stage_in"
	out=$(login_iostage "$TEST_USER" telemetry "$j" --json) || fail "telemetry --json: $out"
	assert_eq "telemetry --json: the job" "$j" "$(jq .job <<<"$out")"
	assert_eq "telemetry --json: its dataset" "$ds" "$(jq -r '.datasets[0].source' <<<"$out")"
	# n3 never ran job $j: its record comes from the service
	out=$(on_node_as "$TEST_USER" n3 iostage -c "$IOSTAGE_CONF" telemetry "$j" --json) ||
		fail "telemetry $j on n3: $out"
	assert_eq "telemetry on a node that never ran it" "$j" "$(jq .job <<<"$out")"
}

# Another user sees none of it from login: not the records, not the
# advice, not the telemetry.
test_other_user_sees_nothing_from_login() {
	local ds name="login-priv-$$" out rc j
	ds=$(pfs_dataset loginpriv 1)
	the_train_jobs "$name" "$ds" || return 1
	wait_service_has "${TRAIN_IDS[@]}" || return 1
	j=${TRAIN_IDS[0]}

	out=$(login_iostage "$OTHER_USER" export --format json 2>&1)
	assert_eq "other user's export has none of the jobs" 0 \
		"$(jq "[.[]? | select(.user == \"$TEST_USER\")] | length" <<<"$out" 2>/dev/null || echo parse-error)"
	out=$(login_iostage "$OTHER_USER" export --format json --job "$j" 2>&1)
	rc=$?
	assert_eq "export --job of another's job fails" 1 "$rc"
	assert_eq "one line" 1 "$(wc -l <<<"$out")"
	out=$(login_iostage "$OTHER_USER" telemetry "$j" 2>&1)
	rc=$?
	assert_eq "telemetry of another's job fails" 1 "$rc"
	assert_not_contains "no record shown" "$out" "$name"
	out=$(login_iostage "$OTHER_USER" recommend --user "$TEST_USER" --job-name "$name" 2>&1)
	rc=$?
	assert_eq "recommend for another user fails" 1 "$rc"
	out=$(login_iostage "$OTHER_USER" recommend --json --job-name "$name")
	assert_eq "the other user's own advice for that name: none" 0 "$(jq .runs <<<"$out")"
}

# iostagectld stopped: sbatch with auto says one notice line and the job
# runs; the CLI says one clear line naming the service.
test_service_down_one_notice_and_the_job_runs() {
	local out rc
	ctld_stop || { fail "cannot stop iostagectld"; return 1; }
	submit_wait "$TEST_USER" --io-profile=auto -o "down.%j" --wrap 'echo ran' >/dev/null
	rc=$?
	out=$(login_iostage "$TEST_USER" recommend --job-name x 2>&1)
	local rrc=$?
	ctld_start || fail "iostagectld did not restart"
	assert_eq "sbatch exit status" 0 "$rc"
	assert_eq "exactly one notice line" 1 "$(grep -c 'iostage' <<<"$SUBMIT_OUT")"
	assert_contains "the notice" "$SUBMIT_OUT" "--io-profile=auto: no history advice (iostagectld"
	assert_contains "the notice says the job runs" "$SUBMIT_OUT" "the job runs without a profile"
	assert_eq "the job completed" COMPLETED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "the job ran" "$TEST_WORKDIR/down.$SUBMIT_JOBID" ran
	assert_eq "recommend fails" 1 "$rrc"
	assert_eq "recommend: one line" 1 "$(wc -l <<<"$out")"
	assert_contains "recommend names the service" "$out" "iostage: iostagectld ctl:"
}

# On a compute node the live job comes from its iostaged (the service has
# only finished jobs); once finished, from the service, on any node.
test_telemetry_live_from_the_node_finished_from_the_service() {
	local out j i ds
	ds=$(pfs_dataset loginlive 1)
	submit "$TEST_USER" -w n1 -o "live.%j" --io-profile="dl-train,data=$ds" \
		--wrap 'sleep 8; echo done' >/dev/null ||
		{ fail "sbatch: $SUBMIT_OUT"; return 1; }
	j=$SUBMIT_JOBID
	for ((i = 0; i < 100; i++)); do
		[ "$(job_state "$j")" = RUNNING ] && break
		sleep 0.1
	done
	sleep 1 # the batch step started: the run phase is being sampled
	out=$(on_node_as "$TEST_USER" n1 iostage -c "$IOSTAGE_CONF" telemetry "$j" --json) ||
		fail "telemetry of the running job on n1: $out"
	assert_eq "live on n1: the job" "$j" "$(jq .job <<<"$out")"
	assert_eq "live on n1: no end yet" null "$(jq .end <<<"$out")"
	out=$(login_iostage "$TEST_USER" telemetry "$j" 2>&1)
	assert_eq "from login while it runs: one line" 1 "$(wc -l <<<"$out")"
	assert_contains "from login while it runs: the service's answer" "$out" "iostage: "
	for ((i = 0; i < 300; i++)); do
		[ "$(job_state "$j")" = COMPLETED ] && break
		sleep 0.1
	done
	wait_service_has "$j" || return 1
	out=$(login_iostage "$TEST_USER" telemetry "$j" --json) || fail "telemetry after: $out"
	assert_eq "finished, from login: the job" "$j" "$(jq .job <<<"$out")"
	assert_eq "finished, from login: it has an end" number "$(jq -r '.end | type' <<<"$out")"
}
