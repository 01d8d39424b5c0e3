#!/usr/bin/env bash
# bench-idle-rss.sh: the agent's resident memory while idle, with the default system inputs
# (cpu, mem, disk, diskio, net, system) gathering every 10 s into a file output that
# discards. Issue #5's target is an idle RSS of at most 20 MiB.
#
# Usage: scripts/bench-idle-rss.sh [BINARY] [SECONDS]   (defaults: bin/morse, 35)
set -euo pipefail
bin="${1:-bin/morse}"
secs="${2:-35}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Only inputs the binary knows, so the script works while collectors are being added.
known=$("$bin" config | sed -n 's/^\[\[inputs\.\([a-z_]*\)\]\]$/\1/p')
{
	printf '[agent]\n  interval = "10s"\n  flush_interval = "10s"\n  omit_hostname = true\n'
	for in in cpu mem disk diskio net system; do
		if grep -qx "$in" <<<"$known"; then printf '[[inputs.%s]]\n' "$in"; fi
	done
	printf '[[outputs.file]]\n  files = ["/dev/null"]\n'
} >"$dir/idle.conf"

"$bin" --config "$dir/idle.conf" 2>"$dir/log" &
pid=$!
sleep "$secs" # the measurement is of an agent left alone for this long; nothing to wait on
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
read -r utime stime < <(awk '{print $14, $15}' "/proc/$pid/stat")
kill -TERM "$pid"
wait "$pid" || true
inputs=$(grep -c '^\[\[inputs' "$dir/idle.conf")
ticks=$(getconf CLK_TCK)
awk -v n="$inputs" -v s="$secs" -v rss="$rss" -v hwm="$hwm" -v cpu="$((utime + stime))" -v hz="$ticks" 'BEGIN {
	printf "idle agent, %d inputs every 10s, after %ss: RSS %.1f MiB, peak RSS %.1f MiB, CPU %.2f s (target: RSS <= 20 MiB)\n",
		n, s, rss / 1024, hwm / 1024, cpu / hz
}'
