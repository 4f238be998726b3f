#!/usr/bin/env bash
# cluster-cache.sh - the cluster's node-local tiers as one cache (issue 29
# items 1 and 2, the measurement; `make bench-cluster-cache`, as root).
#
# On the 3-node test cluster (tests/cluster/run.sh) whose PFS is
# bench/pfs.sh's GlusterFS (1 Gbit cap, +1 ms RTT), each compute node with
# its own GlusterFS client (see "Why a client per node" below), three jobs
# stage the same DLIO/imagenet-shaped dataset (bench/cluster-cache-jobs.sh
# runs them; what each figure is made of is written there):
#   cold    a 1-node job on n1, the dataset cached nowhere: from the PFS
#   peer    then a 1-node job on n2 (cold) over the same dataset, cached on
#           n1: today from the PFS again; with node-to-node fill, from n1
#   fanout-no, fanout-head, fanout
#           a 3-node job over another copy of the dataset each, cached
#           nowhere, with NodeFill=no (every node reads the whole PFS, ~3x:
#           iostage before node-to-node fill), head (the head reads it,
#           the others fill from its copy) and parts (the default: each
#           node reads a third and takes the rest from the others); the
#           table's last lines are fanout and fanout-head over fanout-no,
#           measured in the same run (issue 29 item 1: at most 0.5x)
# Per case: seconds from sbatch until the dataset is staged on every node
# of the job (the job record's latest stage_in end), sbatch to the first
# task, and the bytes read from the PFS, counted on the PFS's link (the
# host end of its veth); the bound: dataset bytes / link rate.
#
# Why a client per node: the cluster's nodes are namespaces of one kernel.
# With the host's one GlusterFS mount bind-mounted into every node (what
# cluster.sh does with CLUSTER_PFS_DIR), the nodes share one page cache for
# the PFS's files, and a second node's read of a file another node read
# is served from memory: measured, 1.0x the dataset over the link for a
# 3-node job instead of 3x (bench/README.md). Real nodes have a page cache
# each; so each node mounts its own client (`pfs.sh client`, in the node's
# mount namespace, the host's network), made fresh before every case, with
# the page cache dropped. BENCH_CC_CLIENTS=shared runs the shared mount.
#
# Results: bench/results/NAME-LATEST.json (every case, the setup, machine
# and load), NAME-CASE-LATEST.json (one per case), NAME-LATEST.txt (the
# table). BENCH_CC_BASELINE=FILE (an earlier NAME-LATEST.json, or one
# case's file) adds the earlier figures and after/before ratios per case:
# run it once before a change, keep the file, run it again after.
#
# Knobs (environment):
#   BENCH_CC_FILES     files in the dataset (3000: ~338 MB of ~110 KiB files)
#   BENCH_CC_CASES     which cases, in order ("cold peer fanout-no fanout-head fanout")
#   BENCH_CC_CLIENTS   node (a PFS client per node) or shared (the host's)
#   BENCH_CC_TIER      the node-local tier jobs stage to (nvme)
#   BENCH_CC_RTT_MS    the PFS's added round trip (1)
#   BENCH_CC_BASELINE  an earlier result file: after/before ratios
#   BENCH_CC_NAME      results file name (cluster-cache)
#   BENCH_CC_EXTRA_CONF  lines added to the cluster's iostage.conf
#   BENCH_CC_DIR       work directory (/var/tmp/iostage-ccbench)
#   PFS_RATE (1gbit), PFS_NAME (iostage-pfs29), PFS_NET (10.214.29),
#   PFS_QUEUE (1429): bench/pfs.sh's; distinct from bench-pfs's defaults
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

: "${BENCH_CC_FILES:=3000}"
: "${BENCH_CC_CASES:=cold peer fanout-no fanout-head fanout}"
: "${BENCH_CC_CLIENTS:=node}"
: "${BENCH_CC_TIER:=nvme}"
: "${BENCH_CC_RTT_MS:=1}"
: "${BENCH_CC_BASELINE:=}"
: "${BENCH_CC_NAME:=cluster-cache}"
: "${BENCH_CC_EXTRA_CONF:=}"
: "${BENCH_CC_DIR:=/var/tmp/iostage-ccbench}"
: "${BENCH_RESULTS:=$BENCH_SRC/results}"
BCL_NAME=bench-cluster-cache BCL_LINES='cluster-cache [a-z-]+:' BCL_DIR=$BENCH_CC_DIR
# shellcheck source=bench/cluster-lib.sh
. "$here/cluster-lib.sh"

bcl_check
case "$BENCH_CC_CLIENTS" in node | shared) ;; *) die "BENCH_CC_CLIENTS must be node or shared, got '$BENCH_CC_CLIENTS'" ;; esac
[[ "$BENCH_CC_FILES" =~ ^[0-9]+$ ]] && [ "$BENCH_CC_FILES" -ge 2 ] && [ "$BENCH_CC_FILES" -le 100000 ] ||
	die "BENCH_CC_FILES must be 2..100000, got '$BENCH_CC_FILES'"
