#!/usr/bin/env bash
# The Debian packages as an admin gets them: build them with
# dpkg-buildpackage (lintian: no errors), make a FRESH Debian root with
# mmdebstrap, install them there with apt (which resolves their
# dependencies from the suite; iostage-node alone first, from a local
# repository of them, which must bring python3-iostage, its Recommends),
# check what they put down, the Python module with Debian's python3, run
# the one-node
# integration suite inside the root against the installed files
# (tests/integration/run.sh with IOSTAGE_INSTALLED=1), then purge them.
#
#   tests/package/test_package.sh [SUITE]     (make check-package; as root)
#
# SUITE: bookworm (default: this host's release), trixie, testing, ...
# The packages are built on this host when it runs SUITE, else in a second
# fresh root of SUITE with their build dependencies. What is built is this
# work tree as it is (tracked and new files, committed or not).
#
# Environment:
#   PKG_WORK=DIR   work directory (default: a new /var/tmp/iostage-pkg.XXXXXX,
#                  removed at the end); its roots are removed unless
#                  something failed or PKG_KEEP=1
#   PKG_DEBS=DIR   install the .debs in DIR instead of building them
#   PKG_MIRROR     Debian mirror (http://deb.debian.org/debian)
#   PKG_NO_SUITE=1 stop after the install checks (no integration suite)
#   IT_FILTER, IT_TIMEOUT, IT_VERBOSE  passed to the suite
# The suite binds fixed ports: it runs under flock /tmp/iostage-suite.lock,
# like every other run of it on this machine.
#
# Output: PASS/FAIL lines for this script's checks, the suite's own, and a
# last line "package: N passed, M failed; suite: P passed, Q failed".
set -uo pipefail

PKG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO_ROOT=$(cd "$PKG_DIR/../.." && pwd -P)
# shellcheck source=tests/package/root.sh
. "$PKG_DIR/root.sh"

. /etc/os-release
SUITE=${1:-$VERSION_CODENAME}
VERSION=$(dpkg-parsechangelog -l "$REPO_ROOT/debian/changelog" -S Version)

[ "$(id -u)" -eq 0 ] || { echo "test_package.sh: must run as root (mmdebstrap, chroot, a Slurm cluster)" >&2; exit 1; }
for c in dpkg-buildpackage dpkg-scanpackages mmdebstrap lintian flock; do
	command -v "$c" >/dev/null || { echo "test_package.sh: no $c (apt-get install dpkg-dev debhelper mmdebstrap lintian)" >&2; exit 1; }
done

WORK=${PKG_WORK:-$(mktemp -d /var/tmp/iostage-pkg.XXXXXX)}
mkdir -p "$WORK"
ROOT="$WORK/root"            # the fresh root the packages are installed in
BROOT="$WORK/build-root"     # the root they are built in (another release)
SRC="$WORK/src/iostage-$VERSION"
DEBS=${PKG_DEBS:-$WORK/src}

# What the site has before iostage (Slurm and munge), and what the
# integration suite itself uses.
TEST_PKGS=slurmctld,slurmd,slurm-client,munge,jq,curl,socat,rsync,procps,iproute2
TEST_PKGS+=,e2fsprogs,util-linux,passwd,hostname,python3,gcc,libc6-dev,man-db,bsdutils
TEST_PKGS+=,prometheus,chromium,imagemagick,tesseract-ocr,tesseract-ocr-eng
TEST_PKGS+=,fonts-dejavu-core,sshfs,openssh-sftp-server,ca-certificates
# srun --mpi=pmix: Slurm's mpi/pmix plugin dlopens libpmix.so, which only
# the -dev package ships
TEST_PKGS+=,libpmix-dev
# the PyTorch example (tests/integration/test_python.sh) on the packaged
# Python module
TEST_PKGS+=,python3-torch,python3-torchvision,python3-h5py,python3-numpy,python3-pil
IOSTAGE_PKGS="iostage-node iostagectld iostage-common libiostage0 libiostage-dev python3-iostage"

passed=0
failed=0
suite_line="not run"
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
t0=$SECONDS
lap() { echo "--- $1 ($((SECONDS - t0)) s)"; }

cleanup() {
	root_leave "$ROOT"
	root_leave "$BROOT"
	if [ "$failed" -eq 0 ] && [ "${PKG_KEEP:-0}" != 1 ]; then
		root_remove "$ROOT" && root_remove "$BROOT" &&
			{ [ -n "${PKG_WORK:-}" ] || rm -rf --one-file-system "$WORK"; }
	else
		echo "test_package.sh: kept $WORK" >&2
	fi
}
trap cleanup EXIT
trap 'echo "test_package.sh: interrupted" >&2; exit 130' INT TERM

