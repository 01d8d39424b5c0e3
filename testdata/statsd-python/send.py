"""Send counters, gauges, timers and sets to a StatsD server with the `statsd` client from
PyPI (scripts/ensure-statsd-python.sh), over UDP or TCP, for inputs.statsd's tests.

usage: send.py udp|tcp HOST PORT; prints "ok" when every call returned.
"""
import sys

import statsd


def main():
    proto, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if proto == "tcp":
        c = statsd.TCPStatsClient(host, port, prefix="app", timeout=10)
    else:
        c = statsd.StatsClient(host, port, prefix="app")
    for _ in range(3):
        c.incr("requests")
    c.incr("requests", 5)
    c.decr("requests")
    c.incr("sampled", 1, rate=1)
    c.gauge("load", 10)
    c.gauge("load", 5, delta=True)
    c.gauge("load", -3, delta=True)
    for ms in (100, 200, 300):
        c.timing("latency", ms)
    for user in ("alice", "bob", "alice"):
        c.set("users", user)
    with c.pipeline() as pipe:
        pipe.incr("piped")
        pipe.incr("piped")
        pipe.timing("piped_latency", 7)
    if proto == "tcp":
        c.close()
    print("ok")


if __name__ == "__main__":
    main()
