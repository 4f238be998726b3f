# shellcheck shell=bash
# Sourced by run.sh before the cluster starts: install iostage the way a site
# would (make install into a staging root), write a test iostage.conf whose
# tiers are directories under the cluster dir, point Slurm's plugstack,
# Prolog and Epilog at the installed programs, and start iostaged.
#
# Exports for tests: IOSTAGE_ROOT (the installed tree), IOSTAGE_CONF,
# IOSTAGE_SOCKET, IOSTAGE_TIERS (dir holding one dir per tier), IOSTAGED_LOG,
# the installed paths below, and the functions in iostaged.sh
# (iostaged_start/stop/restart, ...).
#
# Which programs are tested:
#   default             this tree, `make install prefix=/usr sysconfdir=/etc
#                       DESTDIR=$IOSTAGE_ROOT` (under the cluster dir)
#   IOSTAGE_INSTALLED=1 the ones installed on this system, e.g. by the
#                       packages (tests/package/test_package.sh): nothing is
#                       built or installed, IOSTAGE_ROOT is empty, and
#                       run.sh does not run scripts/install-deps.sh.
#                       The paths default to the Debian packages' layout;
#                       set any of them for another one.
# The paths (tests use these, never IOSTAGE_ROOT/usr/...):
#   IOSTAGE_BINDIR      iostage                  [/usr/bin]
#   IOSTAGE_SBINDIR     iostaged, iostagectld, iostage-prolog, iostage-epilog
#                                                [/usr/sbin]
#   IOSTAGE_PLUGIN      the SPANK plugin         [LIBDIR/slurm-wlm/iostage.so]
#   IOSTAGE_SHIM        the deep mode's shim     [LIBDIR/iostage/libiostage-preload.so]
#   IOSTAGE_LIBDIR      libiostage.so            [/usr/lib/MULTIARCH]
#   IOSTAGE_PYTHONDIR   python3's iostage module [/usr/lib/python3/dist-packages]
#   IOSTAGE_INCLUDEDIR  iostage.h                [/usr/include]
#   IOSTAGE_SYSCONFDIR  slurm/iostage.d, the profiles [/etc]
#   IOSTAGE_CONF_EXAMPLE the shipped iostage.conf [/etc/slurm/iostage.conf]
#   IOSTAGE_DOCDIR      ADMIN.md, slurm-conf/    [/usr/share/doc/iostage-common]
#   IOSTAGE_MANDIR      [/usr/share/man]
#   IOSTAGE_UNITDIR     iostaged.service         [/usr/lib/systemd/system,
#                                                 else /lib/systemd/system]

# Under CLUSTER_DIR/iostage: cluster.sh start wipes its own state and logs.
export IOSTAGE_DIR="$CLUSTER_DIR/iostage"
export IOSTAGE_ROOT="$IOSTAGE_DIR/root"
export IOSTAGE_CONF="$IOSTAGE_DIR/iostage.conf"
export IOSTAGE_SOCKET="$IOSTAGE_DIR/run/iostaged.sock"
export IOSTAGE_TIERS="$IOSTAGE_DIR/tiers"
export IOSTAGE_STATE="$IOSTAGE_DIR/state"
export IOSTAGED_LOG="$IOSTAGE_DIR/iostaged.log"
# /metrics and the textfile (test_export.sh): a port per cluster, beside
# the cluster's own ports, so concurrent clusters never share one.
export IOSTAGE_METRICS_PORT=${IOSTAGE_METRICS_PORT:-$((${CLUSTER_SLURMD_PORT:-16818} + 100))}
export IOSTAGE_TEXTFILE="$IOSTAGE_DIR/textfile/iostage.prom"
export IOSTAGE_METRICS_GRACE=10
if [ "${IOSTAGE_INSTALLED:-0}" = 1 ]; then
	IOSTAGE_ROOT=
	ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null)
	: "${IOSTAGE_BINDIR:=/usr/bin}" "${IOSTAGE_SBINDIR:=/usr/sbin}"
	: "${IOSTAGE_LIBDIR:=/usr/lib/$ma}" "${IOSTAGE_INCLUDEDIR:=/usr/include}"
	: "${IOSTAGE_PYTHONDIR:=/usr/lib/python3/dist-packages}"
	: "${IOSTAGE_PLUGIN:=$IOSTAGE_LIBDIR/slurm-wlm/iostage.so}"
	: "${IOSTAGE_SHIM:=$IOSTAGE_LIBDIR/iostage/libiostage-preload.so}"
	: "${IOSTAGE_SYSCONFDIR:=/etc}" "${IOSTAGE_CONF_EXAMPLE:=/etc/slurm/iostage.conf}"
	: "${IOSTAGE_DOCDIR:=/usr/share/doc/iostage-common}" "${IOSTAGE_MANDIR:=/usr/share/man}"
	if [ -z "${IOSTAGE_UNITDIR:-}" ]; then
		IOSTAGE_UNITDIR=/lib/systemd/system
		[ -f /usr/lib/systemd/system/iostaged.service ] && IOSTAGE_UNITDIR=/usr/lib/systemd/system
	fi
	unset ma
