#!/usr/bin/env bash
# A multi-node Slurm 22.05 cluster with iostage on one machine, for tests.
#
#   cluster.sh start DIR     boot it (a few seconds): namespaces, network,
#                            munged, slurmctld, a slurmd and an iostaged
#                            per compute node; wait until every node is idle
#   cluster.sh stop DIR      stop everything start made; never fails
#   cluster.sh status DIR    nodes, daemons, namespaces
#   cluster.sh node-stop DIR NODE    kill every process of one node
#   cluster.sh node-start DIR NODE   start its slurmd and iostaged again
#   cluster.sh iostaged-start DIR NODE  start the node's iostaged
#   cluster.sh ctld-start DIR        start iostagectld on ctl (again)
#
# Must run as root. DIR is the cluster's directory (made 0755 so users can
# reach their job directories under it). After start, `. DIR/env.sh`.
#
# How it is built (docs/ADMIN.md "The test cluster"; the facts are in
# ../shared/REFERENCE.md): every node -- "ctl" (slurmctld), "login" (users
# submit from it; no slurmd, no iostaged) and compute nodes n1..nN -- is a
# network namespace (ip netns, named PREFIX-NODE, PREFIX unique per DIR)
# plus a UTS namespace (its own hostname) and a mount namespace, both kept
# alive by bind mounts on files in DIR/ns (itself a private bind mount).
# Processes enter a node with nsenter, never `ip netns exec` (which remounts
# /sys without the cgroup tree slurmd needs). Each node has a veth to a
# bridge inside ctl's namespace, on a /24 that exists only in the cluster's
# namespaces; the host's network is never touched. Inside each node's mount
# namespace:
#   /run             <- DIR/nodes/NODE/run    (its own iostaged socket)
#   /run/munge       <- DIR/munge             (the cluster's munged socket,
#                                              libmunge's default path)
#   /etc/hosts       <- DIR/hosts             (every node by name)
#   DIR/local        <- DIR/nodes/NODE/local  (StateDir, node-local tiers)
# Shared by all nodes as on a real cluster: DIR/pfs (the "PFS"),
# DIR/shared (Shared=yes tiers), DIR/tests (job working directories),
# the users, /tmp, the PID namespace. One iostage.conf serves every node
# (write_iostage_conf below).
#
# Environment read by `start`:
#   CLUSTER_NODES        number of compute nodes (default 3)
#   CLUSTER_CTLD_PORT    SlurmctldPort (default 16817)
#   CLUSTER_SLURMD_PORT  SlurmdPort    (default 16818)
#   CLUSTER_DEBUG        Slurm debug level (default info)
#   CLUSTER_START_TIMEOUT seconds to wait for idle nodes (default 30)
#   CLUSTER_EXTRA_CONF   lines appended to slurm.conf
#   IOSTAGE_EXTRA_CONF   lines appended to iostage.conf
#   CLUSTER_CONTROLLER   yes (default): iostagectld, the history service,
#                        runs on ctl and iostage.conf says ControllerHost=ctl;
#                        no: no service, every node keeps its own history
#   CLUSTER_NO_INSTALL=1 reuse DIR/iostage/root instead of `make install`
#   CLUSTER_PFS_DIR      a directory (e.g. bench/pfs.sh's GlusterFS mount)
#                        to use as the cluster's PFS: bind-mounted on DIR/pfs
#                        before the nodes are made, so every node sees it
#                        there (its client stays the host's: a remount on
#                        the host after start is not seen by the nodes);
#                        unmounted by stop. Default: DIR/pfs, a plain
#                        directory on the host's file system
#   CLUSTER_PFS_OBSERVE=yes  iostage.conf says PfsPath=DIR/pfs: auto jobs
#                        without advice are observed (docs/HISTORY.md)
#   CLUSTER_NVME_CAPACITY  Capacity= of the node-local nvme tier (20G)
#   CLUSTER_RAM_CAPACITY   Capacity= of the node-local ram tier (256M)
set -uo pipefail

CL_SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO_ROOT=${REPO_ROOT:-$(cd "$CL_SCRIPT_DIR/../.." && pwd -P)}
SLURM_SBIN=${SLURM_SBIN:-/usr/sbin}
# The cluster's private network: only ever inside its namespaces.
NET_PREFIX=10.199.0

