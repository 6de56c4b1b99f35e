"""The shared-cluster pool of tests/fixtures/cluster.py: one cluster per settings, handed out
again and again, and a cluster whose broker a test killed leaves the pool (the autouse check
`shared_clusters_intact` fails that test; the tests after it get a fresh cluster).

A pool of this test's own (not the session's), on one-broker clusters.
"""

from __future__ import annotations

import pytest

from deploy.zookeeper import ZkProcess
from tests.fixtures.cluster import ClusterPool

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # kills a broker


def test_one_cluster_per_settings_and_a_broken_one_leaves_the_pool(
    zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory
) -> None:
    pool = ClusterPool(zk_server, tmp_path_factory)
    try:
        first = pool.get(1)
        assert pool.get(1) is first
        other = pool.get(1, broker_settings={"num_partitions": 2})
        assert other is not first and other.dir != first.dir
        assert pool.drop_broken() == []

        first.kill(1)
        [line] = pool.drop_broken()
        assert str(first.dir) in line and "dead" in line
        assert pool.get(1, broker_settings={"num_partitions": 2}) is other  # left alone
        fresh = pool.get(1)
        assert fresh is not first and fresh.broker_states() == {1: "alive"}
    finally:
        pool.close()
