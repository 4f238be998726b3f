#!/usr/bin/env bash
# sampler.sh - what iostaged's /proc sampling costs: CPU time of a private
# iostaged over BENCH_TEL_SECONDS with BENCH_TEL_TASKS registered tasks
# (bench/telload.c: each reads 64 KiB every 10 ms), against the same
# daemon idle for as long. Reported as % of one core per 100 tasks; the
# target (issue #4) is at most 1%.
#
#   make bench-telemetry          (as root: iostaged needs root)
#   BENCH_TEL_TASKS=400 BENCH_TEL_INTERVAL=0.5 BUILD=build bench/sampler.sh
#
# Result: one line on stdout and $BENCH_RESULTS/sampler-LATEST.json.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

: "${BENCH_TEL_TASKS:=100}"
: "${BENCH_TEL_SECONDS:=30}"
: "${BENCH_TEL_INTERVAL:=1}"
: "${BENCH_DIR:=/var/tmp/iostage-bench}"
: "${BENCH_RESULTS:=$BENCH_SRC/results}"
: "${IOSTAGED:=$BUILD/daemon/iostaged}"

die() { echo "bench-telemetry: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (iostaged needs root)"
[ -x "$IOSTAGED" ] || die "$IOSTAGED is not built (make all)"
case "$BENCH_TEL_TASKS" in '' | *[!0-9]* | 0) die "BENCH_TEL_TASKS must be a positive integer" ;; esac
case "$BENCH_TEL_SECONDS" in '' | *[!0-9]* | 0) die "BENCH_TEL_SECONDS must be a positive integer" ;; esac

D="$BENCH_DIR/sampler"
rm -rf "$D" && mkdir -p "$D/run" "$D/profiles" "$D/src" && chmod 0755 "$D" "$D/run"
echo x >"$D/src/f"
cat >"$D/iostage.conf" <<CONF
SocketPath=$D/run/iostaged.sock
StateDir=$D/state
ProfileDir=$D/profiles
Tier=nvme Path=$D/tier Capacity=64M Medium=nvme
TelemetryInterval=$BENCH_TEL_INTERVAL
CONF
sock="$D/run/iostaged.sock"
rpc=$(bench_helper rpc) || die "cannot build bench/rpc.c"
load=$(bench_helper telload) || die "cannot build bench/telload.c"

setsid "$IOSTAGED" -f -c "$D/iostage.conf" >"$D/iostaged.log" 2>&1 </dev/null &
daemon=$!
load_pid=
cleanup() {
	[ -n "$load_pid" ] && kill "$load_pid" 2>/dev/null && wait "$load_pid" 2>/dev/null
	kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
}
trap cleanup EXIT
for _ in $(seq 1 100); do
	"$rpc" "$sock" 2 '{"op":"ping"}' >/dev/null 2>&1 && break
	sleep 0.1
done

# utime + stime of PID in clock ticks
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
tck=$(getconf CLK_TCK)

job=990000101
"$rpc" "$sock" 30 "{\"op\":\"stage\",\"job\":$job,\"uid\":0,\"gid\":0,\"user\":\"root\",\"profile\":{\"datasets\":[{\"name\":\"d\",\"path\":\"$D/src\",\"tier\":\"nvme\"}]}}" \
	"{\"op\":\"wait\",\"job\":$job,\"timeout\":30}" >"$D/stage.out" 2>&1 ||
	die "staging the bench job failed: $(tail -2 "$D/stage.out")"

# Idle: the daemon with one job and no tasks.
c0=$(cpu_ticks "$daemon")
sleep "$BENCH_TEL_SECONDS"
c1=$(cpu_ticks "$daemon")

"$load" "$BENCH_TEL_TASKS" >"$D/pids" &
load_pid=$!
for _ in $(seq 1 100); do
	[ "$(wc -l <"$D/pids")" -ge "$BENCH_TEL_TASKS" ] && break
	sleep 0.1
done
reqs=()
while read -r pid; do
	reqs+=("{\"op\":\"task_register\",\"job\":$job,\"pid\":$pid,\"parent\":$load_pid,\"rank\":${#reqs[@]}}")
done <"$D/pids"
"$rpc" "$sock" 30 "${reqs[@]}" >"$D/register.out" 2>&1 || die "task_register failed: $(tail -2 "$D/register.out")"
registered=$(grep -c '"ok":true' "$D/register.out")

c2=$(cpu_ticks "$daemon")
sleep "$BENCH_TEL_SECONDS"
c3=$(cpu_ticks "$daemon")

"$rpc" "$sock" 10 "{\"op\":\"telemetry\",\"job\":$job}" >"$D/record.out" 2>&1
samples=$(grep -o '"timeline":\[.*' "$D/record.out" | grep -o '\],\[' | wc -l)
read_bytes=$(grep -o '"name":"run"[^}]*"read_bytes":[0-9]*' "$D/record.out" | grep -o '[0-9]*$')

result=$(awk -v i0="$c0" -v i1="$c1" -v l0="$c2" -v l1="$c3" -v s="$BENCH_TEL_SECONDS" \
	-v t="$tck" -v n="$registered" 'BEGIN {
	idle = (i1 - i0) / t / s * 100; busy = (l1 - l0) / t / s * 100
	per100 = (busy - idle) * 100 / n; if (per100 < 0) per100 = 0
	printf "%.3f %.3f %.3f\n", idle, busy, per100 }')
read -r idle busy per100 <<<"$result"
verdict=$(awk -v p="$per100" 'BEGIN { print (p <= 1.0) ? "ok" : "MISSED" }')
echo "sampler: $registered tasks, interval ${BENCH_TEL_INTERVAL} s, ${BENCH_TEL_SECONDS} s: iostaged ${busy}% of one core (idle ${idle}%) => ${per100}% per 100 tasks (target <= 1%: $verdict); $((samples + 1)) samples, $read_bytes bytes read recorded"
mkdir -p "$BENCH_RESULTS"
cat >"$BENCH_RESULTS/sampler-LATEST.json" <<JSON
{"date":"$(date -u +%FT%TZ)","git":"$(git -C "$BENCH_TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)",
 "tasks":$registered,"interval_s":$BENCH_TEL_INTERVAL,"seconds":$BENCH_TEL_SECONDS,"clk_tck":$tck,
 "cpu_pct_idle":$idle,"cpu_pct_loaded":$busy,"cpu_pct_per_100_tasks":$per100,"target_pct":1.0,
 "verdict":"$verdict","samples":$((samples + 1)),"read_bytes":${read_bytes:-null}}
JSON
