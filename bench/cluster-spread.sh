#!/usr/bin/env bash
# cluster-spread.sh - what a user gains when a dataset larger than one
# node's tier is spread over the job's nodes (issue 29 item 7; `make
# bench-cluster-spread`, as root).
#
# On the 3-node test cluster over bench/pfs.sh's GlusterFS (1 Gbit cap,
# +1 ms RTT, a client per node: bench/cluster-cache.sh says why), a dataset
# of BENCH_CS_FILES imagenet-shaped files (~110 KiB, bench/gen-dataset.sh)
# is trained CS_EPOCHS epochs by 3-node jobs, one reader task per node,
# every node a disjoint third of the samples per epoch, reshuffled every
# epoch (DistributedSampler's split), by two readers: the DLIO-shaped
# bench/dlio_reader.c (reader threads, prefetch, a modelled accelerator)
# and a PyTorch DataLoader (bench/torch_reader.py, 2 workers). Three cases
# (bench/cluster-spread-jobs.sh has the profiles and where every figure
# comes from):
#   pfs     stream=PATH: the job reads the PFS in place
#   local   data=PATH on a tier big enough: a full copy on every node (the
#           reference)
#   spread  data=PATH,spread=yes on a tier whose Capacity is dataset/2.5:
#           the dataset fits no one node but the 3 together; the job sees
#           it whole at $IOSTAGE_DATA (the feature is being built; today's
#           profile parser refuses the key, and the case says so)
# Per case and reader: epoch 1/2/3 seconds (the slowest node's), sbatch to
# first task and the record's stage_in, bytes read over the PFS's link
# (before the first task, during the readers, in all), and, for spread,
# each node's view counters (local, peer, PFS bytes) once the feature
# writes them (BENCH_CS_STATS; not yet wired). Ratios and the targets:
# spread epoch <= 1.25x local, pfs epoch >= 2x spread, PFS bytes 1.0x the
# dataset.
#
# Before every job the page cache is dropped and the PFS clients are new.
# Within a job it is not: the local case's copy, written by staging, is
# in the page cache when the readers start, and what a node read in one
# epoch stays cached for the next, in every case, as on a real node whose
# memory holds the data (this machine has 24 GiB, the dataset ~600 MB).
#
# Results: bench/results/NAME-LATEST.json (the setup, machine, load, every
# job, the ratios and targets) and NAME-LATEST.txt (the table).
#
# Knobs (environment):
#   BENCH_CS_FILES      files in the dataset (5500: ~620 MB)
#   BENCH_CS_CASES      which cases, in order ("pfs local spread")
#   BENCH_CS_READERS    which readers ("dlio torch")
#   BENCH_CS_EPOCHS     epochs per job (3)
#   BENCH_CS_COMPUTE_MS modelled compute per batch of BENCH_CS_BATCH (50, 32)
#   BENCH_CS_THREADS    dlio_reader's reader threads (8)
#   BENCH_CS_WORKERS    the DataLoader's workers (2)
#   BENCH_CS_PROFILE    the base profile of every case (dl-train)
#   BENCH_CS_LOCAL_TIER the local case's tier (ram: in the test cluster a
#                       directory on the disk like nvme, Capacity
#                       BENCH_CS_LOCAL_CAPACITY, 4G)
#   BENCH_CS_SPREAD_TIER the spread case's tier (nvme, the default tier:
#                       the profile is then data=PATH,spread=yes), its
#                       Capacity dataset / BENCH_CS_SPREAD_FACTOR (2.5)
#   BENCH_CS_STATS      where the spread view's counters are, a path
#                       template ({node} {job} {dataset} {data} {cluster}),
#                       read by each task at its end and by root on each
#                       node after the job (JSON: local_bytes, peer_bytes,
#                       pfs_bytes); empty: not yet wired
#   BENCH_CS_EXTRA_CONF lines added to the cluster's iostage.conf
#   BENCH_CS_RTT_MS     the PFS's added round trip (1)
#   BENCH_CS_TIMEOUT    seconds for all the jobs (900)
#   BENCH_CS_NAME       results file name (cluster-spread)
#   BENCH_CS_DIR        work directory (/var/tmp/iostage-csbench)
#   PFS_RATE (1gbit), PFS_NAME, PFS_NET, PFS_QUEUE: bench/cluster-lib.sh's
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

