#!/bin/bash
# Run every libFuzzer target (built by `make fuzz` into $FUZZ_BUILD/fuzz)
# for FUZZ_SECONDS each, from its seed corpus tests/fuzz/corpus/TARGET
# (read only) and a working corpus under $FUZZ_BUILD/corpus/TARGET (kept
# between runs: coverage found once is kept). Prints one line per target
# (executions, corpus size, result) and a total; exits 1 when a target
# crashed, leaked, hung or ran out of memory. The input that did is in
# $FUZZ_BUILD/crashes/TARGET/: fix the bug, then add it to the seed corpus.
# FUZZ_TARGETS="conf manifest" runs only those; FUZZ_JOBS=N runs N at once;
# FUZZ_RUNS=N stops each target after N executions instead (FUZZ_SECONDS
# then bounds it too only if set), for a run to a count.
set -u
cd "$(dirname "$0")/../.." || exit 2
FUZZ_BUILD=${FUZZ_BUILD:-build/fuzz}
FUZZ_RUNS=${FUZZ_RUNS:-}
if [ -n "$FUZZ_RUNS" ]; then
	FUZZ_SECONDS=${FUZZ_SECONDS:-0} # 0: libFuzzer's no time limit
else
	FUZZ_SECONDS=${FUZZ_SECONDS:-60}
fi
FUZZ_JOBS=${FUZZ_JOBS:-1}
targets=${FUZZ_TARGETS:-$(ls tests/fuzz/fuzz_*.c | sed 's|.*/fuzz_||; s|\.c$||')}

run_one() {
	local t=$1 bin=$FUZZ_BUILD/fuzz/fuzz_$1 log=$FUZZ_BUILD/logs/$1.log
	local seeds=tests/fuzz/corpus/$1 work=$FUZZ_BUILD/corpus/$1
	mkdir -p "$work" "$FUZZ_BUILD/crashes/$t" "$FUZZ_BUILD/logs"
	[ -d "$seeds" ] || seeds=
	# -close_fd_mask=2: the targets' own log lines (one per refused
	# input) would drown the output; a sanitizer's report still shows.
	"$bin" -max_total_time="$FUZZ_SECONDS" ${FUZZ_RUNS:+-runs=$FUZZ_RUNS} \
		-timeout=20 -rss_limit_mb=3072 \
		-max_len=65536 -print_final_stats=1 -close_fd_mask=2 \
		-artifact_prefix="$FUZZ_BUILD/crashes/$t/" \
		"$work" $seeds >"$log" 2>&1
	local rc=$? execs corpus
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	corpus=$(ls "$work" | wc -l)
	if [ $rc -eq 0 ]; then
		printf '%-20s %12s execs %6s inputs  ok\n' "$t" "${execs:-?}" "$corpus"
	else
		printf '%-20s %12s execs %6s inputs  FAILED (rc %d): %s\n' "$t" \
			"${execs:-?}" "$corpus" "$rc" \
			"$(grep -m1 -E 'ERROR|SUMMARY|Test unit written|deadly' "$log")"
		printf '    log: %s; input: %s\n' "$log" \
			"$(ls -t "$FUZZ_BUILD/crashes/$t" | head -1)"
	fi
	echo "$t ${execs:-0} $rc" >>"$FUZZ_BUILD/logs/summary"
	return $rc
}

mkdir -p "$FUZZ_BUILD/logs"
: >"$FUZZ_BUILD/logs/summary"
if [ -n "$FUZZ_RUNS" ]; then
	per="$FUZZ_RUNS executions"
else
	per="${FUZZ_SECONDS}s"
fi
echo "fuzz: $per per target ($(echo $targets | wc -w) targets)"
fail=0
running=0
for t in $targets; do
	if [ "$FUZZ_JOBS" -gt 1 ]; then
		run_one "$t" &
		running=$((running + 1))
		if [ $running -ge "$FUZZ_JOBS" ]; then
			wait -n || fail=1
			running=$((running - 1))
		fi
	else
		run_one "$t" || fail=1
	fi
done
while [ $running -gt 0 ]; do
	wait -n || fail=1
	running=$((running - 1))
done
awk '{ n += $2; if ($3 != 0) bad++ } END {
	printf "fuzz: %d executions in all, %d target%s failed\n", n, bad,
	       bad == 1 ? "" : "s" }' "$FUZZ_BUILD/logs/summary"
exit $fail
