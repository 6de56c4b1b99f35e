"""A restarted leader serves committed records at once: its high watermark comes back from
`replication-offset-checkpoint` (Kafka's file of that name), not from its followers' fetches.

Three brokers, a 10 s ZooKeeper session timeout, the HW checkpointed every 200 ms. N records
are produced acks=all to the partition the controller leads, and the checkpoint is given time.
Then every broker is SIGKILLed: the leader first, its followers 6 s later, so that when the
leader's own session has expired and it is back (registered again and controller again),
ZooKeeper still lists its followers for a few seconds: the ISR stays all three and nothing
moves the HW (the followers are down; replica.lag.time.max.ms is 30 s). A consumer reading
from the restarted leader alone must get all N records in that window, while the ISR still
names all three brokers. Without the checkpoint the HW would start at 0 and the consumer would
read nothing until the followers' sessions expired and the controller shrank the ISR.

Each run prints its seed; replay with ODRADEK_TEST_SEED=<seed>.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from client import Admin, Consumer, NewTopic, PartitionDescription, Producer, TopicPartition
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import ClusterFactory, seeded_rng, wait_until

pytestmark = pytest.mark.integration

WAIT_S = 40.0
SESSION_TIMEOUT_MS = 10_000
FOLLOWERS_OUTLIVE_LEADER_S = 6.0  # below the session timeout: no failover while they live
CHECKPOINT_INTERVAL_MS = 200
TOPIC = "hwc"
COUNT = 120


def _describe(bootstrap: str) -> list[PartitionDescription]:
    try:
        with Admin(bootstrap, request_timeout_ms=2000) as admin:
            (desc,) = admin.describe_topics([TOPIC])
    except Exception:
        return []
    return sorted(desc.partitions, key=lambda p: p.partition) if not desc.error_code else []


def _checkpoint(cluster: LocalCluster, broker_id: int) -> dict[tuple[str, int], int]:
    path = Path(cluster.broker(broker_id).log_dir) / "replication-offset-checkpoint"
    lines = path.read_text().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2, lines
    entries = [line.split(" ") for line in lines[2:]]
    return {(t, int(p)): int(o) for t, p, o in entries}


@pytest.mark.slow  # kills or pauses brokers
def test_restarted_leader_serves_up_to_checkpointed_hw_at_once(
    cluster_factory: ClusterFactory,
) -> None:
    rng = seeded_rng()
    cluster = cluster_factory(
        3,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        broker_settings={
            "replica_high_watermark_checkpoint_interval_ms": CHECKPOINT_INTERVAL_MS,
            "replica_lag_time_max_ms": 30_000,
            # the window above needs the session to be the only judge of death: with fast
            # death detection the killed leader and followers leave the ISR at once
            "controller_fast_death_detection": False,
        },
    )
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 3, 3, {"min.insync.replicas": "2"})])

    def in_sync() -> list[PartitionDescription]:
        parts = _describe(cluster.bootstrap)
        return parts if len(parts) == 3 and all(len(d.isr) == 3 for d in parts) else []

    parts = wait_until(in_sync, "three in-sync replicas everywhere", WAIT_S)
    leader = cluster.controller_id()
    assert leader is not None
    p = next(d.partition for d in parts if d.leader == leader)
    followers = [b for b in cluster.broker_ids if b != leader]
    values = [b"hw-%d-%d" % (i, rng.randrange(1 << 30)) for i in range(COUNT)]
    with Producer(cluster.bootstrap, acks="all") as producer:
        futures = [producer.send(TOPIC, v, partition=p) for v in values]
        producer.flush()
        assert [f.result(60).offset for f in futures] == list(range(COUNT))
    time.sleep(5 * CHECKPOINT_INTERVAL_MS / 1000)  # a few checkpoints
    assert _checkpoint(cluster, leader)[(TOPIC, p)] == COUNT

    cluster.kill(leader, "KILL")
    killed_at = time.monotonic()
    cluster.start(leader, wait=False)  # it registers once its old session has expired
    time.sleep(FOLLOWERS_OUTLIVE_LEADER_S)
    for b in followers:
        cluster.kill(b, "KILL")
    followers_expire_at = time.monotonic() + SESSION_TIMEOUT_MS / 1000
    print(f"followers killed {time.monotonic() - killed_at:.1f} s after the leader")

    only = f"127.0.0.1:{cluster.broker(leader).port}"

    def leads_with_full_isr() -> PartitionDescription | None:
        parts = _describe(only)
        d = parts[p] if len(parts) > p else None
        return d if d is not None and d.leader == leader and len(d.isr) == 3 else None

    wait_until(leads_with_full_isr, f"{leader} leading {TOPIC}-{p} again", WAIT_S)
    back_at = time.monotonic()
    print(f"leader back {back_at - killed_at:.1f} s after its kill")
    got: list[bytes] = []
    with Consumer(only, auto_offset_reset="earliest") as consumer:
        tp = TopicPartition(TOPIC, p)
        consumer.assign([tp])
        while len(got) < COUNT and time.monotonic() < followers_expire_at:
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(r.value or b"" for r in records)
    read_at = time.monotonic()
    print(f"read {len(got)} records {read_at - back_at:.1f} s after the leader was back")
    assert got == values
    # still before the followers' sessions ended: the ISR never shrank, so the HW came from
    # the checkpoint and not from an ISR of one
    d = leads_with_full_isr()
    assert d is not None and read_at < followers_expire_at, d