else
	IOSTAGE_BINDIR=$IOSTAGE_ROOT/usr/bin IOSTAGE_SBINDIR=$IOSTAGE_ROOT/usr/sbin
	IOSTAGE_LIBDIR=$IOSTAGE_ROOT/usr/lib IOSTAGE_INCLUDEDIR=$IOSTAGE_ROOT/usr/include
	IOSTAGE_PYTHONDIR=$IOSTAGE_ROOT/usr/lib/python3/dist-packages
	IOSTAGE_PLUGIN=$IOSTAGE_ROOT/usr/lib/slurm/iostage.so
	IOSTAGE_SHIM=$IOSTAGE_ROOT/usr/lib/iostage/libiostage-preload.so
	IOSTAGE_SYSCONFDIR=$IOSTAGE_ROOT/etc
	IOSTAGE_CONF_EXAMPLE=$IOSTAGE_ROOT/etc/slurm/iostage.conf.example
	IOSTAGE_DOCDIR=$IOSTAGE_ROOT/usr/share/doc/iostage IOSTAGE_MANDIR=$IOSTAGE_ROOT/usr/share/man
	IOSTAGE_UNITDIR=$IOSTAGE_ROOT/usr/lib/systemd/system
fi
export IOSTAGE_ROOT IOSTAGE_BINDIR IOSTAGE_SBINDIR IOSTAGE_LIBDIR IOSTAGE_INCLUDEDIR \
	IOSTAGE_PYTHONDIR IOSTAGE_PLUGIN IOSTAGE_SHIM IOSTAGE_SYSCONFDIR IOSTAGE_CONF_EXAMPLE IOSTAGE_DOCDIR \
	IOSTAGE_MANDIR IOSTAGE_UNITDIR
export PATH="$IOSTAGE_BINDIR:$IOSTAGE_SBINDIR:$PATH"

mkdir -p "$IOSTAGE_DIR" "$IOSTAGE_DIR/textfile"
chmod 0755 "$IOSTAGE_DIR"

# A tier that really fills up (test_faults.sh): a 32 MiB ext4 file system
# on a loop device, or a tmpfs of that size where loop devices are not
# available. No Capacity=: its size is the file system's.
export IOSTAGE_FULLFS_KIND=
mkdir -p "$IOSTAGE_TIERS/full"
truncate -s 32M "$IOSTAGE_DIR/full.img" &&
	mkfs.ext4 -q -F -m 0 "$IOSTAGE_DIR/full.img" &&
	mount -o loop "$IOSTAGE_DIR/full.img" "$IOSTAGE_TIERS/full" 2>/dev/null &&
	IOSTAGE_FULLFS_KIND=ext4-loop
