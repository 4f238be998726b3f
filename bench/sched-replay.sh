#!/usr/bin/env bash
# sched-replay.sh - time to start with and without I/O-aware scheduling
# (issue 13 item 5; `make bench-sched`, as root).
#
# Boots the 3-node test cluster (tests/cluster/cluster.sh) twice in one
# run and replays the same stream of DLIO-shaped jobs on each
# (bench/sched-jobs.sh): repeated training on a few datasets, and one-pass
# inference on datasets read once. Mode "staging": iostage stages in the
# Prolog, but iostagectld neither places (Placement=no) nor pre-stages
# (Prestage=no). Mode "sched": both on (the defaults), and the bounded
# hold PlacementHold=BENCH_SCHED_HOLD (a site's opt-in; 0: the default,
# no hold). Everything else is
# the same: the jobs, their order and pacing, the datasets (generated once,
# the same files for both modes), a fresh cluster with empty caches.
#
# The source is the cluster's plain shared directory, copied through the
# copy engine's rate limit: StageBandwidth= (common/fs/ratelimit.c, leases
# from iostagectld) bounds all staging copies together, as a PFS's
# bandwidth would; without it, copying from this machine's page cache is
# too fast to show a Prolog wait.
#
# The stream is long enough to show a cluster past its cold start: the
# first use of each training dataset and every one-pass inference
# dataset are copied whatever the scheduler does (the table prints how
# much that leaves possible); 120 jobs make them 17 % of what staging
# alone copies, 30 jobs (BENCH_SCHED_JOBS=30 BENCH_SCHED_INTERVAL=2, ~4
# min, the cold start) about 30 %.
#
# Results: a table on stdout and in bench/results/sched-LATEST.txt, the
# figures in bench/results/sched-LATEST.json (every job's row too). A
# missed target is printed as MISSED; it never fails the run.
#
# Knobs (environment):
#   BENCH_SCHED_DIR        where the datasets are made (/var/tmp/iostage-sched-bench)
#   BENCH_SCHED_TRAIN      training datasets (3)
#   BENCH_SCHED_TRAIN_MIB  MiB each (100: a node's 256 MiB ram tier holds two)
#   BENCH_SCHED_INFER_MIB  MiB of each inference dataset (24)
#   BENCH_SCHED_JOBS       jobs in the stream (120; every 5th is inference)
#   BENCH_SCHED_INTERVAL   seconds between submissions (3)
#   BENCH_SCHED_COMPUTE    seconds a training job computes (6; inference: half)
#   BENCH_SCHED_BW         StageBandwidth= of both modes (64M)
#   BENCH_SCHED_TIER       the tier jobs stage to (ram)
#   BENCH_SCHED_CAPACITY   Capacity= of the ram tier on each node (256M)
#   BENCH_SCHED_HOLD       PlacementHold= of mode sched (10s; 0: no hold)
#   BENCH_SCHED_MODES      modes to run ("staging sched")
#   BENCH_SCHED_NAME       results file name: NAME-LATEST.{json,txt} (sched)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

: "${BENCH_SCHED_DIR:=/var/tmp/iostage-sched-bench}"
: "${BENCH_SCHED_TRAIN:=3}"
: "${BENCH_SCHED_TRAIN_MIB:=100}"
: "${BENCH_SCHED_INFER_MIB:=24}"
: "${BENCH_SCHED_JOBS:=120}"
: "${BENCH_SCHED_INTERVAL:=3}"
: "${BENCH_SCHED_COMPUTE:=6}"
: "${BENCH_SCHED_BW:=64M}"
: "${BENCH_SCHED_TIER:=ram}"
: "${BENCH_SCHED_CAPACITY:=256M}"
: "${BENCH_SCHED_MODES:=staging sched}"
: "${BENCH_SCHED_HOLD:=10s}"
: "${BENCH_SCHED_NAME:=sched}"
: "${BENCH_RESULTS:=$BENCH_SRC/results}"