die() { echo "cluster.sh: $*" >&2; exit 1; }
log() { [ -n "${CLUSTER_QUIET:-}" ] || echo "cluster.sh: $*" >&2; }

# --- names ---------------------------------------------------------------------

# ns_prefix DIR: the netns name prefix of the cluster in DIR, unique per DIR
# (and short: it is a file name in /run/netns, not an interface name).
ns_prefix() {
  printf 'iosc-%s' "$(printf '%s' "$1" | cksum | cut -d' ' -f1)"
}

# compute node names of DIR (from its saved node count)
compute_nodes() {
  local n i
  n=$(cat "$1/nodes.count" 2>/dev/null || echo "${CLUSTER_NODES:-3}")
  for ((i = 1; i <= n; i++)); do echo "n$i"; done
}

all_nodes() { echo ctl; echo login; compute_nodes "$1"; }

# node_addr NODE: its address on the private /24
node_addr() {
  case $1 in
    ctl) echo "$NET_PREFIX.1" ;;
    login) echo "$NET_PREFIX.2" ;;
    n*) echo "$NET_PREFIX.$((10 + ${1#n}))" ;;
  esac
}

# --- namespaces ----------------------------------------------------------------

# in_node DIR NODE CMD...: run CMD inside NODE's namespaces, same cwd
in_node() {
  local dir=$1 node=$2
  shift 2
  node_root_words
  nsenter --net="/run/netns/$(ns_prefix "$dir")-$node" \
    --uts="$dir/ns/$node.uts" --mount="$dir/ns/$node.mnt" --wd="$PWD" -- \
    "${NODE_ROOT[@]}" "$@"
}

# node_root_words: NODE_ROOT, the words that take a process that entered
# a node's mount namespace back into the release root at the same
# directory, in a release root (tests/releases/root.sh chroots into
# IOSTAGE_HOST_ROOT; a node's namespace has the host's root); none on a
# host.
node_root_words() {
  NODE_ROOT=()
  [ -n "${IOSTAGE_HOST_ROOT:-}" ] || return 0
  NODE_ROOT=(chroot "$IOSTAGE_HOST_ROOT" /bin/sh -c 'cd "$0" && exec "$@"' "$PWD")
}

# ns_inode FILE: the namespace inode a bind-mounted ns file names
ns_inode() { stat -L -c %i "$1" 2>/dev/null; }

# ns_pids KIND:FILE...: pids of every process in the namespaces named by
# the bind-mounted ns files (KIND uts or net), from one pass over /proc
ns_pids() {
  local want="" a ino p l
  for a in "$@"; do
    ino=$(ns_inode "${a#*:}") && [ -n "$ino" ] && want="$want ${a%%:*}:[$ino]"
  done
  [ -n "$want" ] || return 0
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = 1 ] && continue
    for l in "$(readlink "$p/ns/uts" 2>/dev/null)" "$(readlink "$p/ns/net" 2>/dev/null)"; do
      [ -n "$l" ] || continue
      case "$want " in *" $l "*) echo "${p#/proc/}"; break ;; esac
    done
  done
}

# pid_running PID: a live process, not a zombie
. "$CL_SCRIPT_DIR/../integration/pidstate.sh"
. "$CL_SCRIPT_DIR/../releases/slurmconf.sh"

# kill_and_wait PIDS...: SIGTERM, SIGKILL what is left after 5 s
kill_and_wait() {
  local i p left
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null
  for ((i = 0; i < 50; i++)); do
    left=
    for p in "$@"; do pid_running "$p" && left=1; done
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null
  sleep 0.2
}

