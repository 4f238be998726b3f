# shellcheck shell=bash
# Sourced by run.sh before the cluster starts: install iostage the way a site
# would (make install into a staging root), write a test iostage.conf whose
# tiers are directories under the cluster dir, point Slurm's plugstack,
# Prolog and Epilog at the installed programs, and start iostaged.
#
# Exports for tests: IOSTAGE_ROOT (the installed tree), IOSTAGE_CONF,
# IOSTAGE_SOCKET, IOSTAGE_TIERS (dir holding one dir per tier), IOSTAGED_LOG,
# and the functions in iostaged.sh (iostaged_start/stop/restart, ...).

export IOSTAGE_ROOT="$CLUSTER_DIR/root"
export IOSTAGE_CONF="$CLUSTER_DIR/iostage.conf"
export IOSTAGE_SOCKET="$CLUSTER_DIR/run/iostaged.sock"
export IOSTAGE_TIERS="$CLUSTER_DIR/tiers"
export IOSTAGED_LOG="$CLUSTER_DIR/log/iostaged.log"
export PATH="$IOSTAGE_ROOT/usr/bin:$IOSTAGE_ROOT/usr/sbin:$PATH"

make -s -C "$REPO_ROOT" install DESTDIR="$IOSTAGE_ROOT" prefix=/usr \
	sysconfdir=/etc >"$CLUSTER_DIR/install.log" 2>&1 ||
	{ cat "$CLUSTER_DIR/install.log" >&2; return 1; }

mkdir -p "$CLUSTER_DIR/log" "$CLUSTER_DIR/state"
cat >"$IOSTAGE_CONF" <<CONF
# iostage.conf written by tests/integration/setup.sh
SocketPath=$IOSTAGE_SOCKET
StateDir=$CLUSTER_DIR/state
ProfileDir=$IOSTAGE_ROOT/etc/slurm/iostage.d
Tier=nvme Path=$IOSTAGE_TIERS/nvme Medium=nvme
Tier=ram Path=$IOSTAGE_TIERS/ram Medium=ram Capacity=256M
# Too small for most datasets: the tier-full tests use it.
Tier=tiny Path=$IOSTAGE_TIERS/tiny Medium=ssd Capacity=64K
DefaultTier=nvme
StageTimeout=60
OnStageFailure=fail
CONF
chmod 0644 "$IOSTAGE_CONF"

export CLUSTER_PLUGSTACK="required $IOSTAGE_ROOT/usr/lib/slurm/iostage.so conf=$IOSTAGE_CONF"
export CLUSTER_PROLOG="env SLURM_CONF=$CLUSTER_DIR/slurm.conf IOSTAGE_LOG_STDERR=1 $IOSTAGE_ROOT/usr/sbin/iostage-prolog -c $IOSTAGE_CONF"
export CLUSTER_EPILOG="env IOSTAGE_LOG_STDERR=1 $IOSTAGE_ROOT/usr/sbin/iostage-epilog -c $IOSTAGE_CONF"

# shellcheck source=tests/integration/iostaged.sh
. "$IT_DIR/iostaged.sh"
iostaged_start || return 1

teardown_hook() {
	iostaged_stop
}
