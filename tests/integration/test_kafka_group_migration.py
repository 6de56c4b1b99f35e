"""Online migration of a group between the classic and the consumer (KIP-848) protocol, with
real confluent-kafka consumers, as a rolling upgrade and downgrade would do it.

A group of 4 kafka_group_member.py processes (confluent-kafka: process, write, then commit) is
rolled one member at a time from `group.protocol=classic` to `consumer` and back, while a
producer thread keeps writing to every partition. The first consumer-protocol member upgrades
the group; the classic members left are served inside the consumer group; the last
consumer-protocol member to leave downgrades it. A `Watch` thread samples the coordinator
every 100 ms: ListGroups v5 (the group's type and state), then ConsumerGroupDescribe or
DescribeGroups (its members), and OffsetFetch. Checked: the group is never empty, its type goes
classic -> consumer -> classic, no committed offset goes back, and every record produced was
processed (none skipped). A second test, on a cluster of its own, kills the coordinator while
the group holds classic members inside a consumer group, and again after the downgrade: the
new coordinator loads each form of the group from the records. Every wait is a poll with a
deadline.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from client import Producer
from deploy.cluster import LocalCluster
from protocol.kafka.versions import CONSUMER_GROUP_DESCRIBE, LIST_GROUPS
from tests.fixtures.cluster import ClusterFactory, ClusterPool
from tests.integration import kafka_wire as wire
from tests.integration.kafka_clients import GroupMember
from tests.integration.test_kip848 import (
    CONVERGE_S,
    PARTITIONS,
    SETTINGS,
    Group,
    GroupWatch,
    scenario,
)

pytestmark = pytest.mark.integration

MEMBERS = 4


@pytest.fixture
def cluster(cluster_pool: ClusterPool) -> LocalCluster:
    """Shared with any module asking for these settings (KIP-848's short sessions)."""
    return cluster_pool.get(3, broker_settings=SETTINGS)


class Producing:
    """A thread producing to every partition in turn until stopped; `g.ends` then holds each
    partition's end (the records every member must between them have processed)."""

    def __init__(self, g: Group) -> None:
        self.g = g
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.failure: BaseException | None = None

    def __enter__(self) -> Producing:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        try:
            with Producer(self.g.cluster.bootstrap, acks="all", linger_ms=2) as producer:
                while not self._stop.wait(0.02):
                    futures = [producer.send(self.g.topic, b"v%d" % self.sent, partition=p)
                               for p in range(PARTITIONS)]  # fmt: skip
                    for f in futures:
                        md = f.result(60)
                        ends = self.g.ends
                        ends[md.partition] = max(ends.get(md.partition, 0), md.offset + 1)
                    self.sent += 1
        except BaseException as exc:  # the test reports it
            self.failure = exc


def sample(kafka: str, group: str) -> tuple[str, str, set[str], dict[int, list[str]]] | None:
    """(type, state, member client ids, partition -> owners) at the coordinator; None when it
    cannot answer just now, or the group changed its type between ListGroups and the describe
    (the describe of the other kind answers Dead then, as Kafka's does)."""
    found = wire.find_coordinator(kafka, group)
    if found is None:
        return None
    try:
        listed = wire.call(found[1], LIST_GROUPS, 5, states_filter=(), types_filter=())
        row = next((x for x in listed.groups if x.group_id == group), None)
        if row is None:
            return None
        owners: dict[int, list[str]] = {}
        if row.group_type == "consumer":
            resp = wire.call(found[1], CONSUMER_GROUP_DESCRIBE, 1, group_ids=(group,),
                             include_authorized_operations=False)  # fmt: skip
            (g,) = resp.groups
            if g.error_code.value or g.group_state == "Dead":
                return None  # it went back to classic between the two calls
            for m in g.members:
                for tp in m.assignment.topic_partitions:
                    for p in tp.partitions:
                        owners.setdefault(int(p), []).append(m.client_id)
            clients = {m.client_id for m in g.members}
            return "consumer", g.group_state, clients, owners
        view = wire.group_view(kafka, group)
        if view is None or view.error_code or view.state == "Dead":
            return None  # (Dead: it became a consumer group between the two calls)
        for m in view.members:
            for _, p in m.partitions:
                owners.setdefault(p, []).append(m.client_id)
        return "classic", view.state, {m.client_id for m in view.members}, owners
    except OSError:
        return None


class Watch(GroupWatch):
    """The group's type (each change noted), members (never none once `watching`), committed
    offsets (never going back)."""

    def __init__(self, g: Group) -> None:
        super().__init__(g)
        self.types: list[str] = []
        self.empty: list[str] = []
        self.watching = False  # the group is formed: from now on it must never be empty

    def look(self) -> None:
        got = sample(self.g.kafka, self.g.group)
        if got is not None and self.watching:
            self.samples += 1
            kind, state, clients, _ = got
            if not self.types or self.types[-1] != kind:
                self.types.append(kind)
            if not clients or state == "Empty":
                self.empty.append(f"{kind} {state} {sorted(clients)}")

    def check(self) -> None:
        assert self.samples > 0, "the coordinator never answered"
        assert not self.empty, self.empty[:5]
        assert not self.backwards, self.backwards[:5]


def converge(g: Group, kind: str, live: list[GroupMember]) -> None:
    """Stable, of type `kind`, exactly `live` as members, each partition owned by one."""
    want = {m.client_id for m in live}

    def check() -> bool:
        got = sample(g.kafka, g.group)
        if got is None:
            return False
        seen_kind, state, clients, owners = got
        return (seen_kind == kind and state == "Stable" and clients == want
                and sorted(owners) == list(range(PARTITIONS))
                and all(len(o) == 1 for o in owners.values()))  # fmt: skip

    try:
        wire.wait_for(check, f"{g.group} to converge as {kind} on {sorted(want)}", CONVERGE_S)
    except AssertionError as exc:
        tails = "\n".join(f"{m.client_id}: {m.err_tail(5)}" for m in live)
        raise AssertionError(f"{exc}; last {sample(g.kafka, g.group)}\n{tails}") from None


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_rolling_migration_classic_to_consumer_and_back(
    cluster: LocalCluster, tmp_path: Path, assignor: str
) -> None:
    """The classic members' assignor: eager (range: a member gives everything up before it
    rejoins) or cooperative (it names what it owns and gives up only what moves)."""
    with scenario(cluster, tmp_path, "mig") as g, Producing(g) as producing, Watch(g) as watch:
        live = [g.start(f"c{i}", protocol="classic", assignor=assignor) for i in range(MEMBERS)]
        converge(g, "classic", live)
        watch.watching = True
        for i in range(MEMBERS):  # classic -> consumer, one member at a time
            live[i].close()  # LeaveGroup
            live[i] = g.start(f"n{i}", protocol="consumer")
            converge(g, "consumer", live)
        for i in range(MEMBERS):  # and back
            live[i].close()  # a consumer-protocol leave (epoch -1); the last one downgrades
            live[i] = g.start(f"k{i}", protocol="classic", assignor=assignor)
            converge(g, "classic" if i == MEMBERS - 1 else "consumer", live)
        producing.stop()
        assert producing.failure is None, producing.failure
        assert producing.sent > 0
        g.wait_all_committed()
    watch.check()
    assert watch.types == ["classic", "consumer", "classic"], watch.types
    g.check_all_processed()


def coordinator(g: Group) -> int:
    found = wire.wait_for(lambda: wire.find_coordinator(g.kafka, g.group), "coordinator", 30)
    node: int = found[0]
    return node


@pytest.mark.slow  # kills brokers
def test_the_coordinator_moves_mid_migration(
    cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    cluster = cluster_factory(3, broker_settings=SETTINGS)
    with scenario(cluster, tmp_path, "migmove") as g, Watch(g) as watch:
        g.produce(100)
        classic = [g.start(f"c{i}", protocol="classic") for i in range(2)]
        converge(g, "classic", classic)
        watch.watching = True
        modern = g.start("n0", protocol="consumer")
        converge(g, "consumer", [*classic, modern])  # upgraded: classic members inside
        first = coordinator(g)
        cluster.kill(first)
        g.produce(100)
        converge(g, "consumer", [*classic, modern])  # loaded from the consumer-group records
        assert coordinator(g) != first
        cluster.start(first)
        modern.close()  # the last consumer-protocol member: the group goes back to classic
        converge(g, "classic", classic)
        second = coordinator(g)
        cluster.kill(second)
        g.produce(100)
        converge(g, "classic", classic)  # loaded from the classic group record
        assert coordinator(g) != second
        g.wait_all_committed()
    watch.check()
    assert watch.types == ["classic", "consumer", "classic"], watch.types
    g.check_all_processed()
