#!/usr/bin/env bash
# `make install` with a prefix and sysconfdir other than the defaults, into
# a DESTDIR, after a build made for yet another prefix; then:
#   - the build was redone for the install's prefix (paths.stamp);
#   - every path an installed file names (text, or the strings of a
#     binary) that is iostage's or under /usr/local is one this install
#     uses, and exists in DESTDIR unless it is the site's own file;
#   - the installed cli_filter.lua says so when it cannot run iostage
#     (lua5.1, else that check is skipped with a line);
#   - the Python module is in $PREFIX/lib/python3.X/dist-packages/iostage,
#     its _paths.py names the install's libdir and bindir, and Debian's
#     /usr/bin/python3 imports it (PYTHONPATH=DESTDIR's copy) and loads
#     the installed libiostage.so.0;
#   - `make uninstall` removes every file install put down and nothing
#     else (a site's iostage.conf and profile, and an unrelated file, stay),
#     the module's __pycache__ with it;
#   - for the default prefix /usr/local and for /usr (the packages'), the
#     module's directory is one /usr/bin/python3 searches without a
#     PYTHONPATH, and uninstall removes it.
# Needs no root. Ends with "N passed, M failed".
#
#   tests/install/test_install.sh          (make check-install)
#
# Environment: BUILD (the main build dir; this test builds in
# $BUILD/install-test, so the main build keeps its prefix), KEEP=1 keeps
# the DESTDIR.
set -uo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
TBUILD=${BUILD:-build}/install-test
# The build's prefix, then the install's: both name iostage, so a path of
# the first left in an installed file is caught as not the install's.
FIRST=/opt/iostage-first
PREFIX=/opt/iostage-test
SYSCONF=/srv/iostage-test/etc
DEST=$(mktemp -d /tmp/iostage-install.XXXXXX) || exit 1
LOG="$DEST.log"

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
finish() {
	echo "$passed passed, $failed failed"
	if [ "$failed" -eq 0 ] && [ "${KEEP:-0}" != 1 ]; then
		rm -rf "$DEST" "$LOG"
	else
		echo "test_install.sh: kept $DEST (make output in $LOG)" >&2
	fi
	[ "$failed" -eq 0 ]
	exit
}

mk() { make --no-print-directory -C "$REPO_ROOT" BUILD="$TBUILD" "$@"; }

# --- build for one prefix, install for another ---------------------------------

if ! mk prefix="$FIRST" sysconfdir="$FIRST/etc" all >"$LOG" 2>&1; then
	fail "build with prefix=$FIRST (see $LOG)"
	finish
fi
# What the site has beside iostage, which uninstall must leave.
mkdir -p "$DEST$SYSCONF/slurm/iostage.d" "$DEST$PREFIX/bin"
echo "Tier=site Path=/site" >"$DEST$SYSCONF/slurm/iostage.conf"
echo '{}' >"$DEST$SYSCONF/slurm/iostage.d/site.json"
echo other >"$DEST$PREFIX/bin/other"
site_files=$(cd "$DEST" && find . ! -type d | sort)

if ! mk prefix="$PREFIX" sysconfdir="$SYSCONF" DESTDIR="$DEST" install >>"$LOG" 2>&1; then
	fail "make install prefix=$PREFIX sysconfdir=$SYSCONF (see $LOG)"
	finish
fi
if grep -q "^make: compiled-in paths changed to conf=$SYSCONF/slurm/iostage.conf " "$LOG"; then
	pass "an install for another prefix than the build's rebuilds, and says so"
else
	fail "make install after a build for $FIRST did not say it rebuilt (see $LOG)"
fi
# what install put down: all but the site's files, as /PATH
installed=$(cd "$DEST" && find . ! -type d | sort | comm -23 - <(printf '%s\n' "$site_files") |
	sed 's|^\.||')
[ -n "$installed" ] || { fail "make install put nothing in $DEST"; finish; }