make_node_ns() {
  local dir=$1 node=$2 pfx
  pfx=$(ns_prefix "$dir")
  ip netns add "$pfx-$node" || return 1
  mkdir -p "$dir/nodes/$node/run/munge" "$dir/nodes/$node/local"
  chmod 0755 "$dir/nodes/$node" "$dir/nodes/$node/run" "$dir/nodes/$node/local"
  : >"$dir/ns/$node.uts"
  : >"$dir/ns/$node.mnt"
  # The mounts are made inside the new namespaces and stay there. Inside
  # a mount namespace of its own (a release root, tests/releases) this
  # machine's kernel now and then refuses to bind the new namespace's
  # file (EINVAL; seen in a few cluster starts there, never on the host,
  # not reproduced alone): up to 3 tries, each failure said.
  local try
  for try in 1 2 3; do
    nsenter --net="/run/netns/$pfx-$node" \
      unshare --uts="$dir/ns/$node.uts" --mount="$dir/ns/$node.mnt" \
      --propagation private sh -ec '
        hostname "$1"
        mount --bind "$2/nodes/$1/run" /run
        mount --bind "$2/munge" /run/munge
        mount --bind "$2/hosts" /etc/hosts
        mount --bind "$2/nodes/$1/local" "$2/local"
      ' make-node "$node" "$dir" && return 0
    umount "$dir/ns/$node.uts" "$dir/ns/$node.mnt" 2>/dev/null
    echo "cluster.sh: namespaces of $node: try $try failed" >&2
    sleep 0.2
  done
  return 1
}

make_network() {
  local dir=$1 pfx node
  pfx=$(ns_prefix "$dir")
  ip -n "$pfx-ctl" link set lo up &&
    ip -n "$pfx-ctl" link add br0 type bridge &&
    ip -n "$pfx-ctl" addr add "$(node_addr ctl)/24" dev br0 || return 1
  for node in $(all_nodes "$dir"); do
    [ "$node" = ctl ] && continue
    ip -n "$pfx-ctl" link add "v-$node" type veth peer name eth0 netns "$pfx-$node" &&
      ip -n "$pfx-ctl" link set "v-$node" master br0 up &&
      ip -n "$pfx-$node" link set lo up &&
      ip -n "$pfx-$node" addr add "$(node_addr "$node")/24" dev eth0 &&
      ip -n "$pfx-$node" link set eth0 up || return 1
  done
  ip -n "$pfx-ctl" link set br0 up
}

# --- munge ---------------------------------------------------------------------

# The cluster's own munged (its key, its socket in DIR/munge, bound at
# /run/munge in every node): independent of any munged on the machine.
start_munge() {
  local dir=$1 i
  id munge >/dev/null 2>&1 || die "user munge missing (scripts/install-deps.sh installs munge)"
  install -d -o munge -g munge -m 0755 "$dir/munge"
  install -d -o munge -g munge -m 0700 "$dir/munge-state"
  if [ ! -s "$dir/munge-state/munge.key" ]; then
    dd if=/dev/urandom of="$dir/munge-state/munge.key" bs=1024 count=1 status=none
    chown munge:munge "$dir/munge-state/munge.key"
    chmod 0400 "$dir/munge-state/munge.key"
  fi
  runuser -u munge -- /usr/sbin/munged --force \
    --socket="$dir/munge/munge.socket.2" \
    --key-file="$dir/munge-state/munge.key" \
    --pid-file="$dir/munge-state/munged.pid" \
    --log-file="$dir/munge-state/munged.log" \
    --seed-file="$dir/munge-state/munged.seed" ||
    die "munged failed to start (see $dir/munge-state/munged.log)"
  for ((i = 0; i < 50; i++)); do
    munge -S "$dir/munge/munge.socket.2" -n </dev/null 2>/dev/null |
      unmunge -S "$dir/munge/munge.socket.2" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "munged started but munge -n | unmunge fails"
}

# The cluster's munged: by its pid file, or (pid file lost) by the socket
# on its command line, which names this cluster's directory.
stop_munge() {
  local dir=$1 pid p
  pid=$(tr -dc '0-9' 2>/dev/null <"$dir/munge-state/munged.pid")
  if [ -z "$pid" ] || [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != munged ]; then
    pid=
    for p in $(pgrep -x munged); do
      tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null |
        grep -qxF -- "--socket=$dir/munge/munge.socket.2" && pid=$p
    done
  fi
  [ -z "$pid" ] || kill_and_wait "$pid"
  rm -f "$dir/munge-state/munged.pid"
}

# --- configuration -------------------------------------------------------------

write_hosts() {
  local dir=$1 node
  {
    echo "# generated by tests/cluster/cluster.sh"
    echo "127.0.0.1 localhost"
    for node in $(all_nodes "$dir"); do echo "$(node_addr "$node") $node"; done
  } >"$dir/hosts"
  chmod 0644 "$dir/hosts"
}

