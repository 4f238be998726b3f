#!/usr/bin/env bash
# Install what the benchmark needs on top of the build/test packages: the
# peer copy tools (fpart's fpsync, rclone), fio for the device bound, GNU
# time, and jq for the results file; for the simulated remote PFS
# (bench/pfs.sh): GlusterFS server and client, libnetfilter-queue for the
# delay program, iptables, and sshfs/sftp-server for the fallback;
# python3-xxhash for bench/chunk_reads.py (a part's chunk names). Delegates to scripts/install-deps.sh,
# which is idempotent and quiet when everything is already there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
IOSTAGE_EXTRA_PKGS="${IOSTAGE_EXTRA_PKGS:+$IOSTAGE_EXTRA_PKGS }fpart rclone fio time jq glusterfs-server glusterfs-client libnetfilter-queue-dev iptables sshfs openssh-sftp-server python3-xxhash" \
	exec "$here/../scripts/install-deps.sh"
