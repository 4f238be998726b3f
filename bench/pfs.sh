#!/usr/bin/env bash
# pfs.sh - a simulated remote parallel file system on this one machine.
#
#   bench/pfs.sh up      bring it up (idempotent refusal if already up)
#   bench/pfs.sh down    tear everything down (safe to run any time)
#   bench/pfs.sh status  print the state; exit 0 when up and mounted
#   bench/pfs.sh cold    make the next read cold: remount the client, drop
#                        the page cache (the brick is tmpfs: nothing to drop)
#   bench/pfs.sh rtt MS  change the added round-trip delay of a running PFS
#   bench/pfs.sh selftest  measure the RTT and the bandwidth over the link
#   bench/pfs.sh link    print the bytes the host end of the link received
#                        and sent so far ("RX TX"): RX is what the clients
#                        read from the server, headers included
#   bench/pfs.sh link-file  print the path of the RX counter `link` reads
#                        (world-readable, and the same file in a test
#                        cluster node's mount namespace: a job can read it)
#   bench/pfs.sh client MNT PIDFILE    one more client of the volume on MNT,
#                        in the caller's mount namespace (its pid in PIDFILE)
#   bench/pfs.sh unclient MNT PIDFILE  unmount it and make sure it is gone
#
# A GlusterFS volume (one brick on a tmpfs) is served by glusterd in its own
# network namespace, on a private /24 that exists only between the host and
# that namespace (a veth pair). The host mounts it with the FUSE client, read
# caches off. The link is capped with tc tbf on both veth ends; the delay is
# added by bench/pktdelay.c, which holds every packet the server receives for
# the whole RTT (NFQUEUE; this kernel has no netem). See bench/README.md,
# "The remote PFS", for what this models and what it does not.
#
# Environment: PFS_DIR (/var/tmp/iostage-pfs; the mount is PFS_DIR/mnt),
# PFS_RTT_MS (1), PFS_RATE (1gbit, tc syntax), PFS_NET (10.214.14: the /24),
# PFS_QUEUE (NFQUEUE number, 1414), PFS_NAME (iostage-pfs: namespace,
# volume and iptables comment), PFS_LRU_LIMIT (0: the client's inode table
# unbounded; GlusterFS's default caps it at 65,536 and beyond that makes the
# kernel forget cached attributes, see mount_client). Must run as root.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

: "${PFS_DIR:=/var/tmp/iostage-pfs}"
: "${PFS_RTT_MS:=1}"
: "${PFS_RATE:=1gbit}"
: "${PFS_NET:=10.214.14}"
: "${PFS_QUEUE:=1414}"
: "${PFS_NAME:=iostage-pfs}"
: "${PFS_LRU_LIMIT:=0}"

NS=$PFS_NAME
VOL=$PFS_NAME
# The veth's two ends (names <= 15 chars): from a hash of the whole name, so
# that two PFSs whose names share a prefix (iostage-pfs, iostage-pfs14)
# never take or delete each other's link.
VETH=pfs$(printf '%s' "$PFS_NAME" | cksum | cut -d' ' -f1)
VH=${VETH:0:12}h # host end
VN=${VETH:0:12}n # namespace end
HOST_IP=$PFS_NET.1
SRV_IP=$PFS_NET.2
MNT=$PFS_DIR/mnt
BRICK=$PFS_DIR/brick
STATE=$PFS_DIR/state
GD=$PFS_DIR/glusterd # glusterd's private working directory
COMMENT="$PFS_NAME"

die() { echo "pfs: $*" >&2; exit 1; }
say() { echo "pfs: $*" >&2; }
in_ns() { nsenter --net="/run/netns/$NS" "$@"; }

