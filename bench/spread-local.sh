#!/usr/bin/env bash
# spread-local.sh - how fast a spread dataset's local part reads through
# the job's view, against a plain local copy of the same files, in the
# same run (issue 29 item 3: 90% or more; `make bench-spread-local`, as
# root). bench/spread-local-jobs.sh runs the job on the 3-node test
# cluster and says where each figure comes from.
#
# BENCH_SL_SHAPE=chunks measures a part's chunks instead (files too large
# for one node, cut over the nodes): BENCH_SL_BIG_FILES files of
# BENCH_SL_BIG_MIB MiB (3 of 200) on nvme tiers of BENCH_SL_CHUNK_CAPACITY
# (320M: a file over 160 MiB is cut into 2 MiB chunks); each node's chunks
# read through the view (their ranges of the whole files) and from the
# part's chunks/ directory (bench/chunk_reads.py). BENCH_SL_SHAPE=
# chunks-whole: the same files read whole through the view (this node's
# chunks and the others') against the same files read from a plain
# directory on the same disk (the bench's PFS is one): what a file cut
# into chunks costs a reader against a local copy.
#
# Knobs: BENCH_SL_FILES (6000 imagenet-shaped files, ~680 MB: each node's
# part ~225 MB), BENCH_SL_ROUNDS (9), BENCH_SL_DIR (/var/tmp/iostage-slbench),
# BENCH_HOLD_FREED_MEMORY=1 (on a VM that hands freed memory back to its
# host: keep it for the run, bench/lib.sh bench_freed_memory; the results
# say which the run had).
# Results: bench/results/spread-local-LATEST.json and .txt
# (spread-local-chunks-LATEST.* for the chunks).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

: "${BENCH_SL_FILES:=6000}"
: "${BENCH_SL_ROUNDS:=9}"
: "${BENCH_SL_DIR:=/var/tmp/iostage-slbench}"
: "${BENCH_SL_SHAPE:=files}"
: "${BENCH_SL_BIG_FILES:=3}"
: "${BENCH_SL_BIG_MIB:=200}"
: "${BENCH_SL_CHUNK_CAPACITY:=320M}"
: "${BENCH_RESULTS:=$BENCH_SRC/results}"
die() { echo "bench-spread-local: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (it boots the test cluster)"
command -v jq >/dev/null || die "jq is missing: run bench/install-deps.sh"
command -v bc >/dev/null || die "bc is missing: run bench/install-deps.sh"
mkdir -p "$BENCH_SL_DIR/pfs" "$BENCH_RESULTS" || die "cannot make $BENCH_SL_DIR"
NAME=spread-local
CAP=()
LOCALREAD_LIB=
# the cluster's PFS: a directory of the host (this bench reads no PFS)
rm -rf "$BENCH_SL_DIR/pfs/sl"
mkdir -p "$BENCH_SL_DIR/pfs/sl"
case $BENCH_SL_SHAPE in
files)
	read -r FILES BYTES < <(BENCH_IMAGENET_FILES=$BENCH_SL_FILES "$here/gen-dataset.sh" imagenet "$BENCH_SL_DIR/gen" 1) ||
		die "gen-dataset failed"
	cp -a "$BENCH_SL_DIR/gen" "$BENCH_SL_DIR/pfs/sl/ds"
	;;
chunks | chunks-whole)
	# this node's chunks read also with the library the plugin preloads
	LOCALREAD_LIB=${BUILD:-build}/localread/libiostage-localread.so
	[ "${LOCALREAD_LIB#/}" != "$LOCALREAD_LIB" ] || LOCALREAD_LIB=$BENCH_TOP/$LOCALREAD_LIB
	[ -r "$LOCALREAD_LIB" ] || die "$LOCALREAD_LIB is missing: make localread"
	/usr/bin/python3 -c 'import xxhash' 2>/dev/null || die "python3-xxhash is missing: run bench/install-deps.sh"
	NAME=spread-local-$BENCH_SL_SHAPE
	CAP=("CLUSTER_NVME_CAPACITY=$BENCH_SL_CHUNK_CAPACITY")
	mkdir -p "$BENCH_SL_DIR/pfs/sl/ds/shards"
	for ((i = 0; i < BENCH_SL_BIG_FILES; i++)); do
		head -c $((BENCH_SL_BIG_MIB << 20)) /dev/urandom >"$BENCH_SL_DIR/pfs/sl/ds/shards/train-$i.bin"
	done
	FILES=$BENCH_SL_BIG_FILES
	BYTES=$((BENCH_SL_BIG_FILES * (BENCH_SL_BIG_MIB << 20)))
	;;
*) die "BENCH_SL_SHAPE: files, chunks or chunks-whole, not '$BENCH_SL_SHAPE'" ;;
esac
chmod -R a+rX "$BENCH_SL_DIR/pfs"
# not in a $(...): the trap that puts the setting back is this shell's
bench_freed_memory >"$BENCH_SL_DIR/freed-memory"
FREED=$(cat "$BENCH_SL_DIR/freed-memory")
OUT=$BENCH_SL_DIR/lines.jsonl
: >"$OUT"
t0=$(date +%s)
env CLUSTER_PFS_DIR="$BENCH_SL_DIR/pfs" SL_SRC=sl/ds SL_OUT="$OUT" SL_ROUNDS="$BENCH_SL_ROUNDS" \
	SL_SHAPE="$BENCH_SL_SHAPE" SL_CHUNK_READS="$here/chunk_reads.py" SL_LOCALREAD_LIB="$LOCALREAD_LIB" "${CAP[@]}" \
	IT_TIMEOUT=900 BUILD="${BUILD:-build}" bash "$BENCH_TOP/tests/cluster/run.sh" "$here/spread-local-jobs.sh" \
	>"$BENCH_SL_DIR/cluster.log" 2>&1 </dev/null
