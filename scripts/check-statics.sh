#!/usr/bin/env bash
# daemon/ keeps no per-agent state in static variables (daemon/agent.h):
# every part of iostaged holds its state in a struct made by its _create()
# and reached through the agent, so that one process can hold two agents
# (tests/unit/check_agent.c). What is per process (a signal flag, the
# executable, the log) may stay static when its declaration says so: the
# words "per process" in a comment on its line, or in the comment above a
# run of static declarations it belongs to.
#
#   scripts/check-statics.sh [DIR...]     (default: daemon)
#
# Counts file-scope and function-scope static objects that are not const
# (a pointer to const is counted: it can be reassigned). One line per
# static on stderr, then "N static variables in DIR, M per process"; exits
# 1 when one is not marked. Needs no build (make unit runs it).
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO" || exit 2
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(daemon)

bad=0 marked=0 total=0
while IFS= read -r f; do
	out=$(awk -v f="$f" '
		# A static object: "static" then a declaration ending in ; or =,
		# not a function (a "(" before any "=", unless it is "(*", a
		# function pointer), not const-qualified itself.
		# "per process" holds over the comment it is in and the run of
		# static lines right after it.
		tolower($0) ~ /per process/ { grp = 1 }
		tolower($0) !~ /per process/ && $0 !~ /^[ \t]*(\*|\/\*)/ && $0 !~ /^[ \t]*static[ \t]/ { grp = 0 }
		/^[ \t]*static[ \t]/ {
			line = $0
			decl = line
			sub(/\/\*.*$/, "", decl)
			head = decl
			sub(/=.*$/, "", head)
			if (head ~ /\(/ && head !~ /\(\*/) { prev = line; next }
			if (head ~ /^[ \t]*static[ \t]+const[ \t]/ || head ~ /\*[ \t]*const[ \t]/ ||
			    head ~ /^[ \t]*static[ \t]+[A-Za-z_0-9 \t]*const[ \t]/ && head !~ /\*/ ||
			    head ~ /^[ \t]*static[ \t]+op_table[ \t]/) { prev = line; next }
			mark = (tolower(line) ~ /per process/ || grp) ? "marked" : "unmarked"
			printf "%s\t%d\t%s\t%s\n", mark, NR, f, line
		}
		{ prev = $0 }
	' "$f")
	[ -n "$out" ] || continue
	while IFS=$'\t' read -r mark nr file line; do
		total=$((total + 1))
		if [ "$mark" = marked ]; then
			marked=$((marked + 1))
		else
			bad=$((bad + 1))
			line=${line#"${line%%[![:space:]]*}"}
			echo "$file:$nr: static state outside the agent: $line" >&2
		fi
	done <<<"$out"
done < <(git ls-files -- "${dirs[@]/%//*.c}" 2>/dev/null || find "${dirs[@]}" -name '*.c')

echo "$total static variables in ${dirs[*]}, $marked per process"
if [ "$bad" -gt 0 ]; then
	echo "check-statics: $bad static variable(s) hold per-agent state: move them into the module's struct (daemon/agent.h), or say \"per process\" where one truly is" >&2
	exit 1
fi