# write_iostage_conf DIR: the one iostage.conf of every node (and of the
# plugin on login). Paths under DIR/local are node-local (a per-node bind
# mount); DIR/shared is the same on every node. Add lines here (or through
# IOSTAGE_EXTRA_CONF) for new keys.
write_iostage_conf() {
  local dir=$1
  cat >"$dir/iostage/iostage.conf" <<CONF
# iostage.conf written by tests/cluster/cluster.sh for every node
SocketPath=/run/iostage/iostaged.sock
StateDir=$dir/local/state
ProfileDir=$dir/iostage/root/etc/slurm/iostage.d
# Capacity= given: iostagectld on ctl does not mount the nodes' tiers, and
# its rules stage only what fits a tier of known size (docs/HISTORY.md)
Tier=nvme Path=$dir/local/nvme Medium=nvme Capacity=${CLUSTER_NVME_CAPACITY:-20G}
Tier=ram Path=$dir/local/ram Medium=ram Capacity=${CLUSTER_RAM_CAPACITY:-256M}
# Smaller than the spread test's dataset, even on all three nodes
Tier=small Path=$dir/local/small Medium=ssd Capacity=3M
Tier=bb Path=$dir/shared/bb Medium=ssd Shared=yes
DefaultTier=nvme
StageTimeout=60
OnStageFailure=fail
DrainTimeout=30
MetricsListen=127.0.0.1:${IOSTAGE_METRICS_PORT:-9464}
MetricsInterval=1
TraceLibrary=$dir/iostage/root/usr/lib/iostage/libiostage-preload.so
ViewProgram=$dir/iostage/root/usr/libexec/iostage/iostage-view
LocalReadLibrary=$dir/iostage/root/usr/lib/iostage/libiostage-localread.so
# Node to node (each node has its own network namespace: one port for all)
PeerPort=6826
PeerPartsTimeout=10
# The PFS license streaming jobs ask for (slurm.conf Licenses=pfs_bw:4)
PfsLicense=pfs_bw
PfsLicensePerJob=2
CONF
  if [ "${CLUSTER_CONTROLLER:-yes}" = yes ]; then
    cat >>"$dir/iostage/iostage.conf" <<CONF
# The history service, iostagectld, on the controller node
ControllerHost=ctl
ControllerPort=6827
# Its /metrics on ctl's cluster address, so a Prometheus on another node
# scrapes it as a site's would (the default is loopback)
ControllerMetricsListen=$(node_addr ctl):9465
# A multi-node job missing a part is filed this long after its first one
# (short here, so the tests see it; the default is 5 minutes)
PartsDeadline=10
# Low, so that test_outbox sees the alarm (it only logs; nothing is dropped)
OutboxLimit=5
# Retries while the service is away at most 3 s apart (default 60 s), so
# that test_outbox does not wait out a long backoff after each restart
OutboxRetryMax=3
CONF
  fi
  if [ "${CLUSTER_PFS_OBSERVE:-no}" = yes ]; then
    echo "PfsPath=$dir/pfs" >>"$dir/iostage/iostage.conf"
  fi
  if [ -n "${IOSTAGE_EXTRA_CONF:-}" ]; then
    printf '%s\n' "$IOSTAGE_EXTRA_CONF" >>"$dir/iostage/iostage.conf"
  fi
  chmod 0644 "$dir/iostage/iostage.conf"
}

install_iostage() {
  local dir=$1
  mkdir -p "$dir/iostage"
  chmod 0755 "$dir/iostage"
  [ "${CLUSTER_NO_INSTALL:-0}" = 1 ] && [ -x "$dir/iostage/root/usr/sbin/iostaged" ] && return 0
  make -s -C "$REPO_ROOT" install DESTDIR="$dir/iostage/root" prefix=/usr \
    sysconfdir=/etc >"$dir/iostage/install.log" 2>&1 ||
    { cat "$dir/iostage/install.log" >&2; return 1; }
}

# Prolog/Epilog wrappers: Slurm discards their output; keep it per node.
write_wrapper() {
  local file=$1 cmd=$2 what=$3 dir=$4
  cat >"$file" <<EOF
#!/bin/sh
# generated by tests/cluster/cluster.sh
exec >>"$dir/log/$what.\$(hostname).log" 2>&1
echo "=== \$(date '+%F %T') $what job \${SLURM_JOB_ID:-?} on \$(hostname)"
exec $cmd "\$@"
EOF
  chmod 0755 "$file"
}

