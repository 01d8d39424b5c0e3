#!/usr/bin/env bash
# bench-compare.sh BASE: the Go benchmarks of the engine's hot path and the end-to-end HTTP
# and TCP scenarios, run for BASE (a git revision) and for the working tree, interleaved
# ROUNDS times, so that a slow moment of the machine hits both alike. It prints benchstat's
# comparison of the Go benchmarks and one line per end-to-end run.
#   BASE    revision to compare with (required)
#   ROUNDS  interleaved rounds (default 3)
#   E2E_DURATION  seconds of load per end-to-end scenario (default 10s)
set -euo pipefail
base=${1:?usage: bench-compare.sh BASE}
rounds=${ROUNDS:-3}
dur=${E2E_DURATION:-10s}
top=$(git rev-parse --show-toplevel)
cd "$top"
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach -q "$work/base" "$base"

build() { # dir out
	(cd "$1" && CGO_ENABLED=0 go build -trimpath -o "$2/morse" ./cmd/morse)
}
build "$work/base" "$work/bin-base"
build "$top" "$work/bin-head"
# One load tool and harness for both, the working tree's: the agent is what is compared.
CGO_ENABLED=0 go build -trimpath -o "$work/morse-bench" ./bench/cmd/morse-bench

# Where each revision keeps the writer and serializer benchmarks.
writer_pkg() { if [ -d "$1/batch" ]; then echo ./batch; else echo .; fi; }
gobench() { # dir label
	(cd "$1" && go test -run '^$' -bench 'Writer(Write)?$|BatchWriterWrite$|BufferAdd$' -benchmem -count 1 "$(writer_pkg "$1")" \
		&& go test -run '^$' -bench 'Serialize|Append' -benchmem -count 1 ./plugins/serializers/influx) \
		| sed -e 's/BenchmarkBatchWriterWrite/BenchmarkWriterWrite/' >>"$work/$2.txt"
}
e2e() { # bin label
	"$work/morse-bench" e2e --morse "$1/morse" --duration "$dur" --only http,tcp \
		--no-paced --out "$work/$2.json" >/dev/null
	python3 - "$2" "$work/$2.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[2]))["results"]:
    if "agent_cpu_us_per_line" not in r:
        continue
    print(f'{sys.argv[1]:5} {r["scenario"]["name"]:6} sent {r["sent_lines_per_sec"]:>10.0f}/s  '
          f'delivered {r["delivery_pct"]:6.2f}%  cpu {r["agent_cpu_us_per_line"]:.2f} us/line  '
          f'rss {r["agent_peak_rss_mib"]:.1f} MiB  foreign {r["foreign_cpu_pct"]:.1f}%')
PY
}
for i in $(seq "$rounds"); do
	echo "== round $i"
	gobench "$work/base" base
	gobench "$top" head
	e2e "$work/bin-base" base
	e2e "$work/bin-head" head
done
go run golang.org/x/perf/cmd/benchstat@latest "$work/base.txt" "$work/head.txt"
