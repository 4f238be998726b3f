#!/usr/bin/env bash
# run.sh - time iostage's copy engine against the usual ways to stage a
# dataset, on this machine's disk, cold cache, copy plus sync.
#
# For each dataset (bench/gen-dataset.sh) and each tool, BENCH_REPEAT runs
# from a cold page cache; the time of one run covers the copy and the sync
# that puts it on the disk. The median is reported, with the ratio to cp -r
# and to the device bound measured with fio. Then the cache-hit path: the
# worker's --check against a manifest vs rsync --dry-run, the prolog-facing
# stage->wait round trip through a private iostaged, and its RSS.
#
# Results: a table on stdout, bench/results/LATEST.json (and a dated copy).
# A missed target is printed as MISSED; it never fails the run. Exit status
# is non-zero only when the harness itself cannot run.
#
# Knobs (environment): see bench/README.md, or run with --help.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
	sed -n '/^## Knobs/,/^## /p' "$here/README.md" | sed '$d'
	exit 0
fi

: "${BENCH_SCALE:=1}"
: "${BENCH_REPEAT:=3}"
: "${BENCH_DIR:=/var/tmp/iostage-bench}"
: "${BENCH_DATASETS:=small imagenet unet3d bert}"
: "${BENCH_TOOLS:=cp rsync tar fpsync rclone iostage}"
: "${BENCH_THREADS:=}"
: "${BENCH_KEEP:=0}"
: "${BENCH_HIT:=1}"
: "${BENCH_DAEMON:=1}"
: "${BENCH_FIO:=1}"
: "${BENCH_FIO_SECONDS:=5}"
: "${BENCH_FIO_SIZE:=1g}"
: "${BENCH_FIO_IODEPTH:=16}"
: "${BENCH_VERIFY:=1}"
: "${BENCH_TIMEOUT:=600}"
: "${BENCH_MAX_SECONDS:=1500}"
: "${BENCH_RESULTS:=$BENCH_SRC/results}"
: "${IOSTAGED:=$BUILD/daemon/iostaged}"
: "${BENCH_BASELINE:=}"

die() { echo "bench: $*" >&2; exit 1; }
say() { echo "bench: $*" >&2; }

case "$BENCH_REPEAT" in '' | *[!0-9]* | 0) die "BENCH_REPEAT must be a positive integer, got '$BENCH_REPEAT'" ;; esac
awk -v s="$BENCH_SCALE" 'BEGIN { exit !(s + 0 > 0 && s + 0 <= 100) }' ||
	die "BENCH_SCALE must be a number in (0, 100], got '$BENCH_SCALE'"
