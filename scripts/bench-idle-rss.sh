#!/usr/bin/env bash
# bench-idle-rss.sh: the agent's resident memory while idle, with the default system inputs
# (cpu, mem, disk, diskio, net, system) gathering every 10 s into a file output that
# discards. Issue #5's target is an idle RSS of at most 20 MiB.
#
# Usage: scripts/bench-idle-rss.sh [BINARY] [SECONDS] [CONFIG]   (defaults: bin/morse, 35, system)
# CONFIG "system" is the config above; "default" runs the binary's built-in config (`make run`'s:
# cpu and mem to stdout, here /dev/null); anything else is the path of a config file, as for a
# custom build (make build PLUGINS=...) that has neither the system inputs nor outputs.file.
set -euo pipefail
bin="${1:-bin/morse}"
secs="${2:-35}"
conf="${3:-system}"
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

case "$conf" in
system) args=(--config "$dir/idle.conf") ;;
default) args=() ;;
*)
	# Every loopback port of the file is replaced with one free at run time, so that the
	# measurement never binds or dials a fixed port.
	python3 - "$conf" "$dir/custom.conf" <<'PY'
import re, socket, sys
def free():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close(); return str(port)
text = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(re.sub(r"127\.0\.0\.1:\d+", lambda m: "127.0.0.1:" + free(), text))
PY
	args=(--config "$dir/custom.conf")
	;;
esac
"$bin" "${args[@]}" >/dev/null 2>"$dir/log" &
pid=$!
sleep "$secs" # the measurement is of an agent left alone for this long; nothing to wait on
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
read -r utime stime < <(awk '{print $14, $15}' "/proc/$pid/stat")
kill -TERM "$pid"
wait "$pid" || true
case "$conf" in
system) inputs=$(grep -c '^\[\[inputs' "$dir/idle.conf") ;;
default) inputs=2 ;; # cpu and mem (cmd/morse/default.conf)
*) inputs=$(grep -c '^\[\[inputs' "$conf") ;;
esac
ticks=$(getconf CLK_TCK)
awk -v c="$conf" -v n="$inputs" -v s="$secs" -v rss="$rss" -v hwm="$hwm" -v cpu="$((utime + stime))" -v hz="$ticks" 'BEGIN {
	printf "idle agent, %s config (%d inputs), after %ss: RSS %.1f MiB, peak RSS %.1f MiB, CPU %.2f s (issue 40: RSS <= 10 MiB, default build, default config)\n",
		c, n, s, rss / 1024, hwm / 1024, cpu / hz
}'
