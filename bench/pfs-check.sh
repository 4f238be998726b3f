#!/usr/bin/env bash
# pfs-check.sh - the remote PFS's self-test (make check-pfs): bring it up and
# at +1, +5 and +0.2 ms check that a round trip costs at least the added
# delay and at most the delay + 1 ms, that a cold small-file read follows
# the RTT (at most 8 round trips + 4 ms: no fixed stall per file), that a
# cold 256 MiB read over the link at +0.2 ms stays under the cap (+10%) and
# reaches half of it, and that down leaves no namespace, mount, rule or
# process behind. Fails with one line per miss.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export PFS_DIR=${PFS_DIR:-/var/tmp/iostage-pfscheck}
: "${PFS_NAME:=iostage-pfs}"
export PFS_NAME
fail=0
miss() { echo "pfs-check: FAIL: $*" >&2; fail=1; }
trap '"$here/pfs.sh" down >/dev/null 2>&1' EXIT
"$here/pfs.sh" down >/dev/null 2>&1
PFS_RTT_MS=1 "$here/pfs.sh" up || { echo "pfs-check: FAIL: up" >&2; exit 1; }
delay_pid=$(sed -n 's/^delay_pid=//p' "$PFS_DIR/state" | tail -1)
for r in 1 5 0.2; do
	"$here/pfs.sh" rtt "$r" || miss "rtt $r"
	[ "$r" = 0.2 ] || delay_pid=$(sed -n 's/^delay_pid=//p' "$PFS_DIR/state" | tail -1)
	out=$(PFS_SELFTEST_MB=$([ "$r" = 0.2 ] && echo 256 || echo 16) "$here/pfs.sh" selftest) || miss "selftest at $r ms"
	echo "pfs-check: +$r ms: $out"
	rtt=$(sed -n 's/.*rtt_ms=\([0-9.]*\).*/\1/p' <<<"$out")
	awk -v m="$rtt" -v r="$r" 'BEGIN { exit !(m >= r && m <= r + 1) }' || miss "+$r ms: measured RTT $rtt ms"
	per=$(sed -n 's/.*smallfile_ms=\([0-9.]*\).*/\1/p' <<<"$out")
	awk -v p="$per" -v r="$r" 'BEGIN { exit !(p > 0 && p <= 8 * r + 4) }' ||
		miss "+$r ms: a cold small-file read took $per ms (more than 8 round trips + 4 ms: a stall that is not the RTT)"
	if [ "$r" = 0.2 ]; then
		mbps=$(sed -n 's/.*read_MBps=\([0-9.]*\).*/\1/p' <<<"$out")
		awk -v b="$mbps" 'BEGIN { exit !(b <= 125 * 1.1 && b >= 125 / 2) }' || miss "read $mbps MB/s over a 1 Gbit (125 MB/s) cap"
	fi
done
"$here/pfs.sh" down >/dev/null 2>&1
[ -e "/run/netns/$PFS_NAME" ] && miss "namespace left behind"
mountpoint -q "$PFS_DIR/mnt" 2>/dev/null && miss "mount left behind"
[ -n "$delay_pid" ] && kill -0 "$delay_pid" 2>/dev/null && miss "the delay program (pid $delay_pid) left behind"
[ "$fail" = 0 ] && echo "pfs-check: ok"
exit "$fail"
