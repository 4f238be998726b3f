#!/usr/bin/env bash
# pfs-bench.sh - what staging saves a user whose data is on a remote PFS
# (issue 14): the simulated PFS of bench/pfs.sh, cold on both sides.
#
#  1. staging: iostage's worker against cp -r, rsync -a, a tar pipe, fpsync,
#     rclone and a parallel cp (xargs -P16), each run cold and ending with a
#     sync, for the DLIO shapes (imagenet, unet3d, bert) at each RTT in
#     BENCH_RTTS: seconds, ratio of each peer to iostage, ratio to the link
#     bound (bytes / cap);
#  2. cache hit: the worker's verify=stat check (--check against a manifest)
#     of BENCH_HIT_FILES files on the PFS at 1 ms, cold, vs rsync -a --dry-run;
#  3. epochs and checkpoints as real Slurm jobs on the one-node harness
#     (bench/pfs-jobs.sh): the DLIO-shaped reader from the PFS, with
#     --io-profile (staging counted) and cached; checkpoints to the PFS and
#     to IOSTAGE_OUTPUT with the drain;
#  4. closing the loop on the multi-node cluster (bench/pfs-auto.sh): ten
#     jobs with --io-profile=auto and no other hint, each one's unoverlapped
#     I/O time and run time; advice never stages more than a tier holds.
#
# Results: bench/results/pfs-LATEST.json and pfs-LATEST.txt (the table).
# Knobs: BENCH_SCALE (0.5), BENCH_DIR (/var/tmp/iostage-pfsbench), BENCH_RTTS
# ("1 5"), BENCH_PFS_DATASETS ("imagenet unet3d bert"), BENCH_PFS_TOOLS,
# BENCH_HIT_FILES (100000), BENCH_EPOCHS (3), PFS_RATE (1gbit),
# BENCH_AUTO_JOBS (10), BENCH_AUTO_BIG_JOBS (4), BENCH_PFS_AUTO=0 (skip 4).
# Must run as root (bench/pfs.sh).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

# 0.5 (2,000 imagenet files, 4 x 128 MiB, 8 x 49 MB): the whole run in ~20
# minutes on 2 cores; 1 is the issue's 4,000 files.
: "${BENCH_SCALE:=0.5}"
: "${BENCH_DIR:=/var/tmp/iostage-pfsbench}"
BENCH_RTTS=${BENCH_RTTS-1 5} # "" skips the staging runs
: "${BENCH_PFS_DATASETS:=imagenet unet3d bert}"
: "${BENCH_PFS_TOOLS:=cp rsync tar fpsync rclone pcp iostage}"
: "${BENCH_HIT_FILES:=100000}"
: "${BENCH_EPOCHS:=3}"
: "${BENCH_TIMEOUT:=900}"
: "${BENCH_RESULTS:=$BENCH_SRC/results}"
: "${PFS_RATE:=1gbit}"
: "${IOSTAGED:=$BUILD/daemon/iostaged}"
# The issue's imagenet-like case: 4,000 files of ~110 KB at scale 1.
: "${BENCH_IMAGENET_FILES:=4000}"
export BENCH_IMAGENET_FILES PFS_RATE
# The PFS's names and addresses pass on to pfs.sh (and to the jobs' `cold`).
export PFS_NAME=${PFS_NAME:-iostage-pfs} PFS_NET=${PFS_NET:-10.214.14} PFS_QUEUE=${PFS_QUEUE:-1414}

die() { echo "pfs-bench: $*" >&2; exit 1; }
# The PFS's daemons must not inherit the run's lock (fd 9): a glusterfs
# client still exiting would hold it and refuse the next run.
pfs() { "$here/pfs.sh" "$@" 9>&-; }
say() { echo "pfs-bench: $*" >&2; }