: "${BENCH_CS_FILES:=5500}"
: "${BENCH_CS_CASES:=pfs local spread}"
: "${BENCH_CS_READERS:=dlio torch}"
: "${BENCH_CS_EPOCHS:=3}"
: "${BENCH_CS_COMPUTE_MS:=50}"
: "${BENCH_CS_BATCH:=32}"
: "${BENCH_CS_THREADS:=8}"
: "${BENCH_CS_WORKERS:=2}"
: "${BENCH_CS_PROFILE:=dl-train}"
: "${BENCH_CS_LOCAL_TIER:=ram}"
: "${BENCH_CS_LOCAL_CAPACITY:=4G}"
: "${BENCH_CS_SPREAD_TIER:=nvme}"
: "${BENCH_CS_SPREAD_FACTOR:=2.5}"
# (not ${..:=..}: the template's braces would end the expansion)
[ -n "${BENCH_CS_STATS+set}" ] ||
	BENCH_CS_STATS='{data}/../../.iostage-view-{dataset}.json'
: "${BENCH_CS_EXTRA_CONF:=}"
: "${BENCH_CS_RTT_MS:=1}"
: "${BENCH_CS_TIMEOUT:=900}"
: "${BENCH_CS_NAME:=cluster-spread}"
: "${BENCH_CS_DIR:=/var/tmp/iostage-csbench}"
: "${BENCH_RESULTS:=$BENCH_SRC/results}"
BCL_NAME=bench-cluster-spread BCL_LINES='cluster-spread [a-z]+-[a-z]+:' BCL_DIR=$BENCH_CS_DIR
# shellcheck source=bench/cluster-lib.sh
. "$here/cluster-lib.sh"

bcl_check
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null ||
	case " $BENCH_CS_READERS " in *" torch "*) die "python3-torch is missing: run scripts/install-deps.sh" ;; esac
for v in BENCH_CS_FILES BENCH_CS_EPOCHS BENCH_CS_COMPUTE_MS BENCH_CS_BATCH BENCH_CS_THREADS BENCH_CS_WORKERS BENCH_CS_TIMEOUT; do
	[[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a whole number, got '${!v}'"
done
[ "$BENCH_CS_FILES" -ge 6 ] && [ "$BENCH_CS_FILES" -le 100000 ] || die "BENCH_CS_FILES must be 6..100000"
[ "$BENCH_CS_EPOCHS" -ge 1 ] && [ "$BENCH_CS_EPOCHS" -le 20 ] || die "BENCH_CS_EPOCHS must be 1..20"
for c in $BENCH_CS_CASES; do
	case $c in pfs | local | spread) ;; *) die "unknown case '$c' in BENCH_CS_CASES (pfs, local, spread)" ;; esac
done
for r in $BENCH_CS_READERS; do
	case $r in dlio | torch) ;; *) die "unknown reader '$r' in BENCH_CS_READERS (dlio, torch)" ;; esac
done
awk -v f="$BENCH_CS_SPREAD_FACTOR" 'BEGIN { exit !(f + 0 > 1 && f + 0 <= 3) }' ||
	die "BENCH_CS_SPREAD_FACTOR must be over 1 and at most 3 (the dataset must not fit one node, and fit the 3)"
[ "$BENCH_CS_LOCAL_TIER" != "$BENCH_CS_SPREAD_TIER" ] ||
	die "BENCH_CS_LOCAL_TIER and BENCH_CS_SPREAD_TIER must differ: they have different capacities"
# The two tiers' capacities are cluster.sh's knobs, by tier name.
capvar() { case $1 in nvme) echo CLUSTER_NVME_CAPACITY ;; ram) echo CLUSTER_RAM_CAPACITY ;; *) die "tier '$1': only nvme and ram have a capacity knob in tests/cluster/cluster.sh" ;; esac; }
LOCAL_CAPVAR=$(capvar "$BENCH_CS_LOCAL_TIER")
SPREAD_CAPVAR=$(capvar "$BENCH_CS_SPREAD_TIER")

