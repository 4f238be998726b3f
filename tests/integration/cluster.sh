#!/usr/bin/env bash
# One-node Slurm 22.05 cluster on loopback, for integration tests.
#
#   cluster.sh start DIR     write config under DIR, start munged (if needed),
#                            slurmctld and slurmd; wait until the node is idle
#   cluster.sh stop DIR      stop what start started; never fails
#   cluster.sh status DIR    print sinfo / pids
#
# Must run as root. DIR should exist (e.g. from mktemp -d); it is made 0755 so
# unprivileged test users can traverse it. After start, `. DIR/env.sh` exports
# SLURM_CONF for the clients.
#
# Environment read by `start`:
#   CLUSTER_PLUGSTACK    text of DIR/plugstack.conf (empty file if unset)
#   CLUSTER_PROLOG       command line the Prolog wrapper execs with "$@"
#   CLUSTER_EPILOG       command line the Epilog wrapper execs with "$@"
#                        (if unset, the wrappers just exit 0)
#   CLUSTER_EXTRA_CONF   extra lines appended to slurm.conf
#   CLUSTER_CTLD_PORT    SlurmctldPort (default 16817)
#   CLUSTER_SLURMD_PORT  SlurmdPort    (default 16818)
#   CLUSTER_DEBUG        SlurmctldDebug/SlurmdDebug level (default info)
#   CLUSTER_START_TIMEOUT seconds to wait for the node to be idle (default 30)
#
# Layout of DIR: slurm.conf plugstack.conf prolog.sh epilog.sh env.sh
#   state/ (StateSaveLocation)  spool/ (SlurmdSpoolDir)  log/*.log  run/*.pid
#   log/prolog.log, log/epilog.log: stdout+stderr of the Prolog/Epilog wrappers
#   (Slurm itself discards them).
set -uo pipefail

SLURM_SBIN=${SLURM_SBIN:-/usr/sbin}
MUNGE_SOCKET=/run/munge/munge.socket.2

die() { echo "cluster.sh: $*" >&2; exit 1; }
log() { [ -n "${CLUSTER_QUIET:-}" ] || echo "cluster.sh: $*" >&2; }

# --- process helpers ---------------------------------------------------------

# pid_running PID: a live process, not a zombie
. "$(dirname "${BASH_SOURCE[0]}")/pidstate.sh"

# pid from a pid file, only if that process is alive and its comm matches $2
pidfile_pid() {
  local f=$1 name=$2 pid comm
  [ -s "$f" ] || return 1
  pid=$(tr -dc '0-9' <"$f")
  [ -n "$pid" ] || return 1
  pid_running "$pid" || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  [ "$comm" = "$name" ] || return 1
  echo "$pid"
}

# wait until pid exits (bounded); SIGKILL after $2 seconds
wait_gone() {
  local pid=$1 secs=${2:-10} i
  for ((i = 0; i < secs * 10; i++)); do
    pid_running "$pid" || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null
  for ((i = 0; i < 30; i++)); do
    pid_running "$pid" || return 0
    sleep 0.1
  done
  return 1
}

stop_pidfile() {
  local f=$1 name=$2 pid
  if pid=$(pidfile_pid "$f" "$name"); then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null
    wait_gone "$pid" 15 || echo "cluster.sh: $name pid $pid did not exit" >&2
  fi
  rm -f "$f"
}

# descendants of a list of pids (from one ps snapshot)
descendants() {
  ps -e -o pid=,ppid= | awk -v roots="$*" '
    BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) want[r[i]] = 1 }
    { kids[$2] = kids[$2] " " $1 }
    END {
      for (p in want) queue[++q] = p
      while (q > 0) {
        p = queue[q--]; m = split(kids[p], k, " ")
        for (i = 1; i <= m; i++) if (!(k[i] in seen)) { seen[k[i]] = 1; print k[i]; queue[++q] = k[i] }
      }
    }'
}

# slurmstepd processes started by this cluster's slurmd (they inherit
# SLURM_CONF=DIR/slurm.conf from slurmd's environment)
cluster_stepds() {
  local conf=$1 p
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || continue
    if tr "\\0" "\\n" 2>/dev/null <"$p/environ" | grep -qxF "SLURM_CONF=$conf"; then
      echo "${p#/proc/}"
    fi
  done
}

port_in_use() {
  ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
}

# --- munge -------------------------------------------------------------------

munge_works() {
  [ -S "$MUNGE_SOCKET" ] && munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1
}

