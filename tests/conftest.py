"""Test fixtures shared by every layer. Fixture modules live in tests/fixtures/; each is imported
here so that pytest sees its fixtures (ZooKeeper server, local cluster, the leftover-process
sweep). Before the session starts, processes that a killed earlier run left behind are swept
(tests/fixtures/sweep.py).

Every test under tests/spark is marked `slow` here (starting Spark alone takes tens of seconds),
so `make test` (`-m "not slow"`) leaves them to `make test-all`; other slow tests say so with
`pytest.mark.slow` themselves (pyproject.toml lists what counts as slow)."""

from pathlib import Path

import pytest
from hypothesis import settings

from tests.fixtures.cluster import (  # noqa: F401
    cluster3,
    cluster_factory,
    cluster_pool,
    shared_clusters_intact,
)
from tests.fixtures.sweep import session_sweep, sweep_previous_runs  # noqa: F401
from tests.fixtures.zk import zk_chroot, zk_server  # noqa: F401

# No property test has a time limit: hypothesis's default 200 ms deadline per example is a timed
# assertion, and fails on a loaded CI machine (it did, in test_classic_records.py).
settings.register_profile("odradek", deadline=None)
settings.load_profile("odradek")

TESTS = Path(__file__).resolve().parent
SPARK_TESTS = TESTS / "spark"
# The integration tiers run on three pytest-xdist workers, a test file to a worker (Makefile:
# `--dist loadfile --no-loadscope-reorder`), files in collection order. These files take the
# longest (minutes each, measured with --durations), so they start first instead of closing the
# run with one worker busy and two idle; longest first.
LONG_FIRST = (
    "spark/test_exactly_once.py",
    "spark/test_standalone.py",
    "integration/test_chaos_run.py",
    "integration/test_cli_readme.py",
    "integration/test_exactly_once_ctp.py",
    "integration/test_security_clients.py",
    "spark/test_streaming.py",
    "spark/test_batch.py",
    "integration/test_failover.py",
    "integration/test_txn_coordinator_failover.py",
    "integration/test_kafka_failover.py",
    "integration/test_offsets_compaction.py",
)


def _start_rank(item: pytest.Item) -> int:
    name = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else ""
    return LONG_FIRST.index(name) if name in LONG_FIRST else len(LONG_FIRST)


def pytest_sessionstart(session: pytest.Session) -> None:
    for line in sweep_previous_runs(session.config):
        print(f"odradek test sweep: killed a leftover of an earlier run: {line}")


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook deselects by marker (-m)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(SPARK_TESTS):
            item.add_marker(pytest.mark.slow)
    items.sort(key=_start_rank)  # stable: within a file, and among the rest, the order stays
