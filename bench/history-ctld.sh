#!/usr/bin/env bash
# bench/history-ctld.sh - iostagectld over the network path, MUNGE included
# (bench/ctldload.c plays the node agents and the users), beside the
# node-local history figures of bench/history.c measured in the same run.
#
#   BUILD=build bench/history-ctld.sh        (make bench-history runs it)
#
# Knobs (environment):
#   BENCH_CTLD_JOBS=1000000   jobs in the service's history before the queries
#   BENCH_CTLD_SINGLE=50000   of them filed one record per credential (`file`)
#   BENCH_CTLD_BATCH=64       filings per credential for the rest (`file_batch`)
#   BENCH_CTLD_AGENTS=1000    node agents filing at once
#   BENCH_CTLD_QUERIES=10000  recommend queries while the filing goes on
#   BENCH_CTLD_PACE=2000      filings/s during the first query phase (a
#                             cluster's steady rate: 170 M jobs a day)
#   BENCH_CTLD_PACED_S=30     how long that phase files
#   BENCH_CTLD_DURING=300000  jobs filed flat out during the second one
#   BENCH_CTLD_MULTINODE=1    one job in ten a 3-node job (0: none)
#   BENCH_CTLD_DIR=/var/tmp/iostage-bench-ctld   (removed afterwards)
#   BENCH_HISTORY_ARGS        passed to the node-local bench/history
#   BENCH_AGENTS_JOBS=15000   jobs in the 3 real node agents' outboxes
#                             (bench/agents-cluster.sh, on the test cluster)
#   BENCH_CTLD_ONLY=1         only the service (steps 1-3): no test cluster,
#                             no node-local bench, no results file
# A quick run: BENCH_CTLD_JOBS=100000 BENCH_CTLD_SINGLE=20000
#   BENCH_CTLD_DURING=50000 BENCH_CTLD_QUERIES=2000 BENCH_CTLD_PACED_S=10
#   BENCH_HISTORY_ARGS="-n 100000 -q 2000" make bench-history
# Results: bench/results/history-LATEST.json (one JSON object).
set -euo pipefail

BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
JOBS=${BENCH_CTLD_JOBS:-1000000}
SINGLE=${BENCH_CTLD_SINGLE:-50000}
BATCH=${BENCH_CTLD_BATCH:-64}
AGENTS=${BENCH_CTLD_AGENTS:-1000}
QUERIES=${BENCH_CTLD_QUERIES:-10000}
DURING=${BENCH_CTLD_DURING:-300000}
PACE=${BENCH_CTLD_PACE:-2000}
PACED_S=${BENCH_CTLD_PACED_S:-30}
MULTI=${BENCH_CTLD_MULTINODE:-1}
DIR=${BENCH_CTLD_DIR:-/var/tmp/iostage-bench-ctld}
PORT=${BENCH_CTLD_PORT:-$((20000 + RANDOM % 20000))}
CTLD="$ROOT/$BUILD/ctld/iostagectld"
LOAD="$ROOT/$BUILD/bench/ctldload"
HIST="$ROOT/$BUILD/bench/history"
OUT="$ROOT/bench/results/history-LATEST.json"

[ "$(id -u)" = 0 ] || { echo "history-ctld.sh: run as root (a private munged, the service's files)" >&2; exit 1; }
for b in "$CTLD" "$LOAD" "$HIST"; do
	[ -x "$b" ] || { echo "history-ctld.sh: $b not built (make all bench-history)" >&2; exit 1; }