start_munge() {
  local dir=$1 i pid
  if munge_works; then
    log "munged already running; using it"
    return 0
  fi
  id munge >/dev/null 2>&1 || die "user munge missing (install the munge package: scripts/install-deps.sh)"
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /etc/munge
  install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
  if [ ! -s /etc/munge/munge.key ]; then
    log "creating /etc/munge/munge.key"
    if command -v mungekey >/dev/null 2>&1; then
      mungekey --create --keyfile=/etc/munge/munge.key >/dev/null 2>&1 ||
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    else
      dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
  fi
  chown munge:munge /etc/munge/munge.key
  chmod 0400 /etc/munge/munge.key
  # a stale socket/pid from a killed munged blocks a new one
  if ! pgrep -u munge -x munged >/dev/null 2>&1; then
    rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock" /run/munge/munged.pid
  fi
  runuser -u munge -- "${MUNGED:-/usr/sbin/munged}" ||
    die "munged failed to start (see /var/log/munge/munged.log)"
  for ((i = 0; i < 100; i++)); do
    munge_works && break
    sleep 0.1
  done
  munge_works || die "munged started but munge -n | unmunge fails"
  pid=$(tr -dc '0-9' </run/munge/munged.pid 2>/dev/null)
  [ -n "$pid" ] && echo "$pid" >"$dir/run/munged.pid"
  log "started munged (pid ${pid:-?})"
}

# --- config ------------------------------------------------------------------

write_wrapper() {
  local file=$1 cmd=$2 logf=$3
  {
    echo '#!/bin/sh'
    echo "# generated by cluster.sh; Slurm discards Prolog/Epilog output, keep it here"
    echo "exec >>'$logf' 2>&1"
    echo "echo \"=== \$(date '+%F %T') \$(basename \"\$0\" .sh) job \${SLURM_JOB_ID:-?} (\${SLURM_SCRIPT_CONTEXT:-?})\""
    if [ -n "$cmd" ]; then
      echo "exec $cmd \"\$@\""
    else
      echo 'exit 0'
    fi
  } >"$file"
  chmod 0755 "$file"
}

# slurm_at_least MAJOR MINOR: the Slurm here is that release or a later one
slurm_at_least() {
  local v
  v=$("$SLURM_SBIN/slurmd" -V 2>/dev/null | sed -n 's/^slurm[^0-9]*\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  [ -n "$v" ] || return 1
  # shellcheck disable=SC2086
  set -- "$1" "$2" $v
  [ "$3" -gt "$1" ] || { [ "$3" -eq "$1" ] && [ "$4" -ge "$2" ]; }
}

write_config() {
  local dir=$1 host ncpu ctld_port slurmd_port dbg
  host=$(hostname -s)
  ncpu=$(nproc)
  ctld_port=${CLUSTER_CTLD_PORT:-16817}
  slurmd_port=${CLUSTER_SLURMD_PORT:-16818}
  dbg=${CLUSTER_DEBUG:-info}

  cat >"$dir/slurm.conf" <<EOF
# generated by tests/integration/cluster.sh
ClusterName=iostage-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=$dbg
SlurmdDebug=$dbg
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
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,bf_interval=1
ReturnToService=2
MinJobAge=600
# The load tests (test_load.sh): a 1,000-task array, kept MinJobAge after.
MaxArraySize=4001
MaxJobCount=20000
InactiveLimit=0
KillWait=5
Waittime=0
MessageTimeout=20
SlurmctldTimeout=120
SlurmdTimeout=300
HealthCheckInterval=0
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$ncpu RealMemory=1000 State=UNKNOWN
PartitionName=debug Default=YES Nodes=ALL MaxTime=INFINITE State=UP
# 64 jobs at once on the one node (test_load.sh): each core shared by up
# to 64 jobs of this partition; no gang scheduling (PreemptMode=OFF).
PartitionName=load Nodes=ALL MaxTime=INFINITE State=UP OverSubscribe=FORCE:64
EOF
  if [ -n "${CLUSTER_EXTRA_CONF:-}" ]; then
    printf '%s\n' "$CLUSTER_EXTRA_CONF" >>"$dir/slurm.conf"
  fi
  chmod 0644 "$dir/slurm.conf"
  # Slurm 24.11 and later read cgroup.conf beside slurm.conf and load a
  # cgroup plugin even with proctrack/linuxproc and task/none; in a chroot
  # (tests/package) there is no cgroup tree of its own to give it.
  rm -f "$dir/cgroup.conf"
  if slurm_at_least 24 11; then
    echo "CgroupPlugin=disabled" >"$dir/cgroup.conf"
    chmod 0644 "$dir/cgroup.conf"
  fi

  printf '%s' "${CLUSTER_PLUGSTACK:-}" >"$dir/plugstack.conf"
  [ -z "${CLUSTER_PLUGSTACK:-}" ] || printf '\n' >>"$dir/plugstack.conf"
  chmod 0644 "$dir/plugstack.conf"

  write_wrapper "$dir/prolog.sh" "${CLUSTER_PROLOG:-}" "$dir/log/prolog.log"
  write_wrapper "$dir/epilog.sh" "${CLUSTER_EPILOG:-}" "$dir/log/epilog.log"

  cat >"$dir/env.sh" <<EOF
# source me: . $dir/env.sh
export SLURM_CONF='$dir/slurm.conf'
export CLUSTER_DIR='$dir'
export CLUSTER_NODE='$host'
EOF
  chmod 0644 "$dir/env.sh"
}

# --- start / stop ------------------------------------------------------------

show_logs() {
  local dir=$1 f
  for f in "$dir"/log/slurmctld.log "$dir"/log/slurmd.log /var/log/munge/munged.log; do
    [ -f "$f" ] || continue
    echo "----- tail $f" >&2
    tail -n 25 "$f" >&2
  done
}

node_state() {
  SLURM_CONF="$1/slurm.conf" timeout 10 sinfo -h -N -n "$(hostname -s)" -o '%T' 2>/dev/null | head -n1
}

cmd_start() {
  local dir=$1 host timeout_s i st port
  [ "$(id -u)" -eq 0 ] || die "must run as root"
  [ -d "$dir" ] || die "no such directory: $dir"
  dir=$(cd "$dir" && pwd -P)
  host=$(hostname -s)
  timeout_s=${CLUSTER_START_TIMEOUT:-30}

  # anything left from a previous run in this DIR goes first
  CLUSTER_QUIET=1 cmd_stop "$dir"

  for port in "${CLUSTER_CTLD_PORT:-16817}" "${CLUSTER_SLURMD_PORT:-16818}"; do
    port_in_use "$port" && die "TCP port $port is in use (another cluster running? set CLUSTER_CTLD_PORT/CLUSTER_SLURMD_PORT)"
  done

  chmod 0755 "$dir"
  rm -rf "$dir/state" "$dir/spool" "$dir/log"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/run"
  chmod 0755 "$dir/state" "$dir/spool" "$dir/log" "$dir/run"
  touch "$dir/log/prolog.log" "$dir/log/epilog.log"

  write_config "$dir"
  start_munge "$dir"

  export SLURM_CONF="$dir/slurm.conf"
  # -c: clear any saved state, -i: ignore unreadable state (dir is fresh anyway)
  "$SLURM_SBIN/slurmctld" -c -i -f "$SLURM_CONF" ||
    { show_logs "$dir"; die "slurmctld failed to start"; }
  "$SLURM_SBIN/slurmd" -f "$SLURM_CONF" -N "$host" ||
    { show_logs "$dir"; die "slurmd failed to start"; }

  for ((i = 0; i < timeout_s * 2; i++)); do
    st=$(node_state "$dir")
    case "$st" in
      idle) log "node $host idle (SLURM_CONF=$SLURM_CONF)"; return 0 ;;
    esac
    sleep 0.5
  done
  echo "cluster.sh: node $host not idle after ${timeout_s}s (state: '${st:-?}')" >&2
  SLURM_CONF="$dir/slurm.conf" timeout 10 scontrol show node "$host" >&2 2>/dev/null
  show_logs "$dir"
  exit 1
}