for c in $BENCH_CC_CASES; do
	case $c in cold | peer | fanout | fanout-no | fanout-head) ;; *) die "unknown case '$c' in BENCH_CC_CASES (cold, peer, fanout, fanout-no, fanout-head)" ;; esac
done
# peer measures a second node's fill from the node cold cached: alone it
# is just another cold job
case " $BENCH_CC_CASES " in
*" cold "*"peer "*) ;; # the space between two cases is one
*" peer "*) echo "bench-cluster-cache: note: 'peer' without 'cold' before it: no node holds the dataset, the case is a second cold one" >&2 ;;
esac
if [ -n "$BENCH_CC_BASELINE" ]; then
	jq -e '.cases // .case' "$BENCH_CC_BASELINE" >/dev/null 2>&1 ||
		die "BENCH_CC_BASELINE=$BENCH_CC_BASELINE: not a result file of this bench"
fi

W=$BENCH_CC_DIR
bcl_start
bcl_pfs_up

# --- the dataset, twice on the PFS (one copy for cold + peer, one for fanout)
read -r FILES BYTES < <(BENCH_IMAGENET_FILES=$BENCH_CC_FILES "$here/gen-dataset.sh" imagenet "$W/gen/imagenet" 1) ||
	die "gen-dataset failed"
say "putting 4 copies of the dataset ($FILES files, $BYTES B) on the PFS"
for c in cc-peer cc-fan cc-fan-no cc-fan-head; do
	bcl_put "$W/gen/imagenet" "$c" "$FILES" "$BYTES"
done
bcl_pfs_ready "$BENCH_CC_RTT_MS"

# --- the jobs on the cluster -------------------------------------------------
say "cases '$BENCH_CC_CASES' on the 3-node cluster, PFS clients: $BENCH_CC_CLIENTS (load $(cut -d' ' -f1-3 /proc/loadavg))"
CC_OUT=$STATE/cases.jsonl
jobs_ok=true
bcl_run_jobs "$STATE/cluster.log" "$here/cluster-cache-jobs.sh" BCJ_CLIENTS="$BENCH_CC_CLIENTS" \
	CC_DS_PEER=cc-peer CC_DS_FAN=cc-fan CC_FILES="$FILES" CC_BYTES="$BYTES" CC_TIER="$BENCH_CC_TIER" \
	CC_CASES="$BENCH_CC_CASES" CC_RATE_BPS="$RATE_BPS" CC_OUT="$CC_OUT" \
	IOSTAGE_EXTRA_CONF="$BENCH_CC_EXTRA_CONF" IT_TIMEOUT=480 || jobs_ok=false
[ -s "$CC_OUT" ] || { tail -n 40 "$STATE/cluster.log" >&2; die "no case gave figures"; }

