# shellcheck shell=bash
# cluster-lib.sh - the host side shared by the benches that run jobs on the
# 3-node test cluster over bench/pfs.sh's GlusterFS (bench/cluster-cache.sh,
# bench/cluster-spread.sh; sourced after bench/lib.sh, never run).
#
# The caller sets BCL_NAME (its messages' prefix), BCL_LINES (an extended
# regex: the jobs file's lines to show on stderr) and, before bcl_start,
# BCL_DIR (its work directory, absolute); bcl_start takes the directory's
# lock, sets PFS_DIR, MNT (the host's mount of the PFS) and STATE (the run's
# scratch, emptied), and arms the tear-down. Then bcl_pfs_up, bcl_put
# (datasets onto the PFS), bcl_run_jobs (the cluster runner over a jobs
# file), and the results from there.
#
# The tear-down, on any exit, goes in this order: the cluster runner first
# (it stops the cluster, whose nodes read the PFS), then the per-node
# clients the jobs file left (by their pid files, STATE/client.*.pid), then
# the PFS. The runner runs in a process group of its own (BCL_RUNNER_PGID):
# a Ctrl-C here is passed on to it as a TERM and waited for, since the PFS
# must not go while the nodes still read it (a FUSE mount whose server is
# gone hangs the runner's own checks and its clean-up).

: "${PFS_RATE:=1gbit}"
export PFS_RATE PFS_NAME=${PFS_NAME:-iostage-pfs29} PFS_NET=${PFS_NET:-10.214.29} PFS_QUEUE=${PFS_QUEUE:-1429}

die() { echo "$BCL_NAME: $*" >&2; exit 1; }
say() { echo "$BCL_NAME: $*" >&2; }
# The PFS's daemons must not inherit the run's lock (fd 9).
pfs() { "$BENCH_SRC/pfs.sh" "$@" 9>&-; }

