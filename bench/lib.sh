# shellcheck shell=bash
# Helpers shared by the bench scripts (sourced, never run).

BENCH_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_TOP=$(cd "$BENCH_SRC/.." && pwd)
: "${BUILD:=build}"
case "$BUILD" in /*) ;; *) BUILD="$BENCH_TOP/$BUILD" ;; esac

# bench_helper NAME: path of the C helper bench/NAME.c, built into
# $BUILD/bench/ when missing or older than its source.
bench_helper() {
	local src="$BENCH_SRC/$1.c" bin="$BUILD/bench/iostage-$1"
	if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
		mkdir -p "$BUILD/bench"
		${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -pthread -o "$bin" "$src" >&2 || return 1
	fi
	echo "$bin"
}

# bench_scale_int N SCALE MIN: round(N * SCALE), at least MIN.
bench_scale_int() {
	awk -v n="$1" -v s="$2" -v m="$3" 'BEGIN {
		v = int(n * s + 0.5); if (v < m) v = m; printf "%d\n", v }'
}

# bench_mul_int A B: round(A * B).
bench_mul_int() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%d\n", int(a * b + 0.5) }'; }

# bench_median: the median of the numbers on stdin (mean of the middle two
# for an even count); prints nothing for no input.
bench_median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) exit
		if (NR % 2) printf "%.3f\n", v[(NR + 1) / 2]
		else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bench_now: seconds since the epoch, microsecond resolution.
bench_now() { echo "${EPOCHREALTIME/,/.}"; }

# bench_sub A B: A - B with 3 decimals.
bench_sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", a - b }'; }

# bench_rate_bps RATE: a tc rate (1gbit, 500mbit, 100kbit, bytes/s bare)
# in bytes per second.
bench_rate_bps() {
	awk -v r="$1" 'BEGIN {
		n = r + 0; u = tolower(substr(r, length(n) + 1))
		m = (u == "gbit") ? 1e9 : (u == "mbit") ? 1e6 : (u == "kbit") ? 1e3 : 1
		printf "%d", n * m / 8 }'
}

# bench_freed_memory: BENCH_HOLD_FREED_MEMORY=1 keeps the memory this
# VM's kernel frees in the guest until the calling script exits (an EXIT
# trap puts the setting back), instead of reporting it to the host
# (virtio-balloon free page reporting, /sys/module/page_reporting). Why:
# the next touch of a reported page is a fault in the host, and the
# reporting runs on its own clock, so which side of an A/B read gets
# fresh or reported pages depends on what was freed just before. A read
# of 1 GiB from ext4 took 0.73-0.94 s right after a drop_caches and
# 3.4-3.6 s six seconds later, the same file (bench/README.md, "What
# the VM's memory costs the view"). A node with memory of its own pays
# neither. Prints what the run had: "held", "returned" (the VM's
# default), or "own" (no reporting here). Order 11 is above the
# largest block the kernel frees (x86-64: order 10), so none is reported.
bench_freed_memory() {
	local knob=/sys/module/page_reporting/parameters/page_reporting_order orig
	if [ ! -w "$knob" ]; then
		echo own
		return
	fi
	if [ "${BENCH_HOLD_FREED_MEMORY:-0}" != 1 ]; then
		echo returned
		return
	fi
	orig=$(cat "$knob")
	# shellcheck disable=SC2064 # orig is meant to be expanded now
	trap "echo $orig >$knob" EXIT
	echo 11 >"$knob" || { echo returned; return; }
	echo held
}