case "$BENCH_DIR" in /*) ;; *) die "BENCH_DIR must be absolute, got '$BENCH_DIR'" ;; esac
case "$BENCH_THREADS" in '' | [1-9] | [1-9][0-9] | [1-9][0-9][0-9]) ;; *) die "BENCH_THREADS must be 1..999, got '$BENCH_THREADS'" ;; esac
command -v jq >/dev/null || die "jq is missing: run bench/install-deps.sh (as root)"

W=$BENCH_DIR
T_START=$(bench_now)
# The tree as it was when the binary under test was taken.
git_rev=$(git -C "$BENCH_TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)
git_dirty=$(git -C "$BENCH_TOP" status --porcelain 2>/dev/null | grep -q . && echo true || echo false)
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
mkdir -p "$W" || die "cannot create $BENCH_DIR"
W=$(cd "$W" && pwd -P)
# Everything under BENCH_DIR is ours to delete: refuse a directory with
# other content, and a second run in the same one (the lock).
if [ -n "$(ls -A "$W")" ] && [ ! -e "$W/.iostage-bench" ]; then
	die "$W is not empty and was not made by bench/run.sh: set BENCH_DIR to a new or empty directory"
fi
exec 9>>"$W/.iostage-bench"
flock -n 9 || die "another bench run is using $W (set BENCH_DIR to run beside it)"

# --- where we run -------------------------------------------------------

FSTYPE=$(df --output=fstype "$W" | tail -1 | tr -d ' ')
FSDEV=$(df --output=source "$W" | tail -1 | tr -d ' ')
case "$FSTYPE" in
tmpfs | ramfs | devtmpfs | zram*) die "$W is on $FSTYPE: memory, not a disk; set BENCH_DIR to a directory on the local disk" ;;
esac
case "$FSDEV" in /dev/zram* | /dev/ram*) die "$W is on $FSDEV (a RAM disk); set BENCH_DIR to a directory on the local disk" ;; esac

# Each pass of run_one starts from here: dirty data on disk, page cache empty.
COLD=0
COLD_NOTE=""
if [ "$(id -u)" -ne 0 ]; then
	COLD_NOTE="not root: cannot drop the page cache, every run is WARM (sources read from memory)"
elif ! (sync && echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then
	COLD_NOTE="writing /proc/sys/vm/drop_caches is not permitted here (container?): every run is WARM"
else
	COLD=1
fi
# The programs themselves are read back right away: the runs measure cold
# data, not a 50 MB rclone binary paged in from disk.
WARM_BINS=()
drop_caches() {
	sync
	[ "$COLD" = 1 ] && echo 3 >/proc/sys/vm/drop_caches
	[ ${#WARM_BINS[@]} -gt 0 ] && cat "${WARM_BINS[@]}" >/dev/null 2>&1
	return 0
}
[ -n "$COLD_NOTE" ] && say "WARNING: $COLD_NOTE"

STATE="$W/state.$$"
rm -rf "$STATE"
mkdir -p "$STATE" "$W/src" || die "cannot write $W"
RUNS="$STATE/runs.tsv"  # ds tool rep seconds ok
DSETS="$STATE/datasets.tsv" # name files bytes class
NOTES="$STATE/notes.txt"
: >"$RUNS"
: >"$DSETS"
: >"$NOTES"
note() { say "$*"; echo "$*" >>"$NOTES"; }

DAEMON_PID=""
stop_daemon() {
	if [ -n "$DAEMON_PID" ]; then
		kill -TERM "$DAEMON_PID" 2>/dev/null
		for _ in $(seq 1 50); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$DAEMON_PID" 2>/dev/null
		DAEMON_PID=""
	fi
}
cleanup() {
	stop_daemon
	rm -rf "$W/dst" "$W/hit" "$W/daemon" "$W/fio.dat" "$W/probe" "$W/fpsync" "$STATE"
	if [ "$BENCH_KEEP" != 1 ]; then
		rm -rf "$W/src" "$W/.iostage-bench"
		rmdir "$W" 2>/dev/null
	fi
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tree_sum() { find "$1" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { printf "%d %d\n", NR, s }'; }
ver() { "$@" 2>&1 | head -1 | tr -d '\r'; }

# --- the tools ------------------------------------------------------------
# Each is a bash -c body with $1 = SRC (no trailing slash) and $2 = an empty,
# existing directory; the copy must end up as $2/data.

declare -A TOOL_LABEL=([cp]="cp -r" [rsync]="rsync" [tar]="tar" [fpsync]="fpsync" [rclone]="rclone" [iostage]="iostage")
# shellcheck disable=SC2016 # the bodies expand in the bash -c that runs them
declare -A TOOL_CMD=(
	[cp]='cp -r "$1" "$2/data"'
	[rsync]='rsync -a "$1/" "$2/data/"'
	[tar]='mkdir "$2/data" && tar -C "$1" -cf - . | tar -C "$2/data" -xf -'
	[fpsync]='mkdir "$2/data" && fpsync -n 8 -t "$FPSYNC_TMP" -o "-lptgoD --numeric-ids" "$1/" "$2/data/"'
	[rclone]='rclone copy --config /dev/null --transfers 16 --checkers 16 "$1" "$2/data"'
)
declare -A TOOL_NEED=([cp]=cp [rsync]=rsync [tar]=tar [fpsync]=fpsync [rclone]=rclone)

# The worker's command line: the contract of docs/STAGING.md
# (--stage-worker [--threads N] SRC DSTDIR -> DSTDIR/data), or the older
# --stage-worker SRC DSTDIR NAME while the engine is being rewritten.
WORKER_FORM=none
WORKER_NOTE=""
detect_worker() {
	local p="$W/probe"
	if [ ! -x "$IOSTAGED" ]; then
		WORKER_NOTE="$IOSTAGED_SRC is not built (make all)"
		return
	fi
	rm -rf "$p" && mkdir -p "$p/src/d" "$p/new" "$p/old" && echo probe >"$p/src/d/f"
	if "$IOSTAGED" --stage-worker "$p/src" "$p/new" >"$p/new.out" 2>&1 && [ -f "$p/new/data/d/f" ]; then
		WORKER_FORM=new
	elif "$IOSTAGED" --stage-worker "$p/src" "$p/old" data >"$p/old.out" 2>&1 && [ -f "$p/old/data/d/f" ]; then
		WORKER_FORM=old
		WORKER_NOTE="the worker takes only the old form 'SRC DSTDIR NAME'; --threads, --manifest-out and --check are not available"
	else
		WORKER_NOTE="the worker failed a one-file copy: $(tail -1 "$p/new.out")"
	fi
	rm -rf "$p"
}

worker_cmd() {
	if [ "$WORKER_FORM" = new ]; then
		# shellcheck disable=SC2016
		echo '"$IOSTAGED" --stage-worker ${BENCH_THREADS:+--threads "$BENCH_THREADS"} "$1" "$2" >"$2.out" && tail -1 "$2.out" | grep -q "\"ok\":true"'
	else
		# shellcheck disable=SC2016
		echo '"$IOSTAGED" --stage-worker "$1" "$2" data >"$2.out" && tail -1 "$2.out" | grep -q "\"ok\":true"'
	fi
}

# Time a private copy: a rebuild of $BUILD during the run (make, another
# work tree's test) must not swap the engine under the measurements.
IOSTAGED_SRC=$IOSTAGED
IOSTAGED_SHA=null
if [ -x "$IOSTAGED" ]; then
	cp "$IOSTAGED" "$STATE/iostaged" || die "cannot copy $IOSTAGED"
	IOSTAGED="$STATE/iostaged"
	IOSTAGED_SHA=$(sha256sum "$IOSTAGED" | cut -c1-16)
fi

TOOLS=()
for t in $BENCH_TOOLS; do
	case "$t" in
	iostage)
		detect_worker
		if [ "$WORKER_FORM" = none ]; then
			note "iostage: not measured: $WORKER_NOTE"
			continue
		fi
		[ -n "$WORKER_NOTE" ] && note "iostage: $WORKER_NOTE"
		[ -n "$BENCH_THREADS" ] && [ "$WORKER_FORM" = old ] && note "iostage: BENCH_THREADS ignored (old worker form)"
		TOOL_CMD[iostage]=$(worker_cmd)
		;;
	cp | rsync | tar | fpsync | rclone)
		command -v "${TOOL_NEED[$t]}" >/dev/null ||
			{ note "$t: not measured: ${TOOL_NEED[$t]} is not installed (bench/install-deps.sh)"; continue; }
		;;
	*) die "BENCH_TOOLS: unknown tool '$t' (known: cp rsync tar fpsync rclone iostage)" ;;
	esac
	TOOLS+=("$t")
done
[ ${#TOOLS[@]} -gt 0 ] || die "no tool to measure"
for b in cp rsync tar fpsync fpart rclone sync; do
	b=$(command -v "$b") && WARM_BINS+=("$b")
done
[ -x "$IOSTAGED" ] && WARM_BINS+=("$IOSTAGED")

# BENCH_BASELINE=PATH: another build's iostaged (e.g. the tree before a
# refactoring) measured in the same run, beside iostage, interleaved with
# it run by run, so that the two figures share the machine's state.
IOSTAGED_BASE=""
if [ -n "$BENCH_BASELINE" ]; then
	[ -x "$BENCH_BASELINE" ] || die "BENCH_BASELINE=$BENCH_BASELINE is not an executable"
	cp "$BENCH_BASELINE" "$STATE/iostaged-baseline" || die "cannot copy $BENCH_BASELINE"
	IOSTAGED_BASE="$STATE/iostaged-baseline"
	if [ "$WORKER_FORM" = new ]; then
		cmd=$(worker_cmd)
		TOOL_CMD[baseline]=${cmd//\$IOSTAGED/\$IOSTAGED_BASE}
		TOOL_LABEL[baseline]="baseline"
		TOOLS+=(baseline)
		WARM_BINS+=("$IOSTAGED_BASE")
	else
		note "baseline: not measured: iostage itself was not measured (${WORKER_NOTE:-not in BENCH_TOOLS})"
	fi
fi
export IOSTAGED IOSTAGED_BASE BENCH_THREADS FPSYNC_TMP="$W/fpsync"

# run_one DS TOOL REP: one cold run; appends to $RUNS, prints the seconds.
run_one() {
	local ds=$1 tool=$2 rep=$3 src="$W/src/$1" dst="$W/dst/$1.$2" log ok=1 t0 t1 s got
	log="$STATE/$ds.$tool.$rep.log"
	rm -rf "$W/dst" "$FPSYNC_TMP" && mkdir -p "$dst" "$FPSYNC_TMP"
	drop_caches
	t0=$(bench_now)
	timeout -k 10 "$BENCH_TIMEOUT" bash -o pipefail -c "${TOOL_CMD[$tool]} && sync -f \"\$2\"" _ "$src" "$dst" \
		>"$log" 2>&1 || ok=0
	t1=$(bench_now)
	s=$(bench_sub "$t1" "$t0")
	if [ "$ok" = 1 ] && [ "$BENCH_VERIFY" = 1 ]; then
		got=$(tree_sum "$dst/data")
		if [ "$got" != "${DS_SUM[$ds]}" ]; then
			ok=0
			echo "verify: copy has $got (files bytes), source ${DS_SUM[$ds]}" >>"$log"
		fi
	fi
	if [ "$ok" = 0 ]; then
		note "$ds: ${TOOL_LABEL[$tool]} run $rep FAILED: $(grep -v '^{"bytes"' "$log" | tail -1 | cut -c1-300)"
	fi
	printf '%s\t%s\t%s\t%s\t%s\n' "$ds" "$tool" "$rep" "$s" "$ok" >>"$RUNS"
	rm -rf "$W/dst" "$FPSYNC_TMP"
	sync
	echo "$s"
}

elapsed() { bench_sub "$(bench_now)" "$T_START"; }
over_budget() { awk -v e="$(elapsed)" -v m="$BENCH_MAX_SECONDS" 'BEGIN { exit !(e > m) }'; }

# --- the device bound (fio) -----------------------------------------------

FIO_READ=null FIO_WRITE=null FIO_IOPS=null
if [ "$BENCH_FIO" = 1 ] && command -v fio >/dev/null; then
	say "fio: sequential write, sequential read (1 MiB, direct, QD $BENCH_FIO_IODEPTH), random 4 KiB read, ${BENCH_FIO_SECONDS} s each"
	fio_one() { # NAME RW BS IODEPTH -> JSON on stdout
		fio --name="$1" --filename="$W/fio.dat" --size="$BENCH_FIO_SIZE" --rw="$2" --bs="$3" \
			--direct=1 --ioengine=libaio --iodepth="$4" --runtime="$BENCH_FIO_SECONDS" \
			--time_based --group_reporting --output-format=json 2>"$STATE/fio.err"
	}
	if fio_one seqwrite write 1m "$BENCH_FIO_IODEPTH" >"$STATE/fio.w.json" &&
		fio_one seqread read 1m "$BENCH_FIO_IODEPTH" >"$STATE/fio.r.json" &&
		fio_one randread randread 4k 32 >"$STATE/fio.rr.json"; then
		FIO_WRITE=$(jq '.jobs[0].write.bw_bytes' "$STATE/fio.w.json")
		FIO_READ=$(jq '.jobs[0].read.bw_bytes' "$STATE/fio.r.json")
		FIO_IOPS=$(jq '.jobs[0].read.iops | floor' "$STATE/fio.rr.json")
	else
		note "fio failed: $(tail -1 "$STATE/fio.err"); no device bound"
	fi
	rm -f "$W/fio.dat"
elif [ "$BENCH_FIO" = 1 ]; then
	note "fio is not installed (bench/install-deps.sh): no device bound"
fi

# --- datasets and copies --------------------------------------------------

declare -A DS_SUM
DATASETS=()
for ds in $BENCH_DATASETS; do
	case "$ds" in small | imagenet | unet3d | bert) ;; *) die "BENCH_DATASETS: unknown dataset '$ds' (known: small imagenet unet3d bert)" ;; esac
	say "$ds: generating (scale $BENCH_SCALE)"
	out=$("$here/gen-dataset.sh" "$ds" "$W/src/$ds" "$BENCH_SCALE") || die "$ds: generation failed"
	DS_SUM[$ds]=$(tree_sum "$W/src/$ds")
	[ "${DS_SUM[$ds]}" = "$out" ] || die "$ds: generated $out but found ${DS_SUM[$ds]} (files bytes)"
	read -r files bytes <<<"${DS_SUM[$ds]}"
	# The class follows the kind, not the scale: a quick run's small
	# shards are still the large-file case.
	case "$ds" in small | imagenet) class=small-files ;; *) class=large-files ;; esac
	printf '%s\t%s\t%s\t%s\n' "$ds" "$files" "$bytes" "$class" >>"$DSETS"
	DATASETS+=("$ds")
done

# Repeats are interleaved (every tool once, then again) so a drift of the
# machine during the run spreads over all tools rather than hitting one.
for ds in "${DATASETS[@]}"; do
	read -r files bytes <<<"${DS_SUM[$ds]}"
	say "$ds: $files files, $bytes bytes"
	for rep in $(seq 1 "$BENCH_REPEAT"); do
		if [ "$rep" -gt 1 ] && over_budget; then
			note "$ds: stopped after $((rep - 1)) of $BENCH_REPEAT repeats: BENCH_MAX_SECONDS=$BENCH_MAX_SECONDS reached"
			break
		fi
		for tool in "${TOOLS[@]}"; do
			s=$(run_one "$ds" "$tool" "$rep")
			say "$ds: ${TOOL_LABEL[$tool]} run $rep/$BENCH_REPEAT: $s s"
		done
	done
	[ "$BENCH_KEEP" = 1 ] || rm -rf "$W/src/$ds" "$W/src/$ds.gen" "$W/src/$ds.gen.out"
done

# --- the cache-hit path ---------------------------------------------------

HIT_FILES=null HIT_BYTES=null HIT_COPY=null HIT_CHECK=null HIT_CHECK_COLD=null
HIT_RSYNC=null HIT_RSYNC_COLD=null HIT_UNCHANGED=null
D_MISS=null D_HIT=null D_RSS_KB=null D_RSS_IDLE_KB=null D_CACHED=null
B_MISS=null B_HIT=null B_RSS_KB=null
# warm_median CMD...: run once to warm the cache, then BENCH_REPEAT times;
# the median seconds, or nothing when any run fails.
warm_median() {
	local t0 t1 all=""
	"$@" >/dev/null 2>&1 || return 1
	for _ in $(seq 1 "$BENCH_REPEAT"); do
		t0=$(bench_now)
		"$@" >/dev/null 2>&1 || return 1
		t1=$(bench_now)
		all+="$(bench_sub "$t1" "$t0")"$'\n'
	done
	printf '%s' "$all" | bench_median
}
cold_once() {
	local t0 t1
	drop_caches
	t0=$(bench_now)
	"$@" >/dev/null 2>&1 || return 1
	t1=$(bench_now)
	bench_sub "$t1" "$t0"
}

# daemon_round_trip BIN WHAT: the prolog-facing path through a private
# iostaged BIN (WHAT names it in notes): two jobs of one user asking for
# the same dataset, the second a cache hit. Sets R_MISS, R_HIT, R_CACHED,
# R_RSS_KB, R_RSS_IDLE_KB (null when not measured) and stops the daemon.
daemon_round_trip() {
	local bin=$1 what=$2
	R_MISS=null R_HIT=null R_CACHED=null R_RSS_KB=null R_RSS_IDLE_KB=null
	D="$W/daemon"
	rpc=$(bench_helper rpc) || die "cannot build bench/rpc.c"
	rm -rf "$D" && mkdir -p "$D/run" "$D/profiles" && chmod 0755 "$D" "$D/run"
	cap_mb=$(( (HIT_BYTES * 3 + (HIT_FILES * 8192)) / 1048576 + 1024 ))
	cat >"$D/iostage.conf" <<-CONF
		SocketPath=$D/run/iostaged.sock
		StateDir=$D/state
		ProfileDir=$D/profiles
		Tier=nvme Path=$D/tier Capacity=${cap_mb}M Medium=nvme
		DefaultTier=nvme
		StageTimeout=$BENCH_TIMEOUT
	CONF
	sock="$D/run/iostaged.sock"
	if ! "$bin" --check-config -c "$D/iostage.conf" >"$D/check-config.out" 2>&1; then
		note "daemon ($what): not measured: --check-config: $(tail -1 "$D/check-config.out")"
	else
		setsid "$bin" -f -c "$D/iostage.conf" >"$D/iostaged.log" 2>&1 </dev/null &
		DAEMON_PID=$!
		for _ in $(seq 1 100); do
			"$rpc" "$sock" 2 '{"op":"ping"}' >/dev/null 2>&1 && break
			sleep 0.1
		done
		R_RSS_IDLE_KB=$(awk '/^VmRSS:/ { print $2 }' "/proc/$DAEMON_PID/status" 2>/dev/null)
		: "${R_RSS_IDLE_KB:=null}"
		stage_req() {
			printf '{"op":"stage","job":%s,"uid":0,"gid":0,"user":"root","profile":{"datasets":[{"name":"hit","path":"%s","tier":"nvme"}]}}' "$1" "$W/src/hit"
		}
		wait_req() { printf '{"op":"wait","job":%s,"timeout":%s}' "$1" "$BENCH_TIMEOUT"; }
		j1=990000001 j2=990000002
		drop_caches
		if "$rpc" "$sock" $((BENCH_TIMEOUT + 10)) "$(stage_req $j1)" "$(wait_req $j1)" >"$D/j1.out" 2>&1 &&
			grep -q '"state":"staged"' "$D/j1.out"; then
			R_MISS=$(awk '/^elapsed/ { printf "%.3f\n", $2 }' "$D/j1.out")
			# A cache entry in the layout of docs/STAGING.md? Without
			# one the second job would only copy again: skip it.
			if compgen -G "$D/tier/cache/*.v*/meta.json" >/dev/null; then R_CACHED=true; else R_CACHED=false; fi
			if [ "$R_CACHED" = false ]; then
				note "daemon ($what): the first job left no cache entry under TIER/cache (this iostaged does not cache yet): no hit to time"
			elif "$rpc" "$sock" $((BENCH_TIMEOUT + 10)) "$(stage_req $j2)" "$(wait_req $j2)" >"$D/j2.out" 2>&1 &&
				grep -q '"state":"staged"' "$D/j2.out"; then
				R_HIT=$(awk '/^elapsed/ { printf "%.3f\n", $2 }' "$D/j2.out")
			else
				note "daemon ($what): second job did not stage: $(grep -v '^elapsed' "$D/j2.out" | tail -1)"
			fi
			R_RSS_KB=$(awk '/^VmRSS:/ { print $2 }' "/proc/$DAEMON_PID/status" 2>/dev/null)
			: "${R_RSS_KB:=null}"
		else
			note "daemon ($what): first job did not stage: $(grep -v '^elapsed' "$D/j1.out" | tail -1)"
		fi
		"$rpc" "$sock" 60 "{\"op\":\"finish\",\"job\":$j1}" "{\"op\":\"finish\",\"job\":$j2}" >/dev/null 2>&1
		say "daemon ($what): first job ${R_MISS} s, second job ${R_HIT} s, RSS ${R_RSS_KB} kB (idle ${R_RSS_IDLE_KB} kB)"
		stop_daemon
	fi
}

