#!/usr/bin/env bash
# The code a page shows is the code the tests run: in each Markdown file
# given (default docs/PYTHON.md), the fenced block right after a line
#
#   <!-- file: examples/pytorch/train.py -->
#
# must be that file (relative to the repository) byte for byte, and every
# file of a directory such a line names must be shown, so that a file
# added to the example is added to the page too.
#
#   scripts/check-doc-examples.sh [DOC.md...]
#
# One line per problem on stderr, then "N blocks checked"; exits 1 when
# something differs. Needs no root and no build (tests/integration/
# test_python.sh runs it).
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO" || exit 2
[ $# -gt 0 ] || set -- docs/PYTHON.md
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

bad=0
n=0
for doc in "$@"; do
	[ -f "$doc" ] || { echo "$doc: no such file" >&2; bad=1; continue; }
	# Each marked block to $tmp/K, and "K DOC:LINE PATH" to $tmp/index.
	awk -v tmp="$tmp" -v start="$n" '
		BEGIN { k = start }
		want {
			want = 0
			if ($0 ~ /^```/) {
				out = tmp "/" ++k
				printf "" >out
				print k, FILENAME ":" FNR, path >(tmp "/index")
				inblock = 1
				next
			}
			print FILENAME ":" FNR ": the line before names " path \
				" but no code block follows it" >"/dev/stderr"
			bad = 1
		}
		inblock && /^```[[:space:]]*$/ { close(out); inblock = 0; next }
		inblock { print >out; next }
		/^<!-- file: [^ ]+ -->$/ {
			path = $3
			want = 1
		}
		END {
			if (inblock) {
				print FILENAME ": the block for " path \
					" has no closing fence" >"/dev/stderr"
				bad = 1
			}
			exit bad
		}' "$doc" || bad=1
	n=$(awk 'END { print NR }' "$tmp/index" 2>/dev/null || echo 0)
done

[ -s "$tmp/index" ] || { echo "no '<!-- file: PATH -->' blocks in $*" >&2; exit 1; }
while read -r k where path; do
	if [ ! -f "$path" ]; then
		echo "$where: shows $path, which does not exist" >&2
		bad=1
	elif ! cmp -s "$tmp/$k" "$path"; then
		echo "$where: the block is not $path byte for byte:" >&2
		diff -u "$path" "$tmp/$k" | sed -n '3,12p' >&2
		bad=1
	fi
done <"$tmp/index"

# Every file of the example directories is shown.
while read -r dir; do
	for f in "$dir"/*; do
		[ -f "$f" ] || continue
		awk -v p="$f" '$3 == p { found = 1 } END { exit !found }' "$tmp/index" ||
			{ echo "$f: not shown in $*" >&2; bad=1; }
	done
done < <(awk '{ d = $3; sub(/\/[^\/]*$/, "", d); print d }' "$tmp/index" | sort -u)
echo "$(awk 'END { print NR }' "$tmp/index") blocks checked"
exit "$bad"
