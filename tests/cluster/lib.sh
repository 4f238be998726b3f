# shellcheck shell=bash
# Helpers for the multi-node cluster tests. Sourced by run.sh and by every
# test (after `. CLUSTER_DIR/env.sh`). It sources the one-node harness's
# tests/integration/lib.sh (asserts, submit_wait, job_state, ...) and
# datasets.sh, and makes them work on the cluster:
#
# - The test itself runs on the host, outside the cluster. The Slurm client
#   commands (sbatch, srun, salloc, squeue, scontrol, sinfo, scancel) are
#   shell functions here that run on the login node as root, and as_user
#   runs its command on the login node as that user: so submit_wait USER
#   ... submits from login, as a user would.
# - on_node NODE CMD... runs CMD as root inside one node (ctl, login, n1..).
#
# Variables (from env.sh and run.sh):
#   CLUSTER_DIR    the cluster's directory   SLURM_CONF  its slurm.conf
#   CLUSTER_COMPUTE_NODES "n1 n2 n3"         IOSTAGE_CONF the one iostage.conf
#   IOSTAGE_ROOT   the installed iostage tree (make install DESTDIR=)
#   CLUSTER_PFS    $CLUSTER_DIR/pfs: shared by every node, put sources here
#   CLUSTER_SHARED $CLUSTER_DIR/shared: the Shared=yes tier "bb" lives here
#   TEST_WORKDIR   a fresh world-writable directory, shared by every node
#   TEST_USER=iostage-test OTHER_USER=iostage-other (the same on every node)
#
# Paths in iostage.conf under $CLUSTER_DIR/local are node-local: on the
# host, node N's copy is "$(node_local N)" (so "$(node_local n2)/nvme" is
# n2's nvme tier); everything else is the same path on every node.

CL_DIR=${CL_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)}
IT_DIR=${IT_DIR:-$(cd "$CL_DIR/../integration" && pwd -P)}
REPO_ROOT=${REPO_ROOT:-$(cd "$CL_DIR/../.." && pwd -P)}
# shellcheck source=tests/integration/lib.sh
. "$IT_DIR/lib.sh"
# shellcheck source=tests/integration/datasets.sh
. "$IT_DIR/datasets.sh"

CLUSTER_PFS=${CLUSTER_DIR:+$CLUSTER_DIR/pfs}
CLUSTER_SHARED=${CLUSTER_DIR:+$CLUSTER_DIR/shared}

# --- running things on nodes ---------------------------------------------------

cluster_ns_prefix() {
	printf 'iosc-%s' "$(printf '%s' "$CLUSTER_DIR" | cksum | cut -d' ' -f1)"
}

# on_node NODE CMD...: CMD as root inside NODE's network, UTS and mount
# namespaces, in the current directory, with SLURM_CONF and the installed
# iostage on PATH. Its exit code is CMD's.
on_node() {
	local node=$1
	shift
	[ -e "$CLUSTER_DIR/ns/$node.uts" ] || { echo "on_node: no node '$node'" >&2; return 127; }
	local root=()
	# in a release root (tests/releases/root.sh): back into it, here
	[ -n "${IOSTAGE_HOST_ROOT:-}" ] &&
		root=(chroot "$IOSTAGE_HOST_ROOT" /bin/sh -c 'cd "$0" && exec "$@"' "$PWD")
	nsenter --net="/run/netns/$(cluster_ns_prefix)-$node" \
		--uts="$CLUSTER_DIR/ns/$node.uts" --mount="$CLUSTER_DIR/ns/$node.mnt" \
		--wd="$PWD" -- "${root[@]}" env SLURM_CONF="$SLURM_CONF" \
		PATH="$IOSTAGE_ROOT/usr/bin:$IOSTAGE_ROOT/usr/sbin:$PATH" "$@"
}

# on_node_as USER NODE CMD...: the same, as USER (a login shell's view:
# HOME and USER set, nothing else of root's environment).
on_node_as() {
	local u=$1 node=$2
	shift 2
	on_node "$node" runuser -u "$u" -- env SLURM_CONF="$SLURM_CONF" \
		PATH="$IOSTAGE_ROOT/usr/bin:/usr/local/bin:/usr/bin:/bin" \
		HOME="$(user_home "$u")" USER="$u" "$@"
}

