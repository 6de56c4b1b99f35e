"""Compacted topics on real brokers: the cleaner runs in a broker process, a SIGKILL at any
step of a pass loses no live key and stores nothing twice, and readers never see a gap as lost
data.

A one-broker cluster looks for cleaning work every 200 ms. A compacted topic with 1 KiB
segments is written by the native producer with keys (and tombstones). For every step of a
pass (cleaner/hold.py: mapped, cleaned, swap, deleted, checkpoint) the broker is restarted
with ODRADEK_CLEANER_HOLD naming the step; when the hold file appears, the broker is held
exactly there and is SIGKILLed; restarted without the hold, it must serve the latest value of
every live key, each record once, offsets increasing, and clean the log down in the end.
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import pytest

from broker.log.cleaner.hold import ENV, STEPS
from client import Admin, Consumer, NewTopic, Producer, TopicPartition
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import ClusterFactory, wait_until

pytestmark = pytest.mark.integration

TOPIC = "changelog"
KEYS = 20
CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": "1024",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "3600000",
}


def _write(bootstrap: str, round_: int, expected: dict[bytes, bytes | None]) -> None:
    with Producer(bootstrap, acks="all") as producer:
        futures = []
        for i in range(KEYS * 3):
            key = b"key-%d" % (i % KEYS)
            value = None if (i % KEYS == 7 and round_ % 2) else b"r%d-%d" % (round_, i)
            futures.append(producer.send(TOPIC, value, key=key, partition=0))
            expected[key] = value
            if i % 4 == 3:
                producer.flush()  # small batches: several segments per round
        for f in futures:
            f.get(timeout=30)


def _read(bootstrap: str) -> list[tuple[int, bytes | None, bytes | None]]:
    with Admin(bootstrap) as admin:
        end = admin.list_offsets({TopicPartition(TOPIC, 0): -1})[TopicPartition(TOPIC, 0)].offset
    got: list[tuple[int, bytes | None, bytes | None]] = []
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(TOPIC, 0)])
        while consumer.position(TopicPartition(TOPIC, 0)) < end:
            for records in consumer.poll(timeout_ms=1000).values():
                got.extend((r.offset, r.key, r.value) for r in records)
    return got


def _check(bootstrap: str, expected: dict[bytes, bytes | None]) -> list[int]:
    got = _read(bootstrap)
    offsets = [o for o, _, _ in got]
    assert offsets == sorted(set(offsets)), "offsets must increase, each once"
    latest = {k: v for _, k, v in got}
    assert latest == expected, "the latest value of every key survives, tombstones included"
    return offsets


def _scrape(cluster: LocalCluster) -> dict[str, float]:
    """The broker's unlabelled metrics (Kafka's cleaner gauges among them)."""
    port = cluster.broker(1).metrics_port
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    pairs = (line.split(" ") for line in text.splitlines() if line and not line.startswith("#"))
    return {p[0]: float(p[1]) for p in pairs if len(p) == 2 and "{" not in p[0]}


def _restart(cluster: LocalCluster, hold: str | None) -> None:
    cluster.kill(1, "KILL")
    if hold is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = hold
    try:
        cluster.start(1, wait=hold is None)  # a held loop (swap, deleted) never gets ready
    finally:
        os.environ.pop(ENV, None)


@pytest.mark.slow  # kills or pauses brokers
def test_sigkill_at_every_step_of_a_pass_loses_no_key(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(brokers=1, broker_settings={"log_cleaner_backoff_ms": 200})
    bootstrap = cluster.bootstrap
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 1, CONFIGS)])
    log_dir = Path(cluster.broker(1).log_dir)
    expected: dict[bytes, bytes | None] = {}
    for round_, step in enumerate(STEPS):
        _write(bootstrap, round_, expected)
        _restart(cluster, step)
        marker = log_dir / f"cleaner-held-{step}"
        wait_until(marker.exists, f"the cleaner held at {step}", 60)
        marker.unlink()
        _restart(cluster, None)
        _check(bootstrap, expected)
    _write(bootstrap, len(STEPS), expected)
    written = len(STEPS) + 1

    def cleaned_down() -> list[int] | None:
        offsets = _check(bootstrap, expected)  # every read checks the keys and the order
        return offsets if len(offsets) < written * KEYS * 3 // 2 else None

    offsets = wait_until(cleaned_down, "the log cleaned down", 60)
    assert offsets is not None
    assert offsets[-1] == written * KEYS * 3 - 1  # the newest record keeps its offset
    metrics = _scrape(cluster)
    assert 0 < metrics["odradek_log_cleaner_recopy_percent"] < 100
    assert metrics["odradek_log_cleaner_max_clean_time_secs"] > 0
    assert metrics["odradek_log_cleaner_uncleanable_partitions_count"] == 0
    assert "odradek_log_cleaner_max_dirty_percent" in metrics
    port = cluster.broker(1).metrics_port
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    assert f'odradek_log_cleaner_dirty_ratio{{partition="0",topic="{TOPIC}"}}' in text
    names = [p.name for p in (log_dir / f"{TOPIC}-0").iterdir()]
    assert not [n for n in names if n.endswith((".cleaned", ".swap", ".swap-end"))]