done
[ "$SINGLE" -le "$JOBS" ] || SINGLE=$JOBS
case $DIR in /*) ;; *) echo "history-ctld.sh: BENCH_CTLD_DIR must be absolute" >&2; exit 1 ;; esac

rm -rf "$DIR"
mkdir -p "$DIR/munge" "$DIR/state" "$DIR/tier"
chmod 0700 "$DIR/munge"
MUNGED_PID= CTLD_PID=
cleanup() {
	[ -n "$CTLD_PID" ] && kill "$CTLD_PID" 2>/dev/null && wait "$CTLD_PID" 2>/dev/null
	[ -n "$MUNGED_PID" ] && kill "$MUNGED_PID" 2>/dev/null
	[ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$DIR"
}
trap cleanup EXIT

# A private munged: its own key and socket, nothing shared with a site's.
dd if=/dev/urandom of="$DIR/munge/key" bs=1024 count=1 status=none
chmod 0600 "$DIR/munge/key"
/usr/sbin/munged --force --socket="$DIR/munge/sock" --key-file="$DIR/munge/key" \
	--pid-file="$DIR/munge/pid" --log-file="$DIR/munge/log" \
	--seed-file="$DIR/munge/seed" --num-threads="${BENCH_MUNGE_THREADS:-4}"
for _ in $(seq 50); do [ -s "$DIR/munge/pid" ] && break; sleep 0.1; done
MUNGED_PID=$(cat "$DIR/munge/pid")

cat >"$DIR/iostage.conf" <<EOF
# written by bench/history-ctld.sh
StateDir=$DIR/state
Tier=nvme Path=$DIR/tier Medium=nvme Capacity=800G
MungeSocket=$DIR/munge/sock
ControllerHost=127.0.0.1
ControllerPort=$PORT
HistoryRetention=0
EOF

"$CTLD" -f -c "$DIR/iostage.conf" >"$DIR/ctld.log" 2>&1 &
CTLD_PID=$!
# Ready when it answers a history query (it listens before the history
# is open: "history disabled: not started" until then).
for _ in $(seq 300); do
	"$ROOT/$BUILD/cli/iostage" -c "$DIR/iostage.conf" export --format json \
		--since 1s >/dev/null 2>&1 && break
	kill -0 "$CTLD_PID" 2>/dev/null || { cat "$DIR/ctld.log" >&2; exit 1; }
	sleep 0.1
done

echo "== bench-history: iostagectld over TCP + MUNGE, $AGENTS node agents (load $(cut -d' ' -f1-3 /proc/loadavg))"
common=(-H 127.0.0.1 -p "$PORT" -S "$DIR/munge/sock" -a "$AGENTS" -P "$CTLD_PID" -M "$MUNGED_PID")
[ "$MULTI" = 1 ] || common+=(-m 0)
run_load() { "$LOAD" "${common[@]}" "$@" | tee -a "$DIR/load.out"; }
: >"$DIR/load.out"
# 1. the contract's framing: one record per credential and connection
run_load -L single -b 1 -n "$SINGLE" -j 0 || true
# 2. the rest up to JOBS, BATCH filings per credential
[ "$JOBS" -gt "$SINGLE" ] &&
	{ run_load -L batch -b "$BATCH" -n $((JOBS - SINGLE)) -j "$SINGLE" || true; }
# 3. recommend at JOBS jobs while filing goes on: at a steady pace, then
#    flat out (the queries wait behind a backlog of filings)
run_load -L query-paced -b "$BATCH" -r "$PACE" -n $((PACE * PACED_S)) -j "$JOBS" \
	-q "$QUERIES" || true
run_load -L query-saturated -b "$BATCH" -n "$DURING" -j $((JOBS + PACE * PACED_S)) \
	-q "$QUERIES" || true
kill "$CTLD_PID"
wait "$CTLD_PID" 2>/dev/null || true
CTLD_PID=
db_bytes=$(du -sb "$DIR/state" | cut -f1)
total=$((JOBS + PACE * PACED_S + DURING))
printf 'bench-history: iostagectld database %.1f MiB after %d jobs (%.0f bytes/job)\n' \
	"$(echo "$db_bytes / 1048576" | bc -l)" "$total" "$(echo "$db_bytes / $total" | bc -l)"

[ "${BENCH_CTLD_ONLY:-0}" = 1 ] && exit 0

# 4. the test cluster's 3 real node agents (their own iostaged) forwarding
#    a backlog from their outboxes to their iostagectld
echo "== bench-history: the test cluster's 3 real node agents (load $(cut -d' ' -f1-3 /proc/loadavg))"
rm -f "$DIR/agents.json"
# (the outboxes are written first, three fsyncs per entry: allow for it)
BENCH_AGENTS_JOBS=${BENCH_AGENTS_JOBS:-15000} BENCH_AGENTS_OUT="$DIR/agents.json" \
	IT_TIMEOUT=${IT_TIMEOUT:-900} IT_VERBOSE=1 bash "$ROOT/tests/cluster/run.sh" "$ROOT/bench/agents-cluster.sh" 2>&1 |
	grep -E 'bench-agents|passed|FAIL|fail' || true

echo "== bench-history: the node-local history (daemon's code, no network), same run (load $(cut -d' ' -f1-3 /proc/loadavg))"
"$HIST" ${BENCH_HISTORY_ARGS:-} | tee "$DIR/local.out"

# One JSON object: both benches' JSON lines and the machine.
{
	echo '{'
	printf '"date":"%s","git":"%s","cpus":%s,' "$(date -u +%FT%TZ)" \
		"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo -)" "$(nproc)"
	printf '"munged":"%s","service":[' "$(/usr/sbin/munged -V 2>&1 | head -n1)"
	sed -n 's/^ctldload: \({.*}\)$/\1/p' "$DIR/load.out" | paste -sd, -
	printf '],"service_db_bytes":%s,"service_db_jobs":%s,"real_agents":%s,"node_local":' \
		"$db_bytes" "$total" "$(cat "$DIR/agents.json" 2>/dev/null || echo null)"
	sed -n 's/^bench-history: \({.*}\)$/\1/p' "$DIR/local.out" | head -n1
	echo '}'
} | jq . >"$OUT.tmp" && mv "$OUT.tmp" "$OUT"
echo "bench-history: results in $OUT"