H="$W/hit"
# The worker's check mode (docs/STAGING.md): compare the source with the
# manifest of $H/copy, create nothing; what the daemon runs on a cache hit.
hit_check() {
	rm -rf "$H/check" && mkdir "$H/check" || return 1
	"$IOSTAGED" --stage-worker --check --manifest-in 3 \
		"$W/src/hit" "$H/check" 3<"$H/manifest" >"$H/check.out" 2>"$H/check.err" &&
		grep -q '"ok":true' "$H/check.out"
}
hit_rsync() { rsync -a --dry-run "$W/src/hit/" "$H/copy/data/"; }

if [ "$BENCH_HIT" = 1 ]; then
	say "hit: generating (scale $BENCH_SCALE)"
	out=$("$here/gen-dataset.sh" hit "$W/src/hit" "$BENCH_SCALE") || die "hit: generation failed"
	read -r HIT_FILES HIT_BYTES <<<"$out"
	rm -rf "$H" && mkdir -p "$H/copy"
	say "hit: $HIT_FILES files, $HIT_BYTES bytes; full copy with --manifest-out"
	if [ "$WORKER_FORM" = new ]; then
		drop_caches
		t0=$(bench_now)
		if "$IOSTAGED" --stage-worker --manifest-out 3 "$W/src/hit" "$H/copy" \
			3>"$H/manifest" >"$H/copy.out" 2>&1 && grep -q '"ok":true' "$H/copy.out" && sync -f "$H"; then
			HIT_COPY=$(bench_sub "$(bench_now)" "$t0")
		else
			note "hit: the worker's copy with --manifest-out failed: $(grep -v '^ ' "$H/copy.out" | tail -1)"
		fi
	else
		note "hit: worker check mode not measured: ${WORKER_NOTE:-no worker}"
	fi
	if [ "$HIT_COPY" = null ]; then
		# rsync --dry-run still needs a complete copy to compare against.
		rm -rf "$H/copy" && mkdir -p "$H/copy" && cp -a "$W/src/hit" "$H/copy/data"
	fi
	if [ "$HIT_COPY" != null ]; then
		if hit_check; then
			HIT_UNCHANGED=$(grep -q '"unchanged":true' "$H/check.out" && echo true || echo false)
			[ "$HIT_UNCHANGED" = true ] || note "hit: the check did not report unchanged:true on an unchanged source"
			HIT_CHECK_COLD=$(cold_once hit_check) || HIT_CHECK_COLD=null
			HIT_CHECK=$(warm_median hit_check) || HIT_CHECK=null
			[ -n "$HIT_CHECK" ] || HIT_CHECK=null
		else
			note "hit: worker --check failed: $(cat "$H/check.out" "$H/check.err" | grep -v '^ ' | tail -1)"
		fi
	fi
	HIT_RSYNC_COLD=$(cold_once hit_rsync) || HIT_RSYNC_COLD=null
	HIT_RSYNC=$(warm_median hit_rsync) || HIT_RSYNC=null
	[ -n "$HIT_RSYNC" ] || HIT_RSYNC=null
	say "hit: worker --check ${HIT_CHECK} s warm (${HIT_CHECK_COLD} s cold); rsync --dry-run ${HIT_RSYNC} s warm (${HIT_RSYNC_COLD} s cold)"
	rm -rf "$H"

	# The prolog-facing path: a private iostaged, two jobs of one user
	# asking for the same dataset; the second should be a cache hit.
	if [ "$BENCH_DAEMON" = 1 ] && [ "$(id -u)" -ne 0 ]; then
		note "daemon: not measured: iostaged and its stage op need root"
	elif [ "$BENCH_DAEMON" = 1 ] && [ -x "$IOSTAGED" ]; then
		daemon_round_trip "$IOSTAGED" iostage
		D_MISS=$R_MISS D_HIT=$R_HIT D_CACHED=$R_CACHED D_RSS_KB=$R_RSS_KB D_RSS_IDLE_KB=$R_RSS_IDLE_KB
		if [ -n "$IOSTAGED_BASE" ]; then
			daemon_round_trip "$IOSTAGED_BASE" baseline
			B_MISS=$R_MISS B_HIT=$R_HIT B_RSS_KB=$R_RSS_KB
		fi
	elif [ "$BENCH_DAEMON" = 1 ]; then
		note "daemon: not measured: $IOSTAGED_SRC is not built"
	fi
	[ "$BENCH_KEEP" = 1 ] || rm -rf "$W/src/hit" "$W/src/hit.gen" "$W/src/hit.gen.out"