# --- results -------------------------------------------------------------------
mkdir -p "$BENCH_RESULTS"
OUT=$BENCH_RESULTS/$BENCH_CC_NAME-LATEST.json
jq -s --argjson run "$(bcl_machine_json)" \
	--arg rate "$PFS_RATE" --argjson rate_bps "$RATE_BPS" --argjson rtt "$BENCH_CC_RTT_MS" \
	--arg clients "$BENCH_CC_CLIENTS" --arg tier "$BENCH_CC_TIER" --arg extra "$BENCH_CC_EXTRA_CONF" \
	--argjson files "$FILES" --argjson bytes "$BYTES" \
	--arg basefile "$BENCH_CC_BASELINE" --slurpfile base <([ -n "$BENCH_CC_BASELINE" ] && cat "$BENCH_CC_BASELINE" || echo null) '
	def r3: if . == null then null else (. * 1000 | round) / 1000 end;
	def ratio(a; b): if a == null or b == null or b == 0 then null else (a / b) | r3 end;
	($base[0] | if . == null then null elif .cases then .cases else {(.case): .} end) as $bc
	| (map({(.case): .}) | add) as $cases
	| $run + {
		setup: {nodes: 3, tier: $tier, pfs: "GlusterFS FUSE (bench/pfs.sh), brick on tmpfs, network namespace",
			pfs_rate: $rate, link_rate_bytes_per_s: $rate_bps, rtt_ms: $rtt,
			pfs_clients: (if $clients == "node" then "one GlusterFS client per node (own page cache)" else "the host'"'"'s one client, shared by every node (one page cache)" end),
			dataset: {kind: "imagenet (bench/gen-dataset.sh)", files: $files, bytes: $bytes},
			bound_once_s: (($bytes / $rate_bps) | r3), iostage_extra_conf: $extra},
		cases: $cases,
		baseline: (if $bc == null then null else {file: $basefile, date: ($base[0].date // null), git: ($base[0].git // null),
			# ratios of runs over different datasets or links mean nothing
			same_setup: ([$bc[] | .dataset.bytes == $bytes and .dataset.files == $files
				and .link_rate_bytes_per_s == $rate_bps and .clients == $clients] | all),
			ratios: ($cases | with_entries(.key as $k | .value |= (
				($bc[$k] // null) as $b | if $b == null then null else {
				staged_all_after_over_before: ratio(.submit_to_staged_all_s; $b.submit_to_staged_all_s),
				first_task_after_over_before: ratio(.submit_to_first_task_s; $b.submit_to_first_task_s),
				pfs_bytes_after_over_before: ratio(.pfs_rx_bytes; $b.pfs_rx_bytes),
				before: {submit_to_staged_all_s: $b.submit_to_staged_all_s, submit_to_first_task_s: $b.submit_to_first_task_s,
					 pfs_rx_bytes: $b.pfs_rx_bytes}} end)))} end)
	}' "$CC_OUT" >"$OUT.tmp" && mv "$OUT.tmp" "$OUT" || die "cannot write $OUT"
for c in $(jq -r '.cases | keys[]' "$OUT"); do
	jq --arg c "$c" '{date, git, machine, setup, case: $c} + .cases[$c]
		+ {baseline: (if .baseline then .baseline + {ratios: .baseline.ratios[$c]} else null end)}' \
		"$OUT" >"$BENCH_RESULTS/$BENCH_CC_NAME-$c-LATEST.json"
done

TXT=$BENCH_RESULTS/$BENCH_CC_NAME-LATEST.txt
{
	jq -r '"bench-cluster-cache \(.date) git \(.git), \(.seconds) s, load \(.machine.loadavg_start) -> \(.machine.loadavg_end); \(.setup.dataset.files) files, \(.setup.dataset.bytes) B; PFS \(.setup.pfs_rate) +\(.setup.rtt_ms) ms, \(.setup.pfs_clients); tier \(.setup.tier)",
		"bound: dataset bytes / link rate = \(.setup.bound_once_s) s (read once); x3 = \((.setup.bound_once_s * 3 * 1000 | round) / 1000) s (every node of a 3-node job reads it)"' "$OUT"
	jq -r '
		def mb: if . == null then "-" else ((. / 1e6 * 10 | round) / 10 | tostring) + " MB" end;
		def s: if . == null then "-" else (. | tostring) + " s" end;
		def x: if . == null then "-" else (. | tostring) + "x" end;
		(["case", "nodes", "sbatch to staged on all", "sbatch to first task", "PFS bytes read", "x dataset", "bound (once / every node)", "verified"] +
			(if .baseline then ["before: staged / PFS bytes", "after/before: staged", "after/before: PFS bytes"] else [] end) | @tsv),
		(.baseline as $bl | .cases | to_entries[] | .key as $k | .value |
			[$k, (.nodes | join(",")), (.submit_to_staged_all_s | s), (.submit_to_first_task_s | s),
			 (.pfs_rx_bytes | mb), (.pfs_rx_per_dataset | x), "\(.bound_once_s) / \(.bound_every_node_s) s",
			 (.verified | tostring)] +
			(if $bl then ($bl.ratios[$k] // null) as $r |
				if $r == null then ["-", "-", "-"] else
				["\($r.before.submit_to_staged_all_s) s / \($r.before.pfs_rx_bytes | mb)",
				 ($r.staged_all_after_over_before | x), ($r.pfs_bytes_after_over_before | x)] end
			 else [] end) | @tsv)' "$OUT" | column -t -s $'\t'
	jq -r '.cases | to_entries[] | .value | "  \(.case) per node: " + ([.parts[] | "\(.node) stage_in \(.stage_in_s) s (ends \(.staged_s) s after sbatch), copied \(.datasets[0].copied_bytes // "-") B"] | join("; "))' "$OUT"
	# issue 29 item 1: the fan-outs against NodeFill=no, in this run
	jq -r '.cases as $c | ["fanout", "fanout-head"][] as $k
		| select($c[$k] and $c["fanout-no"])
		| "\($k) / fanout-no (same run): staged on all \((($c[$k].submit_to_staged_all_s / $c["fanout-no"].submit_to_staged_all_s) * 1000 | round) / 1000)x, PFS bytes \((($c[$k].pfs_rx_bytes / $c["fanout-no"].pfs_rx_bytes) * 1000 | round) / 1000)x"' "$OUT"
	jq -r 'if .baseline then "baseline: \(.baseline.file) (\(.baseline.date), git \(.baseline.git)); ratios < 1: faster / fewer bytes after"
		+ (if .baseline.same_setup then "" else "\nWARNING: the baseline ran another dataset, link rate or PFS client setup: its ratios are not comparable" end) else empty end' "$OUT"
} >"$TXT"
cat "$TXT"
say "results in $OUT, $TXT and $BENCH_CC_NAME-CASE-LATEST.json"
$jobs_ok || die "the jobs failed (log: $STATE/cluster.log)"
