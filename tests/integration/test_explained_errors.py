"""Errors that say their cause, on a real cluster: a partition whose replicas are all down, and
partitions whose ISR is below min.insync.replicas.

One three-broker cluster; topic `chaos` has 3 partitions on 2 replicas each, with
min.insync.replicas=2. The two replicas of partition 0 are killed: partition 0 has no leader
(both its replicas down, unclean election off), and every other partition keeps the survivor
as its leader with an ISR of one. Then `odradek topics describe` says why partition 0 has no
leader, a send to it expires naming the cause (not a code), and an acks=all send to a partition
the survivor leads is refused with the broker's own words.
"""

from __future__ import annotations

import pytest

from client import Admin, NewTopic, Producer
from client.types import TopicDescription
from protocol.errors import NotEnoughReplicasError, RequestTimedOutError
from tests.fixtures.cluster import ClusterFactory, run_odradek, wait_until

pytestmark = pytest.mark.integration

TOPIC = "chaos"


def _describe(bootstrap: str) -> TopicDescription:
    with Admin(bootstrap) as admin:
        [described] = admin.describe_topics([TOPIC])
    return described


@pytest.mark.slow  # kills or pauses brokers
def test_leaderless_and_short_isr_errors_say_why(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(3)
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 3, 2, {"min.insync.replicas": "2"})])
    full = wait_until(
        lambda: (
            (d := _describe(cluster.bootstrap)).partitions
            and all(p.leader >= 0 and len(p.isr) == 2 for p in d.partitions)
            and d
        ),
        "every partition led, with both replicas in sync",
        30,
    )
    victims = full.partitions[0].replicas
    [survivor] = [b for b in cluster.broker_ids if b not in victims]
    for victim in victims:
        cluster.kill(victim)
    bootstrap = f"127.0.0.1:{cluster.broker(survivor).port}"
    # the survivor may not know the topic yet (its UpdateMetadata was still on its way when the
    # other brokers answered above): it says UNKNOWN_TOPIC_OR_PARTITION, no partitions, until then
    after = wait_until(
        lambda: (
            (d := _describe(bootstrap)).partitions
            and d.partitions[0].leader < 0
            and all(p.leader == survivor for p in d.partitions if survivor in p.replicas)
            and d
        ),
        "partition 0 offline, the survivor leading the others",
        40,
    )
    led = next(p.partition for p in after.partitions if p.leader == survivor)
    down = ",".join(map(str, after.partitions[0].replicas))
    offline = f"partition {TOPIC}-0 has no leader: its replicas {down} are down"

    done = run_odradek("topics", "describe", TOPIC, "--bootstrap", bootstrap)
    assert done.returncode == 0, done.stderr
    assert f"{offline} and unclean election is off" in done.stderr
    assert "(offline)" in done.stdout  # the listing itself is unchanged

    with Producer(bootstrap, acks="all", delivery_timeout_ms=3000, request_timeout_ms=2000) as p:
        expired = p.send(TOPIC, b"lost", partition=0)
        short = p.send(TOPIC, b"short", partition=led)
        with pytest.raises(RequestTimedOutError) as leaderless:
            expired.get(timeout=30)
        with pytest.raises(RequestTimedOutError) as timed_out:
            short.get(timeout=30)
    assert offline in str(leaderless.value), leaderless.value
    isr_words = f"{TOPIC}-{led}: ISR [{survivor}] is below min.insync.replicas 2"
    assert f"NOT_ENOUGH_REPLICAS: acks=all refused: {isr_words}" in str(timed_out.value)

    with (
        Producer(bootstrap, acks="all", retries=0) as p,
        pytest.raises(NotEnoughReplicasError) as refused,
    ):
        p.send(TOPIC, b"refused", partition=led).get(timeout=30)
    assert str(refused.value) == f"NOT_ENOUGH_REPLICAS: acks=all refused: {isr_words}"
