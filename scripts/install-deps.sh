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
  libpmix-dev libcjson-dev librocksdb-dev libjemalloc-dev libxxhash-dev libssl-dev check
  rsync procps passwd util-linux coreutils hostname iproute2 socat bsdutils man-db python3 bc
  # the spread view (view/, iostage-view): libfuse 3, and the fuse3
  # package's /dev/fuse setup on the nodes
  libfuse3-dev fuse3
  libmicrohttpd-dev prometheus chromium imagemagick tesseract-ocr
  tesseract-ocr-eng fonts-dejavu-core jq curl
  clang libclang-rt-dev
  # make format / make format-check (scripts/check-format.sh): the
  # .clang-format is tuned for this release's clang-format (14)
  clang-format
  e2fsprogs sshfs openssh-sftp-server
  # cli_filter.lua run outside Slurm (tests/install/test_install.sh)
  lua5.1
  # the PyTorch example of docs/PYTHON.md (examples/pytorch), trained as a
  # job by tests/integration/test_python.sh; ~100 MB from the archive
  python3-torch python3-torchvision python3-h5py python3-numpy python3-pil
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

# Keep the packages' maintainer scripts from starting munge/slurmctld/slurmd
# services (the test cluster starts its own daemons with its own config).
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy" && made_policy=1
fi
trap '[ "$made_policy" = 1 ] && rm -f "$policy"' EXIT

apt-get update -qq </dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
echo "install-deps.sh: done" >&2
