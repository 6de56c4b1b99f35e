"""Test fixtures shared by every layer. Fixture modules live in tests/fixtures/; each is imported
here so that pytest sees its fixtures (ZooKeeper server, local cluster)."""

from tests.fixtures.cluster import cluster3, cluster_factory  # noqa: F401
from tests.fixtures.zk import zk_chroot, zk_server  # noqa: F401