# as_user USER CMD...: CMD as USER on the login node (replaces the one-node
# helper, so submit/submit_wait submit from login).
as_user() {
	local u=$1
	shift
	on_node_as "$u" login "$@"
}

# The Slurm clients, as root on the login node.
sbatch() { on_node login sbatch "$@"; }
srun() { on_node login srun "$@"; }
salloc() { on_node login salloc "$@"; }
squeue() { on_node login squeue "$@"; }
scontrol() { on_node login scontrol "$@"; }
sinfo() { on_node login sinfo "$@"; }
scancel() { on_node login scancel "$@"; }

# iostage_on NODE ARGS...: the iostage CLI as root on NODE
iostage_on() {
	local node=$1
	shift
	on_node "$node" iostage -c "$IOSTAGE_CONF" "$@"
}

# --- nodes ---------------------------------------------------------------------

# node_local NODE: NODE's own directory behind $CLUSTER_DIR/local, as the
# host sees it (StateDir, nvme and ram tiers)
node_local() { echo "$CLUSTER_DIR/nodes/$1/local"; }

# tier_cache NODE TIER: the cache directory of TIER as NODE sees it, as a
# host path (the same for every node on the shared tier "bb")
tier_cache() {
	case $2 in
		bb) echo "$CLUSTER_SHARED/bb/cache" ;;
		*) echo "$(node_local "$1")/$2/cache" ;;
	esac
}

# cache_versions NODE TIER: the published cache versions (K.vN) on it
cache_versions() {
	local d
	d=$(tier_cache "$1" "$2")
	[ -d "$d" ] || return 0
	(cd "$d" && ls -1d -- *.v[0-9]* 2>/dev/null)
}

# cache_versions_of NODE TIER SRC: the published versions of source SRC
# that are whole copies (not a spread dataset's part nor a fill by parts'
# share: meta.json's "part":true; cache_parts_of lists those)
cache_versions_of() {
	local d v
	d=$(tier_cache "$1" "$2")
	for v in $(cache_versions "$1" "$2"); do
		grep -qF "\"src\":\"$3\"" "$d/$v/meta.json" 2>/dev/null &&
			! grep -qF '"part":true' "$d/$v/meta.json" && echo "$v"
	done
}

# cache_parts_of NODE TIER SRC: the published parts (and shares) of SRC
cache_parts_of() {
	local d v
	d=$(tier_cache "$1" "$2")
	for v in $(cache_versions "$1" "$2"); do
		grep -qF "\"src\":\"$3\"" "$d/$v/meta.json" 2>/dev/null &&
			grep -qF '"part":true' "$d/$v/meta.json" && echo "$v"
	done
}

node_state() { sinfo -h -N -n "${1:?node}" -o '%T' 2>/dev/null | head -n1; }
node_reason() { sinfo -h -N -n "${1:?node}" -o '%E' 2>/dev/null | head -n1; }

# wait_node_state NODE STATE_REGEX [TIMEOUT_S=20]
wait_node_state() {
	local node=$1 want=$2 t=${3:-20} i st
	for ((i = 0; i < t * 5; i++)); do
		st=$(node_state "$node")
		[[ "$st" =~ ^($want)$ ]] && return 0
		sleep 0.2
	done
	echo "wait_node_state: $node is '$st', wanted '$want' after ${t}s" >&2
	return 1
}

# node_stop NODE: the node goes down hard (every process in it is killed:
# slurmd, steps, tasks, Prolog, iostaged and its workers), and the
# controller is told at once, as SlurmdTimeout would tell it later: the
# node is DOWN and its jobs end (JobRequeue=0: they are not requeued).
node_stop() {
	bash "$CL_DIR/cluster.sh" node-stop "$CLUSTER_DIR" "$1"
	scontrol update NodeName="$1" State=DOWN Reason="test: node stopped" >/dev/null
}

