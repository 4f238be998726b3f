#!/usr/bin/env bash
# The tree's layout, kept: every C file of the project's own code reads as
# clang-format writes it with the project's .clang-format (tabs, 80
# columns, include blocks sorted as written: system, third-party, local;
# docs/ARCHITECTURE.md, "Build").
#
#   scripts/check-format.sh          check; one line per file that differs
#   scripts/check-format.sh --fix    rewrite them in place (make format)
#   scripts/check-format.sh --list   the files both of those cover
#
# The files: every .c/.h git knows of (tracked, or new and not ignored;
# in a tree without .git, every .c/.h outside build*/), minus the
# EXCLUDE patterns below (code that is not ours to restyle; none today).
# CLANG_FORMAT= picks the binary (default clang-format). Needs no build
# and no root; `make format-check` runs it and `make check` runs that.
# Exits 1 when a file differs, 2 when it cannot check.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO" || exit 2

# Paths (globs, from the top of the tree) kept out of the file set:
# vendored or generated sources, should any come.
EXCLUDE=()

CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
mode=check
case "${1:-}" in
"") ;;
--fix) mode=fix ;;
--list) mode=list ;;
*)
	echo "usage: $0 [--fix | --list]" >&2
	exit 2
	;;
esac

list_files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files --cached --others --exclude-standard -- '*.c' '*.h'
	else
		find . \( -path './build*' -o -path './.*' \) -prune -o \
		    -type f -name '*.[ch]' -print | sed 's|^\./||'
	fi | sort -u | while IFS= read -r f; do
		[ -f "$f" ] || continue # deleted, not yet committed
		for x in "${EXCLUDE[@]}"; do
			# shellcheck disable=SC2053 # glob match on purpose
			[[ $f == $x ]] && continue 2
		done
		printf '%s\n' "$f"
	done
}

if [ "$mode" = list ]; then
	list_files
	exit 0
fi

if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
	echo "check-format.sh: $CLANG_FORMAT not found: install the clang-format package (scripts/install-deps.sh does, as root)" >&2
	exit 2
fi
if [ ! -f .clang-format ]; then
	echo "check-format.sh: no .clang-format at the top of $REPO" >&2
	exit 2
fi

mapfile -t files < <(list_files)
if [ ${#files[@]} -eq 0 ]; then
	echo "check-format.sh: no .c/.h files found under $REPO" >&2
	exit 2
fi

if [ "$mode" = fix ]; then
	printf '%s\0' "${files[@]}" |
	    xargs -0 -n 50 "$CLANG_FORMAT" --style=file -i || exit 2
	exit 0
fi

# The style is tuned for the clang-format of Debian 12 (14); another
# release may lay a few constructs out differently. Say which one ran
# when something differs, so such a report is not taken for a real one.
version=$("$CLANG_FORMAT" --version 2>/dev/null | sed -n 's/.*version \([0-9.]*\).*/\1/p')
tmp=$(mktemp) || exit 2
trap 'rm -f "$tmp"' EXIT
bad=0
for f in "${files[@]}"; do
	if ! "$CLANG_FORMAT" --style=file "$f" >"$tmp"; then
		echo "$f: clang-format failed on it" >&2
		bad=$((bad + 1))
		continue
	fi
	cmp -s "$f" "$tmp" && continue
	n=$(diff -U0 "$f" "$tmp" | awk 'NR > 2 && /^[-+]/' | wc -l)
	echo "$f: $n lines differ from .clang-format's layout (fix: make format)" >&2
	bad=$((bad + 1))
done
if [ $bad -gt 0 ]; then
	echo "check-format.sh: $bad of ${#files[@]} files differ (clang-format $version); \`make format\` rewrites them, \`git diff\` shows how" >&2
	exit 1
fi
echo "check-format.sh: ${#files[@]} files as .clang-format lays them out"
