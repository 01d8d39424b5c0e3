#!/usr/bin/env bash
# ensure-statsd-python.sh: a Python virtual environment with the `statsd` client from PyPI
# (jsocol/pystatsd), a real StatsD client over UDP and TCP for the tests of inputs.statsd,
# which run testdata/statsd-python/send.py with it (internal/testserver/statsdpython.go):
#
#   ${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}/statsd-python/4.0.1/bin/python
#
# Idempotent: it installs only when the environment is missing or cannot import the client.
set -euo pipefail

VERSION=4.0.1
CACHE="${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}"
VENV="$CACHE/statsd-python/$VERSION"

say() { echo "ensure-statsd-python: $*" >&2; }
ok() { "$VENV/bin/python" -c 'import statsd; statsd.StatsClient; statsd.TCPStatsClient' 2>/dev/null; }

if [ -x "$VENV/bin/python" ] && ok; then
	say "statsd $VERSION ready in $VENV"
	exit 0
fi
command -v python3 >/dev/null || { say "ERROR: python3 is needed"; exit 1; }
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "statsd==$VERSION"
ok || { say "ERROR: statsd does not import after installing"; exit 1; }
say "statsd $VERSION ready in $VENV"
