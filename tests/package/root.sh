# shellcheck shell=bash
# Fresh Debian roots for the package test (tests/package/test_package.sh):
# made with mmdebstrap, entered with chroot, taken down completely. Self-
# contained so that it can be shared with other tests that need a root of
# another Debian release. Every function takes the root's directory first.
#
#   root_create DIR SUITE [PKG,PKG...]  mmdebstrap --variant=apt, plus PKGs
#   root_enter DIR          the mounts a Slurm cluster needs inside: /proc,
#                           /dev, /sys (the host's), a tmpfs on /run,
#                           /etc/hosts naming this host's short name,
#                           resolv.conf, and a policy-rc.d that keeps
#                           packages from starting services
#   root_run DIR CMD...     CMD inside, with a clean environment (VAR=VALUE
#                           words before CMD are passed in)
#   root_leave DIR          kill what still runs inside, unmount all under
#                           DIR (deepest first); never fails
#   root_remove DIR         root_leave, then remove DIR, only if nothing is
#                           mounted below it any more
#
# Environment: PKG_MIRROR (http://deb.debian.org/debian).

PKG_MIRROR=${PKG_MIRROR:-http://deb.debian.org/debian}

# root_sources SUITE: mmdebstrap's mirror arguments. A stable release gets
# its updates and security suites too, as a site has them (the host's
# libraries may be newer than the release's first ones).
root_sources() {
	local suite=$1
	echo "deb $PKG_MIRROR $suite main"
	case $suite in
	testing | unstable | sid | experimental) ;;
	*)
		echo "deb $PKG_MIRROR $suite-updates main"
		echo "deb ${PKG_MIRROR%/debian}/debian-security $suite-security main"
		;;
	esac
}

root_create() {
	local dir=$1 suite=$2 include=${3:-} opts=()
	local -a srcs
	mapfile -t srcs < <(root_sources "$suite")
	# testing's Release file may be past its Valid-Until on a mirror
	# snapshot; stable ones are checked as usual
	case $suite in
	testing | unstable | sid) opts+=(--aptopt='Acquire::Check-Valid-Until "false"') ;;
	esac
	[ -n "$include" ] && opts+=(--include="$include")
	mmdebstrap --quiet --variant=apt "${opts[@]}" "$suite" "$dir" "${srcs[@]}"
}

# root_mounted DIR: the mount points at or below DIR, deepest first
root_mounted() {
	local dir
	dir=$(cd "$1" 2>/dev/null && pwd -P) || return 0
	awk -v d="$dir" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo |
		sort -r
}

root_enter() {
	local dir=$1 host
	host=$(hostname -s)
	mount -t proc proc "$dir/proc" || return 1
	mount --rbind /dev "$dir/dev" && mount --make-rslave "$dir/dev" || return 1
	mount --rbind /sys "$dir/sys" && mount --make-rslave "$dir/sys" || return 1
	mount -t tmpfs -o mode=0755 tmpfs "$dir/run" || return 1
	mkdir -p "$dir/run/lock"
	{
		echo "127.0.0.1 localhost"
		echo "127.0.1.1 $host"
	} >"$dir/etc/hosts"
	cp -L /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null
	printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
	chmod 0755 "$dir/usr/sbin/policy-rc.d"
}

root_run() {
	local dir=$1
	shift
	local -a envs=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
	while [ $# -gt 0 ] && [[ $1 == [A-Za-z_]*=* ]]; do
		envs+=("$1")
		shift
	done
	chroot "$dir" /usr/bin/env -i "${envs[@]}" "$@"
}

# root_pids DIR: processes whose root is DIR (started inside it)
root_pids() {
	local dir p r
	dir=$(cd "$1" 2>/dev/null && pwd -P) || return 0
	for p in /proc/[0-9]*; do
		r=$(readlink "$p/root" 2>/dev/null) || continue
		[ "$r" = "$dir" ] && echo "${p#/proc/}"
	done
}

root_leave() {
	local dir=$1 pids m i
	[ -d "$dir" ] || return 0
	for i in 1 2 3; do
		pids=$(root_pids "$dir" | tr '\n' ' ')
		[ -n "${pids// /}" ] || break
		# shellcheck disable=SC2086
		kill -TERM $pids 2>/dev/null
		sleep 2
		# shellcheck disable=SC2086
		[ "$i" -lt 3 ] || kill -KILL $pids 2>/dev/null
	done
	for m in $(root_mounted "$dir"); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
			echo "root.sh: cannot unmount $m" >&2
	done
	return 0
}

root_remove() {
	local dir=$1
	[ -d "$dir" ] || return 0
	root_leave "$dir"
	if [ -n "$(root_mounted "$dir")" ]; then
		echo "root.sh: not removing $dir: still mounted: $(root_mounted "$dir" | tr '\n' ' ')" >&2
		return 1
	fi
	rm -rf --one-file-system "$dir"
}
