#!/usr/bin/env bash
# Install what the benchmark needs on top of the build/test packages: the
# peer copy tools (fpart's fpsync, rclone), fio for the device bound, GNU
# time, and jq for the results file. Delegates to scripts/install-deps.sh,
# which is idempotent and quiet when everything is already there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
IOSTAGE_EXTRA_PKGS="${IOSTAGE_EXTRA_PKGS:+$IOSTAGE_EXTRA_PKGS }fpart rclone fio time jq" \
	exec "$here/../scripts/install-deps.sh"