[ -n "$IOSTAGE_FULLFS_KIND" ] ||
	{ mount -t tmpfs -o size=32m iostage-full "$IOSTAGE_TIERS/full" && IOSTAGE_FULLFS_KIND=tmpfs; } ||
	return 1
rmdir "$IOSTAGE_TIERS/full/lost+found" 2>/dev/null
if [ "${IOSTAGE_INSTALLED:-0}" = 1 ]; then
	for f in "$IOSTAGE_BINDIR/iostage" "$IOSTAGE_SBINDIR/iostaged" "$IOSTAGE_SBINDIR/iostagectld" \
		"$IOSTAGE_SBINDIR/iostage-prolog" "$IOSTAGE_SBINDIR/iostage-epilog" "$IOSTAGE_PLUGIN" \
		"$IOSTAGE_SHIM" "$IOSTAGE_SYSCONFDIR/slurm/iostage.d/dl-train.json"; do
		[ -e "$f" ] || { echo "setup.sh: IOSTAGE_INSTALLED=1 but $f is not installed" >&2; return 1; }
	done
else
	make -s -C "$REPO_ROOT" install DESTDIR="$IOSTAGE_ROOT" prefix=/usr \
		sysconfdir=/etc >"$IOSTAGE_DIR/install.log" 2>&1 ||
		{ cat "$IOSTAGE_DIR/install.log" >&2; return 1; }
fi

cat >"$IOSTAGE_CONF" <<CONF
# iostage.conf written by tests/integration/setup.sh
SocketPath=$IOSTAGE_SOCKET
StateDir=$IOSTAGE_STATE
ProfileDir=$IOSTAGE_SYSCONFDIR/slurm/iostage.d
Tier=nvme Path=$IOSTAGE_TIERS/nvme Medium=nvme
Tier=ram Path=$IOSTAGE_TIERS/ram Medium=ram Capacity=256M
# Too small for most datasets: the tier-full tests use it.
Tier=tiny Path=$IOSTAGE_TIERS/tiny Medium=ssd Capacity=64K
# Room for three 1 MiB datasets below the high watermark: eviction tests.
Tier=small Path=$IOSTAGE_TIERS/small Medium=ssd Capacity=4M
# A small file system of its own that fills up for real (test_faults.sh).
Tier=full Path=$IOSTAGE_TIERS/full Medium=ssd
DefaultTier=nvme
StageTimeout=60
OnStageFailure=fail
MetricsListen=127.0.0.1:$IOSTAGE_METRICS_PORT
MetricsTextfile=$IOSTAGE_TEXTFILE
MetricsInterval=1
MetricsJobGrace=$IOSTAGE_METRICS_GRACE
# Node to node (daemon/cluster/peer.c): a port per cluster, beside /metrics' (+100..102).
PeerPort=$((${CLUSTER_SLURMD_PORT:-16818} + 103))
TraceLibrary=$IOSTAGE_SHIM
CONF
chmod 0644 "$IOSTAGE_CONF"

export CLUSTER_PLUGSTACK="required $IOSTAGE_PLUGIN conf=$IOSTAGE_CONF"
export CLUSTER_PROLOG="env SLURM_CONF=$CLUSTER_DIR/slurm.conf IOSTAGE_LOG_STDERR=1 $IOSTAGE_SBINDIR/iostage-prolog -c $IOSTAGE_CONF"
export CLUSTER_EPILOG="env IOSTAGE_LOG_STDERR=1 $IOSTAGE_SBINDIR/iostage-epilog -c $IOSTAGE_CONF"

# shellcheck source=tests/integration/iostaged.sh
. "$IT_DIR/iostaged.sh"
iostaged_start || return 1
# shellcheck source=tests/integration/ctld.sh
. "$IT_DIR/ctld.sh"
ctld_write_conf
ctld_admin_user || return 1

teardown_hook() {
	ctld_stop
	iostaged_stop
	umount -l "$IOSTAGE_TIERS/full" 2>/dev/null
	rm -f "$IOSTAGE_DIR/full.img"
}