fi

# --- results ----------------------------------------------------------------

T_END=$(bench_now)
cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
mem_bytes=$(awk '/^MemTotal:/ { print $2 * 1024 }' /proc/meminfo)
tools_json=$(printf '%s\n' "${TOOLS[@]}" | jq -R . | jq -s .)

mkdir -p "$BENCH_RESULTS" || die "cannot write $BENCH_RESULTS"
json="$STATE/result.json"
jq -n \
	--rawfile runs "$RUNS" --rawfile dsets "$DSETS" --rawfile notes "$NOTES" \
	--arg started "$STARTED" --argjson duration "$(bench_sub "$T_END" "$T_START")" \
	--arg git_rev "$git_rev" --argjson git_dirty "$git_dirty" \
	--arg host "$(hostname)" --arg kernel "$(uname -r)" \
	--arg os "$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")" \
	--argjson cpus "$(nproc)" --arg cpu_model "$cpu_model" --argjson mem_bytes "$mem_bytes" \
	--arg bench_dir "$W" --arg fstype "$FSTYPE" --arg device "$FSDEV" \
	--argjson cold "$([ "$COLD" = 1 ] && echo true || echo false)" --arg cold_note "$COLD_NOTE" \
	--argjson scale "$BENCH_SCALE" --argjson repeat "$BENCH_REPEAT" --arg threads "$BENCH_THREADS" \
	--argjson tools "$tools_json" \
	--arg iostaged "$IOSTAGED_SRC" --arg iostaged_sha "$IOSTAGED_SHA" --arg worker_form "$WORKER_FORM" \
	--arg v_cp "$(ver cp --version)" --arg v_rsync "$(ver rsync --version)" \
	--arg v_tar "$(ver tar --version)" --arg v_fpsync "$(fpsync -h 2>&1 | grep -m1 '^fpsync')" \
	--arg v_rclone "$(ver rclone version)" --arg v_fio "$(ver fio --version)" \
	--argjson fio_r "$FIO_READ" --argjson fio_w "$FIO_WRITE" --argjson fio_iops "$FIO_IOPS" \
	--argjson fio_qd "$BENCH_FIO_IODEPTH" --argjson fio_s "$BENCH_FIO_SECONDS" --arg fio_size "$BENCH_FIO_SIZE" \
	--argjson hit_files "$HIT_FILES" --argjson hit_bytes "$HIT_BYTES" \
	--argjson hit_copy "$HIT_COPY" --argjson hit_check "$HIT_CHECK" --argjson hit_check_cold "$HIT_CHECK_COLD" \
	--arg hit_check_cmd "$([ "$HIT_COPY" = null ] && echo "" || echo "--check --manifest-in FD SRC EMPTYDIR")" \
	--argjson hit_rsync "$HIT_RSYNC" --argjson hit_rsync_cold "$HIT_RSYNC_COLD" --argjson hit_unchanged "$HIT_UNCHANGED" \
	--argjson d_miss "$D_MISS" --argjson d_hit "$D_HIT" --argjson d_cached "$D_CACHED" \
	--argjson d_rss_kb "$D_RSS_KB" --argjson d_rss_idle_kb "$D_RSS_IDLE_KB" \
	--arg baseline "$BENCH_BASELINE" \
	--argjson b_miss "$B_MISS" --argjson b_hit "$B_HIT" --argjson b_rss_kb "$B_RSS_KB" \
	-f "$BENCH_SRC/results.jq" >"$json" || die "cannot assemble the results (jq)"

