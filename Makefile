# morse — the two commands that matter: `make run` and `make test`.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
BIN       := bin/morse
# Benchmarks run each one this long; raise it for steadier figures.
BENCHTIME ?= 1s

.PHONY: all build load-tool run test test-deps vet lint golden bench bench-parsers bench-matrix bench-vmagent bench-statsd bench-compare soak soak-churn fuzz clean deb test-systemd

all: build

# PLUGINS: a custom build with only these plugins, e.g. PLUGINS="inputs.cpu outputs.influxdb"
# (a kind alone, such as "processors", takes every plugin of it); empty builds them all.
PLUGINS   ?=
comma     := ,
space     := $(subst ,, )
BUILDTAGS := $(if $(strip $(PLUGINS)),-tags 'custom$(comma)$(subst $(space),$(comma),$(strip $(PLUGINS)))')

## build: a static binary (no cgo) with its version set by ldflags; with PLUGINS="…" only
## those plugins are built in (build tags custom,<kind>.<name>,…, as Telegraf's).
build:
	@for p in $(PLUGINS); do case $$p in *.*) f=plugins/$${p%%.*}/all/$${p#*.}.go;; *) f=plugins/$$p/all;; esac; \
		[ -e "$$f" ] || { echo "PLUGINS: morse has no plugin $$p" >&2; exit 1; }; done
	CGO_ENABLED=0 $(GO) build -trimpath $(BUILDTAGS) -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/morse

## load-tool: bin/morse-bench (bench/), the load generator, the discarding sink and the
## benchmark harnesses: morse-bench load|sink|e2e|matrix|churn|flood.
LOADBIN   := bin/morse-bench
load-tool:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(LOADBIN) ./bench/cmd/morse-bench

## run: build and run the agent on its built-in config (cpu and mem to stdout).
run: build
	./$(BIN)

## deb: the Debian package bin/morse_<version>_<arch>.deb (docs/service.md): the binary, the
## systemd unit, a default config. Its version is $(VERSION) mapped to Debian's rules.
deb: build
	bash scripts/ensure-packaging-tools.sh
	$(GO) run ./packaging/mkdeb --binary $(BIN) --out bin --describe '$(VERSION)'

## test-systemd: the Debian package under a real systemd 252, PID 1 of a container made from a
## debootstrapped bookworm (scripts/systemd-rootfs.sh, cached in ~/.cache/morse/rootfs):
## install, reload, stop, upgrade, remove, purge, journal priorities, every plugin hardened.
test-systemd: test-deps
	bash scripts/ensure-packaging-tools.sh
	$(GO) vet -tags systemd ./internal/systemdtest
	$(GO) test -tags systemd -count=1 -timeout 20m -v ./internal/systemdtest

## test-deps: what the integration tests need: Debian's docker.io and influxdb packages and a
## running dockerd (the test images are built FROM scratch out of the host's binaries), and
## QuestDB's jar from Maven Central with a JDK, VictoriaMetrics' binary from Debian's package
## and Apache Kafka's and Apache IoTDB's jars from Maven Central, Prometheus' and node_exporter's
## binaries from Debian's packages, the OpenTelemetry Collector's OTLP receiver built from its
## Go modules, the OpenTelemetry Python SDK and the statsd client from PyPI (all cached under ~/.cache/morse), Debian's
## supervisor for the procstat test, Debian's nginx (unpacked into the cache) and iputils-ping for
## the network probes' tests, Debian's snmpd, snmp and libsnmp-base for the SNMP inputs, and systemd-analyze for the unit file's check.
## the network probes' tests, Debian's mariadb-server, postgresql and redis-server for the
## database inputs (run by the tests on loopback ports, never as services), and
## systemd-analyze for the unit file's check.
## supervisor for the procstat test, Debian's nginx and php-fpm (unpacked into the cache) and iputils-ping for
## the network probes' tests, and systemd-analyze for the unit file's check.
test-deps:
	bash scripts/ensure-docker.sh
	bash scripts/ensure-questdb.sh >/dev/null
	bash scripts/test-deps-supervisor.sh
	bash scripts/ensure-victoriametrics.sh >/dev/null
	bash scripts/ensure-otelcol.sh
	bash scripts/ensure-otel-python.sh
	bash scripts/ensure-statsd-python.sh
	bash scripts/ensure-packaging-tools.sh
	bash scripts/ensure-kafka.sh >/dev/null
	bash scripts/ensure-prometheus.sh >/dev/null
	bash scripts/ensure-iotdb.sh >/dev/null
	bash scripts/ensure-mosquitto.sh
	bash scripts/ensure-nginx.sh
	bash scripts/ensure-php-fpm.sh
	bash scripts/ensure-pymodbus.sh
	bash scripts/ensure-snmp.sh
	bash scripts/ensure-dbservers.sh
	sh scripts/ensure-ping.sh
	bash scripts/ensure-syslog-senders.sh
	bash scripts/ensure-dnsmasq.sh

## test: vet, then every test under the race detector, real servers included, then the Debian
## package under a real systemd (test-systemd).
test: test-deps vet
	$(GO) test -race -count=1 -timeout 12m ./...
	bash scripts/ensure-packaging-tools.sh
	$(GO) vet -tags systemd ./internal/systemdtest
	$(GO) test -tags systemd -count=1 -timeout 20m ./internal/systemdtest

vet:
	$(GO) vet ./...

## golden: rewrite every golden file from what the code now produces: go test -update (the
## one flag, internal/testutil's) on each package whose tests compare with golden files.
## Review the diff before committing it.
GOLDEN_PKGS = $(shell git grep -l -e 'testutil\.Golden\b' -e 'testutil\.Run\(Processors\|Aggregators\)' -- '*_test.go' | xargs -n1 dirname | sort -u | sed 's|^|./|')
golden:
	$(GO) test -count=1 $(GOLDEN_PKGS) -update

## lint: formatting and vet.
lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## bench: every Go benchmark with allocation counts, the built agent's idle memory, then the
## end-to-end load benchmark (morse-bench e2e: load into the agent's listeners, out to a
## discarding sink).
E2E_DURATION ?= 20s
E2E_REPEAT   ?= 1
bench: test-deps build load-tool
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...
	bash scripts/bench-idle-rss.sh $(BIN)
	./$(LOADBIN) e2e --morse $(BIN) --duration $(E2E_DURATION) --repeat $(E2E_REPEAT) --out docs/bench/e2e-latest.json
	$(MAKE) --no-print-directory bench-matrix
	$(MAKE) --no-print-directory bench-vmagent
	$(MAKE) --no-print-directory bench-statsd
	$(MAKE) --no-print-directory soak-churn

## bench-parsers: each data format's BenchmarkParse (plugins/parsers/*: ns and allocations
## per metric), BENCH_COUNT times; make bench runs them once among the others.
## docs/bench/parsers.md sets them beside Telegraf's parsers.
BENCH_COUNT ?= 6
bench-parsers:
	$(GO) test -run '^$$' -bench '^BenchmarkParse$$' -benchmem -count $(BENCH_COUNT) -benchtime $(BENCHTIME) ./plugins/parsers/...

## bench-matrix: issue 13's flow-control matrix, each cell short (a few minutes in all): HTTP
## over 1, 4 and 16 connections x bodies of 100, 1000 and 5000 lines and TCP over 1, 4 and 16
## connections, flat out, then into a sink slowed to 5000 lines/s; CPU per line at lossless
## capacity; a UDP flood of 8-line datagrams and the lossless UDP rate; the gzip bomb's RSS
## growth. It prints every cell, names the worst, and writes docs/bench/matrix-latest.json.
## MATRIX_ONLY picks cells or groups (capacity, udp, gzip-bomb), comma-separated.
MATRIX_ONLY ?=
bench-matrix: build load-tool
	./$(LOADBIN) matrix --morse $(BIN) --only '$(MATRIX_ONLY)' --out docs/bench/matrix-latest.json

## bench-vmagent: issue 36's benchmarks against vmagent 1.79.5 (morse-bench vmagent, bench/e2e),
## both agents in turn pinned to core 0, remote-writing to VictoriaMetrics 1.79.5 on core 1:
## line protocol over HTTP (influxdb_listener, vmagent's /write) over 4 and 16 connections x
## bodies of 100, 1000 and 5000 lines, VMAGENT_LINES each; then VMAGENT_TARGETS targets of a
## node_exporter capture (about 1,000 series each) scraped every second. CPU per sample
## VictoriaMetrics accepted (/proc/PID/stat), the worst cell of each against its target
## (push <= 0.5x vmagent's, scrape <= 1x); docs/bench/vmagent-latest.json.
VMAGENT_LINES   ?= 300000
VMAGENT_TARGETS ?= 20
VMAGENT_REPEAT  ?= 1
VMAGENT_ONLY    ?=
bench-vmagent: build load-tool
	bash scripts/ensure-victoriametrics.sh
	bash scripts/ensure-prometheus.sh >/dev/null
	./$(LOADBIN) vmagent --morse $(BIN) --lines $(VMAGENT_LINES) --targets $(VMAGENT_TARGETS) \
		--repeat $(VMAGENT_REPEAT) --only '$(VMAGENT_ONLY)' --out docs/bench/vmagent-latest.json

## bench-statsd: morse's side of docs/bench/statsd.md (morse-bench flood, bench/flood): the
## built agent's inputs.statsd, on a port free at run time and pinned to one core, flooded
## for STATSD_DURATION from the load tool on the other, with 1 and 16 lines per datagram and
## over 4 TCP connections, then inputs.syslog with octet-counted messages over 4 TCP
## connections; lines sent and captured (summed from the metrics it wrote), the kernel's and
## the input's drops, the agent's CPU seconds and lines per CPU second. About a minute;
## figures in docs/bench/statsd-latest.{json,md}.
STATSD_DURATION ?= 5s
bench-statsd: build load-tool
	./$(LOADBIN) flood --morse $(BIN) --duration $(STATSD_DURATION) --out docs/bench/statsd-latest

## soak-churn: the churn soak (morse-bench churn, bench/churn): the built agent, with an InfluxDB
## listener, processors.cardinality and the InfluxDB output to a discarding sink, fed a day's
## worth of churning identifiers in SOAK_CHURN_DURATION of wall time; its RSS must grow by
## less than 1% between the second and the last tenth. Figures and plot:
## docs/bench/churn-soak.{json,md,png}.
SOAK_CHURN_DURATION ?= 10m
soak-churn: build load-tool
	./$(LOADBIN) churn --morse $(BIN) --duration $(SOAK_CHURN_DURATION) --out docs/bench/churn-soak

## bench-compare: the writer and serializer benchmarks and the end-to-end HTTP and TCP
## scenarios for BASE (a git revision) and the working tree, interleaved ROUNDS times.
BASE   ?= HEAD~1
ROUNDS ?= 3
bench-compare: test-deps
	ROUNDS=$(ROUNDS) E2E_DURATION=$(E2E_DURATION) bash scripts/bench-compare.sh $(BASE)

## soak: the disk buffer's crash cycles (kill -9 at random points against a real InfluxDB)
## 200 times instead of make test's 20, with the figures.
soak: test-deps
	MORSE_CRASH_CYCLES=200 $(GO) test -count=1 -timeout 30m -run TestCrashCyclesLoseNothing -v ./cmd/morse

## fuzz: a short run of each fuzz target beyond its seed corpus.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRoundTrip$$' -fuzztime 30s ./plugins/serializers/influx
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./plugins/parsers/influx
	$(GO) test -run '^$$' -fuzz '^FuzzNumbers$$' -fuzztime 30s ./plugins/parsers/influx
	$(GO) test -run '^$$' -fuzz '^FuzzWriteHandler$$' -fuzztime 30s ./plugins/inputs/influxdb_listener
	$(GO) test -run '^$$' -fuzz '^FuzzScanner$$' -fuzztime 30s ./internal/diskq
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./plugins/parsers/metricjson
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./plugins/parsers/json
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./plugins/parsers/json_v2
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./plugins/parsers/msgpack
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./plugins/parsers/csv
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./plugins/parsers/prometheus
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./plugins/parsers/graphite
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./plugins/parsers/grok
	$(GO) test -run '^$$' -fuzz '^FuzzNonCapturing$$' -fuzztime 30s ./plugins/parsers/grok

clean:
	rm -rf bin