[ "$(id -u)" = 0 ] || die "must run as root (network namespace, mount, iptables)"
case "$PFS_DIR" in /*) ;; *) die "PFS_DIR must be absolute, got '$PFS_DIR'" ;; esac
awk -v r="$PFS_RTT_MS" 'BEGIN { exit !(r + 0 >= 0 && r + 0 <= 1000) }' ||
	die "PFS_RTT_MS must be 0..1000, got '$PFS_RTT_MS'"

delay_bin() {
	local src="$here/pktdelay.c" bin="$BUILD/bench/iostage-pktdelay"
	if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
		mkdir -p "$BUILD/bench"
		${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -o "$bin" "$src" \
			$(pkg-config --cflags --libs libnetfilter_queue) >&2 ||
			die "cannot build $src (libnetfilter-queue-dev missing? run bench/install-deps.sh)"
	fi
	echo "$bin"
}

state_get() { [ -f "$STATE" ] && sed -n "s/^$1=//p" "$STATE" | tail -1; }
state_set() { mkdir -p "$PFS_DIR" && echo "$1=$2" >>"$STATE"; }

# kill_ours PIDFILE: kill_pid the pid in PIDFILE only if that process serves
# our volume (a stale pid file may name someone else's process by now).
kill_ours() {
	local pid
	pid=$(tr -dc '0-9' <"$1" 2>/dev/null)
	[ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$VOL" && kill_pid "$pid"
}

# kill_pid PID: TERM, wait up to 5 s, then KILL; only a live pid we recorded.
kill_pid() {
	local pid=$1 i
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	kill "$pid" 2>/dev/null
	for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
	kill -9 "$pid" 2>/dev/null
}

start_delay() {
	local us bin pid
	us=$(awk -v r="$1" 'BEGIN { printf "%d", r * 1000 + 0.5 }')
	bin=$(delay_bin) || exit 1
	kill_pid "$(state_get delay_pid)"
	if [ "$us" -gt 0 ]; then
		# nsenter itself (not the in_ns function, a subshell) so that $!
		# is the delay program's pid: nsenter execs setsid, which execs
		# it (no fork: a job started with & leads no process group). In
		# a session of its own: a Ctrl-C in the terminal of whoever
		# brought the PFS up must not stop it (it exits on SIGINT, and
		# its NFQUEUE rule then drops every packet to the server: the
		# PFS hangs under whoever still reads it); `down` stops it.
		nsenter --net="/run/netns/$NS" setsid "$bin" -q "$PFS_QUEUE" -d "$us" </dev/null >>"$PFS_DIR/pktdelay.log" 2>&1 &
		pid=$!
		sleep 0.2
		kill -0 "$pid" 2>/dev/null || die "the delay program died at start (see $PFS_DIR/pktdelay.log)"
		state_set delay_pid "$pid"
		# Real-time priority: on a loaded machine a normal process is
		# woken late, and every late wake-up adds to the RTT.
		chrt -f -p 10 "$pid" 2>/dev/null || say "cannot give the delay program real-time priority: the RTT will vary with the load"
		# The packets the server receives, not those it sends: a packet
		# the server sends is still charged to its socket while held
		# (TCP small queues), which stalled every reply of more than a
		# few segments by one more RTT and 1 MiB took 71 ms instead of
		# 9 ms at +1 ms. A received packet is no longer any socket's.
		in_ns iptables -t raw -C PREROUTING -i "$VN" -m comment --comment "$COMMENT" -j NFQUEUE --queue-num "$PFS_QUEUE" 2>/dev/null ||
			in_ns iptables -t raw -A PREROUTING -i "$VN" -m comment --comment "$COMMENT" -j NFQUEUE --queue-num "$PFS_QUEUE" ||
			die "cannot add the NFQUEUE rule"
	else
		del_rules
		state_set delay_pid ""
	fi
	state_set rtt_ms "$1"
}

# del_rules: only our own iptables rules, found by their comment.
del_rules() {
	[ "$(state_get netns)" = "$NS" ] && [ -e "/run/netns/$NS" ] || return 0
	local rule
	in_ns iptables -t raw -S PREROUTING 2>/dev/null | grep -F -- "--comment $COMMENT " | sed 's/^-A /-D /' |
		while read -r rule; do
			# shellcheck disable=SC2086
			in_ns iptables -t raw $rule
		done
}

mount_client() {
	mkdir -p "$MNT"
	# The kernel's attribute/entry caches keep their defaults (1 s):
	# `pfs.sh cold` remounts, which empties them and the FUSE page cache.
	# lru-limit: with GlusterFS's default (65,536 inodes) a walk of more
	# files makes the client invalidate inodes the kernel has just cached
	# from READDIRPLUS, and each later stat of one costs a GETATTR: a stat
	# of every file of 100,000 sent ~30,000 (0 at 60,000 files, 10,055 at
	# 80,000). A kernel client keeps its inodes in the kernel's own
	# cache, with no such cap; 0 lifts it.
	mount -t glusterfs -o "log-file=$PFS_DIR/client.log,lru-limit=$PFS_LRU_LIMIT" \
		"$SRV_IP:/$VOL" "$MNT" || return 1
}

do_down() {
	local pid f
	# /proc/mounts, not mountpoint(1): a dead client's mount fails stat.
	if grep -qsF " $MNT fuse" /proc/mounts; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT"
	fi
	kill_pid "$(state_get delay_pid)"
	del_rules
	if [ -n "$(state_get glusterd_pid)" ] && kill -0 "$(state_get glusterd_pid)" 2>/dev/null; then
		# The brick processes are glusterd's children: stop the volume so
		# glusterd stops them, then kill what still runs by its pid file.
		timeout 20 gluster --mode=script --glusterd-sock="$GD/glusterd.socket" volume stop "$VOL" force >/dev/null 2>&1
	fi
	# The brick's pid file is under /var/run/gluster/vols/VOL whatever
	# glusterd's working directory.
	for f in "$GD"/vols/"$VOL"/run/*.pid "$GD"/run/*.pid /var/run/gluster/vols/"$VOL"/*.pid; do
		[ -f "$f" ] && kill_ours "$f"
	done
	kill_pid "$(state_get glusterd_pid)"
	# Our end of the veth only if we made it (its peer lives in our
	# namespace, which goes below and takes the pair with it).
	[ "$(state_get veth)" = "$VH" ] && ip link del "$VH" 2>/dev/null
	[ "$(state_get netns)" = "$NS" ] && [ -e "/run/netns/$NS" ] && ip netns del "$NS"
	if mountpoint -q "$BRICK" 2>/dev/null; then umount "$BRICK" || umount -l "$BRICK"; fi
	rm -f "$STATE"
	rm -rf "$GD"
	return 0
}

do_up() {
	[ -f "$STATE" ] && die "already up (state in $STATE); run 'bench/pfs.sh down' first"
	command -v glusterd >/dev/null && command -v iptables >/dev/null ||
		die "glusterfs-server/iptables missing: run bench/install-deps.sh"
	ip -4 route get "$SRV_IP" 2>/dev/null | grep -q " via " ||
		die "$PFS_NET.0/24 is already routed on this host; set PFS_NET to a free /24"
	mkdir -p "$PFS_DIR" "$BRICK" "$GD" "$MNT"
	: >"$STATE"
	trap 'say "bring-up failed: tearing down"; do_down' EXIT

	# The network: a namespace and a veth pair, the /24 only between them.
	[ -e "/run/netns/$NS" ] && die "network namespace $NS exists already (another PFS? set PFS_NAME)"
	ip netns add "$NS" || die "cannot create network namespace $NS"
	state_set netns "$NS"
	ip link add "$VH" type veth peer name "$VN" || die "cannot create veth $VH"
	state_set veth "$VH"
	ip link set "$VN" netns "$NS"
	ip addr add "$HOST_IP/24" dev "$VH"
	ip link set "$VH" up
	in_ns ip addr add "$SRV_IP/24" dev "$VN"
	in_ns ip link set "$VN" up
	in_ns ip link set lo up
	# cubic, not the host's bbr: bbr's pacing collapses when the delay
	# program holds its packets (TCP small queues count them as queued),
	# e.g. 2 MB/s at +5 ms instead of the cap.
	ip route replace "$PFS_NET.0/24" dev "$VH" congctl cubic
	in_ns ip route replace "$PFS_NET.0/24" dev "$VN" congctl cubic
	# The cap on both ends; the burst is one jiffy's worth at 1 Gbit.
	tc qdisc add dev "$VH" root tbf rate "$PFS_RATE" burst 512kb latency 100ms || die "tc tbf failed on $VH"
	in_ns tc qdisc add dev "$VN" root tbf rate "$PFS_RATE" burst 512kb latency 100ms || die "tc tbf failed on $VN"

	# The server: glusterd with a private working directory and socket,
	# started in the namespace's network only (nsenter --net: a private
	# mount table would pin the client's FUSE mount).
	mount -t tmpfs -o size=80% tmpfs "$BRICK" || die "cannot mount the brick tmpfs"
	sed -e "s|option working-directory .*|option working-directory $GD|" \
		-e "s|option transport.socket.listen-port .*|&\n    option transport.socket.bind-address $SRV_IP\n    option glusterd-sockfile $GD/glusterd.socket|" \
		/etc/glusterfs/glusterd.vol >"$PFS_DIR/glusterd.vol"
	in_ns glusterd -f "$PFS_DIR/glusterd.vol" -p "$PFS_DIR/glusterd.pid" \
		-l "$PFS_DIR/glusterd.log" --xlator-option "*.glusterd-sockfile=$GD/glusterd.socket" ||
		die "glusterd did not start (see $PFS_DIR/glusterd.log)"
	local i
	for i in $(seq 100); do [ -s "$PFS_DIR/glusterd.pid" ] && [ -S "$GD/glusterd.socket" ] && break; sleep 0.1; done
	state_set glusterd_pid "$(cat "$PFS_DIR/glusterd.pid")"
	local g=(gluster --mode=script --glusterd-sock="$GD/glusterd.socket")
	for i in $(seq 50); do timeout 5 "${g[@]}" volume list >/dev/null 2>&1 && break; sleep 0.2; done
	timeout 30 "${g[@]}" volume create "$VOL" "$SRV_IP:$BRICK/b" force >/dev/null ||
		die "gluster volume create failed (see $PFS_DIR/glusterd.log)"
	# Data caches and open-behind off on the client side of the volume
	# graph. The metadata cache (md-cache, stat-prefetch), readdir-ahead,
	# read-ahead and write-behind stay, as a Lustre client has them: with
	# them off every stat of a copy paid several round trips (~30 ms per
	# file at +1 ms). Every cold run remounts, so nothing carries over.
	local o
	for o in performance.io-cache performance.quick-read performance.open-behind \
		performance.nl-cache nfs.disable; do
		v=off; [ "$o" = nfs.disable ] && v=on
		timeout 30 "${g[@]}" volume set "$VOL" "$o" "$v" >/dev/null 2>&1
	done
	timeout 30 "${g[@]}" volume start "$VOL" >/dev/null || die "gluster volume start failed"

	start_delay "$PFS_RTT_MS"
	state_set rate "$PFS_RATE"
	for i in $(seq 30); do mount_client && break; sleep 0.5; done
	mountpoint -q "$MNT" || die "cannot mount $SRV_IP:/$VOL on $MNT (see $PFS_DIR/client.log)"
	chmod 1777 "$MNT"
	trap - EXIT
	say "up: $MNT (GlusterFS from namespace $NS at $SRV_IP, +$PFS_RTT_MS ms RTT, $PFS_RATE)"
}

# client MNT PIDFILE: one more GlusterFS client of the volume, mounted on
# MNT in the caller's mount namespace, with the host mount's options. The
# multi-node bench (bench/cluster-cache.sh) gives each node of the test
# cluster its own: one client shared by every node is one kernel page cache
# for all of them, and a second node's read of a file the first has read
# comes from that cache, not over the link (see bench/README.md, "The
# cluster's NVMe as one cache"). Its own log, PFS_DIR/NAME.log (NAME:
# PIDFILE's name without .pid).
do_client() {
	local mnt=$1 pidf=$2 tag n0 i
	[ -f "$STATE" ] || die "not up"
	case "$mnt$pidf" in /*/*) ;; *) die "client: MNT and PIDFILE must be absolute" ;; esac
	[ -d "$mnt" ] || die "client: no directory $mnt"
	tag=$(basename "$pidf" .pid)
	n0=$(awk -v m="$mnt" '$2 == m' /proc/self/mounts | wc -l)
	rm -f "$pidf"
	glusterfs --log-file="$PFS_DIR/$tag.log" --lru-limit="$PFS_LRU_LIMIT" \
		--process-name fuse --pid-file="$pidf" --volfile-server="$SRV_IP" \
		--volfile-id="/$VOL" "$mnt" </dev/null >/dev/null 2>&1 ||
		die "client: glusterfs failed on $mnt (see $PFS_DIR/$tag.log)"
	for i in $(seq 100); do
		[ "$(awk -v m="$mnt" '$2 == m' /proc/self/mounts | wc -l)" -gt "$n0" ] && [ -s "$pidf" ] &&
			stat -f "$mnt" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	do_unclient "$mnt" "$pidf"
	die "client: $mnt not mounted after 10 s (see $PFS_DIR/$tag.log)"
}

