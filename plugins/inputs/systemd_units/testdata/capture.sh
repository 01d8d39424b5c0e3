#!/bin/sh
# capture.sh CONTAINER: records the systemd manager's D-Bus answers that the unit tests
# replay (see README.md). CONTAINER runs systemd as PID 1 with the units of units/ copied
# to /etc/systemd/system, morse-test-sleep, -oneshot, -tpl@one and -fail started.
set -eu
c=$1
dir=$(dirname "$0")/dbus
mkdir -p "$dir"
call() { docker exec "$c" busctl --system --json=short call org.freedesktop.systemd1 "$@"; }
getall() { docker exec "$c" busctl --system --json=short call org.freedesktop.systemd1 "$1" org.freedesktop.DBus.Properties GetAll s "$2"; }
m=/org/freedesktop/systemd1
call $m org.freedesktop.systemd1.Manager ListUnits > "$dir/ListUnits.json"
call $m org.freedesktop.systemd1.Manager ListUnitFilesByPatterns asas 3 enabled disabled static 1 'morse-test*' > "$dir/ListUnitFilesByPatterns.json"
call $m org.freedesktop.systemd1.Manager ListUnitsByNames as 1 morse-test-disabled.service > "$dir/ListUnitsByNames.json"
for u in morse-test-sleep.service morse-test-fail.service; do
	p=$m/unit/$(echo "$u" | sed 's/-/_2d/g; s/\./_2e/g; s/@/_40/g')
	getall "$p" org.freedesktop.systemd1.Service > "$dir/$u.Service.json"
	getall "$p" org.freedesktop.systemd1.Unit > "$dir/$u.Unit.json"
done