finish() {
	echo "package: $passed passed, $failed failed; suite: $suite_line"
	[ "$failed" -eq 0 ]
	exit
}

# --- build ------------------------------------------------------------------------

# copy_tree DEST: this work tree's files, committed or not (no build output)
copy_tree() {
	mkdir -p "$1"
	git -C "$REPO_ROOT" ls-files -co --exclude-standard -z |
		(cd "$REPO_ROOT" && xargs -0 cp --parents -t "$1")
}

build_here() {
	copy_tree "$SRC" || return 1
	(cd "$SRC" && dpkg-checkbuilddeps) || return 1
	(cd "$SRC" && dpkg-buildpackage -us -uc -b) >"$WORK/build.log" 2>&1
}

build_in_root() {
	root_create "$BROOT" "$SUITE" build-essential,dpkg-dev,debhelper,lintian,git || return 1
	root_enter "$BROOT" || return 1
	copy_tree "$BROOT/build/iostage-$VERSION" || return 1
	{
		root_run "$BROOT" apt-get update -q &&
			root_run "$BROOT" apt-get build-dep -y -q "/build/iostage-$VERSION" &&
			root_run "$BROOT" sh -c "cd /build/iostage-$VERSION && dpkg-buildpackage -us -uc -b"
	} >"$WORK/build.log" 2>&1 || return 1
	mkdir -p "$SRC"
	cp "$BROOT"/build/*.deb "$BROOT"/build/*.changes "$BROOT"/build/*.buildinfo "$WORK/src/" &&
		cp -a "$BROOT/build/iostage-$VERSION/build" "$SRC/build"
}

if [ -z "${PKG_DEBS:-}" ]; then
	lap "building the packages for $SUITE"
	if [ "$SUITE" = "$VERSION_CODENAME" ]; then
		build_here
	else
		build_in_root
	fi
	rc=$?
	if [ "$rc" -ne 0 ]; then
		tail -n 30 "$WORK/build.log" 2>/dev/null
		fail "dpkg-buildpackage -us -uc -b (log: $WORK/build.log)"
		finish
	fi
	pass "dpkg-buildpackage -us -uc -b ($(grep -c '^dpkg-deb: building package' "$WORK/build.log") packages)"
	changes=$(ls "$WORK"/src/*.changes)
	if [ "$SUITE" = "$VERSION_CODENAME" ]; then
		lint=$(lintian --fail-on error "$changes" 2>&1)
	else
		lint=$(root_run "$BROOT" sh -c 'lintian --fail-on error /build/*.changes' 2>&1)
	fi
	lrc=$?
	printf '%s\n' "$lint" | sed 's/^/    lintian: /'
	if [ "$lrc" -eq 0 ]; then
		pass "lintian: no errors ($(printf '%s\n' "$lint" | grep -c '^W:') warnings)"
	else
		fail "lintian reports errors"
	fi
	root_remove "$BROOT"
fi

debs=()
for p in $IOSTAGE_PKGS; do
	d=$(ls "$DEBS/${p}_"*.deb 2>/dev/null | head -n1)
	[ -n "$d" ] || { fail "no $p package in $DEBS"; finish; }
	debs+=("$d")
done

# --- the pin to the Slurm release ---------------------------------------------------

node_deb=${debs[0]}
dep=$(dpkg-deb -f "$node_deb" Depends)
ver=$(dpkg-deb -f "$node_deb" Version)
re='slurm-wlm-basic-plugins \(>= ([0-9]+:)?([0-9]+\.[0-9]+)~\), slurm-wlm-basic-plugins \(<< ([0-9:.]+)~\)'
if [[ $dep =~ $re ]] && [[ $ver == *+sl${BASH_REMATCH[2]//./} ]]; then
	rel=${BASH_REMATCH[2]}
	pass "iostage-node $ver depends on Slurm $rel only (slurm-wlm-basic-plugins >= ${BASH_REMATCH[1]}$rel~, << ${BASH_REMATCH[3]}~)"
else
	fail "iostage-node $ver: no Slurm release pin in Depends: $dep"
	rel=
fi

# --- a fresh root, the packages installed with apt -------------------------------------

lap "creating a fresh $SUITE root"
if ! root_create "$ROOT" "$SUITE" "$TEST_PKGS" >"$WORK/root.log" 2>&1; then
	tail -n 20 "$WORK/root.log"
	fail "mmdebstrap $SUITE (log: $WORK/root.log)"
	finish
fi
root_enter "$ROOT" || { fail "mounting /proc, /dev, /sys, /run in $ROOT"; finish; }
# The packages as a site's repository has them, so that apt picks the
# Recommends of iostage-node from it as it would from the site's.
mkdir -p "$ROOT/debs"
cp "${debs[@]}" "$ROOT/debs/"
(cd "$ROOT/debs" && dpkg-scanpackages . >Packages 2>/dev/null) || { fail "dpkg-scanpackages in $ROOT/debs"; finish; }
echo "deb [trusted=yes] file:/debs ./" >"$ROOT/etc/apt/sources.list.d/iostage-test.list"
lap "installing the packages with apt"
# (mmdebstrap leaves no package lists behind) iostage-node alone first:
# what a node gets from `apt install iostage-node`.
if root_run "$ROOT" sh -c 'apt-get update -q && apt-get install -y -q iostage-node' >"$WORK/install.log" 2>&1; then
	pass "apt-get install iostage-node in a fresh $SUITE root ($(grep -c "^Setting up " "$WORK/install.log") packages set up)"
else
	tail -n 20 "$WORK/install.log"
	fail "apt-get install iostage-node (log: $WORK/install.log)"
	finish
fi
got=$(root_run "$ROOT" dpkg-query -W -f='${Status} ${Version}\n' python3-iostage libiostage0 2>&1 | tr '\n' ' ')
if [[ $got == "install ok installed $VERSION install ok installed $VERSION " ]] &&
	root_run "$ROOT" apt-mark showauto | grep -qx python3-iostage; then
	pass "apt-get install iostage-node brought python3-iostage $VERSION (its Recommends) and libiostage0"
else
	fail "apt-get install iostage-node: python3-iostage, libiostage0: $got(auto: $(root_run "$ROOT" apt-mark showauto | grep -E 'iostage' | tr '\n' ' '))"
fi
# shellcheck disable=SC2086
if root_run "$ROOT" apt-get install -y -q $IOSTAGE_PKGS >>"$WORK/install.log" 2>&1 &&
	[ "$(root_run "$ROOT" dpkg-query -W -f='${Status}\n' $IOSTAGE_PKGS | grep -c '^install ok installed$')" -eq "$(echo $IOSTAGE_PKGS | wc -w)" ]; then
	pass "apt-get install $IOSTAGE_PKGS ($(grep -c "^Setting up " "$WORK/install.log") packages set up in all)"
else
	tail -n 20 "$WORK/install.log"
	fail "apt-get install of the packages (log: $WORK/install.log)"
	finish
fi

slurm=$(root_run "$ROOT" dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins)
if [ -n "$rel" ] && [[ $slurm == "$rel".* ]]; then
	pass "the root's Slurm $slurm is the release the packages were built for"
else
	fail "the root's Slurm is $slurm, the packages are for ${rel:-?}"
fi

# what the packages put down, where
plugin=$(root_run "$ROOT" dpkg -L iostage-node | grep '/iostage\.so$')
slurmdir=$(root_run "$ROOT" dpkg -L slurm-wlm-basic-plugins | grep -E '/mpi_none\.so$|/proctrack_linuxproc\.so$' | head -n1)
if [ -n "$plugin" ] && [ "$(dirname "$plugin")" = "$(dirname "$slurmdir")" ]; then
	pass "the SPANK plugin is beside Slurm's own: $plugin"
else
	fail "the SPANK plugin is at '${plugin:-nowhere}', Slurm's plugins in $(dirname "${slurmdir:-?}")"
fi
stanza=$(root_run "$ROOT" cat "/usr/share/doc/iostage-common/slurm-conf/plugstack.conf" | grep '^required')
if [ "$stanza" = "required $plugin conf=/etc/slurm/iostage.conf" ]; then
	pass "the plugstack.conf example names the installed plugin: $stanza"
else
	fail "the plugstack.conf example says '$stanza', the plugin is $plugin"
fi
conffiles=$(root_run "$ROOT" dpkg-query -W -f='${Conffiles}\n' iostage-common | awk '{ print $1 }' | sort | tr '\n' ' ')
if [[ $conffiles == *"/etc/slurm/iostage.conf "* && $conffiles == *"/etc/slurm/iostage.d/dl-train.json "* ]]; then
	pass "conffiles: $conffiles"
else
	fail "conffiles of iostage-common: $conffiles"
fi
out=$(root_run "$ROOT" iostaged --check-config -c /etc/slurm/iostage.conf 2>&1)
if [[ $out != *"note: TraceLibrary"* ]] && root_run "$ROOT" iostage -h 2>&1 | grep -qF "/etc/slurm/iostage.conf)"; then
	pass "the programs look for iostage.conf and the shim where the packages put them"
else
	fail "compiled-in paths: iostaged --check-config said: $out"
fi
if [ -z "$(ls "$ROOT"/etc/systemd/system/*.wants/iostage* 2>/dev/null)" ] &&
	{ [ -f "$ROOT/lib/systemd/system/iostaged.service" ] ||
		[ -f "$ROOT/usr/lib/systemd/system/iostaged.service" ]; }; then
	pass "systemd units installed, not enabled (iostaged needs its tiers first)"
else
	fail "systemd units: $(ls "$ROOT"/etc/systemd/system/*.wants/ 2>&1 | tr '\n' ' ')"
fi

# The Python module, with Debian's python3 and no PYTHONPATH (root_run
# passes none): where it is, the library it loaded (from the multiarch
# directory the package's _paths.py names), and a dataset's path.
lib=$(root_run "$ROOT" dpkg -L libiostage0 | grep '/libiostage\.so\.0$')
out=$(root_run "$ROOT" /usr/bin/python3 -c '
import sysconfig, iostage, iostage._paths as p
print("file=" + iostage.__file__)
print("libdir=" + p.LIBDIR)
print("bindir=" + p.BINDIR)
print("multiarch=" + str(sysconfig.get_config_var("MULTIARCH")))
print("loaded=" + " ".join(sorted({l.split()[-1] for l in open("/proc/self/maps") if "libiostage" in l})))' 2>&1)
want="file=/usr/lib/python3/dist-packages/iostage/__init__.py
libdir=${lib%/*}
bindir=/usr/bin
multiarch=${lib%/*}
loaded=$lib"
want=${want/multiarch=\/usr\/lib\//multiarch=}
if [ -n "$lib" ] && [ "$out" = "$want" ]; then
	pass "/usr/bin/python3 imports iostage from dist-packages, no PYTHONPATH; _paths.py: LIBDIR=${lib%/*} BINDIR=/usr/bin; it loaded $lib"
else
	fail "import iostage with /usr/bin/python3: got"$'\n'"$(printf '%s\n' "$out" | sed 's/^/    /')"$'\n'"  wanted"$'\n'"$(printf '%s\n' "$want" | sed 's/^/    /')"
fi
out=$(root_run "$ROOT" SLURM_JOB_ID=1 IOSTAGE_DATA_VAL_SET=/x /usr/bin/python3 -c 'import iostage; print(iostage.data("val-set"))' 2>&1)
if [ "$out" = /x ]; then
	pass "iostage.data(\"val-set\") is IOSTAGE_DATA_VAL_SET (libiostage's iostage_data_path)"
else
	fail "iostage.data(\"val-set\") with IOSTAGE_DATA_VAL_SET=/x said: $out"
fi

# --- the one-node suite against the installed files ------------------------------------

if [ "${PKG_NO_SUITE:-0}" != 1 ]; then
	# the suite's scripts and fixtures (readable by the test users), and
	# its load generator (a test tool, not packaged) from the package build
	t=/opt/iostage-tests
	copy_tree "$ROOT$t"
	if [ -x "$SRC/build/tests/loadgen" ]; then
		mkdir -p "$ROOT$t/build/tests"
		cp "$SRC/build/tests/loadgen" "$ROOT$t/build/tests/"
	fi
	chmod -R a+rX "$ROOT$t"
	lap "waiting for /tmp/iostage-suite.lock, then the one-node suite"
	exec 9>/tmp/iostage-suite.lock
	flock 9
	root_run "$ROOT" IOSTAGE_INSTALLED=1 LOADGEN=$t/build/tests/loadgen \
		IT_FILTER="${IT_FILTER:-}" IT_TIMEOUT="${IT_TIMEOUT:-120}" IT_VERBOSE="${IT_VERBOSE:-0}" \
		bash $t/tests/integration/run.sh 2>&1 9>&- | tee "$WORK/suite.log"
	flock -u 9
	exec 9>&-
	suite_line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$WORK/suite.log" | tail -n1)
	if [[ $suite_line =~ ^([0-9]+)\ passed,\ 0\ failed$ ]] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
		pass "the one-node suite against the installed packages: $suite_line"
	else
		fail "the one-node suite against the installed packages: ${suite_line:-no result} (log: $WORK/suite.log)"
		suite_line=${suite_line:-no result}
	fi
	lap "suite done"
fi

# --- purge ---------------------------------------------------------------------------------

# shellcheck disable=SC2086
root_run "$ROOT" apt-get purge -y -q $IOSTAGE_PKGS >"$WORK/purge.log" 2>&1
rc=$?
left=
for p in /etc/slurm/iostage.conf /etc/slurm/iostage.d /usr/sbin/iostaged /usr/bin/iostage "$plugin" \
	/usr/lib/python3/dist-packages/iostage; do
	[ -e "$ROOT$p" ] && left+="$p "
done
if [ "$rc" -eq 0 ] && [ -z "$left" ]; then
	pass "apt-get purge removes the packages and their conffiles"
else
	fail "apt-get purge: exit $rc, left ${left:-nothing} (log: $WORK/purge.log)"
fi
lap "done"
finish
