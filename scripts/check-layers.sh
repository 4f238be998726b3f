#!/usr/bin/env bash
# The layering of the source folders, kept (docs/ARCHITECTURE.md, "Where
# each concern lives"): common/ includes only common/; a program's folder
# includes only itself and common/ (what two programs share goes to
# common/, as the history did), the CLI also libiostage's public header
# shim/iostage.h; and no two files include each other, through their
# headers or a chain of others (a module's files count as one: unit()).
#
#   scripts/check-layers.sh
#
# One line per problem on stderr, then "N includes checked"; exits 1 when
# something breaks a rule. Needs no build (make unit runs it).
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO" || exit 2

# folder -> the folders it may include besides itself and common/
declare -A extra=([common]="" [daemon]="" [ctld]="" [cli]="shim/iostage.h"
                  [spank]="" [prolog]="" [shim]="" [view]="")
tmp=$(mktemp) || exit 2
trap 'rm -f "$tmp"' EXIT

# Modules split in parts that use each other as one file's functions
# would: NAME_*.[ch] beside NAME.c count as NAME.c. (Other NAME_x files,
# e.g. daemon/cluster/peer_ops.c beside peer.c, are modules of their own.)
split_modules=(common/config/conf)

# A file's unit: foo.h belongs to foo.c when there is one, and so does
# foo_int.h / foo_internal.h (what the files of a split module share).
unit() {
	local f=$1 m base
	for m in "${split_modules[@]}"; do
		if [[ $f == "$m"_*.[ch] ]]; then
			printf '%s' "$m.c"
			return
		fi
	done
	base=${f%.h}
	base=${base%_internal}
	base=${base%_int}
	if [[ $f == *.h && -f $base.c ]]; then f=$base.c; fi
	printf '%s' "$f"
}

bad=0
n=0
while IFS=: read -r file line inc; do
	n=$((n + 1))
	inc=${inc#*\"}
	inc=${inc%%\"*}
	top=${file%%/*}
	itop=${inc%%/*}
	if [[ $itop != "$top" && $itop != common && " ${extra[$top]} " != *" $inc "* ]]; then
		echo "$file:$line: includes $inc: $top/ may include only $top/ and common/" >&2
		bad=1
	fi
	[ -f "$inc" ] || continue
	a=$(unit "$file")
	b=$(unit "$inc")
	[ "$a" = "$b" ] || echo "$a $b" >>"$tmp"
done < <(grep -rnE '^#[[:space:]]*include[[:space:]]*"' --include='*.[ch]' "${!extra[@]}")

# tsort names the files of every loop it finds, one a line after "input
# contains a loop:".
loops=$(tsort "$tmp" 2>&1 >/dev/null)
if [ -n "$loops" ]; then
	printf '%s\n' "$loops" | awk '
		/input contains a loop/ { if (l != "") print "include cycle:" l; l = ""; next }
		{ sub(/^tsort: /, ""); l = l " " $0 }
		END { if (l != "") print "include cycle:" l }' >&2
	bad=1
fi
echo "$n includes checked"
exit $bad