write_slurm_conf() {
  local dir=$1 node nodes
  nodes=$(compute_nodes "$dir" | paste -sd, -)
  cat >"$dir/slurm.conf" <<EOF
# generated by tests/cluster/cluster.sh
ClusterName=iostage-cluster
SlurmctldHost=ctl($(node_addr ctl))
SlurmctldPort=${CLUSTER_CTLD_PORT:-16817}
SlurmdPort=${CLUSTER_SLURMD_PORT:-16818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=/run/munge/munge.socket.2
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/nodes/%n/spool
SlurmctldPidFile=$dir/nodes/ctl/slurmctld.pid
SlurmdPidFile=$dir/nodes/%n/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
SlurmctldDebug=${CLUSTER_DEBUG:-info}
SlurmdDebug=${CLUSTER_DEBUG:-info}
PlugStackConfig=$dir/plugstack.conf
Prolog=$dir/prolog.sh
Epilog=$dir/epilog.sh
PrologFlags=Alloc
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,bf_interval=1,ignore_prefer_validation
# iostage's placement: IOSTAGE_PREFER from the plugin becomes --prefer
# (slurm-conf/job_submit.lua, docs/SCHEDULING.md)
JobSubmitPlugins=lua
ReturnToService=2
JobRequeue=0
MinJobAge=600
InactiveLimit=0
KillWait=5
Waittime=0
MessageTimeout=20
SlurmctldTimeout=120
SlurmdTimeout=300
HealthCheckInterval=0
EOF
  for node in $(compute_nodes "$dir"); do
    echo "NodeName=$node NodeAddr=$(node_addr "$node") CPUs=2 RealMemory=1000 State=UNKNOWN" >>"$dir/slurm.conf"
  done
  echo "PartitionName=debug Default=YES Nodes=$nodes MaxTime=INFINITE State=UP" >>"$dir/slurm.conf"
  # The PFS as a scheduled resource (docs/SCHEDULING.md): a bandwidth
  # budget as a license, and the shipped cli_filter.lua that asks for it
  # (test_pfsbw.sh; nobody else requests it) and that hands a submitted
  # job's id to iostagectld for pre-staging (test_prestage.sh).
  echo "Licenses=pfs_bw:${CLUSTER_PFS_LICENSES:-4}" >>"$dir/slurm.conf"
  echo "CliFilterPlugins=cli_filter/lua" >>"$dir/slurm.conf"
  sed -e "s|^local IOSTAGE = .*|local IOSTAGE = \"$dir/iostage/root/usr/bin/iostage\"|" \
    -e "s|^local IOSTAGE_CONF = .*|local IOSTAGE_CONF = \"$dir/iostage/iostage.conf\"|" \
    "$REPO_ROOT/slurm-conf/cli_filter.lua" >"$dir/cli_filter.lua"
  chmod 0644 "$dir/cli_filter.lua"
  if [ -n "${CLUSTER_EXTRA_CONF:-}" ]; then
    printf '%s\n' "$CLUSTER_EXTRA_CONF" >>"$dir/slurm.conf"
  fi
  chmod 0644 "$dir/slurm.conf"
  write_release_conf "$dir"

  local root="$dir/iostage/root" conf="$dir/iostage/iostage.conf"
  install -m 0644 "$root/usr/share/doc/iostage/slurm-conf/job_submit.lua" "$dir/job_submit.lua"
  echo "required $root/usr/lib/slurm/iostage.so conf=$conf" >"$dir/plugstack.conf"
  chmod 0644 "$dir/plugstack.conf"
  write_wrapper "$dir/prolog.sh" "env SLURM_CONF=$dir/slurm.conf IOSTAGE_LOG_STDERR=1 $root/usr/sbin/iostage-prolog -c $conf" prolog "$dir"
  write_wrapper "$dir/epilog.sh" "env IOSTAGE_LOG_STDERR=1 $root/usr/sbin/iostage-epilog -c $conf" epilog "$dir"

  cat >"$dir/env.sh" <<EOF
# source me: . $dir/env.sh
export CLUSTER_DIR='$dir'
export SLURM_CONF='$dir/slurm.conf'
export IOSTAGE_ROOT='$dir/iostage/root'
export IOSTAGE_CONF='$dir/iostage/iostage.conf'
export CLUSTER_COMPUTE_NODES='$(compute_nodes "$dir" | tr '\n' ' ' | sed 's/ $//')'
export CLUSTER_CONTROLLER='${CLUSTER_CONTROLLER:-yes}'
EOF
  chmod 0644 "$dir/env.sh"
}

# --- daemons per node ----------------------------------------------------------

start_iostaged() {
  local dir=$1 node=$2 i pid
  local conf="$dir/iostage/iostage.conf" root="$dir/iostage/root"
  rm -f "$dir/nodes/$node/iostaged.pid"
  # In its own session, detached; the pid file names iostaged itself.
  in_node "$dir" "$node" setsid -f sh -c 'echo $$ >"$1"; shift; exec "$@"' \
    iostaged "$dir/nodes/$node/iostaged.pid" "$root/usr/sbin/iostaged" -f -c "$conf" \
    >>"$dir/log/iostaged.$node.log" 2>&1 </dev/null
  for ((i = 0; i < 100; i++)); do
    pid=$(cat "$dir/nodes/$node/iostaged.pid" 2>/dev/null)
    # iostaged itself must answer on its socket: `iostage status` on a
    # node whose socket is not there yet asks iostagectld instead.
    in_node "$dir" "$node" sh -c 'printf "{\"op\":\"status\"}\n" |
      socat -t 2 - UNIX-CONNECT:/run/iostage/iostaged.sock' 2>/dev/null |
      grep -q '"ok":true' && return 0
    [ -n "$pid" ] && ! pid_running "$pid" && break
    sleep 0.1
  done
  echo "cluster.sh: iostaged on $node did not start; log:" >&2
  tail -n 20 "$dir/log/iostaged.$node.log" >&2
  return 1
}

# start_ctld DIR: iostagectld on ctl, in the foreground of its own session
# (its log in DIR/log/iostagectld.log, appended across restarts); waits
# until it says it is ready.
start_ctld() {
  local dir=$1 i pid before
  local log="$dir/log/iostagectld.log" conf="$dir/iostage/iostage.conf" root="$dir/iostage/root"
  rm -f "$dir/nodes/ctl/iostagectld.pid"
  before=$(grep -c ' ready: ' "$log" 2>/dev/null)
  # SLURM_CONF: it publishes node features and reads jobs (libslurm)
  in_node "$dir" ctl setsid -f env SLURM_CONF="$dir/slurm.conf" sh -c 'echo $$ >"$1"; shift; exec "$@"' \
    iostagectld "$dir/nodes/ctl/iostagectld.pid" "$root/usr/sbin/iostagectld" -f -c "$conf" \
    >>"$log" 2>&1 </dev/null
  for ((i = 0; i < 100; i++)); do
    pid=$(cat "$dir/nodes/ctl/iostagectld.pid" 2>/dev/null)
    [ "$(grep -c ' ready: ' "$log" 2>/dev/null)" -gt "${before:-0}" ] && return 0
    [ -n "$pid" ] && ! pid_running "$pid" && break
    sleep 0.1
  done
  echo "cluster.sh: iostagectld on ctl did not start; log:" >&2
  tail -n 20 "$log" >&2
  return 1
}

start_slurmd() {
  local dir=$1 node=$2
  mkdir -p "$dir/nodes/$node/spool"
  in_node "$dir" "$node" env SLURM_CONF="$dir/slurm.conf" \
    "$SLURM_SBIN/slurmd" -f "$dir/slurm.conf" ||
    { echo "cluster.sh: slurmd on $node failed to start" >&2; return 1; }
}

# node_start DIR NODE: a compute node comes up: iostaged first (as systemd
# orders it), then slurmd.
node_start() {
  start_iostaged "$1" "$2" && start_slurmd "$1" "$2"
}

# node_stop DIR NODE: the node goes down hard: every process in it (slurmd,
# slurmstepd, job tasks, Prolog, iostaged and its workers) is killed.
node_stop() {
  local dir=$1 node=$2 pids
  pids=$(ns_pids "uts:$dir/ns/$node.uts" | tr '\n' ' ')
  # shellcheck disable=SC2086
  [ -z "${pids// /}" ] || kill -KILL $pids 2>/dev/null
  for _ in $(seq 1 30); do
    [ -z "$(ns_pids "uts:$dir/ns/$node.uts")" ] && break
    sleep 0.1
  done
  rm -f "$dir/nodes/$node/iostaged.pid" "$dir/nodes/$node/slurmd.pid"
}

sinfo_states() {
  in_node "$1" login env SLURM_CONF="$1/slurm.conf" timeout 10 \
    sinfo -h -N -o '%N %T' 2>/dev/null
}

show_logs() {
  local dir=$1 f
  for f in "$dir"/log/slurmctld.log "$dir"/log/iostagectld.log "$dir"/log/slurmd.*.log "$dir"/munge-state/munged.log; do
    [ -f "$f" ] || continue
    echo "----- tail $f" >&2
    tail -n 15 "$f" >&2
  done
}

# --- start / stop --------------------------------------------------------------

cmd_start() {
  local dir=$1 i node states want
  [ "$(id -u)" -eq 0 ] || die "must run as root"
  [ -d "$dir" ] || die "no such directory: $dir"
  dir=$(cd "$dir" && pwd -P)
  CLUSTER_QUIET=1 cmd_stop "$dir"

  echo "${CLUSTER_NODES:-3}" >"$dir/nodes.count"
  chmod 0755 "$dir"
  rm -rf "$dir/state" "$dir/log" "$dir/nodes"
  mkdir -p "$dir/state" "$dir/log" "$dir/nodes" "$dir/ns" "$dir/local" \
    "$dir/shared" "$dir/pfs" "$dir/tests"
  chmod 0755 "$dir/state" "$dir/log" "$dir/nodes" "$dir/local" "$dir/shared" "$dir/pfs"
  chmod 1777 "$dir/tests"

  if [ -n "${CLUSTER_PFS_DIR:-}" ]; then
    [ -d "$CLUSTER_PFS_DIR" ] || die "CLUSTER_PFS_DIR=$CLUSTER_PFS_DIR: not a directory"
    mount --bind "$CLUSTER_PFS_DIR" "$dir/pfs" ||
      die "cannot bind-mount CLUSTER_PFS_DIR=$CLUSTER_PFS_DIR on $dir/pfs"
  fi

  install_iostage "$dir" || die "make install failed"
  write_iostage_conf "$dir"
  write_hosts "$dir"
  write_slurm_conf "$dir"
  start_munge "$dir"

  mount --bind "$dir/ns" "$dir/ns" && mount --make-private "$dir/ns" ||
    die "cannot make $dir/ns a private mount"
  for node in $(all_nodes "$dir"); do
    make_node_ns "$dir" "$node" || die "cannot create the namespaces of $node"
  done
  make_network "$dir" || die "cannot set up the cluster network"

  mkdir -p "$dir/nodes/ctl/spool"
  in_node "$dir" ctl env SLURM_CONF="$dir/slurm.conf" \
    "$SLURM_SBIN/slurmctld" -c -i -f "$dir/slurm.conf" ||
    { show_logs "$dir"; die "slurmctld failed to start"; }
  if [ "${CLUSTER_CONTROLLER:-yes}" = yes ]; then
    start_ctld "$dir" || die "iostagectld failed to start"
  fi
  for node in $(compute_nodes "$dir"); do
    node_start "$dir" "$node" || { show_logs "$dir"; die "node $node failed to start"; }
  done

  want=$(compute_nodes "$dir" | wc -l)
  for ((i = 0; i < ${CLUSTER_START_TIMEOUT:-30} * 5; i++)); do
    states=$(sinfo_states "$dir")
    [ "$(printf '%s\n' "$states" | grep -c ' idle$')" -eq "$want" ] && {
      log "$want compute nodes idle (SLURM_CONF=$dir/slurm.conf)"
      return 0
    }
    sleep 0.2
  done
  echo "cluster.sh: nodes not idle after ${CLUSTER_START_TIMEOUT:-30}s:" >&2
  printf '%s\n' "$states" >&2
  show_logs "$dir"
  exit 1
}

cmd_stop() {
  local dir=$1 pfx pids jobs f
  [ -d "$dir" ] || return 0
  dir=$(cd "$dir" && pwd -P)
  pfx=$(ns_prefix "$dir")

  # Cancel jobs while slurmd still runs, so their Epilogs clean up.
  if [ -e "/run/netns/$pfx-login" ] && [ -s "$dir/nodes/ctl/slurmctld.pid" ]; then
    jobs=$(in_node "$dir" login env SLURM_CONF="$dir/slurm.conf" timeout 5 \
      squeue -h -o %i 2>/dev/null | tr '\n' ' ')
    if [ -n "${jobs// /}" ]; then
      log "cancelling jobs: $jobs"
      # shellcheck disable=SC2086
      in_node "$dir" login env SLURM_CONF="$dir/slurm.conf" timeout 5 \
        scancel --quiet $jobs 2>/dev/null
      for _ in $(seq 1 30); do
        [ -z "$(in_node "$dir" login env SLURM_CONF="$dir/slurm.conf" timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
        sleep 0.2
      done
    fi
  fi

  # Every process living in one of the cluster's namespaces is ours.
  set --
  for f in "$dir"/ns/*.uts; do [ -e "$f" ] && set -- "$@" "uts:$f"; done
  for f in /run/netns/"$pfx"-*; do [ -e "$f" ] && set -- "$@" "net:$f"; done
  pids=$(ns_pids "$@" | sort -u | tr '\n' ' ')
  if [ -n "${pids// /}" ]; then
    log "stopping cluster processes: $pids"
    # shellcheck disable=SC2086
    kill_and_wait $pids
  fi
  stop_munge "$dir"

  for f in "$dir"/ns/*.uts "$dir"/ns/*.mnt; do
    [ -e "$f" ] && umount "$f" 2>/dev/null
  done
  # CLUSTER_PFS_DIR's bind mount (the nodes' copies went with their
  # namespaces); lazily if something still holds it, so that nothing
  # removing DIR afterwards reaches into the real PFS.
  if mountpoint -q "$dir/pfs" 2>/dev/null; then
    umount "$dir/pfs" 2>/dev/null || umount -l "$dir/pfs" 2>/dev/null
  fi
  if mountpoint -q "$dir/ns" 2>/dev/null; then umount "$dir/ns" 2>/dev/null; fi
  rm -f "$dir"/ns/*.uts "$dir"/ns/*.mnt 2>/dev/null
  for f in /run/netns/"$pfx"-*; do
    [ -e "$f" ] && ip netns del "$(basename "$f")" 2>/dev/null
  done
  rm -f "$dir"/nodes/*/iostaged.pid "$dir"/nodes/*/slurmd.pid "$dir"/nodes/ctl/slurmctld.pid \
    "$dir"/nodes/ctl/iostagectld.pid 2>/dev/null
  return 0
}

cmd_status() {
  local dir=$1 node n
  dir=$(cd "$dir" && pwd -P)
  for node in $(all_nodes "$dir"); do
    n=$(ns_pids "uts:$dir/ns/$node.uts" | wc -l)
    echo "$node: $(node_addr "$node"), $n processes"
  done
  sinfo_states "$dir"
}

case "${1:-}" in
  start) [ $# -eq 2 ] || die "usage: $0 start DIR"; cmd_start "$2" ;;
  stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; cmd_stop "$2"; exit 0 ;;
  status) [ $# -eq 2 ] || die "usage: $0 status DIR"; cmd_status "$2" ;;
  node-stop) [ $# -eq 3 ] || die "usage: $0 node-stop DIR NODE"; node_stop "$(cd "$2" && pwd -P)" "$3" ;;
  node-start) [ $# -eq 3 ] || die "usage: $0 node-start DIR NODE"; node_start "$(cd "$2" && pwd -P)" "$3" ;;
  iostaged-start) [ $# -eq 3 ] || die "usage: $0 iostaged-start DIR NODE"; start_iostaged "$(cd "$2" && pwd -P)" "$3" ;;
  ctld-start) [ $# -eq 2 ] || die "usage: $0 ctld-start DIR"; start_ctld "$(cd "$2" && pwd -P)" ;;
  *) die "usage: $0 start|stop|status DIR | node-stop|node-start DIR NODE" ;;
esac