W=$BENCH_CS_DIR
bcl_start
DLIO=$(bench_helper dlio_reader) || die "cannot build dlio_reader"
bcl_pfs_up

# --- the dataset on the PFS: one copy read in place by the pfs jobs, and a
# hard-linked copy per staged job, so that every one stages cold (a cache
# entry is per source path)
read -r FILES BYTES < <(BENCH_IMAGENET_FILES=$BENCH_CS_FILES "$here/gen-dataset.sh" imagenet "$W/gen/imagenet" 1) ||
	die "gen-dataset failed"
SPREAD_CAP=$(awk -v b="$BYTES" -v f="$BENCH_CS_SPREAD_FACTOR" 'BEGIN { printf "%d", b / f }')
say "putting the dataset ($FILES files, $BYTES B) on the PFS"
bcl_put "$W/gen/imagenet" cs-data "$FILES" "$BYTES"
DS_VARS=()
for c in local spread; do
	for r in dlio torch; do
		(cd "$MNT" && cp -al cs-data "cs-$c-$r") || die "cannot link cs-$c-$r on the PFS"
		DS_VARS+=("CS_DS_${c^^}_${r^^}=cs-$c-$r")
	done
done
bcl_pfs_ready "$BENCH_CS_RTT_MS"

# --- the jobs on the cluster -------------------------------------------------
say "cases '$BENCH_CS_CASES', readers '$BENCH_CS_READERS' on the 3-node cluster; spread tier $BENCH_CS_SPREAD_TIER of $SPREAD_CAP B (load $(cut -d' ' -f1-3 /proc/loadavg))"
CS_OUT=$STATE/jobs.jsonl
jobs_ok=true
bcl_run_jobs "$STATE/cluster.log" "$here/cluster-spread-jobs.sh" BCJ_CLIENTS=node \
	CS_CASES="$BENCH_CS_CASES" CS_READERS="$BENCH_CS_READERS" CS_DS_PFS=cs-data "${DS_VARS[@]}" \
	CS_FILES="$FILES" CS_BYTES="$BYTES" CS_LOCAL_TIER="$BENCH_CS_LOCAL_TIER" \
	CS_SPREAD_TIER="$([ "$BENCH_CS_SPREAD_TIER" = nvme ] || echo "$BENCH_CS_SPREAD_TIER")" \
	CS_PROFILE="$BENCH_CS_PROFILE" CS_EPOCHS="$BENCH_CS_EPOCHS" CS_COMPUTE_MS="$BENCH_CS_COMPUTE_MS" \
	CS_BATCH="$BENCH_CS_BATCH" CS_THREADS="$BENCH_CS_THREADS" CS_WORKERS="$BENCH_CS_WORKERS" \
	CS_STATS="$BENCH_CS_STATS" CS_DLIO="$DLIO" CS_TORCH="$here/torch_reader.py" \
	CS_RATE_BPS="$RATE_BPS" CS_OUT="$CS_OUT" \
	"$LOCAL_CAPVAR=$BENCH_CS_LOCAL_CAPACITY" "$SPREAD_CAPVAR=$SPREAD_CAP" \
	IOSTAGE_EXTRA_CONF="$BENCH_CS_EXTRA_CONF" IT_TIMEOUT="$BENCH_CS_TIMEOUT" || jobs_ok=false
[ -s "$CS_OUT" ] || { tail -n 40 "$STATE/cluster.log" >&2; die "no job gave figures"; }

