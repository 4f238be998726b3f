#!/usr/bin/env bash
# shim.sh - what the LD_PRELOAD I/O shim costs an application (docs/SHIM.md).
#
# Two workloads, warm page cache, each run timed inside the program
# (bench/shimbench.c) so process start-up is left out:
#   meta  open/read/close of SHIM_BENCH_FILES small files (30,000 x 4 KiB)
#   bulk  a sequential read of one SHIM_BENCH_BULK_MIB file (1 GiB) in
#         1 MiB requests
#   calls a million 1-byte preads: what one intercepted call costs, in ns
# Runs alternate off/on, SHIM_BENCH_REPEAT times each; the medians and the
# overhead (on - off) / off are printed, for wall and CPU time, against the
# targets (5% and 2%; the verdict uses CPU time, see below).
# With the shim on, the dataset is a dataset class (IOSTAGE_TRACE_CLASSES)
# and summaries go to a file, as in a traced job.
#
# Knobs: SHIM_BENCH_DIR (/var/tmp/iostage-shimbench), SHIM_BENCH_FILES
# (30000), SHIM_BENCH_BULK_MIB (1024), SHIM_BENCH_BULK_PASSES (8), SHIM_BENCH_REPEAT (21), BUILD (build).
# A missed target prints MISSED; only a broken harness exits non-zero.
set -euo pipefail

: "${BUILD:=build}"
: "${SHIM_BENCH_DIR:=/var/tmp/iostage-shimbench}"
: "${SHIM_BENCH_FILES:=30000}"
: "${SHIM_BENCH_BULK_MIB:=1024}"
: "${SHIM_BENCH_BULK_PASSES:=8}" # passes over the cached file per timed run
: "${SHIM_BENCH_REPEAT:=21}"

lib=$(cd "$BUILD/shim" && pwd)/libiostage-preload.so
bin=$BUILD/bench/shimbench
[ -f "$lib" ] && [ -x "$bin" ] || {
	echo "shim.sh: build first (make bench-shim)" >&2
	exit 1
}

small=$SHIM_BENCH_DIR/small
bulk=$SHIM_BENCH_DIR/bulk.bin
mkdir -p "$SHIM_BENCH_DIR"
if [ "$(cat "$small/.count" 2>/dev/null)" != "$SHIM_BENCH_FILES" ]; then
	echo "shim.sh: creating $SHIM_BENCH_FILES files of 4 KiB in $small"
	rm -rf "$small"
	mkdir -p "$small"
	head -c 4096 /dev/urandom >"$SHIM_BENCH_DIR/proto"
	for ((d = 0; d * 1000 < SHIM_BENCH_FILES; d++)); do
		mkdir -p "$small/d$d"
		for ((i = d * 1000; i < (d + 1) * 1000 && i < SHIM_BENCH_FILES; i++)); do
			printf '%s\n' "$small/d$d/f$i"
		done | xargs cp --reflink=never "$SHIM_BENCH_DIR/proto" 2>/dev/null ||
			for ((i = d * 1000; i < (d + 1) * 1000 && i < SHIM_BENCH_FILES; i++)); do
				cp "$SHIM_BENCH_DIR/proto" "$small/d$d/f$i"
			done
	done
	echo "$SHIM_BENCH_FILES" >"$small/.count"
fi
want=$((SHIM_BENCH_BULK_MIB * 1048576))
if [ "$(stat -c %s "$bulk" 2>/dev/null || echo 0)" != "$want" ]; then
	echo "shim.sh: creating a $SHIM_BENCH_BULK_MIB MiB file $bulk"
	head -c "$want" /dev/urandom >"$bulk"
fi

report=$SHIM_BENCH_DIR/report.jsonl
on_env=(env LD_PRELOAD="$lib" IOSTAGE_TRACE_CLASSES="dataset=$SHIM_BENCH_DIR"
	IOSTAGE_SHIM_REPORT="$report")

# median of the numbers on stdin
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# run_pair NAME ARGS...: alternate off/on runs; print NAME and the medians
# of wall off, wall on, cpu off, cpu on
run_pair() {
	local name=$1 off on i
	shift
	"$bin" "$@" >/dev/null # warm the page cache
	"${on_env[@]}" "$bin" "$@" >/dev/null
	off=$(mktemp) on=$(mktemp)
	for ((i = 0; i < SHIM_BENCH_REPEAT; i++)); do
		"$bin" "$@" >>"$off"
		"${on_env[@]}" "$bin" "$@" >>"$on"
	done
	printf '%s %s %s %s %s\n' "$name" \
		"$(cut -d' ' -f1 "$off" | median)" "$(cut -d' ' -f1 "$on" | median)" \
		"$(cut -d' ' -f2 "$off" | median)" "$(cut -d' ' -f2 "$on" | median)"
	rm -f "$off" "$on"
}

rm -f "$report"
meta=$(run_pair meta meta "$small" "$SHIM_BENCH_FILES")
bulkr=$(run_pair bulk bulk "$bulk" "$SHIM_BENCH_BULK_PASSES")
calls=$(run_pair calls calls "$bulk" 1000000)
# The shim really counted: the last "on" run's summary has the bytes.
grep -q '"POSIX_BYTES_READ"' "$report" || {
	echo "shim.sh: the shim wrote no summary to $report" >&2
	exit 1
}

# The verdict is on CPU time (user + system of the timed loop): on a warm
# cache the loop never waits for the disk, and unlike wall time it does not
# grow when other processes share the cores. Wall time is shown beside it.
printf '%-6s %10s %10s %9s %10s %10s %9s %7s  %s\n' workload wall_off wall_on \
	wall_ovh cpu_off cpu_on cpu_ovh target verdict
for line in "$meta 5" "$bulkr 2"; do
	read -r name woff won coff con target <<<"$line"
	awk -v n="$name" -v woff="$woff" -v won="$won" -v coff="$coff" \
		-v con="$con" -v t="$target" 'BEGIN {
		w = (won - woff) / woff * 100
		c = (con - coff) / coff * 100
		printf "%-6s %10.4f %10.4f %8.2f%% %10.4f %10.4f %8.2f%% %6s%%  %s\n",
			n, woff, won, w, coff, con, c, t, (c <= t) ? "met" : "MISSED"
	}'
done
# The cost of one intercepted call, in ns: a million 1-byte preads.
read -r _ _ _ coff con <<<"$calls"
awk -v off="$coff" -v on="$con" 'BEGIN {
	printf "per intercepted call (cpu): %.0f ns off, %.0f ns on: %+.0f ns\n",
		off * 1000, on * 1000, (on - off) * 1000
}'
echo "($SHIM_BENCH_REPEAT runs each, alternating; $SHIM_BENCH_FILES files of 4 KiB; $SHIM_BENCH_BULK_MIB MiB bulk x $SHIM_BENCH_BULK_PASSES passes; warm cache)"
