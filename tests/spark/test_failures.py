"""Failures while reading: data deleted by retention or truncated away (failOnDataLoss), and a
leader killed in the middle of a read of a replicated partition."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from client import Admin, TopicPartition
from deploy.cluster import LocalCluster
from spark_connector.fetch import DataLossError, RangePartition, read_range
from tests.fixtures.cluster import ClusterFactory
from tests.spark.conftest import create_topic, produce, reader, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def _values(batches: Any) -> list[tuple[int, str]]:
    out = []
    for b in batches:
        d = b.to_pydict()
        out.extend(zip(d["offset"], [v.decode() for v in d["value"]], strict=True))
    return out


def _bounds(bootstrap: str, topic: str) -> tuple[int, int]:
    tp = TopicPartition(topic, 0)
    with Admin(bootstrap) as admin:
        lo = admin.list_offsets({tp: -2})[tp].offset
        hi = admin.list_offsets({tp: -1})[tp].offset
    return lo, hi


@pytest.fixture
def retention_cluster(cluster_factory: ClusterFactory) -> LocalCluster:
    """One broker that applies retention every 200 ms (restarted with that setting)."""
    cluster = cluster_factory(brokers=1)
    with open(cluster.dir / "broker.toml", "a") as f:
        f.write("log_retention_check_interval_ms = 200\n")
    cluster.kill(1)
    cluster.start(1)
    return cluster


def test_data_loss_fails_or_is_skipped(
    spark: Any, retention_cluster: LocalCluster, caplog: pytest.LogCaptureFixture
) -> None:
    boot = retention_cluster.bootstrap
    create_topic(boot, "lossy", 1, **{"segment.bytes": "1024", "retention.bytes": "1024",
                                      "file.delete.delay.ms": "0"})  # fmt: skip
    for i in range(10):
        produce(boot, "lossy", 30, prefix=f"r{i}-")
    wait_for(lambda: _bounds(boot, "lossy")[0] > 0, 30, "retention to delete old segments")
    lo, hi = _bounds(boot, "lossy")
    from_zero = json.dumps({"lossy": {"0": 0}})

    with pytest.raises(Exception, match=r"lossy/0: offsets 0\.\.\d+ are lost"):
        reader(spark, boot, subscribe="lossy", startingOffsets=from_zero).load().collect()
    skipped = reader(spark, boot, subscribe="lossy", startingOffsets=from_zero,
                     failOnDataLoss="false").load()  # fmt: skip
    offsets = sorted(r.offset for r in skipped.select("offset").collect())
    assert offsets[0] >= lo and offsets == list(range(offsets[0], hi))

    # a range planned before retention ran, read after: the task itself finds the loss
    planned = RangePartition(boot, "lossy", 0, 0, hi, fail_on_data_loss=True)
    with pytest.raises(DataLossError, match="deleted by retention"):
        list(read_range(planned))
    planned.fail_on_data_loss = False
    with caplog.at_level(logging.WARNING, logger="spark_connector"):
        got = _values(read_range(planned))
    assert [o for o, _ in got] == list(range(got[0][0], hi)) and got[0][0] >= lo
    assert "deleted by retention" in caplog.text

    # a start past the end (the log was truncated, or the topic re-created)
    beyond = json.dumps({"lossy": {"0": hi + 10}})
    with pytest.raises(Exception, match="truncated"):
        reader(spark, boot, subscribe="lossy", startingOffsets=beyond).load().collect()
    truncated = RangePartition(boot, "lossy", 0, hi, hi + 10, fail_on_data_loss=True,
                               poll_timeout_ms=30_000)  # fmt: skip
    with pytest.raises(DataLossError, match="truncated"):
        list(read_range(truncated))


def _leader(bootstrap: str, topic: str) -> int:
    with Admin(bootstrap) as admin:
        (desc,) = [t for t in admin.describe_topics([topic]) if t.name == topic]
        return desc.partitions[0].leader


def test_leader_killed_mid_read(spark: Any, cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(brokers=3)
    boot = cluster.bootstrap
    create_topic(boot, "replicated", 1, rf=3)
    produce(boot, "replicated", 3000, acks="all")
    lo, hi = _bounds(boot, "replicated")
    assert (lo, hi) == (0, 3000)

    part = RangePartition(boot, "replicated", 0, 0, 3000, fetch_max_bytes=4096,
                          poll_timeout_ms=60_000)  # fmt: skip
    batches = read_range(part)
    first = next(batches)
    assert 0 < first.num_rows < 3000
    old_leader = _leader(boot, "replicated")
    cluster.kill(old_leader)
    rest = _values(batches)
    got = _values([first]) + rest
    assert got == [(i, f"v{i}") for i in range(3000)]
    new_leader = _leader(boot, "replicated")
    assert new_leader not in (old_leader, -1)
    # and through Spark, against the new leader
    df = reader(spark, boot, subscribe="replicated").load()
    assert df.count() == 3000