die() { echo "bench-sched: $*" >&2; exit 1; }
say() { echo "bench-sched: $*" >&2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (it boots the test cluster)"
command -v jq >/dev/null || die "jq is missing (scripts/install-deps.sh)"
case "$BENCH_SCHED_DIR" in /*) ;; *) die "BENCH_SCHED_DIR must be absolute" ;; esac
T0=$(bench_now)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# --- the datasets: FILES of 128 KiB each, readable by every user ----------

# make_ds DIR MIB: a dataset of MIB MiB in 128 KiB files (kept across runs)
make_ds() {
	local d=$1 mib=$2
	[ -f "$d/.done-$mib" ] && return 0
	rm -rf "$d"
	mkdir -p "$d/train"
	head -c $((mib * 1048576)) /dev/urandom | (cd "$d/train" && split -b 131072 -a 4 - s) ||
		return 1
	: >"$d/.done-$mib"
}

mkdir -p "$BENCH_SCHED_DIR" || die "cannot create $BENCH_SCHED_DIR"
chmod 0755 "$BENCH_SCHED_DIR"
ninfer=$((BENCH_SCHED_JOBS / 5))
for ((i = 0; i < BENCH_SCHED_TRAIN; i++)); do
	make_ds "$BENCH_SCHED_DIR/train-$i" "$BENCH_SCHED_TRAIN_MIB" || die "cannot make the datasets"
done
for ((i = 0; i < ninfer; i++)); do
	make_ds "$BENCH_SCHED_DIR/infer-$i" "$BENCH_SCHED_INFER_MIB" || die "cannot make the datasets"
done
chmod -R a+rX "$BENCH_SCHED_DIR"

# --- the stream: the same for both modes ------------------------------------

# Training jobs draw their dataset at random (seeded: the same draw every
# run); every 5th job is inference on a dataset nobody reads again.
STREAM="$BENCH_SCHED_DIR/stream"
awk -v n="$BENCH_SCHED_JOBS" -v k="$BENCH_SCHED_TRAIN" -v dir="$BENCH_SCHED_DIR" \
	-v c="$BENCH_SCHED_COMPUTE" 'BEGIN {
	srand(13); inf = 0
	for (i = 1; i <= n; i++) {
		if (i % 5 == 0) printf "infer %s/infer-%d %d\n", dir, inf++, c / 2
		else printf "train %s/train-%d %d\n", dir, int(rand() * k), c
	}
}' >"$STREAM"

# What no placement can take off the start, only pre-staging: the first use
# of each training dataset (on empty caches) and every inference dataset
# (each read by one job).
UNAVOIDABLE_MIB=$(awk -v t="$BENCH_SCHED_TRAIN_MIB" -v i="$BENCH_SCHED_INFER_MIB" '
	$1 == "train" && !seen[$2]++ { m += t } $1 == "infer" { m += i } END { print m + 0 }' "$STREAM")

# --- the runs ------------------------------------------------------------------

WORK=$(mktemp -d /tmp/iostage-sched-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
for mode in $BENCH_SCHED_MODES; do
	case $mode in
	staging) extra=$'Placement=no\nPrestage=no' ;;
	sched) extra="PlacementHold=$BENCH_SCHED_HOLD" ;;
	*) die "unknown mode '$mode' (staging, sched)" ;;
	esac
	say "mode $mode: booting the cluster, replaying $BENCH_SCHED_JOBS jobs (load $(cut -d' ' -f1-3 /proc/loadavg))"
	IOSTAGE_EXTRA_CONF="StageBandwidth=$BENCH_SCHED_BW${extra:+
$extra}" SCHED_MODE=$mode SCHED_STREAM=$STREAM SCHED_INTERVAL=$BENCH_SCHED_INTERVAL \
		SCHED_TIER=$BENCH_SCHED_TIER CLUSTER_RAM_CAPACITY=$BENCH_SCHED_CAPACITY SCHED_OUT="$WORK/$mode.json" \
		IT_TIMEOUT=600 IT_VERBOSE=1 BUILD=$BUILD \
		bash "$BENCH_TOP/tests/cluster/run.sh" "$here/sched-jobs.sh" >"$WORK/$mode.log" 2>&1
	grep -E 'sched-replay|passed|FAIL' "$WORK/$mode.log" >&2
	[ -s "$WORK/$mode.json" ] || { tail -n 30 "$WORK/$mode.log" >&2; die "mode $mode gave no figures"; }
done

# --- the figures -----------------------------------------------------------------

mkdir -p "$BENCH_RESULTS"
OUT="$BENCH_RESULTS/$BENCH_SCHED_NAME-LATEST.json"
jq -s --arg date "$(date -u +%FT%TZ)" --arg cpu "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n1)" \
	--argjson cpus "$(nproc)" --arg git "$(git -C "$BENCH_TOP" rev-parse --short HEAD 2>/dev/null || echo -)" \
	--arg bw "$BENCH_SCHED_BW" --arg hold "$BENCH_SCHED_HOLD" --arg tier "$BENCH_SCHED_TIER" --arg capacity "$BENCH_SCHED_CAPACITY" --arg load "$LOAD0" \
	--argjson secs "$(awk -v a="$(bench_now)" -v b="$T0" 'BEGIN { printf "%.0f", a - b }')" \
	--argjson train "$BENCH_SCHED_TRAIN" --argjson train_mib "$BENCH_SCHED_TRAIN_MIB" \
	--argjson infer_mib "$BENCH_SCHED_INFER_MIB" --argjson interval "$BENCH_SCHED_INTERVAL" \
	--argjson unavoidable_mib "$UNAVOIDABLE_MIB" '
	def pct(p): sort | if length == 0 then null
		else .[([((length * p) | ceil) - 1, 0] | max)] end;
	def median: sort | if length == 0 then null
		elif length % 2 == 1 then .[(length - 1) / 2]
		else (.[length / 2 - 1] + .[length / 2]) / 2 end;
	def r3: if . == null then null else (. * 1000 | round) / 1000 end;
	def summary: . as $m | ($m.jobs | length) as $n | {
		mode: $m.mode, jobs: $n,
		prolog_wait_median_s: ([$m.jobs[].prolog_wait_s] | median | r3),
		prolog_wait_p95_s: ([$m.jobs[].prolog_wait_s] | pct(0.95) | r3),
		stage_in_median_s: ([$m.jobs[].stage_in_s] | median | r3),
		stage_in_p95_s: ([$m.jobs[].stage_in_s] | pct(0.95) | r3),
		queue_wait_median_s: ([$m.jobs[].queue_wait_s] | median | r3),
		queue_wait_p95_s: ([$m.jobs[].queue_wait_s] | pct(0.95) | r3),
		submit_to_task_median_s: ([$m.jobs[].submit_to_task_s | select(. != null)] | median | r3),
		submit_to_task_mean_s: ([$m.jobs[].submit_to_task_s | select(. != null)] | if length > 0 then add / length | r3 else null end),
		submit_to_task_p95_s: ([$m.jobs[].submit_to_task_s | select(. != null)] | pct(0.95) | r3),
		makespan_s: $m.makespan_s,
		after_staging_median_s: ([$m.jobs[].after_staging_s] | median | r3),
		registered_after_task_median_s: ([$m.jobs[].registered_after_task_s | select(. != null)] | median | r3),
		hit_prolog_wait_median_s: ([$m.jobs[] | select(.hits == .datasets) | .prolog_wait_s] | median | r3),
		hit_after_staging_median_s: ([$m.jobs[] | select(.hits == .datasets) | .after_staging_s] | median | r3),
		slurm_start_to_task_median_s: ([$m.jobs[].slurm_start_to_task_s | select(. != null)] | median | r3),
		copied_bytes_per_job_at_start: (([$m.jobs[].copied_bytes] | add) / $n | round),
		copied_bytes_per_job_all: ($m.nodes_copied_bytes / $n | round),
		cache_hit_ratio: ((([$m.jobs[].hits] | add) / ([$m.jobs[].datasets] | add)) | r3),
		node_seconds_idle_in_prologs: ([$m.jobs[].prolog_wait_s] | add | r3),
		train: { prolog_wait_median_s: ([$m.jobs[] | select(.kind == "train") | .prolog_wait_s] | median | r3),
			 hits: ([$m.jobs[] | select(.kind == "train") | .hits] | add) },
		infer: { prolog_wait_median_s: ([$m.jobs[] | select(.kind == "infer") | .prolog_wait_s] | median | r3),
			 hits: ([$m.jobs[] | select(.kind == "infer") | .hits] | add) },
		ctld: $m.ctld };
	(map(select(.mode == "staging"))[0] | if . then summary else null end) as $a
	| (map(select(.mode == "sched"))[0] | if . then summary else null end) as $b
	| {
		date: $date, git: $git, machine: { cpus: $cpus, cpu: $cpu },
		seconds: $secs, load_at_start: $load,
		setup: { nodes: 3, cpus_per_node: 2, job_cpus: 2, tier: $tier,
			 tier_capacity: $capacity, source: ("the cluster'"'"'s shared directory, copies bounded by StageBandwidth=" + $bw + " (common/fs/ratelimit.c)"),
			 training_datasets: $train, training_mib: $train_mib,
			 inference_mib: $infer_mib, submit_interval_s: $interval,
			 placement_hold: $hold, jobs: ($a // $b).jobs,
			 unavoidable_without_prestaging_mib: $unavoidable_mib },
		staging: $a, sched: $b,
		ratios: (if $a and $b then {
			copied_bytes_at_start_fewer_pct: (if $a.copied_bytes_per_job_at_start > 0 then (100 * (1 - $b.copied_bytes_per_job_at_start / $a.copied_bytes_per_job_at_start)) | r3 else null end),
			copied_bytes_all_fewer_pct: (if $a.copied_bytes_per_job_all > 0 then (100 * (1 - $b.copied_bytes_per_job_all / $a.copied_bytes_per_job_all)) | r3 else null end),
			copied_bytes_at_start_fewer_bound_pct: (if $a.copied_bytes_per_job_at_start > 0 then (100 * (1 - $unavoidable_mib * 1048576 / ($a.copied_bytes_per_job_at_start * $a.jobs))) | r3 else null end),
			prolog_wait_median_shorter_x: (if $b.prolog_wait_median_s > 0 then ($a.prolog_wait_median_s / $b.prolog_wait_median_s) | r3 else null end),
			stage_in_median_shorter_x: (if $b.stage_in_median_s > 0 then ($a.stage_in_median_s / $b.stage_in_median_s) | r3 else null end),
			prolog_wait_p95_shorter_x: (if $b.prolog_wait_p95_s > 0 then ($a.prolog_wait_p95_s / $b.prolog_wait_p95_s) | r3 else null end),
			node_seconds_idle_fewer_pct: (if $a.node_seconds_idle_in_prologs > 0 then (100 * (1 - $b.node_seconds_idle_in_prologs / $a.node_seconds_idle_in_prologs)) | r3 else null end)
		} else null end),
		rows: { staging: (map(select(.mode == "staging"))[0].jobs // null),
			sched: (map(select(.mode == "sched"))[0].jobs // null) }
	}' "$WORK"/*.json >"$OUT.tmp" && mv "$OUT.tmp" "$OUT" || die "cannot write $OUT"

# The table.
TXT="$BENCH_RESULTS/$BENCH_SCHED_NAME-LATEST.txt"
jq -r '"bench-sched \(.date) (\(.machine.cpus) CPUs, \(.machine.cpu)), \(.seconds) s; source: \(.setup.source); PlacementHold=\(.setup.placement_hold) in mode sched"' "$OUT" >"$TXT"
jq -r '
	def mib: if . == null then "-" else ((. / 1048576 * 10 | round) / 10 | tostring) + " MiB" end;
	def s: if . == null then "-" else (. | tostring) + " s" end;
	def row(name; f): [name, (.staging | f), (.sched | f)] | @tsv;
	(["", "staging alone", "placement + pre-staging"] | @tsv),
	row("Prolog wait, median"; .prolog_wait_median_s | s),
	row("Prolog wait, p95"; .prolog_wait_p95_s | s),
	row("  of which staging (iostaged), median"; .stage_in_median_s | s),
	row("  of which staging (iostaged), p95"; .stage_in_p95_s | s),
	row("  after staging (Prolog exit, batch launch, step), median"; .after_staging_median_s | s),
	row("Prolog wait of cache hits, median"; .hit_prolog_wait_median_s | s),
	row("  of which after staging, median"; .hit_after_staging_median_s | s),
	row("  task registered with iostaged after its first line, median"; .registered_after_task_median_s | s),

	row("queue wait (submit to start), median / p95 (1 s res.)"; "\(.queue_wait_median_s) / \(.queue_wait_p95_s) s"),
	row("sbatch to the first task, median / mean / p95"; "\(.submit_to_task_median_s) / \(.submit_to_task_mean_s) / \(.submit_to_task_p95_s) s"),
	row("whole stream, first submit to last end"; .makespan_s | s),
	row("bytes copied per job at start"; .copied_bytes_per_job_at_start | mib),
	row("bytes copied per job, pre-staging incl."; .copied_bytes_per_job_all | mib),
	row("cache hit ratio at start"; .cache_hit_ratio | tostring),
	row("node-seconds idle in Prologs"; .node_seconds_idle_in_prologs | s),
	row("pre-staged (iostagectld)"; .ctld.prestage_bytes | mib),
	row("pre-staged datasets (failed)"; "\(.ctld.prestaged_datasets) (\(.ctld.prestage_failed))"),
	row("predictions hit / late / missed"; "\(.ctld.predictions_hit) / \(.ctld.predictions_late) / \(.ctld.predictions_missed)"),
	row("placements honoured / not"; "\(.ctld.placements_honoured) / \(.ctld.placements_not_honoured)"),
	row("holds: held / started held / released"; "\(.ctld.held) / \(.ctld.held_started) / \(.ctld.hold_released)"),
	"",
	(if .ratios then
	  "fewer bytes copied at start: \(.ratios.copied_bytes_at_start_fewer_pct) % (target >= 80 %: \(if .ratios.copied_bytes_at_start_fewer_pct >= 80 then "met" else "MISSED" end)); pre-staging included: \(.ratios.copied_bytes_all_fewer_pct) %",
	  "  at most \(.ratios.copied_bytes_at_start_fewer_bound_pct) % without pre-staging: \(.setup.unavoidable_without_prestaging_mib) MiB are first uses of training data and one-pass inference data",
	  "median Prolog wait \(.ratios.prolog_wait_median_shorter_x)x shorter (target >= 5x: \(if .ratios.prolog_wait_median_shorter_x >= 5 then "met" else "MISSED" end)); p95 \(.ratios.prolog_wait_p95_shorter_x)x; staging alone median \(.ratios.stage_in_median_shorter_x)x; node-seconds idle in Prologs \(.ratios.node_seconds_idle_fewer_pct) % fewer"
	else "(one mode only: no ratios)" end)
' "$OUT" | column -t -s $'\t' >>"$TXT"
cat "$TXT"
say "results in $OUT and $TXT"
