"""Test fixtures shared by every layer. Fixture modules live in tests/fixtures/; each is imported
here so that pytest sees its fixtures (ZooKeeper server, local cluster, the leftover-process
sweep). Before the session starts, processes that a killed earlier run left behind are swept
(tests/fixtures/sweep.py)."""

import pytest

from tests.fixtures.cluster import cluster3, cluster_factory  # noqa: F401
from tests.fixtures.sweep import session_sweep, sweep_previous_runs  # noqa: F401
from tests.fixtures.zk import zk_chroot, zk_server  # noqa: F401


def pytest_sessionstart(session: pytest.Session) -> None:
    for line in sweep_previous_runs(session.config):
        print(f"odradek test sweep: killed a leftover of an earlier run: {line}")