# unclient MNT PIDFILE: unmount the client do_client mounted on MNT (the
# top mount there, in the caller's mount namespace) and stop its process
# by its pid; a no-op when it is gone already.
do_unclient() {
	local mnt=$1 pidf=$2 pid
	pid=$(tr -dc '0-9' <"$pidf" 2>/dev/null)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$VOL"; then
		umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
		kill_ours "$pidf"
	fi
	rm -f "$pidf"
}

do_link() {
	[ "$(state_get veth)" = "$VH" ] || die "not up"
	echo "$(cat "/sys/class/net/$VH/statistics/rx_bytes") $(cat "/sys/class/net/$VH/statistics/tx_bytes")"
}

do_link_file() {
	[ "$(state_get veth)" = "$VH" ] || die "not up"
	echo "/sys/class/net/$VH/statistics/rx_bytes"
}

do_cold() {
	mountpoint -q "$MNT" || die "not mounted: $MNT"
	sync
	umount "$MNT" || die "cannot unmount $MNT (busy?)"
	echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || say "cannot drop the page cache here"
	mount_client || die "cannot remount $MNT"
}

do_status() {
	if [ ! -f "$STATE" ]; then echo "down"; return 1; fi
	echo "dir=$PFS_DIR mnt=$MNT rtt_ms=$(state_get rtt_ms) rate=$(state_get rate) glusterd=$(state_get glusterd_pid) delay=$(state_get delay_pid)"
	mountpoint -q "$MNT" && echo mounted || { echo "not mounted"; return 1; }
}