rc=$?
[ -s "$OUT" ] || { tail -n 40 "$BENCH_SL_DIR/cluster.log" >&2; die "no figures"; }
RES=$BENCH_RESULTS/$NAME-LATEST.json
jq -s --argjson files "$FILES" --argjson bytes "$BYTES" --arg date "$(date -u +%FT%TZ)" --arg shape "$BENCH_SL_SHAPE" --arg freed "$FREED" \
	--arg git "$(git -C "$BENCH_TOP" rev-parse --short HEAD 2>/dev/null)" --argjson secs "$(($(date +%s) - t0))" '
	def r3: (. * 1000 | round) / 1000;
	def mean(f): (map(f) | add / length);
	# the middle round (the mean of the middle two): one slow round of a
	# shared machine moves it less than the mean
	def median(f): (map(f) | sort | if length % 2 == 1 then .[length / 2 | floor]
		else (.[length / 2 - 1] + .[length / 2]) / 2 end);
	def side($g; $m; f): [$g[] | select(.mode == $m)] | {mean: (mean(f) | r3), median: (median(f) | r3)};
	{date: $date, git: $git, seconds: $secs, shape: $shape, freed_memory: $freed, dataset: {files: $files, bytes: $bytes}, lines: .,
	 nodes: (group_by(.node) | map(. as $g | {node: $g[0].node, part_files: $g[0].files, part_bytes: $g[0].bytes,
		view_cold_s: side($g; "view"; .cold_s), plain_cold_s: side($g; "plain"; .cold_s),
		view_warm_s: side($g; "view"; .warm_s), plain_warm_s: side($g; "plain"; .warm_s)}
		| . + {cold_speed_view_over_plain: {mean: (.plain_cold_s.mean / .view_cold_s.mean | r3),
						    median: (.plain_cold_s.median / .view_cold_s.median | r3)},
		       warm_speed_view_over_plain: {mean: (.plain_warm_s.mean / .view_warm_s.mean | r3),
						    median: (.plain_warm_s.median / .view_warm_s.median | r3)}}
		| if any($g[]; .mode == "localread") then
			. + {localread_cold_s: side($g; "localread"; .cold_s), localread_warm_s: side($g; "localread"; .warm_s)}
			| . + {cold_speed_localread_over_plain: {mean: (.plain_cold_s.mean / .localread_cold_s.mean | r3),
								 median: (.plain_cold_s.median / .localread_cold_s.median | r3)},
			       warm_speed_localread_over_plain: {mean: (.plain_warm_s.mean / .localread_warm_s.mean | r3),
								 median: (.plain_warm_s.median / .localread_warm_s.median | r3)}}
		  else . end))}
	# what a task reads: through the library the plugin preloads where
	# it was measured (the chunk shapes), else the view
	| (if .nodes[0].localread_cold_s then "localread" else "view" end) as $task
	# chunks-whole reads the chunks of other nodes too: a reference, not the
	# local part item 3 sets its target on
	| . + {task_reads: $task}
	| if $shape == "chunks-whole" then
		. + {target: "none: two thirds of each file are chunks of other nodes (for reference)", met: null}
	  else
		. + {target: "\($task) speed >= 0.90x plain, median of the rounds (issue 29 item 3)",
		     met: ([.nodes[] | .["cold_speed_\($task)_over_plain"].median >= 0.9 and .["warm_speed_\($task)_over_plain"].median >= 0.9] | all)}
	  end' \
	"$OUT" >"$RES.tmp" && mv "$RES.tmp" "$RES" || die "cannot write $RES"
jq -r '"bench-spread-local (\(.shape)) \(.date) git \(.git): \(.dataset.files) files, \(.dataset.bytes) B over 3 nodes; \((.lines | length) / (3 * ([.lines[].mode] | unique | length))) rounds, median (mean); freed memory \(.freed_memory)",
	(.nodes[] | "  \(.node): part \(.part_files) files, \(.part_bytes) B: cold view \(.view_cold_s.median) s, plain \(.plain_cold_s.median) s: speed \(.cold_speed_view_over_plain.median)x (\(.cold_speed_view_over_plain.mean)x); warm view \(.view_warm_s.median) s, plain \(.plain_warm_s.median) s: \(.warm_speed_view_over_plain.median)x (\(.warm_speed_view_over_plain.mean)x)",
		(select(.localread_cold_s) | "        with libiostage-localread.so: cold \(.localread_cold_s.median) s: speed \(.cold_speed_localread_over_plain.median)x (\(.cold_speed_localread_over_plain.mean)x); warm \(.localread_warm_s.median) s: \(.warm_speed_localread_over_plain.median)x (\(.warm_speed_localread_over_plain.mean)x)")),
	"target: \(.target)\(if .met == null then "" elif .met then ": met" else ": missed" end)"' "$RES" | tee "$BENCH_RESULTS/$NAME-LATEST.txt"
exit "$rc"