stamp=$(date -u +%Y%m%dT%H%M%SZ)
cp "$json" "$BENCH_RESULTS/$stamp.json" && cp "$json" "$BENCH_RESULTS/LATEST.json"

# --- the table ----------------------------------------------------------------

fmt_s() { [ "$1" = null ] && echo "-" || printf '%.2f' "$1"; }
fmt_x() { [ "$1" = null ] && echo "-" || printf '%.2fx' "$1"; }
echo
printf 'iostage bench  %s  %s, %s CPUs, %s on %s (%s)  scale %s, median of %s, %s cache\n' \
	"$STARTED" "$(hostname)" "$(nproc)" "$FSTYPE" "$FSDEV" "$W" "$BENCH_SCALE" "$BENCH_REPEAT" \
	"$([ "$COLD" = 1 ] && echo cold || echo WARM)"
if [ "$FIO_READ" != null ]; then
	jq -r '.fio | "fio: read \(.read_bw_bytes / 1e6 | floor) MB/s, write \(.write_bw_bytes / 1e6 | floor) MB/s (1 MiB, direct, QD \(.iodepth)), random 4 KiB read \(.randread_4k_iops) IOPS"' "$json"
fi
echo "seconds, copy + sync, cold cache; speedup = cp -r / iostage; vs bound = iostage / (bytes/read + bytes/write)"
{
	printf 'dataset\tfiles\tbytes'
	for t in cp rsync tar fpsync rclone iostage; do printf '\t%s' "${TOOL_LABEL[$t]}"; done
	printf '\tbound\tspeedup vs cp\tvs bound\ttarget\n'
	jq -r '.datasets[] | [.name, .files, .bytes_h,
		(.tools.cp.median_s // "null"), (.tools.rsync.median_s // "null"), (.tools.tar.median_s // "null"),
		(.tools.fpsync.median_s // "null"), (.tools.rclone.median_s // "null"), (.tools.iostage.median_s // "null"),
		(.bound_s // "null"), (.iostage_speedup_vs_cp // "null"), (.iostage_vs_bound // "null"),
		.target.text] | @tsv' "$json" |
		while IFS=$'\t' read -r n f b cp rs ta fp rc io bd sp vb tg; do
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$f" "$b" \
				"$(fmt_s "$cp")" "$(fmt_s "$rs")" "$(fmt_s "$ta")" "$(fmt_s "$fp")" "$(fmt_s "$rc")" \
				"$(fmt_s "$io")" "$(fmt_s "$bd")" "$(fmt_x "$sp")" "$(fmt_x "$vb")" "$tg"
		done
} | column -t -s $'\t'
echo
jq -r '.cache_hit | select(.files != null) |
	"cache hit, \(.files) files: worker --check \(.check_warm_s // "-") s warm (\(.check_cold_s // "-") s cold), rsync -a --dry-run \(.rsync_dry_run_warm_s // "-") s warm (\(.rsync_dry_run_cold_s // "-") s cold), rsync/check \(.rsync_over_check // "-")x",
	"  target < 0.5 s and >= 10x rsync --dry-run: \(.target.text)",
	(select(.daemon.first_job_s != null) | "  prolog-facing (private iostaged, stage+wait): first job \(.daemon.first_job_s) s, second job \(.daemon.second_job_s // "-") s (cache entry: \(.daemon.cache_entry)); target < 0.5 s: \(.daemon.target.text)"),
	(select(.rss.rss_bytes != null) | "  iostaged RSS after caching \(.files) files: \(.rss.rss_bytes / 1048576 * 10 | floor / 10) MiB (idle \(.rss.idle_rss_bytes / 1048576 * 10 | floor / 10) MiB); target < \(.rss.limit_bytes / 1048576 * 10 | floor / 10) MiB (64 MiB + 200 B/file): \(.rss.target.text)")' "$json"
jq -r '.baseline | select(. != null) |
	"baseline \(.iostaged) in the same run (iostage / baseline):",
	(.datasets[] | "  \(.name): iostage \(.iostage_s // "-") s, baseline \(.baseline_s // "-") s, \(.ratio // "-")x"),
	"  prolog-facing first job: iostage \(.daemon.first_job_s.iostage // "-") s, baseline \(.daemon.first_job_s.baseline // "-") s",
	"  prolog-facing second job (hit): iostage \(.daemon.second_job_s.iostage // "-") s, baseline \(.daemon.second_job_s.baseline // "-") s",
	"  iostaged RSS after caching: iostage \(.daemon.rss_kb.iostage // "-") kB, baseline \(.daemon.rss_kb.baseline // "-") kB"' "$json"
if [ -s "$NOTES" ]; then
	echo
	echo "notes:"
	sed 's/^/  /' "$NOTES"
fi
jq -r '.summary | "\ntargets: \(.met) met, \(.missed) MISSED, \(.not_measured) not measured"' "$json"
echo "results: $BENCH_RESULTS/LATEST.json (also $stamp.json)"
exit 0
