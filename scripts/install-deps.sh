#!/usr/bin/env bash
# Install the Debian packages iostage needs to build and to run its
# integration tests (a one-node Slurm cluster on loopback).
#
# Idempotent and quiet: if every package is already installed it prints
# nothing and exits 0. Otherwise (as root) it runs apt-get update/install
# non-interactively. Safe under CI=true with no stdin.
set -euo pipefail

PKGS=(
  build-essential pkg-config
  libslurm-dev slurm-wlm slurmctld slurmd slurm-client
  munge libmunge-dev
  libpmix-dev libcjson-dev librocksdb-dev check
  rsync procps passwd util-linux coreutils hostname
)
# Extra packages may be appended by callers: IOSTAGE_EXTRA_PKGS="a b".
if [ -n "${IOSTAGE_EXTRA_PKGS:-}" ]; then
  # shellcheck disable=SC2206
  PKGS+=(${IOSTAGE_EXTRA_PKGS})
fi

missing=()
for p in "${PKGS[@]}"; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$st" = "install ok installed" ] || missing+=("$p")
done

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: missing packages (${missing[*]}) and not root; run as root: sudo $0" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-deps.sh: installing ${missing[*]}" >&2
apt-get update -qq </dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
# Debian's package postinst may start daemons through systemd/init scripts;
# our test cluster starts its own, so nothing else to do here.
echo "install-deps.sh: done" >&2
