#!/usr/bin/env bash
# root.sh - a Debian root file system per Slurm release, made with
# mmdebstrap from that release's own packages, kept between runs.
#
#   tests/releases/root.sh path  RELEASE        the root's directory
#   tests/releases/root.sh ensure RELEASE       make it when missing or stale
#   tests/releases/root.sh enter RELEASE CMD... run CMD inside it, as root
#   tests/releases/root.sh releases             the releases it knows
#
# RELEASE is a Slurm major.minor: 22.05 (Debian 12 bookworm), 24.11
# (Debian 13 trixie), 26.05 (Debian testing). The roots live under
# IOSTAGE_ROOTS (default /var/cache/iostage/roots), one directory per
# suite. A root is made by mmdebstrap (the host's apt mirror) and then
# completed by the tree's own scripts/install-deps.sh run inside it, so
# a root holds exactly what `make check` installs on a host of that
# release; a stamp (the sha256 of install-deps.sh) makes `ensure` run
# a changed install-deps.sh inside the root again. A new root is built
# under SUITE.tmp and renamed when complete: a half-made root is never
# used; delete the directory to have it made from scratch.
#
# `enter` runs CMD chrooted in the root, with /proc, /dev, /sys and a
# tmpfs /run mounted there for it and taken down after it, whatever way
# it ends, so a failing test leaves no mount behind (enter_dir says why
# chroot). The suites' knobs (IT_FILTER,
# IT_TIMEOUT, IT_VERBOSE, IT_KEEP) and CI pass through; nothing else of
# the caller's environment does.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HERE/../.." && pwd -P)
ROOTS=${IOSTAGE_ROOTS:-/var/cache/iostage/roots}
MIRROR=${IOSTAGE_MIRROR:-http://deb.debian.org/debian}

die() { echo "root.sh: $*" >&2; exit 2; }

# RELEASE -> Debian suite; the one table of which Debian ships which Slurm.
suite_of() {
  case "$1" in
    22.05) echo bookworm ;;
    24.11) echo trixie ;;
    26.05) echo testing ;;
    *) die "unknown Slurm release '$1' (known: 22.05, 24.11, 26.05)" ;;
  esac
}

stamp_of() { sha256sum "$REPO/scripts/install-deps.sh" | cut -d' ' -f1; }

root_path() { echo "$ROOTS/$(suite_of "$1")"; }

# The mounts a root needs to build and run Slurm, made in the host's
# mount namespace and taken down by leave_root.
mount_root() {
  local dir=$1
  # the root a mount of its own, as / is on a host: mount propagation
  # (the tests' MS_PRIVATE on /) needs a mount point
  mount --bind "$dir" "$dir"
  mount -t proc proc "$dir/proc"
  mount --rbind /dev "$dir/dev"
  mount --rbind /sys "$dir/sys"
  mount -t tmpfs -o mode=0755 tmpfs "$dir/run"
  # names: the host's /etc/hosts (slurm.conf names the host's short
  # name) and resolver, for apt inside
  cp /etc/hosts "$dir/etc/hosts"
  cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
}

# Everything mounted at or below DIR, deepest first; never fails.
leave_root() {
  local dir=$1 m
  { findmnt -rn -o TARGET | grep -E "^$dir(/|\$)" | sort -r || true; } |
    while read -r m; do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
}

# Runs CMD inside DIR (chroot). Why chroot in the host's mount namespace
# and not a namespace of its own (pivot_root): the cluster suite makes a
# mount namespace per node and binds its file to keep it, and this
# machine's kernel refuses that bind (EINVAL) inside any mount namespace
# but the first. A node's namespace then has the host's root, so the
# suite enters it through IOSTAGE_HOST_ROOT (tests/cluster/cluster.sh,
# in_node). One enter of a root at a time (a lock), and its mounts are
# taken down whatever way CMD ends.
enter_dir() {
  local dir=$1 rc lock
  shift
  [ "$(id -u)" -eq 0 ] || die "must run as root (chroot, mounts)"
  lock="/run/lock/iostage-root.$(basename "$dir").lock"
  exec 9>"$lock"
  flock 9
  leave_root "$dir" # what a killed run left
  trap 'leave_root "'"$dir"'"' EXIT
  trap 'exit 130' INT TERM
  mount_root "$dir" || die "cannot mount /proc, /dev, /sys, /run in $dir"
  chroot "$dir" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 CI="${CI:-}" IT_FILTER="${IT_FILTER:-}" \
    IT_TIMEOUT="${IT_TIMEOUT:-120}" IT_VERBOSE="${IT_VERBOSE:-}" \
    IT_KEEP="${IT_KEEP:-}" IOSTAGE_HOST_ROOT="$dir" "$@"
  rc=$?
  leave_root "$dir"
  trap - EXIT
  exec 9>&-
  return $rc
}

make_root() {
  local rel=$1 suite dir tmp t0 opts=()
  suite=$(suite_of "$rel")
  dir=$(root_path "$rel")
  tmp=$dir.tmp
  [ "$(id -u)" -eq 0 ] || die "must run as root to make $dir"
  command -v mmdebstrap >/dev/null || {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap \
      </dev/null >/dev/null || die "cannot install mmdebstrap"
  }
  mkdir -p "$ROOTS"
  rm -rf "$tmp"
  # testing's Release file on the mirror may be past its Valid-Until
  [ "$suite" = testing ] &&
    opts+=(--aptopt='Acquire::Check-Valid-Until "false"')
  echo "root.sh: making the Slurm $rel root ($suite) in $dir" >&2
  t0=$(date +%s)
  mmdebstrap --quiet --variant=apt "${opts[@]}" \
    --include=ca-certificates,make,git,rsync "$suite" "$tmp" "$MIRROR" \
    || die "mmdebstrap $suite failed"
  mkdir -p "$tmp/src"
  cp "$REPO/scripts/install-deps.sh" "$tmp/src/install-deps.sh"
  enter_dir "$tmp" bash /src/install-deps.sh ||
    die "install-deps.sh failed inside the $suite root ($tmp kept)"
  enter_dir "$tmp" apt-get clean
  stamp_of >"$tmp/.iostage-root"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  echo "root.sh: Slurm $rel root ready in $(($(date +%s) - t0)) s" >&2
}

ensure() {
  local rel=$1 dir
  dir=$(root_path "$rel")
  [ -f "$dir/.iostage-root" ] || { make_root "$rel"; return; }
  [ "$(cat "$dir/.iostage-root")" = "$(stamp_of)" ] && return 0
  # the package list changed: install what is new, as on a host
  echo "root.sh: scripts/install-deps.sh changed: updating the Slurm $rel root" >&2
  cp "$REPO/scripts/install-deps.sh" "$dir/src/install-deps.sh"
  enter_dir "$dir" bash /src/install-deps.sh ||
    die "install-deps.sh failed inside $dir"
  stamp_of >"$dir/.iostage-root"
}

cmd=${1:-}
shift || true
case "$cmd" in
  path) [ $# -eq 1 ] || die "usage: root.sh path RELEASE"; root_path "$1" ;;
  ensure) [ $# -eq 1 ] || die "usage: root.sh ensure RELEASE"; ensure "$1" ;;
  enter)
    [ $# -ge 2 ] || die "usage: root.sh enter RELEASE CMD..."
    rel=$1; shift
    ensure "$rel"
    enter_dir "$(root_path "$rel")" "$@" ;;
  releases) echo "22.05 24.11 26.05" ;;
  *) die "usage: root.sh path|ensure|enter|releases ..." ;;
esac