# node_start NODE: iostaged then slurmd again; waits until the node is idle
node_start() {
	bash "$CL_DIR/cluster.sh" node-start "$CLUSTER_DIR" "$1" || return 1
	scontrol update NodeName="$1" State=RESUME >/dev/null 2>&1
	wait_node_state "$1" idle 30
}

# --- iostaged on a node --------------------------------------------------------

iostaged_pid() {
	local pid
	pid=$(cat "$CLUSTER_DIR/nodes/$1/iostaged.pid" 2>/dev/null) || return 1
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = iostaged ] && echo "$pid"
}

# iostaged_log NODE: the path of NODE's iostaged log (appended across restarts)
iostaged_log() { echo "$CLUSTER_DIR/log/iostaged.$1.log"; }

# iostaged_kill NODE: kill -9 its iostaged, as a crash would (its stage
# workers die with it: PR_SET_PDEATHSIG)
iostaged_kill() {
	local pid
	pid=$(iostaged_pid "$1") || return 0
	kill -KILL "$pid"
	for _ in $(seq 1 100); do pid_running "$pid" || break; sleep 0.05; done
	rm -f "$CLUSTER_DIR/nodes/$1/iostaged.pid"
}

# iostaged_stop NODE: SIGTERM and wait
iostaged_stop() {
	local pid
	pid=$(iostaged_pid "$1") || return 0
	kill -TERM "$pid"
	for _ in $(seq 1 100); do pid_running "$pid" || break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null
	rm -f "$CLUSTER_DIR/nodes/$1/iostaged.pid"
}

# iostaged_start NODE: start it on NODE (after a kill or stop); waits
# until it answers
iostaged_start() { bash "$CL_DIR/cluster.sh" iostaged-start "$CLUSTER_DIR" "$1"; }