# bcl_check: what every such bench needs before it starts
bcl_check() {
	[ "$(id -u)" -eq 0 ] || die "must run as root (it boots the test cluster and bench/pfs.sh)"
	command -v jq >/dev/null || die "jq is missing: run bench/install-deps.sh"
	command -v glusterfs >/dev/null || die "glusterfs is missing: run bench/install-deps.sh"
	case "$BCL_DIR" in /*) ;; *) die "the work directory must be absolute, got '$BCL_DIR'" ;; esac
}

BCL_RUNNER_PGID=
bcl_stop_runner() {
	local i
	[ -n "$BCL_RUNNER_PGID" ] || return 0
	kill -TERM -- "-$BCL_RUNNER_PGID" 2>/dev/null
	for ((i = 0; i < 1200; i++)); do
		kill -0 -- "-$BCL_RUNNER_PGID" 2>/dev/null || break
		sleep 0.1
	done
	BCL_RUNNER_PGID=
}
bcl_cleanup() {
	local f
	bcl_stop_runner
	for f in "$STATE"/client.*.pid; do
		[ -f "$f" ] && pfs unclient /nonexistent "$f" >/dev/null 2>&1
	done
	pfs down >/dev/null 2>&1
}

# bcl_start: lock BCL_DIR, set PFS_DIR, MNT, STATE, T0, STARTED, LOAD0,
# arm the tear-down
bcl_start() {
	mkdir -p "$BCL_DIR" || die "cannot create $BCL_DIR"
	exec 9>>"$BCL_DIR/.lock"
	flock -n 9 || die "another run is using $BCL_DIR"
	export PFS_DIR="$BCL_DIR/pfs"
	MNT=$PFS_DIR/mnt
	STATE=$BCL_DIR/state
	rm -rf "$STATE" && mkdir -p "$STATE" "$BCL_DIR/gen" || die "cannot create $STATE"
	T0=$(bench_now)
	STARTED=$(date -u +%FT%TZ)
	LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
	trap bcl_cleanup EXIT
	trap 'say "interrupted: stopping the cluster, then the PFS"; exit 130' INT
	trap 'say "terminated: stopping the cluster, then the PFS"; exit 143' TERM
}

# bcl_pfs_up: the PFS up with no added delay (for writing the datasets);
# RATE_BPS, its cap in bytes/s
bcl_pfs_up() {
	pfs down >/dev/null 2>&1
	PFS_RTT_MS=0 pfs up || die "the PFS did not come up"
	# shellcheck disable=SC2034 # the caller's
	RATE_BPS=$(bench_rate_bps "$PFS_RATE")
}

# bcl_put SRC NAME FILES BYTES: a copy of directory SRC at MNT/NAME,
# checked to hold FILES files of BYTES bytes in all, readable by everyone
bcl_put() {
	local src=$1 name=$2 f b
	# many writers: one file per round trip would take minutes
	(cd "$src" && mkdir -p "$MNT/$name" &&
		find . -mindepth 1 -type d -printf '%P\0' | (cd "$MNT/$name" && xargs -0 -r mkdir -p) &&
		find . -type f -printf '%P\0' | xargs -0 -r -n 64 -P 16 cp --parents -t "$MNT/$name") ||
		die "cannot write $name to the PFS"
	read -r f b < <(find "$MNT/$name" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%d %d\n", NR, s }')
	[ "$f $b" = "$3 $4" ] || die "$name on the PFS has $f files, $b B; want $3, $4"
	chmod -R a+rX "$MNT/$name"
}

# bcl_pfs_ready RTT_MS: the delay on, the host's client fresh and cold
bcl_pfs_ready() {
	sync
	pfs rtt "$1" || die "cannot set the RTT"
	pfs cold || die "cannot make the PFS cold"
}

# bcl_run_jobs LOG JOBSFILE [VAR=VALUE...]: the cluster runner
# (tests/cluster/run.sh, which takes the machine's suite lock and waits
# while another suite runs) over JOBSFILE, the PFS as the cluster's
# (CLUSTER_PFS_DIR), the VARs in its environment; its output in LOG, the
# lines that say how it went on stderr. Returns 0 when every test passed.
bcl_run_jobs() {
	local log=$1 jobs=$2
	shift 2
	env BCJ_PFS="$BENCH_SRC/pfs.sh" BCJ_STATE="$STATE" CLUSTER_PFS_DIR="$MNT" \
		IT_VERBOSE=1 BUILD="$BUILD" "$@" \
		setsid bash "$BENCH_TOP/tests/cluster/run.sh" "$jobs" 9>&- >"$log" 2>&1 </dev/null &
	# setsid forks only when its caller leads a process group; a job
	# started with & here never does, so $! (env, which execs setsid,
	# which execs bash) is the group's leader and its id.
	BCL_RUNNER_PGID=$!
	wait "$BCL_RUNNER_PGID"
	# the runner's clean-up is done when nothing of its group is left
	bcl_stop_runner
	grep -E "^(PASS|FAIL|[0-9]+ passed)|$BCL_LINES" "$log" | sed 's/^    //' >&2
	grep -q '^1 passed' "$log"
}

# bcl_machine_json: the run's date, git, machine and load as JSON
bcl_machine_json() {
	jq -n --arg date "$STARTED" --arg git "$(git -C "$BENCH_TOP" rev-parse --short HEAD 2>/dev/null || echo -)" \
		--arg cpu "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n1)" --argjson cpus "$(nproc)" \
		--arg kernel "$(uname -r)" --arg load0 "$LOAD0" --arg load1 "$(cut -d' ' -f1-3 /proc/loadavg)" \
		--argjson secs "$(awk -v a="$(bench_now)" -v b="$T0" 'BEGIN { printf "%.0f", a - b }')" '
		{date: $date, git: $git, seconds: $secs,
		 machine: {cpus: $cpus, cpu: $cpu, kernel: $kernel, loadavg_start: $load0, loadavg_end: $load1}}'
}
