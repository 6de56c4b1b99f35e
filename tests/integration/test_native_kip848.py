"""odradek's own consumer on KIP-848's consumer group protocol (group_protocol="consumer").

One module-scoped three-broker cluster with a short consumer-group session (so a crashed
member is fenced within seconds). Members are AsyncConsumers in this process: their owned
partitions are sampled in one loop step (an atomic snapshot) every few milliseconds, and the
coordinator's view through the native DescribeGroups, to check that no partition ever has two
owners. Each member commits after every poll; a record read twice must have been read once
in a batch whose commit did not happen (the crashed member's tail, or a commit refused).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from client import AsyncAdmin, AsyncConsumer, AsyncProducer, NewTopic, TopicPartition
from client.group.admin import GroupAdmin
from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from protocol.errors import GroupIdNotFoundError, InconsistentGroupProtocolError, OdradekError
from tests.fixtures.cluster import _make_cluster, _tear_down, run_odradek

pytestmark = pytest.mark.integration

PARTITIONS = 6
SETTINGS: dict[str, int | bool | str] = {
    "group_consumer_session_timeout_ms": 4000,
    "group_consumer_heartbeat_interval_ms": 300,
    "group_consumer_min_session_timeout_ms": 4000,  # Kafka's bounds (45 s, 5 s) let them be
    "group_consumer_min_heartbeat_interval_ms": 300,
}
OPTS: dict[str, object] = {
    "group_protocol": "consumer",
    "auto_offset_reset": "earliest",
    "enable_auto_commit": False,
    "fetch_max_wait_ms": 100,
    "max_poll_interval_ms": 20_000,
}


@pytest.fixture(scope="module")
def cluster(
    zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    made = _make_cluster(
        zk_server, tmp_path_factory.mktemp("native848"), 3, broker_settings=SETTINGS
    )
    try:
        made.up()
        yield made
    finally:
        _tear_down(made)


async def wait_for(check: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not check():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


@dataclass
class Member:
    name: str
    consumer: AsyncConsumer
    batches: list[tuple[list[tuple[int, int]], bool]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    calls: list[tuple[str, set[int]]] = field(default_factory=list)  # the listener's

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", {tp.partition for tp in revoked}))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", {tp.partition for tp in assigned}))

    def check_calls(self) -> None:
        """Incremental: a revoke names only owned partitions, an assign only new ones, and
        replaying them gives what the member owns."""
        owned: set[int] = set()
        for kind, parts in self.calls:
            if kind == "revoked":
                assert parts and parts <= owned, (self.name, self.calls)
                owned -= parts
            else:
                assert parts and not parts & owned, (self.name, self.calls)
                owned |= parts
        assert owned == self.parts(), (self.name, self.calls)

    def start(self) -> Member:
        self.task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        while True:
            polled = await self.consumer.poll(timeout_ms=100)
            read = [(r.partition, r.offset) for recs in polled.values() for r in recs]
            if not read:
                continue
            self.batches.append((read, False))  # kept even if cancelled while committing
            with contextlib.suppress(OdradekError):
                await self.consumer.commit()
                self.batches[-1] = (read, True)

    def parts(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    async def _stop_task(self) -> None:
        assert self.task is not None
        if self.task.done():
            self.task.result()  # the poll loop failed: show why
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task

    async def leave(self) -> None:
        await self._stop_task()
        await self.consumer.close()

    async def crash(self) -> None:
        """Gone without a word: no leave heartbeat, no commit; the coordinator fences it
        when its session expires."""
        await self._stop_task()
        c = self.consumer
        m = c._group.membership  # type: ignore[union-attr]
        m._closed = True
        if m._heartbeat_task is not None:
            m._heartbeat_task.cancel()
        m._drop_coordinator()
        c._closed = True
        await c._fetcher.close()
        await c._cluster.close()


def member(bootstrap: str, group: str, topic: str, name: str, **opts: object) -> Member:
    consumer = AsyncConsumer(bootstrap, group_id=group, client_id=name, **{**OPTS, **opts})  # type: ignore[arg-type]
    made = Member(name, consumer)
    consumer.subscribe([topic], listener=made)
    return made.start()


async def produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    async with AsyncProducer(bootstrap, acks=-1) as producer:
        futures = [
            await producer.send(topic, b"%d" % i, partition=i % PARTITIONS)
            for i in range(start, start + count)
        ]
        await producer.flush()
        for f in futures:
            await f


class Sampler:
    """Checks, every few ms, that no two live members own one partition, in the consumers'
    own view (one loop step: atomic) and, every 200 ms, in the coordinator's."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.bootstrap, self.group = bootstrap, group
        self.live: list[Member] = []
        self.overlaps: list[str] = []
        self.samples = 0
        self.described = 0

    async def run_clients(self) -> None:
        while True:
            seen: dict[int, str] = {}
            for m in self.live:
                for p in m.parts():
                    if p in seen:
                        self.overlaps.append(f"partition {p}: {seen[p]} and {m.name}")
                    seen[p] = m.name
            self.samples += 1
            await asyncio.sleep(0.005)

    async def run_coordinator(self) -> None:
        async with GroupAdmin(self.bootstrap) as admin:
            while True:
                with contextlib.suppress(OdradekError):
                    desc = await admin.describe_group(self.group)
                    seen: dict[tuple[str, int], str] = {}
                    for m in desc.members:
                        for t in m.assignment:
                            for p in t.partitions:
                                if (t.topic, p) in seen:
                                    self.overlaps.append(f"coordinator: {t.topic}-{p} twice")
                                seen[(t.topic, p)] = m.member_id
                    self.described += 1
                await asyncio.sleep(0.2)


