# shellcheck shell=bash
# The iostage client: stage (warm-up with a progress bar), cache ls/evict,
# status with per-job progress.
. "$IT_DIR/datasets.sh"

cli() { as_user "$1" iostage -c "$IOSTAGE_CONF" "${@:2}"; }

test_stage_then_hit_then_evict() {
	local ds="$TEST_WORKDIR/pfs/warm" out
	make_dataset "$ds"
	out=$(cli "$TEST_USER" stage "$ds" --tier ram 2>&1) || fail "iostage stage: $out"
	assert_contains "first stage" "$out" "staged into tier ram"
	out=$(cli "$TEST_USER" stage "$ds" --tier ram 2>&1) || fail "iostage stage again: $out"
	assert_contains "second stage" "$out" "already cached on tier ram"

	out=$(cli "$TEST_USER" cache ls)
	assert_contains "cache ls by the owner" "$out" "$ds"
	assert_contains "cache ls by the owner" "$out" "$TEST_USER"
	out=$(cli "$OTHER_USER" cache ls)
	assert_not_contains "cache ls by another user" "$out" "$ds"
	out=$(cli "$OTHER_USER" cache evict "$ds" --tier ram 2>&1)
	assert_ne "evict by another user: exit" 0 "$?"

	out=$(cli "$TEST_USER" cache evict "$ds" --tier ram 2>&1) || fail "evict: $out"
	assert_contains "evict" "$out" "evicted"
	out=$(cli "$TEST_USER" cache ls)
	assert_not_contains "cache ls after evict" "$out" "$ds"
}

test_stage_bad_input_one_line() {
	local out rc
	out=$(cli "$TEST_USER" stage relative/path 2>&1)
	rc=$?
	assert_ne "relative path: exit" 0 "$rc"
	assert_eq "relative path: lines" 1 "$(printf '%s\n' "$out" | grep -c .)"
	assert_contains "relative path" "$out" "iostage: "
	out=$(cli "$TEST_USER" stage "$TEST_WORKDIR/missing" 2>&1)
	assert_ne "missing path: exit" 0 "$?"
	assert_contains "missing path" "$out" "No such file or directory"
	out=$(cli "$TEST_USER" stage /etc --user root 2>&1)
	assert_ne "--user by a non-root caller: exit" 0 "$?"
	out=$(cli "$TEST_USER" frobnicate 2>&1)
	assert_eq "unknown command: exit" 2 "$?"
}

test_progress_bar_and_status_while_staging() {
	local ds="$TEST_WORKDIR/pfs/many" pid= st
	mkdir -p "$ds"
	head -c 20000000 /dev/urandom | (cd "$ds" && split -b 1000 -a 5 - f)
	chown -R "$TEST_USER:" "$ds"
	# A terminal for the client, so that it draws its bar.
	runuser -u "$TEST_USER" -- script -qefc "iostage -c $IOSTAGE_CONF stage $ds" bar.log >/dev/null &
	local client=$!
	for _ in $(seq 1 2000); do
		pid=$(pgrep -f -- "--stage-worker.* $ds( |\$)" | head -n1)
		[ -n "$pid" ] && break
		sleep 0.01
	done
	[ -n "$pid" ] || fail "no stage worker for $ds appeared"
	kill -STOP "$pid"
	sleep 2.5
	st=$(iostage -c "$IOSTAGE_CONF" status)
	kill -CONT "$pid"
	wait "$client" || fail "iostage stage failed: $(cat bar.log)"
	assert_contains "status while staging" "$st" "staging"
	assert_contains "status while staging" "$st" "rate"
	assert_contains "status while staging" "$st" "ETA"
	assert_file_contains "progress bar" bar.log "files"
	assert_file_contains "progress bar" bar.log "%"
	assert_file_contains "final line" bar.log "staged into tier nvme"
}

test_known_size_too_big_for_tier_refused_at_submit() {
	local ds="$TEST_WORKDIR/pfs/big" out rc
	mkdir -p "$ds"
	head -c 300000 /dev/urandom >"$ds/blob"
	chown -R "$TEST_USER:" "$ds"
	# Once staged anywhere, its size is known to the node's iostaged.
	cli "$TEST_USER" stage "$ds" >/dev/null 2>&1 || fail "iostage stage $ds failed"
	out=$(cd "$TEST_WORKDIR" && as_user "$TEST_USER" sbatch --io-profile="dl-train,data=$ds:tiny" --wrap true 2>&1)
	rc=$?
	assert_ne "sbatch exit status" 0 "$rc"
	assert_not_contains "sbatch output" "$out" "Submitted batch job"
	assert_contains "sbatch message" "$out" "key 'data': $ds needs 293.0 KiB, more than tier 'tiny' holds (Capacity=64.0 KiB)"
	# The same dataset fits the nvme tier: accepted.
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds" --wrap true >/dev/null ||
		fail "a dataset that fits was refused: $SUBMIT_OUT"
}