# --- the paths installed files name ----------------------------------------------

# Text files: a path is checked when it names iostage or /usr/local.
# Fixed by design, whatever the prefix: /run/iostage (systemd's
# RuntimeDirectory=, the socket) and /var/lib/iostage (StateDir=), as in
# iostage.conf(5), and node_exporter's textfile directory in the
# MetricsTextfile= example. Not installed but named on purpose: the site's
# iostage.conf (written from iostage.conf.example) and Slurm's own files
# beside it.
# Binaries: gcc copies a constant string through 16-byte pieces, so
# `strings` sees a path cut and glued to its neighbours; a binary is only
# searched for what must not be in it at all (/usr/local, the build's
# first prefix), and what the programs look for is asked of them below.
fixed_re='^(/run/iostage|/var/lib/iostage|/var/lib/prometheus/node-exporter)(/|$)'
site_re="^$SYSCONF/slurm/(iostage\\.conf|slurm\\.conf|plugstack\\.conf(\\.d)?)/?\$"
bad=
checked=0
while IFS= read -r f; do
	[ -L "$DEST$f" ] && continue
	case $f in
	# prose: it tells both the packages' and a plain make install's layout
	*.md) continue ;;
	esac
	checked=$((checked + 1))
	if [ "$(head -c 4 "$DEST$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
		p=$(strings -a "$DEST$f" | grep -oE "/usr/local|$FIRST" | sort -u | tr '\n' ' ')
		[ -z "$p" ] || bad+="$f (a binary) names $p"$'\n'
		continue
	fi
	text=$(cat "$DEST$f")
	while IFS= read -r p; do
		[ -n "$p" ] || continue
		p=${p%.}
		p=${p%,}
		p=${p%)}
		case $p in
		*iostage* | /usr/local*) ;;
		*) continue ;;
		esac
		[[ $p =~ $fixed_re ]] && continue
		if [[ $p != "$PREFIX"/* && $p != "$SYSCONF"/* ]]; then
			bad+="$f names $p, not under $PREFIX or $SYSCONF"$'\n'
		elif [[ $p =~ $site_re ]]; then
			:
		elif [ ! -e "$DEST${p%/}" ] && [[ $p != *NAME* && $p != *'*'* ]]; then
			bad+="$f names $p, which is not installed"$'\n'
		fi
	done < <(printf '%s\n' "$text" | grep -oE '/(usr|etc|opt|srv|lib|var|run)/[][A-Za-z0-9._+*/-]*' | sort -u)
done <<<"$installed"
if [ -z "$bad" ] && [ "$checked" -gt 20 ]; then
	pass "every path the $checked installed files name is this install's"
else
	fail "paths in installed files ($checked files checked):"$'\n'"$(printf '%s' "$bad" | sed 's/^/    /')"
fi

# The two that lost users their pre-staging or their shim: the filter's
# iostage and the programs' compiled-in paths.
filter="$DEST$PREFIX/share/doc/iostage/slurm-conf/cli_filter.lua"
if grep -qxF "local IOSTAGE = \"$PREFIX/bin/iostage\"" "$filter" &&
	grep -qxF "local IOSTAGE_CONF = \"$SYSCONF/slurm/iostage.conf\"" "$filter"; then
	pass "cli_filter.lua names the installed iostage and iostage.conf"
else
	fail "cli_filter.lua: $(grep -E '^local IOSTAGE' "$filter" | tr '\n' ' ')"
fi
# (-h says where iostage.conf is; a profile that is not there, where it
# looked; --check-config, a TraceLibrary= it cannot read.)
sb="$DEST$PREFIX/sbin" conf="$DEST/t.conf" got=
printf 'Tier=t Path=%s/tier\nStateDir=%s/state\nSocketPath=%s/s.sock\n' "$DEST" "$DEST" "$DEST" >"$conf"
for p in "$sb/iostaged" "$sb/iostagectld" "$DEST$PREFIX/bin/iostage"; do
	"$p" -h 2>&1 | grep -qF "$SYSCONF/slurm/iostage.conf)" || got+="${p#"$DEST"} -h: $("$p" -h 2>&1 | grep -F default | tr -s ' ')"$'\n'
done
out=$("$DEST$PREFIX/bin/iostage" -c "$conf" pfs-license --io-profile dl-train 2>&1)
[[ $out == *"cannot list $SYSCONF/slurm/iostage.d:"* ]] || got+="profiles: $out"$'\n'
out=$("$sb/iostaged" --check-config -c "$conf" 2>&1)
[[ $out == *"note: TraceLibrary=$PREFIX/lib/iostage/libiostage-preload.so: "* ]] || got+="shim: $out"$'\n'
rm -f "$conf"
if [ -z "$got" ]; then
	pass "the programs look for iostage.conf, the profiles and the shim where they are installed"
else
	fail "compiled-in paths:"$'\n'"$(printf '%s' "$got" | sed 's/^/    /')"
fi

# --- the Python module --------------------------------------------------------

# Debian's python3, as a job's script runs it; make install asks the same
# one (PYTHON) for its X.Y.
PY=/usr/bin/python3
pyxy=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pydir=$PREFIX/lib/python$pyxy/dist-packages
# py_paths DIR: the LIBDIR and BINDIR lines of DIR/iostage/_paths.py
py_paths() { grep -E '^(LIBDIR|BINDIR) = ' "$1/iostage/_paths.py" 2>&1 | paste -sd ' '; }
want_mods=$(cd "$REPO_ROOT/python/iostage" && ls -- *.py)
got_mods=$(cd "$DEST$pydir/iostage" 2>/dev/null && ls -- *.py)
got=$(py_paths "$DEST$pydir")
if [ "$got_mods" = "$want_mods" ] &&
	[ "$got" = "LIBDIR = \"$PREFIX/lib\" BINDIR = \"$PREFIX/bin\"" ]; then
	pass "the Python module is in $pydir/iostage ($(echo "$got_mods" | wc -l) files); _paths.py: $got"
else
	fail "the Python module in $pydir/iostage: files: $(echo "$got_mods" | tr '\n' ' '); _paths.py: $got"
fi
# $PREFIX/lib is not there outside DESTDIR: the module falls back to the
# loader's search, which LD_LIBRARY_PATH points at the installed library.
# Bytecode written (the __pycache__ uninstall must remove).
out=$(env -u IOSTAGE_LIBIOSTAGE -u PYTHONDONTWRITEBYTECODE PYTHONPATH="$DEST$pydir" \
	LD_LIBRARY_PATH="$DEST$PREFIX/lib" SLURM_JOB_ID=1 IOSTAGE_DATA_VAL_SET=/x "$PY" -c '
import iostage
print(iostage.__file__)
print(" ".join(sorted({l.split()[-1] for l in open("/proc/self/maps") if "libiostage" in l})))
print(iostage.data("val-set"))' 2>&1)
want="$DEST$pydir/iostage/__init__.py
$(realpath "$DEST$PREFIX/lib/libiostage.so.0")
/x"
if [ "$out" = "$want" ] && [ -d "$DEST$pydir/iostage/__pycache__" ]; then
	pass "$PY imports the installed module, which loads the installed libiostage.so.0 (iostage.data(\"val-set\") = /x)"
else
	fail "$PY with PYTHONPATH=$DEST$pydir: got"$'\n'"$(printf '%s\n' "$out" | sed 's/^/    /')"$'\n'"  wanted"$'\n'"$(printf '%s\n' "$want" | sed 's/^/    /')"
fi

# --- a filter that cannot run iostage says so ------------------------------------

if command -v lua5.1 >/dev/null 2>&1; then
	# Slurm's lua table, as much as the filter uses; the ticket the plugin
	# would have left. $PREFIX/bin/iostage is not there outside DESTDIR.
	out=$(IOSTAGE_TICKET=0123456789abcdef0123456789abcdef FILTER=$filter lua5.1 -e '
		slurm = { SUCCESS = 0 }
		function slurm.log_error(fmt, ...) print("ERROR " .. string.format(fmt, ...)) end
		function slurm.log_info(fmt, ...) print("INFO " .. string.format(fmt, ...)) end
		dofile(os.getenv("FILTER"))
		slurm_cli_post_submit(0, "4242", 0)
		slurm_cli_pre_submit({ ["spank:io-profile"] = "dl-train" }, 0)' 2>&1)
	if printf '%s\n' "$out" | grep -q "^ERROR iostage: job 4242 is queued but not pre-staged: $PREFIX/bin/iostage job-note failed (exit 127)" &&
		printf '%s\n' "$out" | grep -q "^ERROR iostage: cannot run $PREFIX/bin/iostage (exit 127): no PFS license requested"; then
		pass "cli_filter.lua reports an iostage it cannot run (job-note and pfs-license)"
	else
		fail "cli_filter.lua with no iostage at $PREFIX/bin/iostage said: $out"
	fi
else
	echo "SKIP cli_filter.lua run: no lua5.1 (scripts/install-deps.sh installs it)"
fi

# --- uninstall ------------------------------------------------------------------

if ! mk prefix="$PREFIX" sysconfdir="$SYSCONF" DESTDIR="$DEST" uninstall >>"$LOG" 2>&1; then
	fail "make uninstall (see $LOG)"
	finish
fi
left=$(cd "$DEST" && find . ! -type d | sort)
if [ "$left" = "$site_files" ]; then
	pass "make uninstall removes the $(printf '%s\n' "$installed" | wc -l) files install put down, and only those"
else
	fail "after make uninstall: $(diff <(printf '%s\n' "$site_files") <(printf '%s\n' "$left") | grep '^[<>]' | tr '\n' ' ')"
fi
if [ ! -e "$DEST$pydir/iostage" ]; then
	pass "make uninstall removes $pydir/iostage, __pycache__ and all"
else
	fail "after make uninstall: $(cd "$DEST$pydir" && find iostage | tr '\n' ' ')"
fi

# --- the module where python3 looks ---------------------------------------------

# Only the module (install-python): the programs are checked above. With
# the default prefix, and with /usr as debian/rules installs: the
# directory make install picks is on /usr/bin/python3's own path.
syspath=$(env -u PYTHONPATH "$PY" -c 'import sys; print("\n".join(sys.path))')
for pfx in /usr/local /usr; do
	d="$DEST/destdir${pfx//\//-}"
	mk prefix="$pfx" DESTDIR="$d" install-python >>"$LOG" 2>&1
	dir=$(cd "$d" 2>/dev/null && find . -name __init__.py -path '*/iostage/*' | sed 's|^\.||; s|/iostage/__init__.py$||')
	got=$(py_paths "$d$dir")
	if [ -n "$dir" ] && printf '%s\n' "$syspath" | grep -qxF "$dir" &&
		[ "$got" = "LIBDIR = \"$pfx/lib\" BINDIR = \"$pfx/bin\"" ]; then
		pass "prefix=$pfx: the module goes to $dir, which $PY searches with no PYTHONPATH; _paths.py: $got"
	else
		fail "prefix=$pfx: the module went to '${dir:-nowhere}' ($PY searches: $(printf '%s\n' "$syspath" | grep packages | tr '\n' ' ')); _paths.py: $got"
	fi
	mk prefix="$pfx" DESTDIR="$d" uninstall >>"$LOG" 2>&1
	if [ -n "$dir" ] && [ ! -e "$d$dir/iostage" ]; then
		pass "prefix=$pfx: make uninstall removes $dir/iostage"
	else
		fail "prefix=$pfx: make uninstall left $(cd "$d" && find . -path '*/iostage*' | tr '\n' ' ')"
	fi
done
finish
