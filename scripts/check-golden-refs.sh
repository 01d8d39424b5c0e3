#!/usr/bin/env bash
# check-golden-refs.sh GIT_DIR [RELEASE]
#
# Checks the from= references of the golden shape lists (plugins/inputs/*/testdata/*.golden,
# each input's own) against a
# Telegraf repository: every referenced file must exist at the release and have the line,
# and the line should name the item. GIT_DIR is a Telegraf clone's .git directory (or a bare
# mirror); RELEASE defaults to the release each list names on its "telegraf" line.
#
# Run it with the new release to update the lists mechanically: each "moved" line names an
# item whose source line changed; each "missing" one an item Telegraf no longer has there.
# Exit status: 0 when every reference resolves, 1 otherwise. Items that name no key of their
# own at the line (the lines of a parsed file, nstat's kernel counters) are listed as
# "by hand".
set -euo pipefail
git_dir=${1:?usage: $0 GIT_DIR [RELEASE]}
override=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
status=0
for list in "$root"/plugins/inputs/*/testdata/*.golden; do
	release=$(awk '$1 == "telegraf" { print $2; exit }' "$list")
	[ -n "$release" ] || continue
	[ -n "$override" ] && release=$override
	declare -A cache=()
	while read -r kind key ref; do
		path=${ref%%:*}
		line=${ref#*:}
		[ "$line" = "$ref" ] && line=""
		if [ -z "${cache[$path]+set}" ]; then
			cache[$path]=$(git --git-dir "$git_dir" show "$release:$path" 2>/dev/null || printf '__missing__')
		fi
		text=${cache[$path]}
		if [ "$text" = __missing__ ]; then
			echo "missing: $(basename "$list"): $kind $key: $path not in $release"
			status=1
			continue
		fi
		[ -n "$line" ] || continue
		src=$(printf '%s\n' "$text" | sed -n "${line}p")
		if [ -z "$src" ]; then
			echo "missing: $(basename "$list"): $kind $key: $path has no line $line in $release"
			status=1
			continue
		fi
		# ksm_* and rlimit_*_soft/_hard are built from the name their line holds.
		base=${key#ksm_}
		base=${base#rlimit_}
		base=${base%_soft}
		base=${base%_hard}
		if [[ "$src" == *"$key"* || "$src" == *"\"$base\""* ]]; then
			continue
		elif printf '%s\n' "$text" | grep -q "\"$key\""; then
			echo "moved: $(basename "$list"): $kind $key: $path:$line no longer names it"
			status=1
		else
			echo "by hand: $(basename "$list"): $kind $key: $path:$line"
		fi
	done < <(awk '($1 == "measurement" || $1 == "tag" || $1 == "field") {
		for (i = 2; i <= NF; i++) if ($i ~ /^from=/) { sub(/^from=/, "", $i); print $1, $2, $i }
	}' "$list")
	unset cache
done
exit $status