# iostaged_request NODE [USER] JSON: one raw protocol line to NODE's iostaged
iostaged_request() {
	local node=$1 user=root
	shift
	[ $# -gt 1 ] && { user=$1; shift; }
	printf '%s\n' "$1" |
		on_node "$node" runuser -u "$user" -- socat -t 5 - UNIX-CONNECT:/run/iostage/iostaged.sock
}

# wait_log NODE REGEX [TIMEOUT_S=30]: until NODE's iostaged log matches
wait_log() {
	local f t=${3:-30} i
	f=$(iostaged_log "$1")
	for ((i = 0; i < t * 10; i++)); do
		grep -qE -- "$2" "$f" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "wait_log: '$2' not in $f after ${t}s" >&2
	return 1
}

# log_count NODE REGEX: lines of NODE's iostaged log matching REGEX
log_count() { grep -cE -- "$2" "$(iostaged_log "$1")" 2>/dev/null; }

# wait_log_count NODE REGEX N [TIMEOUT_S=30]: until N lines match
wait_log_count() {
	local t=${4:-30} i
	for ((i = 0; i < t * 10; i++)); do
		[ "$(log_count "$1" "$2")" -ge "$3" ] && return 0
		sleep 0.1
	done
	echo "wait_log_count: '$2' $(log_count "$1" "$2") times on $1 after ${t}s, not $3" >&2
	return 1
}

# slurmd_signal NODE SIG: send SIG (STOP, CONT) to NODE's slurmd, e.g. to
# hold back its part of a job's start
slurmd_signal() {
	on_node "$1" sh -c "kill -$2 \$(cat '$CLUSTER_DIR/nodes/$1/slurmd.pid')"
}

# --- datasets ------------------------------------------------------------------

# pfs_dataset NAME [FILES=0] [SIZE=110000]: a dataset NAME (so its
# IOSTAGE_DATA_<NAME>) under the shared PFS, owned by TEST_USER:
# make_dataset's tree plus FILES extra files of SIZE bytes; prints its path
pfs_dataset() {
	local d="$CLUSTER_PFS/$TEST_NAME/$1" i
	make_dataset "$d" >/dev/null
	for ((i = 0; i < ${2:-0}; i++)); do
		head -c "${3:-110000}" /dev/urandom >"$d/train/a/f$i.bin"
	done
	chown -R "$TEST_USER:" "$CLUSTER_PFS/$TEST_NAME"
	echo "$d"
}

# slow_dataset NAME [MIB=10]: MIB MiB in 1000-byte files (1000 files per
# MiB): slow enough to copy that a test can act while it is being built
slow_dataset() {
	local d="$CLUSTER_PFS/$TEST_NAME/$1"
	mkdir -p "$d/a" "$d/b"
	head -c $((${2:-10} * 500000)) /dev/urandom | (cd "$d/a" && split -b 1000 -a 4 - f)
	head -c $((${2:-10} * 500000)) /dev/urandom | (cd "$d/b" && split -b 1000 -a 4 - f)
	chown -R "$TEST_USER:" "$CLUSTER_PFS/$TEST_NAME"
	echo "$d"
}

# stage_worker_stop SRC: SIGSTOP the stage workers copying SRC (on any
# node): a build frozen mid-copy, for crash tests. 1 if there was none.
stage_worker_stop() {
	[ -n "$1" ] || return 2
	pkill -STOP -f -- "--stage-worker .*$1 "
}

# stage_worker_cont SRC: let them go on
stage_worker_cont() {
	[ -n "$1" ] || return 2
	pkill -CONT -f -- "--stage-worker .*$1 "
}

# wait_file FILE [TIMEOUT_S=30]
wait_file() {
	local t=${2:-30} i
	for ((i = 0; i < t * 10; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	echo "wait_file: no $1 after ${t}s" >&2
	return 1
}

# wait_finished NODE JOBID: NODE's iostaged has finished the job (Epilog)
wait_finished() { wait_log "$1" "job $2: finished" "${3:-30}"; }

# --- iostagectld on ctl --------------------------------------------------------
# (cluster.sh starts it when CLUSTER_CONTROLLER=yes, the default: the one
# iostage.conf then says ControllerHost=ctl ControllerPort=6827.)

ctld_pid() {
	local pid
	pid=$(cat "$CLUSTER_DIR/nodes/ctl/iostagectld.pid" 2>/dev/null) || return 1
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = iostagectld ] && echo "$pid"
}

# ctld_log: the path of iostagectld's log (appended across restarts)
ctld_log() { echo "$CLUSTER_DIR/log/iostagectld.log"; }

# ctld_history_dir: the service's RocksDB history, as the host sees it
ctld_history_dir() { echo "$CLUSTER_DIR/nodes/ctl/local/state/history"; }

# ctld_start: start it on ctl (after a stop or kill); waits until ready
ctld_start() { bash "$CL_DIR/cluster.sh" ctld-start "$CLUSTER_DIR"; }

# ctld_stop: SIGTERM and wait
ctld_stop() {
	local pid
	pid=$(ctld_pid) || return 0
	kill -TERM "$pid"
	for _ in $(seq 1 100); do pid_running "$pid" || break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null
	rm -f "$CLUSTER_DIR/nodes/ctl/iostagectld.pid"
}

# ctld_kill: kill -9, as a crash would
ctld_kill() {
	local pid
	pid=$(ctld_pid) || return 0
	kill -KILL "$pid"
	for _ in $(seq 1 100); do pid_running "$pid" || break; sleep 0.05; done
	rm -f "$CLUSTER_DIR/nodes/ctl/iostagectld.pid"
}

# ctld_request [NODE=login] [USER=root] JSON: one request to iostagectld
# from NODE as USER, inside that user's MUNGE credential (munge -s, as
# common/net/peernet does it); the reply line on stdout.
ctld_request() {
	local node=login user=root
	[ $# -gt 2 ] && { node=$1; shift; }
	[ $# -gt 1 ] && { user=$1; shift; }
	# shellcheck disable=SC2016
	on_node "$node" runuser -u "$user" -- sh -c '
		cred=$(munge -s "$1") || exit 1
		printf "{\"cred\":\"%s\"}\n" "$cred" | socat -t 5 - TCP:ctl:6827' \
		ctld-request "$1"
}
