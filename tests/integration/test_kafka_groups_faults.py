"""Kafka clients' groups while the coordinator's broker dies: at rest, and mid-rebalance.

The coordinator is found with FindCoordinator at the Kafka door and SIGKILLed; the group must
converge on a new coordinator (the new leader of the group's `__consumer_offsets` partition),
and no committed offset may be lost or go back (a `CommitWatch` samples them all along). Helpers
are test_kafka_groups.py's. Also: a member whose last request was a commit expires like any other.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from client import Admin
from coordinator.group.records import OFFSETS_TOPIC, partition_for
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import ClusterFactory
from tests.integration import kafka_wire as wire
from tests.integration.test_kafka_groups import CONVERGE_S, Scenario, _create, _name

pytestmark = pytest.mark.integration

# Long enough that a paused member holds a rebalance open while the test kills the coordinator
# (a member that does not rejoin is waited for until its session times out).
FAILOVER_SESSION_MS = 15_000
REBALANCING = ("PreparingRebalance", "CompletingRebalance")


def _coordinator(s: Scenario) -> int:
    found = wire.wait_for(lambda: wire.find_coordinator(s.kafka, s.group), "a coordinator", 30)
    return int(found[0])


def _committed(s: Scenario) -> dict[int, int]:
    """The group's committed offsets, as soon as its coordinator answers."""
    got: dict[int, int] = wire.wait_for(s.committed, "committed offsets", CONVERGE_S)
    return got


def _offsets_leader(cluster: LocalCluster, group: str) -> int:
    with Admin(cluster.bootstrap) as admin:
        (d,) = admin.describe_topics([OFFSETS_TOPIC])
        return next(p.leader for p in d.partitions
                    if p.partition == partition_for(group, len(d.partitions)))  # fmt: skip


def _moved_from(s: Scenario, dead: int) -> int:
    """Wait until FindCoordinator names another broker, the new leader of the group's offsets
    partition; that broker."""

    def moved() -> int | None:
        found = wire.find_coordinator(s.kafka, s.group)
        if found is None or found[0] == dead:
            return None
        return found[0] if _offsets_leader(s.cluster, s.group) == found[0] else None

    return int(wire.wait_for(moved, f"the coordinator to move from broker {dead}", CONVERGE_S))


@pytest.mark.slow  # kills or pauses brokers
@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka", "aiokafka"])
def test_coordinator_killed_at_rest_and_mid_rebalance(
    cluster_factory: ClusterFactory, tmp_path: Path, client: str
) -> None:
    cluster = cluster_factory(3)
    s = Scenario.new(cluster, tmp_path, "cfo")
    s.produce(20)
    try:
        with s.watch() as watch:
            a, b, x = (s.start(client, f"{client}-{i}", session_ms=FAILOVER_SESSION_MS)
                       for i in range(3))  # fmt: skip
            s.converge([a, b, x])
            s.wait_all_committed()

            # at rest: the group is Stable, everything committed
            first = _coordinator(s)
            before = _committed(s)
            cluster.kill(first)
            _moved_from(s, first)
            s.converge([a, b, x])
            assert _committed(s) == before  # nothing lost in the move
            s.produce(20)
            s.wait_all_committed()
            cluster.start(first)

            # mid-rebalance: x is paused, so it does not rejoin when d joins; the group stays
            # in PreparingRebalance until x's session times out (FAILOVER_SESSION_MS), then
            # in CompletingRebalance until the leader's SyncGroup: either will do
            x.pause()
            d = s.start(client, f"{client}-3", session_ms=FAILOVER_SESSION_MS)
            view = wire.wait_for(
                lambda: (v := wire.group_view(s.kafka, s.group)) and v.state in REBALANCING and v,
                "the group to be rebalancing", FAILOVER_SESSION_MS / 1000,
            )  # fmt: skip
            second = view.coordinator
            before = _committed(s)
            cluster.kill(second)
            x.resume()
            _moved_from(s, second)
            s.converge([a, b, x, d])
            after = _committed(s)
            assert all(after[p] >= o for p, o in before.items()), (before, after)
            s.produce(20)
            s.wait_all_committed()
    finally:
        s.stop_all()
    watch.check()
    assert watch.last() == s.ends
    s.check_all_processed()


# ----- a member that commits, then dies ------------------------------------------------------


def test_a_member_that_commits_then_dies_is_expired(cluster3: LocalCluster) -> None:
    """A member (by hand) joins, commits, then goes silent: it must be removed once its session
    timeout passes, as one that only heartbeated is."""
    kafka = cluster3.kafka_bootstrap
    topic, group = _name("expiry"), _name("expiry")
    _create(cluster3.bootstrap, topic, 1, 1)
    found = wire.ready_coordinator(kafka, group)
    with wire.KafkaConn(found[1]) as conn:
        joined = wire.join(conn, group, [topic], session_ms=1000)
        assert joined.error_code.value == wire.NONE
        gen, member = joined.generation_id, joined.member_id
        assert wire.sync(conn, group, gen, member, {member: b""}).error_code.value == wire.NONE
        assert wire.commit(conn, group, gen, member, {(topic, 0): 0}) == {(topic, 0): wire.NONE}
    wire.wait_for(
        lambda: (v := wire.group_view(kafka, group)) is not None and v.state == "Empty",
        "the silent member to be expired (session timeout 1 s)",
        6,
    )
