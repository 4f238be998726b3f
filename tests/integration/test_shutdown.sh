# shellcheck shell=bash
# Both daemons stop on SIGTERM after real work, cleanly: "stopped" logged
# (main() got to its end) and gone well before the harness would SIGKILL
# them. That is what lets LeakSanitizer run at their exit under
# `make check-sanitize`, where any report fails the run (tests/sanitize.sh,
# docs/RELIABILITY.md).
. "$IT_DIR/datasets.sh"

# stop_and_check NAME PID LOG MARK: SIGTERM, then the exit within 10 s and
# a "stopped" line after MARK (a line count of LOG)
stop_and_check() {
	kill -TERM "$2" || fail "$1 (pid $2) not running"
	for _ in $(seq 1 100); do pid_running "$2" || break; sleep 0.1; done
	! pid_running "$2" || fail "$1 still running 10 s after SIGTERM"
	tail -n +"$(($4 + 1))" "$3" | grep -q "$1: stopped$" ||
		fail "$1 did not log 'stopped'; log: $(tail -n +"$(($4 + 1))" "$3" | tail -5)"
}

test_iostaged_sigterm_after_jobs_exits_cleanly() {
	local ds="$TEST_WORKDIR/pfs/ds" out="$TEST_WORKDIR/pfs/out" pid mark
	make_dataset "$ds"
	mkdir -p "$out" && chown "$TEST_USER:" "$out"
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds,out=$out" \
		-o out.txt --wrap 'test -s "$IOSTAGE_DATA/train/a/x.bin" && echo OK; echo r >"$IOSTAGE_OUTPUT/r"' \
		>/dev/null || fail "job failed: $SUBMIT_OUT"
	assert_file_contains "job output" out.txt OK
	iostage -c "$IOSTAGE_CONF" status >/dev/null || fail "no status"
	pid=$(iostaged_pid)
	mark=$(wc -l <"$IOSTAGED_LOG")
	stop_and_check iostaged "$pid" "$IOSTAGED_LOG" "$mark"
	rm -f "$IOSTAGE_DIR/iostaged.test.pid"
	iostaged_start || fail "iostaged did not start again"
}

test_iostagectld_sigterm_after_filing_exits_cleanly() {
	local pid mark out
	ctld_pid >/dev/null || ctld_start || fail "iostagectld did not start"
	out=$(ctld_request root "$(jq -cn --argjson e "$(date +%s)" \
		'{op:"file",job:9,node:"node1",nodes:["node1"],record:{schema:1,
		  job:9,user:"root",uid:0,job_name:"down",node:"node1",
		  state:"completed",start:($e - 60),end:$e,datasets:[],outputs:[],
		  phases:[{name:"run",seconds:30}]}}')")
	assert_contains "filed" "$out" '"ok":true'
	out=$(ctld_request root '{"op":"history_list"}')
	assert_contains "listed" "$out" '"job":9'
	pid=$(ctld_pid) || fail "no iostagectld"
	mark=$(wc -l <"$CTLD_LOG")
	stop_and_check iostagectld "$pid" "$CTLD_LOG" "$mark"
	rm -f "$CTLD_DIR/iostagectld.test.pid"
}
