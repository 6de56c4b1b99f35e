# Targets a newcomer can guess. `make test` and `make cluster` set up everything they need on a
# fresh machine: the virtual environment in .venv/, the project in it, and the ZooKeeper server.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ZK_JAR := /usr/share/java/zookeeper.jar
KCAT := /usr/bin/kcat
IPTABLES := /usr/sbin/iptables
CHROMIUM := /usr/bin/chromium
KP_VERSION := 3.0.12
KP_CACHE := $(VENV)/kafka-python-suite
KP_SUITE := $(KP_CACHE)/kafka_python-$(KP_VERSION)
# share groups' client (KIP-932): confluent-kafka 2.16's ShareConsumer in an environment of its
# own, beside the project's 2.12 pin (pyproject.toml says why); tests run it as a subprocess
SHARE_VENV := .venv-share
SHARE_CK := 2.16.1

.PHONY: setup bytecode zookeeper kcat iptables chromium lint format test test-all test-unit test-integration test-slow coverage cluster spark-cluster spark-cluster-down bench bench-doors bench-log bench-compaction bench-failover bench-partitions bench-groups bench-spark bench-queue bench-txn bench-tail bench-security chaos clean

setup: $(STAMP) $(KP_SUITE)/.extracted $(SHARE_VENV)/.installed-$(SHARE_CK) bytecode

# Every process a test starts (brokers, the CLI, Spark's Python workers) imports the project.
# With PYTHONDONTWRITEBYTECODE set (this machine's shells set it) nothing writes the bytecode
# cache, so each of them compiled some 300 modules again: 0.6 s of CPU per broker start.
# compileall writes the cache whatever that variable says, for the files changed since.
PACKAGES := broker coordinator client protocol transport deploy spark_connector bench tests
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q -j 0 $(PACKAGES) >/dev/null

# editable_mode=compat puts the checkout itself on sys.path (a .pth file), so Spark's Python
# data source lookup (top-level `pyspark_*` modules) finds pyspark_odradek.py by itself. The
# install also compiles the record decoder and encoder (protocol/_records.c, _encoder.c), so an
# edited C file reinstalls.
$(STAMP): pyproject.toml protocol/_records.c protocol/_encoder.c broker/log/cleaner/_compact.c
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,spark]' --config-settings editable_mode=compat
	touch $(STAMP)

# kafka-python's own integration suite (test/integration/ of its sdist), run against an odradek
# cluster by tests/integration/test_kafka_python_suite.py. It is third-party code, so it is not
# copied into this repo: the sdist of the pinned version (the same pin as pyproject.toml's dev
# extra) is downloaded from PyPI into .venv/ once, which a fresh clone's `make test` (CI) does too.
$(KP_SUITE)/.extracted: | $(STAMP)
	rm -rf $(KP_CACHE) && mkdir -p $(KP_CACHE)
	$(BIN)/pip download -q --no-deps --no-binary :all: kafka-python==$(KP_VERSION) -d $(KP_CACHE)
	tar -xzf $(KP_CACHE)/kafka_python-$(KP_VERSION).tar.gz -C $(KP_CACHE)
	touch $@

# tests/integration/share_member.py runs under this python (tests/integration/test_share_groups.py)
$(SHARE_VENV)/.installed-$(SHARE_CK):
	rm -rf $(SHARE_VENV) && $(PY) -m venv $(SHARE_VENV)
	$(SHARE_VENV)/bin/pip install -q confluent-kafka==$(SHARE_CK)
	touch $@

# Debian's ZooKeeper server jar, started with java by deploy/zookeeper.py (never by systemd).
zookeeper: $(ZK_JAR)

# Debian's kcat (librdkafka's command-line client): the tests use it against the Kafka listener.
kcat: $(KCAT)

# Debian's iptables: the network lab (deploy/netns.py) of `cluster up --netns`, `make chaos` as
# root and the tests that build one (tests/integration/test_netns.py, the chaos runs).
iptables: $(IPTABLES)

# Debian's Chromium (and its driver): the console's browser tests drive it through Playwright.
chromium: $(CHROMIUM)

$(CHROMIUM):
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null

$(KCAT):
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q kcat >/dev/null

$(IPTABLES):
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q iptables >/dev/null

$(ZK_JAR):
	@command -v java >/dev/null || { echo "java is required for ZooKeeper"; exit 1; }
	apt-get update -qq
	printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q zookeeper >/dev/null
	rm -f /usr/sbin/policy-rc.d

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Two tiers. `make test`: the unit tests on both cores (pytest-xdist), then the integration tests
# that are not marked slow, on clusters shared across modules (tests/fixtures/cluster.py); each
# run prints its 20 slowest tests. `make test-all` (CI) adds what is marked slow: chaos runs,
# Spark, the browser, the third-party suites and the tests that kill or pause brokers.
# The integration tests wait on brokers, clients and Spark more than they compute, so they run on
# three workers: a test file to a worker (module-scoped clusters stay in one process), each
# worker with its own ZooKeeper and cluster pool, the longest files first (tests/conftest.py).
UNIT := $(BIN)/pytest -q -n 2 --durations=20 tests/unit
INTEGRATION := $(BIN)/pytest -q -n 3 --dist loadfile --no-loadscope-reorder --durations=20