# selftest: the RTT of a small request (bench/rttprobe.c: median of 20 TCP
# connects to the brick port, one round trip each), the cost of one cold
# small-file read (50 files of 110 KB, one reader: an open and a read are a
# few round trips, so it must follow the RTT; a fixed stall per file showed
# when the delay was applied to the server's replies) and a dd of 256 MiB
# read over the link.
do_selftest() {
	mountpoint -q "$MNT" || die "not up"
	local rtt mb t0 t1 port per i
	port=$(ss -Htn state established dst "$SRV_IP" 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -n | tail -1)
	rtt=$("$(bench_helper rttprobe)" "$SRV_IP" "${port:-24007}" 20) || die "cannot reach $SRV_IP"
	mkdir -p "$MNT/.selftest.d"
	for i in $(seq 50); do head -c 110000 /dev/urandom >"$MNT/.selftest.d/f$i"; done
	do_cold
	ls "$MNT" >/dev/null # the client's first request connects: not a file's cost
	t0=$(bench_now)
	cat "$MNT"/.selftest.d/f* >/dev/null
	t1=$(bench_now)
	per=$(awk -v t="$(bench_sub "$t1" "$t0")" 'BEGIN { printf "%.2f", t * 1000 / 50 }')
	rm -rf "$MNT/.selftest.d"
	mb=${PFS_SELFTEST_MB:-256}
	dd if=/dev/urandom of="$MNT/.selftest" bs=1M count="$mb" status=none
	do_cold
	t0=$(bench_now)
	dd if="$MNT/.selftest" of=/dev/null bs=1M status=none
	t1=$(bench_now)
	rm -f "$MNT/.selftest"
	awk -v r="$rtt" -v p="$per" -v t="$(bench_sub "$t1" "$t0")" -v mb="$mb" 'BEGIN {
		printf "rtt_ms=%s smallfile_ms=%s read_MBps=%.1f\n", r, p, mb * 1.048576 / t }'
}

case "${1:-}" in
up) do_up ;;
down) do_down; say "down" ;;
status) do_status ;;
cold) do_cold ;;
rtt)
	[ -f "$STATE" ] || die "not up"
	PFS_RTT_MS=${2:?rtt needs milliseconds}
	awk -v r="$PFS_RTT_MS" 'BEGIN { exit !(r + 0 >= 0 && r + 0 <= 1000) }' || die "bad RTT '$PFS_RTT_MS'"
	start_delay "$PFS_RTT_MS"
	;;
selftest) do_selftest ;;
link) do_link ;;
link-file) do_link_file ;;
client) [ $# -eq 3 ] || die "usage: $0 client MNT PIDFILE"; do_client "$2" "$3" ;;
unclient) [ $# -eq 3 ] || die "usage: $0 unclient MNT PIDFILE"; do_unclient "$2" "$3" ;;
*) echo "usage: $0 up|down|status|cold|rtt MS|selftest|link|link-file|client MNT PIDFILE|unclient MNT PIDFILE" >&2; exit 2 ;;
esac
