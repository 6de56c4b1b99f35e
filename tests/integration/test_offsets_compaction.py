"""`__consumer_offsets` stays bounded: one group commits 20,000 times (confluent-kafka's
asynchronous commits, pipelined), and the compacted offsets partition keeps about one record
per (group, partition) key, so a coordinator that takes it over after a restart replays a few
records, not the history of commits. The broker's own line "loaded N records" says how many."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import TopicPartition as KafkaTP

from client import Admin, NewTopic
from tests.fixtures.cluster import ClusterFactory, wait_until

pytestmark = pytest.mark.integration

COMMITS = 20_000
SEGMENT_BYTES = 64 * 1024
SETTINGS = {
    "offsets_topic_num_partitions": 1,
    "offsets_topic_segment_bytes": SEGMENT_BYTES,
    "log_cleaner_backoff_ms": 200,
}


def _offsets_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.glob("*.log"))


@pytest.mark.slow  # kills or pauses brokers
def test_twenty_thousand_commits_leave_a_small_offsets_topic(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(brokers=1, broker_settings=SETTINGS)
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic("events", 1, 1)])
    consumer = KafkaConsumer({
        "bootstrap.servers": cluster.kafka_bootstrap, "group.id": "committer",
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
    })  # fmt: skip
    errors: list[str] = []
    done = [0]

    def on_commit(err: object, _parts: object) -> None:
        done[0] += 1
        if err is not None:
            errors.append(str(err))

    consumer.assign([KafkaTP("events", 0)])
    consumer.commit(offsets=[KafkaTP("events", 0, 0)], asynchronous=False)
    for i in range(1, COMMITS):
        consumer.commit(offsets=[KafkaTP("events", 0, i)], asynchronous=True)
        if i % 500 == 0:
            consumer.poll(0)  # serves the commit callbacks
    consumer.commit(offsets=[KafkaTP("events", 0, COMMITS)], asynchronous=False)
    consumer.close()
    assert not errors, errors[:3]

    directory = Path(cluster.broker(1).log_dir) / "__consumer_offsets-0"
    # 20,000 commits of ~100 bytes would be ~2 MB (over 30 segments); compacted, a few remain
    wait_until(lambda: _offsets_bytes(directory) < 4 * SEGMENT_BYTES, "offsets compacted", 120)
    cluster.kill(1, "KILL")
    cluster.start(1)
    log_text = (cluster.dir / "broker-1.log").read_text()

    def loaded() -> int | None:
        found = re.findall(r"__consumer_offsets-0: loaded (\d+) records", log_text)
        return int(found[-1]) if len(found) >= 2 else None  # the load after the restart

    def reread() -> int | None:
        nonlocal log_text
        log_text = (cluster.dir / "broker-1.log").read_text()
        return loaded()

    records = wait_until(reread, "the coordinator loaded after the restart", 60)
    assert records is not None and records < 4 * SEGMENT_BYTES // 60  # not 20,000
    again = KafkaConsumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": "committer"})
    committed = again.committed([KafkaTP("events", 0)], timeout=30)
    again.close()
    assert committed[0].offset == COMMITS