# --- results -------------------------------------------------------------------
mkdir -p "$BENCH_RESULTS"
OUT=$BENCH_RESULTS/$BENCH_CS_NAME-LATEST.json
jq -s --argjson run "$(bcl_machine_json)" \
	--arg rate "$PFS_RATE" --argjson rate_bps "$RATE_BPS" --argjson rtt "$BENCH_CS_RTT_MS" \
	--argjson files "$FILES" --argjson bytes "$BYTES" --argjson spread_cap "$SPREAD_CAP" \
	--arg factor "$BENCH_CS_SPREAD_FACTOR" --arg local_tier "$BENCH_CS_LOCAL_TIER" \
	--arg local_cap "$BENCH_CS_LOCAL_CAPACITY" --arg spread_tier "$BENCH_CS_SPREAD_TIER" \
	--arg profile "$BENCH_CS_PROFILE" --argjson epochs "$BENCH_CS_EPOCHS" \
	--argjson compute "$BENCH_CS_COMPUTE_MS" --argjson batch "$BENCH_CS_BATCH" \
	--argjson threads "$BENCH_CS_THREADS" --argjson workers "$BENCH_CS_WORKERS" \
	--arg stats "$BENCH_CS_STATS" --arg extra "$BENCH_CS_EXTRA_CONF" '
	def r3: if . == null then null else (. * 1000 | round) / 1000 end;
	def ratio(a; b): if a == null or b == null or b == 0 then null else (a / b) | r3 end;
	def mean: if length == 0 then null else add / length end;
	def verdict(ok): if ok == null then "not measured" elif ok then "met" else "missed" end;
	# a job measured: no error and every epoch timed
	def ok: .error == null and (.epoch_s | length) > 0;
	. as $jobs
	| (map(select(ok) | {(.case + "-" + .reader): .}) | add // {}) as $m
	| ($run + {
		setup: {nodes: 3, tasks_per_node: 1, pfs: "GlusterFS FUSE (bench/pfs.sh), brick on tmpfs, network namespace",
			pfs_rate: $rate, link_rate_bytes_per_s: $rate_bps, rtt_ms: $rtt,
			pfs_clients: "one GlusterFS client per node (own page cache)",
			dataset: {kind: "imagenet (bench/gen-dataset.sh)", files: $files, bytes: $bytes},
			bound_once_s: (($bytes / $rate_bps) | r3),
			local: {tier: $local_tier, capacity: $local_cap},
			spread: {tier: $spread_tier, capacity_bytes: $spread_cap, dataset_over_capacity: $factor,
				stats_template: (if $stats == "" then "not yet wired" else $stats end)},
			profile_base: $profile, epochs: $epochs,
			dlio: {threads: $threads, batch: $batch, compute_ms_per_batch: $compute},
			torch: {workers: $workers, batch: $batch, compute_ms_per_batch: $compute},
			page_cache: "dropped (and new PFS clients) before every job; kept within a job: the local copy is in it after staging, and what a node read in one epoch stays for the next, in every case",
			iostage_extra_conf: $extra},
		jobs: $jobs
	}) as $r
	| $r + {
		comparison: ([$r.jobs[].reader] | unique | map(. as $rd | {
			reader: $rd,
			epoch_mean_s: {pfs: ($m["pfs-" + $rd].epoch_s | mean | r3), local: ($m["local-" + $rd].epoch_s | mean | r3),
				spread: ($m["spread-" + $rd].epoch_s | mean | r3)},
			spread_over_local: ratio($m["spread-" + $rd].epoch_s | mean; $m["local-" + $rd].epoch_s | mean),
			pfs_over_spread: ratio($m["pfs-" + $rd].epoch_s | mean; $m["spread-" + $rd].epoch_s | mean),
			pfs_over_local: ratio($m["pfs-" + $rd].epoch_s | mean; $m["local-" + $rd].epoch_s | mean),
			pfs_bytes_per_dataset: {pfs: $m["pfs-" + $rd].pfs_rx_per_dataset, local: $m["local-" + $rd].pfs_rx_per_dataset,
				spread: $m["spread-" + $rd].pfs_rx_per_dataset},
			targets: {
				"spread epoch <= 1.25x local": verdict(ratio($m["spread-" + $rd].epoch_s | mean; $m["local-" + $rd].epoch_s | mean)
					| if . == null then null else . <= 1.25 end),
				"spread >= 2x faster than pfs": verdict(ratio($m["pfs-" + $rd].epoch_s | mean; $m["spread-" + $rd].epoch_s | mean)
					| if . == null then null else . >= 2 end),
				"spread PFS bytes 1.0x the dataset": verdict($m["spread-" + $rd].pfs_rx_per_dataset
					| if . == null then null else . <= 1.05 end)}}))
	}' "$CS_OUT" >"$OUT.tmp" && mv "$OUT.tmp" "$OUT" || die "cannot write $OUT"

TXT=$BENCH_RESULTS/$BENCH_CS_NAME-LATEST.txt
{
	jq -r '"bench-cluster-spread \(.date) git \(.git), \(.seconds) s, load \(.machine.loadavg_start) -> \(.machine.loadavg_end); \(.setup.dataset.files) files, \(.setup.dataset.bytes) B; PFS \(.setup.pfs_rate) +\(.setup.rtt_ms) ms, \(.setup.pfs_clients)",
		"3 nodes, 1 reader task each, \(.setup.epochs) epochs, a disjoint third per node per epoch; dlio: \(.setup.dlio.threads) threads, batch \(.setup.dlio.batch), \(.setup.dlio.compute_ms_per_batch) ms compute per batch; torch: DataLoader, \(.setup.torch.workers) workers, same batch and compute",
		"local: tier \(.setup.local.tier) (Capacity \(.setup.local.capacity)); spread: tier \(.setup.spread.tier), Capacity \(.setup.spread.capacity_bytes) B (dataset / \(.setup.spread.dataset_over_capacity)); bound: dataset / link = \(.setup.bound_once_s) s"' "$OUT"
	jq -r '
		def mb: if . == null then "-" else ((. / 1e6 * 10 | round) / 10 | tostring) + " MB" end;
		def s: if . == null then "-" else (. | tostring) + " s" end;
		(["case", "reader", "job", "epoch 1 / 2 / 3 (slowest node)", "sbatch to first task", "staged on all", "PFS bytes", "x dataset", "before task / readers"] | @tsv),
		(.jobs[] | [.case, .reader, (.job // "-" | tostring),
			(if .error then "FAILED" else (.epoch_s | map(tostring) | join(" / ")) + " s" end),
			(.submit_to_first_task_s | s), (.submit_to_staged_all_s | s), (.pfs_rx_bytes | mb),
			(if .pfs_rx_per_dataset then (.pfs_rx_per_dataset | tostring) + "x" else "-" end), "\(.pfs_rx_before_task | mb) / \(.pfs_rx_readers | mb)"] | @tsv)' "$OUT" | column -t -s $'\t'
	jq -r '.jobs[] | select(.error) | "  \(.case)-\(.reader): \(.error)"' "$OUT"
	jq -r '.jobs[] | select(.parts) | "  \(.case)-\(.reader) stage_in per node: " + ([.parts[] | "\(.node) \(.stage_in_s) s (copied \(.datasets[0].copied_bytes // "-") B)"] | join("; "))' "$OUT"
	jq -r '.jobs[] | select(.case == "spread") | "  spread-\(.reader) view counters per node: " +
		(if (.spread_stats | type) == "string" then .spread_stats else
		([.spread_stats[] | "\(.node) local \(.local_bytes) / peer \(.peer_bytes) / PFS \(.pfs_bytes) B (\(.when))"] | join("; ")) end)' "$OUT"
	jq -r '.comparison[] | "\(.reader): mean epoch pfs \(.epoch_mean_s.pfs // "-") s, local \(.epoch_mean_s.local // "-") s, spread \(.epoch_mean_s.spread // "-") s; pfs/local \(.pfs_over_local // "-")x, spread/local \(.spread_over_local // "-")x, pfs/spread \(.pfs_over_spread // "-")x; PFS bytes / dataset: pfs \(.pfs_bytes_per_dataset.pfs // "-")x, local \(.pfs_bytes_per_dataset.local // "-")x, spread \(.pfs_bytes_per_dataset.spread // "-")x",
		(.targets | to_entries[] | "  target \(.key): \(.value)")' "$OUT"
} >"$TXT"
cat "$TXT"
say "results in $OUT and $TXT"
$jobs_ok || die "a job failed (log: $STATE/cluster.log)"
