#!/usr/bin/env bash
# What a phase marker costs from Python (python/iostage) against the C API
# it wraps (libiostage) and against `iostage phase`, a process per marker:
# all three against one private iostaged (a job of root's staged with no
# dataset, so the markers are recorded), in one run. Issue 27 asks the
# Python layer to be cheap; the ratio python/c says what ctypes adds.
#
#   make bench-python       (as root: iostaged's stage op needs root)
#
# Knobs: BENCH_PHASE_N (begin/end pairs per API run, default 20000),
# BENCH_PHASE_CLI_N (pairs through the command, default 300),
# BENCH_REPEAT (runs of each, median taken, default 3).
# Results: bench/results/phase-LATEST.{json,txt}. Run it on an idle
# machine: a marker is a round trip to iostaged, whose cost moves with
# whatever else the cores are doing.
set -euo pipefail

BENCH_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$BENCH_SRC/.." && pwd -P)
: "${BUILD:=$REPO/build}"
BUILD=$(cd "$BUILD" && pwd -P)
# shellcheck source=lib.sh
. "$BENCH_SRC/lib.sh"
: "${BENCH_PHASE_N:=20000}" "${BENCH_PHASE_CLI_N:=300}" "${BENCH_REPEAT:=3}"
PYTHON=/usr/bin/python3
IOSTAGED=$BUILD/daemon/iostaged
CLI=$BUILD/cli/iostage
LIB=$BUILD/shim/libiostage.so
OUT=$REPO/bench/results

[ "$(id -u)" -eq 0 ] || { echo "bench/phase.sh: run as root (iostaged's stage op)" >&2; exit 1; }
for f in "$IOSTAGED" "$CLI" "$LIB"; do
	[ -x "$f" ] || [ -f "$f" ] || { echo "bench/phase.sh: $f missing: make all first" >&2; exit 1; }
done

D=$(mktemp -d /tmp/iostage-phasebench.XXXXXX)
DAEMON_PID=
cleanup() {
	[ -n "$DAEMON_PID" ] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT

bench=$BUILD/bench/iostage-phasebench
mkdir -p "$BUILD/bench"
${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -I"$REPO" -o "$bench" "$BENCH_SRC/phasebench.c" \
	-L"$BUILD/shim" -l:libiostage.so -Wl,-rpath,"$BUILD/shim"
rpc=$(bench_helper rpc)

mkdir -p "$D/run" "$D/profiles" "$D/tier" && chmod 0755 "$D" "$D/run"
cat >"$D/iostage.conf" <<CONF
SocketPath=$D/run/iostaged.sock
StateDir=$D/state
ProfileDir=$D/profiles
Tier=nvme Path=$D/tier Capacity=1G Medium=nvme
DefaultTier=nvme
CONF
sock=$D/run/iostaged.sock
setsid "$IOSTAGED" -f -c "$D/iostage.conf" >"$D/iostaged.log" 2>&1 </dev/null &
DAEMON_PID=$!
for _ in $(seq 1 100); do
	"$rpc" "$sock" 2 '{"op":"ping"}' >/dev/null 2>&1 && break
	sleep 0.1
done
JOB=990000271
"$rpc" "$sock" 30 \
	"{\"op\":\"stage\",\"job\":$JOB,\"uid\":0,\"gid\":0,\"user\":\"root\",\"profile\":{}}" \
	"{\"op\":\"wait\",\"job\":$JOB,\"timeout\":20}" >"$D/stage.out" 2>&1 ||
	{ echo "bench/phase.sh: staging the bench's job failed: $(tail -1 "$D/stage.out")" >&2; exit 1; }
export SLURM_JOB_ID=$JOB IOSTAGE_SOCKET=$sock IOSTAGE_CONF=$D/iostage.conf
export IOSTAGE_LIBIOSTAGE=$LIB PYTHONPATH=$REPO/python

run_c() { "$bench" "$BENCH_PHASE_N"; }
run_py() {
	"$PYTHON" - "$BENCH_PHASE_N" <<'PY'
import sys, time, warnings
import iostage
warnings.simplefilter("error")  # a marker that fails must not go unseen
n = int(sys.argv[1])
t0 = time.perf_counter()
ok = 0
for _ in range(n):
    with iostage.phase("read"):
        ok += 1
dt = time.perf_counter() - t0
print("python %d %.6f %.2f %d" % (2 * n, dt, dt * 1e6 / (2 * n), n - ok))
PY
}
run_cli() {
	local t0 t1 failed=0
	t0=$(date +%s.%N)
	for _ in $(seq 1 "$BENCH_PHASE_CLI_N"); do
		"$CLI" phase begin read >/dev/null 2>&1 || failed=$((failed + 1))
		"$CLI" phase end read >/dev/null 2>&1 || failed=$((failed + 1))
	done
	t1=$(date +%s.%N)
	awk -v n="$BENCH_PHASE_CLI_N" -v a="$t0" -v b="$t1" -v f="$failed" \
		'BEGIN { printf "cli %d %.6f %.2f %d\n", 2 * n, b - a, (b - a) * 1e6 / (2 * n), f }'
}

: >"$D/runs"
for r in $(seq 1 "$BENCH_REPEAT"); do
	for k in c py cli; do
		"run_$k" >>"$D/runs" || { echo "bench/phase.sh: run $k failed: $(tail -1 "$D/runs")" >&2; exit 1; }
	done
	echo "bench/phase.sh: run $r of $BENCH_REPEAT done" >&2
done

med() { awk -v k="$1" '$1 == k { print $4 }' "$D/runs" | bench_median; }
fails() { awk -v k="$1" '$1 == k { s += $5 } END { print s + 0 }' "$D/runs"; }
C_US=$(med c_api) PY_US=$(med python) CLI_US=$(med cli)
mkdir -p "$OUT"
jq -n --argjson c "$C_US" --argjson py "$PY_US" --argjson cli "$CLI_US" \
	--argjson n "$BENCH_PHASE_N" --argjson ncli "$BENCH_PHASE_CLI_N" \
	--argjson rep "$BENCH_REPEAT" --arg when "$(date -u +%FT%TZ)" \
	--arg python "$("$PYTHON" -c 'import platform; print(platform.python_version())')" \
	--argjson failed "$(( $(fails c_api) + $(fails python) + $(fails cli) ))" \
	--arg cpu "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)" '{
	when: $when, cpu: $cpu, python: $python, repeat: $rep, failed_markers: $failed,
	usec_per_marker: { c_api: $c, python: $py, cli: $cli },
	markers_per_run: { c_api: (2 * $n), python: (2 * $n), cli: (2 * $ncli) },
	ratio: { python_over_c: ($py / $c), cli_over_c: ($cli / $c), cli_over_python: ($cli / $py) } }' \
	>"$OUT/phase-LATEST.json"
jq -r '"phase markers against one iostaged (median of \(.repeat) runs, µs per marker):",
	"  C API (libiostage)       \(.usec_per_marker.c_api)",
	"  Python (iostage.phase)   \(.usec_per_marker.python)   \(.ratio.python_over_c * 100 | round / 100)x the C API",
	"  iostage phase (command)  \(.usec_per_marker.cli)   \(.ratio.cli_over_c * 100 | round / 100)x the C API",
	"failed markers: \(.failed_markers)"' "$OUT/phase-LATEST.json" | tee "$OUT/phase-LATEST.txt"