async def settled(bootstrap: str, group: str, timeout_s: float = 60) -> None:
    """Wait until every member is at the group epoch and the target assignment's."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    async with GroupAdmin(bootstrap) as admin:
        while True:
            d = await admin.describe_group(group)
            epochs = {m.member_epoch for m in d.members} | {d.target_assignment_epoch}
            if epochs == {d.group_epoch}:
                return
            assert loop.time() < deadline, f"group {group} not settled: {d}"
            await asyncio.sleep(0.05)


def owned_by(members: list[Member]) -> list[set[int]]:
    return [m.parts() for m in members]


async def test_members_join_leave_and_crash_without_loss_or_two_owners(
    cluster: LocalCluster,
) -> None:
    bootstrap, topic, group = cluster.bootstrap, "n848", "n848-group"
    async with AsyncAdmin(bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    await produce(bootstrap, topic, 0, 300)
    sampler = Sampler(bootstrap, group)
    tasks = [asyncio.ensure_future(sampler.run_clients()),
             asyncio.ensure_future(sampler.run_coordinator())]  # fmt: skip
    everyone: list[Member] = []
    try:
        a, b, c = (member(bootstrap, group, topic, n) for n in ("a", "b", "c"))
        everyone += [a, b, c]
        sampler.live = [a, b, c]
        await wait_for(lambda: owned_by([a, b, c]) != [] and all(
            len(s) == 2 for s in owned_by([a, b, c])), "two partitions each")  # fmt: skip
        settled = len(c.calls)  # c may have joined first and given up four on the way
        await produce(bootstrap, topic, 300, 300)

        sampler.live = [b, c]  # a's partitions are released before its leave is answered
        await a.leave()
        await wait_for(lambda: all(len(s) == 3 for s in owned_by([b, c])), "three each")

        d = member(bootstrap, group, topic, "d")
        everyone.append(d)
        sampler.live = [b, c, d]
        await wait_for(lambda: all(len(s) == 2 for s in owned_by([b, c, d])), "d joined")

        sampler.live = [c, d]
        await b.crash()
        await produce(bootstrap, topic, 600, 300)
        await wait_for(lambda: all(len(s) == 3 for s in owned_by([c, d])), "b fenced")

        def read() -> set[tuple[int, int]]:
            return {rec for m in everyone for batch, _ in m.batches for rec in batch}

        try:
            await wait_for(lambda: len(read()) == 900, "every record read")
        except AssertionError:
            got = read()
            missing = sorted(r for r in ((i % 6, i // 6) for i in range(900)) if r not in got)
            for m in (c, d):
                print(m.name, {tp: m.consumer._subs.position(tp) for tp in m.consumer.assignment()})
            raise AssertionError(f"missing {len(missing)}: {missing[:5]} {missing[-5:]}") from None
        async with GroupAdmin(bootstrap) as groups:
            desc = await groups.describe_group(group)
        assert desc.group_type == "consumer" and desc.group_epoch > 0
        assert desc.target_assignment_epoch == desc.group_epoch
        assert sorted(m.client_id for m in desc.members) == ["c", "d"]
        assert all(m.member_epoch == desc.group_epoch for m in desc.members)
        assert all(m.target_assignment == m.assignment for m in desc.members)
        for m in (c, d):
            m.check_calls()
        # from the settled group on, c went 2 -> 3 (a left) -> 2 (d joined) -> 3 (b fenced):
        # partitions only added or only taken away at each step, never all revoked and given
        # back (eager); before that, how many it gave up depends on the order the three joined
        assert [kind for kind, _ in c.calls[settled:]].count("revoked") <= 2, c.calls
    finally:
        for t in tasks:
            t.cancel()
        for m in everyone:
            if m.task is not None and not m.task.done():
                await m.leave()

    assert sampler.overlaps == []
    assert sampler.samples > 100 and sampler.described > 5
    # exactly once per committed position: a record read twice was read in a batch whose
    # commit did not happen (b's uncommitted tail, or a commit refused at a rebalance)
    uncommitted = {rec for m in everyone for batch, ok in m.batches if not ok for rec in batch}
    counts: dict[tuple[int, int], int] = {}
    for m in everyone:
        for batch, _ in m.batches:
            for rec in batch:
                counts[rec] = counts.get(rec, 0) + 1
    assert len(counts) == 900
    twice = {rec for rec, n in counts.items() if n > 1}
    assert twice <= uncommitted, sorted(twice - uncommitted)[:10]


async def test_cli_describe_shows_a_consumer_group(cluster: LocalCluster) -> None:
    bootstrap, topic, group = cluster.bootstrap, "n848-cli", "n848-cli-group"
    async with AsyncAdmin(bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 2, 1)])
    m = member(bootstrap, group, topic, "cli-member", group_remote_assignor="range")
    try:
        await wait_for(lambda: m.parts() == {0, 1}, "both partitions")

        async def described(*more: str) -> str:
            done = await asyncio.to_thread(
                run_odradek, "groups", "describe", group, *more, "--bootstrap", bootstrap
            )
            assert done.returncode == 0, done.stderr
            return done.stdout

        await settled(bootstrap, group)
        out = await described()
        head = out.splitlines()[0]
        assert "type consumer" in head and "assignor range" in head, out
        assert "Kafka group" not in head, out  # a consumer group may have members of both doors
        # the group epoch is 1, or 2 when the topic's partitions reached the coordinator
        # after the member's first heartbeat; the target assignment follows it
        epochs = re.search(r"group epoch (\d+), target assignment epoch (\d+)", head)
        assert epochs is not None and epochs[1] == epochs[2] and int(epochs[1]) >= 1, out
        assert out.splitlines()[1].split()[:2] == ["GROUP", "TOPIC"], out
        members = (await described("--members")).splitlines()[1:]
        assert members[0].split() == ["MEMBER", "CLIENT-ID", "MEMBER-EPOCH", "ASSIGNED", "TARGET"]
        row = members[1].split()
        assert row[1:] == ["cli-member", epochs[1], f"{topic}-0,{topic}-1", f"{topic}-0,{topic}-1"]
        listed = await asyncio.to_thread(run_odradek, "groups", "list", "--bootstrap", bootstrap)
        assert [group, "Stable", "consumer", "consumer"] in [
            line.split() for line in listed.stdout.splitlines()
        ], listed.stdout
    finally:
        await m.leave()


async def test_classic_and_consumer_members_refuse_each_other(cluster: LocalCluster) -> None:
    bootstrap, topic = cluster.bootstrap, "n848-mixed"
    async with AsyncAdmin(bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 2, 1)])
    classic = member(bootstrap, "mixed-1", topic, "classic", group_protocol="classic")
    newer = AsyncConsumer(bootstrap, group_id="mixed-1", **{**OPTS, "client_id": "new"})  # type: ignore[arg-type]
    try:
        await wait_for(lambda: classic.parts() == {0, 1}, "the classic member owns both")
        newer.subscribe([topic])
        with pytest.raises(GroupIdNotFoundError) as refused:
            await asyncio.wait_for(newer.poll(timeout_ms=30_000), 60)
        assert "classic group with members" in str(refused.value)
        with pytest.raises(GroupIdNotFoundError):  # and again, not a hang
            await asyncio.wait_for(newer.poll(timeout_ms=100), 60)
    finally:
        await newer.close()
        await classic.leave()

    first = member(bootstrap, "mixed-2", topic, "first")
    later = AsyncConsumer(bootstrap, group_id="mixed-2", group_protocol="classic",
                          auto_offset_reset="earliest", client_id="later")  # fmt: skip
    try:
        await wait_for(lambda: first.parts() == {0, 1}, "the consumer member owns both")
        later.subscribe([topic])
        with pytest.raises(InconsistentGroupProtocolError) as wrong_kind:
            await asyncio.wait_for(later.poll(timeout_ms=30_000), 60)
        assert "is a consumer group (group_protocol=consumer) with members" in str(wrong_kind.value)
        assert first.parts() == {0, 1}
    finally:
        await later.close()
        await first.leave()
