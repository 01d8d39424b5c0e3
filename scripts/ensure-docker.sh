#!/usr/bin/env bash
# ensure-docker.sh: make a Docker daemon answer on /var/run/docker.sock so the
# integration tests (internal/testserver, testcontainers-go) can run.
#
# Idempotent; meant for `make test` on a fresh Debian 12 machine and in CI,
# running as root, with no systemd and no container registry reachable.
#   1. installs Debian's docker.io if dockerd is missing, and Debian's
#      influxdb if /usr/bin/influxd is missing (the InfluxDB test image is
#      built FROM scratch out of the host's influxd; nothing is ever pulled);
#   2. if no daemon answers `docker info`, starts dockerd in the background
#      (log: $MORSE_DOCKERD_LOG, default /tmp/morse-dockerd.log) and waits
#      until it answers, at most $MORSE_DOCKERD_WAIT seconds (default 60).
#      If it never answers, prints the daemon log and exits non-zero.
#
# Daemon flags, as found on this sandbox (Firecracker VM, kernel 6.x, cgroup v1
# hierarchy mounted, overlayfs and nf_tables available, bridge/veth allowed):
#   --ip-forward=false --ip-masq=false
# The default bridge (docker0), overlay2 and iptables all work. Ports published
# on 127.0.0.1 are served by docker-proxy (userland proxy), which connects to
# the container over docker0 from the host itself, so no IP forwarding and no
# NAT are needed. Leaving forwarding off keeps the host's ip_forward=0 and
# gives containers no route off the machine: they can talk to the host and
# to each other, nothing else. If that daemon dies on start (a sandbox without
# netfilter or overlayfs), the script retries once with
#   --iptables=false --storage-driver=vfs --data-root=/var/lib/docker-vfs
# which needs neither (also verified here; slower image builds).
set -euo pipefail

LOG="${MORSE_DOCKERD_LOG:-/tmp/morse-dockerd.log}"
WAIT="${MORSE_DOCKERD_WAIT:-60}"
SOCK=/var/run/docker.sock

say() { echo "ensure-docker: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# `docker info` against our socket, bounded: a wedged daemon must not hang make.
daemon_answers() {
	timeout 10 docker --host "unix://$SOCK" info >/dev/null 2>&1
}

# ---- 1. packages -----------------------------------------------------------
dockerd_bin() {
	if command -v dockerd >/dev/null 2>&1; then command -v dockerd
	elif [ -x /usr/sbin/dockerd ]; then echo /usr/sbin/dockerd
	fi
}

pkgs=()
[ -n "$(dockerd_bin)" ] || pkgs+=(docker.io)
[ -x /usr/bin/influxd ] || pkgs+=(influxdb)
[ -x /usr/bin/curl ] || pkgs+=(curl) # the container health probe of outputs.health
if ! command -v docker >/dev/null 2>&1 && [ ${#pkgs[@]} -eq 0 ]; then
	pkgs+=(docker.io) # dockerd without a CLI: docker.io ships both
fi

if [ ${#pkgs[@]} -gt 0 ]; then
	[ "$(id -u)" -eq 0 ] || die "need root to install ${pkgs[*]}"
	say "installing ${pkgs[*]} (Debian packages)"
	export DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=l
	# Package scripts must not start influxd/dockerd as host services:
	# deny service starts while we install unless a policy already exists.
	policy_added=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		policy_added=1
	fi
	rc=0
	{
		apt-get update -qq &&
			apt-get install -y -qq --no-install-recommends "${pkgs[@]}" cgroupfs-mount
	} || rc=$?
	[ -z "$policy_added" ] || rm -f /usr/sbin/policy-rc.d
	[ "$rc" -eq 0 ] || die "apt-get failed (exit $rc) installing ${pkgs[*]}"
fi

DOCKERD="$(dockerd_bin)"
[ -n "$DOCKERD" ] || die "dockerd not found after installing docker.io"
[ -x /usr/bin/influxd ] || die "/usr/bin/influxd not found after installing influxdb"

# ---- 2. daemon -------------------------------------------------------------
if daemon_answers; then
	say "docker daemon already answers on $SOCK"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || die "no docker daemon answers on $SOCK and not root: cannot start dockerd"

# cgroups: dockerd needs the v1 controllers or a cgroup2 mount.
if ! grep -qE '^(cgroup|cgroup2) ' /proc/mounts; then
	if command -v cgroupfs-mount >/dev/null 2>&1; then
		say "no cgroup mounts: running cgroupfs-mount"
		cgroupfs-mount || say "cgroupfs-mount failed; dockerd will say why"
	fi
fi

# alive PID: the process exists and is not a zombie (kill -0 succeeds on
# zombies, and PID 1 of a sandbox may not reap them).
alive() {
	local state
	state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# A daemon that no longer runs but left its pid file would block a new one.
if [ -f /var/run/docker.pid ] && ! alive "$(cat /var/run/docker.pid)"; then
	rm -f /var/run/docker.pid
fi

# start_dockerd ARGS...: starts dockerd detached; 0 when it answers in time,
# 1 if it died first, 2 if it is still silent after $WAIT seconds.
start_dockerd() {
	say "starting $DOCKERD $* (log: $LOG)"
	{
		echo "=== $(date -u +%FT%TZ) $DOCKERD $*"
	} >>"$LOG"
	# setsid + nohup + redirections: detached from make's process group and
	# holds none of its pipes, so it outlives this script and `make`.
	setsid nohup "$DOCKERD" "$@" </dev/null >>"$LOG" 2>&1 &
	local pid=$! deadline=$((SECONDS + WAIT))
	while [ $SECONDS -lt $deadline ]; do
		if daemon_answers; then
			say "docker daemon answers (pid $pid, $((WAIT - deadline + SECONDS))s)"
			return 0
		fi
		if ! alive "$pid"; then
			say "dockerd (pid $pid) exited before answering"
			return 1
		fi
		sleep 0.5
	done
	return 2
}

show_log() {
	say "---- last 60 lines of $LOG ----"
	tail -n 60 "$LOG" >&2 || true
	say "---- end of $LOG ----"
}

rc=0
start_dockerd --host "unix://$SOCK" --ip-forward=false --ip-masq=false || rc=$?
if [ "$rc" -eq 1 ]; then
	show_log
	say "retrying without iptables and overlayfs"
	rc=0
	start_dockerd --host "unix://$SOCK" --ip-forward=false --ip-masq=false \
		--iptables=false --storage-driver=vfs --data-root=/var/lib/docker-vfs || rc=$?
fi
if [ "$rc" -ne 0 ]; then
	show_log
	die "docker daemon did not answer within ${WAIT}s (see $LOG)"
fi

docker --host "unix://$SOCK" info --format \
	'ensure-docker: server {{.ServerVersion}}, storage {{.Driver}}, cgroup v{{.CgroupVersion}} ({{.CgroupDriver}})' >&2 || true