test: setup zookeeper kcat iptables
	$(UNIT)
	$(INTEGRATION) -m "not slow" tests/integration

test-all: setup zookeeper kcat iptables chromium
	$(UNIT)
	$(INTEGRATION) tests/integration tests/spark

test-unit: setup
	$(UNIT)

test-integration: setup zookeeper kcat iptables
	$(INTEGRATION) -m "not slow" tests/integration

# only what `make test` leaves out
test-slow: setup zookeeper kcat iptables chromium
	$(INTEGRATION) -m slow tests/integration tests/spark

# line coverage of broker/, coordinator/, client/, protocol/ and transport/ ([tool.coverage] in
# pyproject.toml; it follows the xdist workers and every broker process a test starts).
# COVERAGE_TESTS picks the tiers: the unit tier by default (~4 min), e.g.
# COVERAGE_TESTS="tests/unit tests/integration" for both (about an hour)
COVERAGE_TESTS ?= tests/unit
coverage: setup zookeeper kcat iptables
	$(BIN)/coverage erase
	$(BIN)/coverage run -m pytest -q -n 2 $(COVERAGE_TESTS)
	$(BIN)/coverage combine -q
	@echo "line coverage of broker/ coordinator/ client/ protocol/ transport/ ($(COVERAGE_TESTS)): $$($(BIN)/coverage report --format=total)%"

cluster: setup zookeeper
	$(BIN)/odradek cluster up

# a Spark standalone master and two 1-core workers on 127.0.0.1, from pyspark's own jars and
# scripts (deploy/spark_cluster.py), under ./.spark-cluster; it prints the master's URL and a
# spark-submit line. `make spark-cluster-down` stops them by their recorded process ids.
spark-cluster: setup
	$(BIN)/python -m deploy.spark_cluster up --dir .spark-cluster

spark-cluster-down: setup
	$(BIN)/python -m deploy.spark_cluster down --dir .spark-cluster

bench-log: setup
	$(BIN)/python bench/bench_log.py

# the log cleaner's pass, produce beside a running cleaner (one-broker clusters), a coordinator's
# load of 1,000,000 commits before and after compaction; BENCH_ARGS e.g. "--records 300000"
bench-compaction: setup zookeeper
	$(BIN)/python bench/bench_compaction.py $(BENCH_ARGS)

# BENCH_ARGS: e.g. "--only kafka,baseline" or "--baseline REF" (bench/bench_cluster.py --help)
bench: setup zookeeper
	$(BIN)/python bench/bench_cluster.py $(BENCH_ARGS)

# a work queue: a share group beside Redis Streams and NATS JetStream (issue 35; also `make
# bench`'s part `queue`): BENCH_ARGS e.g. "--messages 100000 --rounds 5" (bench/bench_queue.py)
bench-queue: setup zookeeper
	$(BIN)/python bench/bench_queue.py $(BENCH_ARGS)

# the native door beside the Kafka door for our client's requests (issue 32; also `make bench`'s
# part `doors`): BENCH_ARGS e.g. "--rounds 5 --messages 1000000" (bench/bench_doors.py --help)
bench-doors: setup zookeeper
	$(BIN)/python bench/bench_doors.py $(BENCH_ARGS)

# the end-to-end latency beside a transactional producer, a compacted topic being cleaned, TLS,
# two CPU-bound processes (NATS JetStream beside) and 10,000 ACLs, each in turn (issue 34; also
# `make bench`'s part `tail`): BENCH_ARGS e.g. "--messages 20000" (bench/bench_tail.py --help)
bench-tail: setup zookeeper
	$(BIN)/python bench/bench_tail.py $(BENCH_ARGS)

# transactions alone (also a part of `make bench`): BENCH_ARGS e.g. "--messages 300000"
bench-txn: setup zookeeper
	$(BIN)/python bench/bench_txn.py $(BENCH_ARGS)

bench-spark: setup zookeeper
	$(BIN)/python bench/bench_spark.py

# TLS / plaintext and SCRAM logins per second alone (also a part of `make bench`)
bench-security: setup zookeeper
	$(BIN)/python bench/bench_security.py $(BENCH_ARGS)

bench-failover: setup zookeeper
	$(BIN)/python bench/bench_failover.py

# 3 brokers, 3,000 partitions at RF 3: creation, re-election after SIGKILL, idle CPU and memory
bench-partitions: setup zookeeper
	$(BIN)/python bench/bench_partitions.py

bench-groups: setup zookeeper
	$(BIN)/python bench/bench_groups.py

# a longer `odradek chaos run` than the one in `make test-all`: every fault kind this machine allows
# (as root: network namespaces and tmpfs too); CHAOS_ARGS e.g. "--seed 7 --workload kafka"
chaos: setup zookeeper iptables
	$(BIN)/python -m deploy.cli chaos run --dir .odradek-chaos --cycles 36 --json chaos-run.json $(CHAOS_ARGS)

clean:
	rm -rf $(VENV) $(SHARE_VENV) .pytest_cache .mypy_cache .ruff_cache