[ "$(id -u)" = 0 ] || die "must run as root (bench/pfs.sh)"
[ -x "$IOSTAGED" ] || die "$IOSTAGED is not built (make all)"
command -v jq >/dev/null || die "jq is missing: run bench/install-deps.sh"
case "$BENCH_DIR" in /*) ;; *) die "BENCH_DIR must be absolute" ;; esac

W=$BENCH_DIR
mkdir -p "$W" || die "cannot create $W"
exec 9>>"$W/.iostage-pfsbench"
flock -n 9 || die "another run is using $W"
export PFS_DIR="$W/pfs"
MNT=$PFS_DIR/mnt
STATE=$W/state
rm -rf "$STATE" "$W/dst" && mkdir -p "$STATE" "$W/gen" "$W/dst"
RUNS=$STATE/runs.jsonl
: >"$RUNS"
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

cleanup() {
	pfs down >/dev/null 2>&1
	rm -rf "$W/dst" "$STATE/iostaged"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A private copy of the engine: a rebuild during the run must not swap it.
cp "$IOSTAGED" "$STATE/iostaged" && IOSTAGED=$STATE/iostaged
export IOSTAGED

pfs down >/dev/null 2>&1
PFS_RTT_MS=0 pfs up || die "the PFS did not come up"
RATE_BPS=$(bench_rate_bps "$PFS_RATE")

# --- datasets on the PFS --------------------------------------------------
declare -A DS_FILES DS_BYTES
for ds in $BENCH_PFS_DATASETS; do
	read -r f b < <("$here/gen-dataset.sh" "$ds" "$W/gen/$ds" "$BENCH_SCALE") || die "gen-dataset $ds failed"
	DS_FILES[$ds]=$f DS_BYTES[$ds]=$b
	say "putting $ds ($f files, $b B) on the PFS"
	cp -r "$W/gen/$ds" "$MNT/$ds" || die "cannot write $ds to the PFS"
done
sync

tree_sum() { find "$1" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { printf "%d %d\n", NR, s }'; }

# Each tool is a bash -c body: $1 = SRC, $2 = an empty directory; the copy
# ends up as $2/data.
# shellcheck disable=SC2016
declare -A TOOL_CMD=(
	[cp]='cp -r "$1" "$2/data"'
	[rsync]='rsync -a "$1/" "$2/data/"'
	[tar]='mkdir "$2/data" && tar -C "$1" -cf - . | tar -C "$2/data" -xf -'
	[fpsync]='mkdir "$2/data" && fpsync -n 8 -t "$2.fpsync" -o "-lptgoD --numeric-ids" "$1/" "$2/data/"'
	[rclone]='rclone copy --config /dev/null --transfers 16 --checkers 16 "$1" "$2/data"'
	[pcp]='mkdir "$2/data" && cd "$1" && find . -mindepth 1 -type d -printf "%P\0" | (cd "$2/data" && xargs -0 -r mkdir -p) && find . -type f -printf "%P\0" | xargs -0 -r -n 32 -P 16 cp --parents -t "$2/data"'
	[iostage]='"$IOSTAGED" --stage-worker "$1" "$2" >"$2.out" && tail -1 "$2.out" | grep -q "\"ok\":true"'
)

# time_cold CMD...: one cold run (remount + drop caches), seconds on stdout.
time_cold() {
	pfs cold || return 1
	local t0 t1
	t0=$(bench_now)
	"$@" || return 1
	t1=$(bench_now)
	bench_sub "$t1" "$t0"
}

stage_one() {
	local rtt=$1 ds=$2 tool=$3 dst="$W/dst/$ds.$tool" s ok=true got
	rm -rf "$W/dst" && mkdir -p "$dst"
	s=$(time_cold timeout -k 10 "$BENCH_TIMEOUT" bash -o pipefail -c "${TOOL_CMD[$tool]} && sync -f \"\$2\"" _ "$MNT/$ds" "$dst" 2>"$STATE/err") || ok=false
	got=$(tree_sum "$dst/data")
	[ "$got" = "${DS_FILES[$ds]} ${DS_BYTES[$ds]}" ] || { ok=false; say "$tool $ds: copy incomplete ($got)"; }
	[ "$ok" = true ] || { say "$tool $ds at $rtt ms failed: $(tail -1 "$STATE/err")"; s=null; }
	say "stage rtt=$rtt $ds $tool: $s s"
	jq -nc --argjson rtt "$rtt" --arg ds "$ds" --arg tool "$tool" --argjson s "${s:-null}" \
		--argjson files "${DS_FILES[$ds]}" --argjson bytes "${DS_BYTES[$ds]}" \
		--argjson bound "$(awk -v b="${DS_BYTES[$ds]}" -v r="$RATE_BPS" 'BEGIN { printf "%.3f", b / r }')" \
		'{kind:"stage", rtt_ms:$rtt, dataset:$ds, tool:$tool, seconds:$s, files:$files, bytes:$bytes, link_bound_s:$bound}' >>"$RUNS"
	rm -rf "$W/dst"
}

for rtt in $BENCH_RTTS; do
	pfs rtt "$rtt" || die "cannot set the RTT"
	for ds in $BENCH_PFS_DATASETS; do
		for tool in $BENCH_PFS_TOOLS; do
			case "$tool" in iostage|pcp) ;; *) command -v "${tool%% *}" >/dev/null || { say "$tool not installed"; continue; } ;; esac
			stage_one "$rtt" "$ds" "$tool"
		done
	done
done

# --- cache hit: verify=stat over the PFS at 1 ms ----------------------------
HIT_N=$BENCH_HIT_FILES # the issue's count whatever the scale
if [ "${BENCH_PFS_HIT:-1}" = 1 ]; then
	pfs rtt 0
	read -r hf hb < <(BENCH_HIT_FILES=$HIT_N "$here/gen-dataset.sh" hit "$W/gen/hit" 1)
	say "hit: putting $hf files on the PFS"
	# Many writers: one file per round trip would take minutes.
	(cd "$W/gen/hit" && find . -mindepth 1 -type d -printf "%P\0" | (cd "$MNT" && mkdir -p hit && cd hit && xargs -0 -r mkdir -p) &&
		find . -type f -printf "%P\0" | xargs -0 -r -n 256 -P 16 cp --parents -t "$MNT/hit")
	H=$W/dst/hit && rm -rf "$H" && mkdir -p "$H/copy" "$H/check"
	"$IOSTAGED" --stage-worker --manifest-out 3 "$MNT/hit" "$H/copy" 3>"$H/manifest" >"$H/copy.out" 2>&1 ||
		say "hit: copy with --manifest-out failed: $(tail -1 "$H/copy.out")"
	pfs rtt 1
	hit_check() {
		rm -rf "$H/check" && mkdir "$H/check" &&
			"$IOSTAGED" --stage-worker --check --manifest-in 3 "$MNT/hit" "$H/check" 3<"$H/manifest" >"$H/check.out" 2>&1 &&
			grep -q '"unchanged":true' "$H/check.out"
	}
	hc=$(time_cold hit_check) || { say "hit: check failed: $(tail -1 "$H/check.out")"; hc=null; }
	hr=$(time_cold rsync -a --dry-run "$MNT/hit/" "$H/copy/data/") || hr=null
	say "hit: $hf files at 1 ms, cold: check $hc s, rsync --dry-run $hr s"
	jq -nc --argjson n "$hf" --argjson c "${hc:-null}" --argjson r "${hr:-null}" \
		'{kind:"hit", rtt_ms:1, files:$n, check_cold_s:$c, rsync_dry_run_cold_s:$r}' >>"$RUNS"
	rm -rf "$H"
fi

# --- epochs and checkpoints: real Slurm jobs --------------------------------
# The one-node harness (tests/integration/run.sh: slurmctld, slurmd, the
# plugin, Prolog/Epilog, iostaged) runs bench/pfs-jobs.sh while the PFS is
# mounted on the host: (4) the DLIO-shaped reader from the PFS, as a job
# with --io-profile (staging in its time) and again with the cache warm;
# (5) checkpoints straight to the PFS and to IOSTAGE_OUTPUT with the drain.
# Its ports: CLUSTER_CTLD_PORT/CLUSTER_SLURMD_PORT from the environment.
if [ "${BENCH_PFS_JOBS:-1}" = 1 ] && [[ " $BENCH_PFS_DATASETS " = *" imagenet "* ]]; then
	pfs rtt 1
	rd=$(bench_helper dlio_reader) || die "cannot build dlio_reader"
	mkdir -p "$MNT/ckpt" && chmod 1777 "$MNT/ckpt"
	ckpt=${BENCH_CKPT_BYTES:-1073741824}
	# Steps between checkpoints: long enough for the drain to move one
	# checkpoint over the link (1.3x bytes / cap), as a real job's are.
	export PFSJ_RUNS=$RUNS PFSJ_PFS=$here/pfs.sh PFSJ_DATA=$MNT/imagenet PFSJ_READER=$rd \
		PFSJ_RARGS="-t 8 -b 32 -c ${BENCH_COMPUTE_MS:-20} -e $BENCH_EPOCHS" PFSJ_OUT=$MNT/ckpt \
		PFSJ_CKPT_BYTES=$ckpt PFSJ_CKPT_N=${BENCH_CKPT_N:-3} PFSJ_CKPT_K=10 PFSJ_RTT_MS=1 \
		PFSJ_STEP_MS=$(awk -v b="$ckpt" -v r="$RATE_BPS" 'BEGIN { printf "%d", b / r * 1.3 * 1000 / 10 + 1 }')
	filter='^test_pfs_('$([ "${BENCH_PFS_EPOCHS:-1}" = 1 ] && echo epochs)'|'$([ "${BENCH_PFS_CKPT:-1}" = 1 ] && echo checkpoints)')$'
	IT_TIMEOUT=1200 IT_FILTER=$filter bash "$BENCH_TOP/tests/integration/run.sh" "$here/pfs-jobs.sh" 9>&- >"$STATE/jobs.log" 2>&1 ||
		say "the Slurm jobs failed: $(grep -E '^(FAIL|[0-9]+ passed)' "$STATE/jobs.log" | tr '\n' ' ')"
	grep -E '^(PASS|FAIL|[0-9]+ passed)' "$STATE/jobs.log" >&2
fi

# --- closing the loop: --io-profile=auto (issue 14 item 6) -----------------
# The multi-node test cluster (tests/cluster/run.sh: three compute nodes,
# iostagectld holding the history) with this PFS's mount as its PFS
# (CLUSTER_PFS_DIR, bind-mounted into every node; started after the last
# `pfs cold` above, since the nodes keep the client they were made with)
# and PfsPath= naming it: BENCH_AUTO_JOBS training jobs of one user with
# --io-profile=auto and nothing else (the first observed from the PFS, the
# later ones staged on the history's advice), then BENCH_AUTO_BIG_JOBS over
# a dataset larger than the nvme tier (whose capacity is set between the
# two), which must never be advised for staging (bench/pfs-auto.sh).
if [ "${BENCH_PFS_AUTO:-1}" = 1 ] && [[ " $BENCH_PFS_DATASETS " = *" imagenet "* ]] &&
	[[ " $BENCH_PFS_DATASETS " = *" unet3d "* ]]; then
	pfs rtt 1
	rd=$(bench_helper dlio_reader) || die "cannot build dlio_reader"
	cap=$(( (DS_BYTES[imagenet] + DS_BYTES[unet3d]) / 2 ))
	say "auto: ${BENCH_AUTO_JOBS:-10} jobs over imagenet (${DS_BYTES[imagenet]} B), ${BENCH_AUTO_BIG_JOBS:-4} over unet3d (${DS_BYTES[unet3d]} B), nvme Capacity=$cap"
	export PFSA_RUNS=$RUNS PFSA_READER=$rd PFSA_DS=imagenet PFSA_BIG=unet3d PFSA_RTT_MS=1 \
		PFSA_RARGS="-t 8 -b 32 -c ${BENCH_COMPUTE_MS:-20} -e $BENCH_EPOCHS" PFSA_N=${BENCH_AUTO_JOBS:-10} \
		PFSA_BIG_RARGS="-t 4 -b 4 -c ${BENCH_COMPUTE_MS:-20} -e 1 -s 1048576" PFSA_BIG_N=${BENCH_AUTO_BIG_JOBS:-4}
	CLUSTER_PFS_DIR=$MNT CLUSTER_PFS_OBSERVE=yes CLUSTER_NVME_CAPACITY=$cap IT_TIMEOUT=1500 \
		IT_FILTER='^test_pfs_auto$' IT_VERBOSE=1 bash "$BENCH_TOP/tests/cluster/run.sh" "$here/pfs-auto.sh" \
		9>&- >"$STATE/auto.log" 2>&1 ||
		say "the auto loop failed: $(grep -E '^(FAIL|[0-9]+ passed)' "$STATE/auto.log" | tr '\n' ' ')"
	grep -E '^(PASS|FAIL|[0-9]+ passed)|^    (loop|big) ' "$STATE/auto.log" >&2
fi

# --- results ---------------------------------------------------------------
mkdir -p "$BENCH_RESULTS"
OUT=$BENCH_RESULTS/pfs-LATEST.json
jq -s --arg started "$STARTED" --arg host "$(hostname)" --arg cpus "$(nproc)" \
	--arg kernel "$(uname -r)" --arg load0 "$LOAD0" --arg load1 "$(cut -d' ' -f1-3 /proc/loadavg)" \
	--arg scale "$BENCH_SCALE" --arg rate "$PFS_RATE" --arg lru "${PFS_LRU_LIMIT:-0}" --arg rev "$(git -C "$BENCH_TOP" rev-parse --short HEAD 2>/dev/null)" \
	'{started:$started, machine:{host:$host, cpus:($cpus|tonumber), kernel:$kernel,
	  loadavg_start:$load0, loadavg_end:$load1}, git:$rev, scale:($scale|tonumber),
	  pfs:{kind:"GlusterFS FUSE, brick on tmpfs, network namespace", rate:$rate, lru_limit:($lru|tonumber)}, runs:.}' "$RUNS" >"$OUT.tmp" &&
	mv "$OUT.tmp" "$OUT"
jq -r -f "$here/pfs-table.jq" "$OUT" | tee "$BENCH_RESULTS/pfs-LATEST.txt"