cmd_stop() {
  local dir=$1 stepds pids
  [ -d "$dir" ] || return 0
  dir=$(cd "$dir" && pwd -P)
  local conf="$dir/slurm.conf"

  # cancel jobs so their steps end cleanly while slurmd still runs
  if pidfile_pid "$dir/run/slurmctld.pid" slurmctld >/dev/null; then
    local jobs
    jobs=$(SLURM_CONF=$conf timeout 5 squeue -h -o %i 2>/dev/null | tr '\n' ' ')
    if [ -n "${jobs// /}" ]; then
      log "cancelling jobs: $jobs"
      # shellcheck disable=SC2086
      SLURM_CONF=$conf timeout 5 scancel --quiet --full $jobs 2>/dev/null
      local i
      for ((i = 0; i < 20; i++)); do
        [ -z "$(cluster_stepds "$conf")" ] && break
        sleep 0.5
      done
    fi
  fi

  stop_pidfile "$dir/run/slurmd.pid" slurmd
  stop_pidfile "$dir/run/slurmctld.pid" slurmctld

  # leftover job steps and their processes
  stepds=$(cluster_stepds "$conf" | tr '\n' ' ')
  if [ -n "${stepds// /}" ]; then
    pids="$stepds $(descendants $stepds | tr '\n' ' ')"
    log "killing leftover slurmstepd processes: $pids"
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null
  fi

  if [ -f "$dir/run/munged.pid" ]; then
    stop_pidfile "$dir/run/munged.pid" munged
  fi
  return 0
}

cmd_status() {
  local dir=$1
  echo "slurmctld: $(pidfile_pid "$dir/run/slurmctld.pid" slurmctld || echo down)"
  echo "slurmd:    $(pidfile_pid "$dir/run/slurmd.pid" slurmd || echo down)"
  echo "munged:    $(munge_works && echo up || echo down)"
  SLURM_CONF="$dir/slurm.conf" timeout 10 sinfo 2>&1
}

case "${1:-}" in
  start) [ $# -eq 2 ] || die "usage: $0 start DIR"; cmd_start "$2" ;;
  stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; cmd_stop "$2"; exit 0 ;;
  status) [ $# -eq 2 ] || die "usage: $0 status DIR"; cmd_status "$2" ;;
  *) die "usage: $0 start|stop|status DIR" ;;
esac
