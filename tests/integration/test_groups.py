"""Consumer groups against real brokers: seed 000's experiment and walk-through, commits.

The session's shared three-broker cluster (`cluster3`); each test uses its own topics and
groups. Session timeouts are short (a few seconds) and every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from client import AsyncAdmin, AsyncConsumer, AsyncProducer, NewTopic, TopicPartition
from client.types import ConsumerRecord
from deploy.cluster import LocalCluster
from protocol.errors import IllegalGenerationError, UnknownMemberIdError

pytestmark = pytest.mark.integration

GROUP_OPTS = {
    "session_timeout_ms": 3000,
    "heartbeat_interval_ms": 300,
    "max_poll_interval_ms": 10_000,
    "auto_offset_reset": "earliest",
    "fetch_max_wait_ms": 100,
}


async def wait_for(check: Callable[[], bool], timeout_s: float = 30, what: str = "") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not check():
        assert loop.time() < deadline, f"timed out waiting for {what or check}"
        await asyncio.sleep(0.05)


@dataclass
class Member:
    """A group consumer polling in a background task, keeping what it received."""

    consumer: AsyncConsumer
    records: list[ConsumerRecord] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    commit_each_poll: bool = False

    def start(self) -> Member:
        self.task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        for _ in range(100_000):
            polled = await self.consumer.poll(timeout_ms=100)
            for recs in polled.values():
                self.records.extend(recs)
            if polled and self.commit_each_poll:
                with contextlib.suppress(IllegalGenerationError, UnknownMemberIdError):
                    await self.consumer.commit()

    def parts(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        await self.consumer.close()


def member(bootstrap: str, group: str, topic: str, client_id: str, **opts: object) -> Member:
    consumer = AsyncConsumer(
        bootstrap, group_id=group, client_id=client_id, **{**GROUP_OPTS, **opts}
    )  # type: ignore[arg-type]
    consumer.subscribe([topic])
    return Member(consumer).start()


async def create_topic(bootstrap: str, name: str, partitions: int, rf: int = 1) -> None:
    async with AsyncAdmin(bootstrap) as admin:
        await admin.create_topics([NewTopic(name, partitions, rf)])


async def produce(bootstrap: str, topic: str, items: list[tuple[bytes, int]]) -> None:
    async with AsyncProducer(bootstrap, acks=-1) as producer:
        futures = [
            await producer.send(topic, b"value-" + key, key=key, partition=p) for key, p in items
        ]
        await producer.flush()
        for f in futures:
            await f


async def test_seed000_experiment_broadcast_across_groups_unicast_inside(
    cluster3: LocalCluster,
) -> None:
    """topic1 (3 partitions), keys 1,2,3: group1's one consumer gets all three, group2's
    three consumers get exactly one each."""
    bootstrap = cluster3.bootstrap
    await create_topic(bootstrap, "topic1", 3)
    g1 = member(bootstrap, "group1", "topic1", "g1-c1")
    g2 = [member(bootstrap, "group2", "topic1", f"g2-c{i}") for i in (1, 2, 3)]
    try:
        await wait_for(lambda: g1.parts() == {0, 1, 2}, what="group1 owns all")
        await wait_for(lambda: all(len(m.parts()) == 1 for m in g2), what="group2 one each")
        await produce(bootstrap, "topic1", [(b"1", 0), (b"2", 1), (b"3", 2)])
        await wait_for(lambda: len(g1.records) == 3 and sum(len(m.records) for m in g2) == 3)
        assert sorted(r.key for r in g1.records) == [b"1", b"2", b"3"]
        got = [[r.key for r in m.records] for m in g2]
        assert all(len(keys) == 1 for keys in got), got
        assert sorted(k for keys in got for k in keys) == [b"1", b"2", b"3"]
    finally:
        for m in [g1, *g2]:
            await m.stop()


async def test_seed000_walk_through_join_then_leave(cluster3: LocalCluster) -> None:
    """consumers 1..4 join one by one (3; 2+1; 1+1+1; 1+1+1+0), then 1, 2, 3 leave."""
    bootstrap = cluster3.bootstrap
    await create_topic(bootstrap, "walk", 3)
    members: dict[int, Member] = {}

    def owned() -> dict[int, set[int]]:
        return {i: m.parts() for i, m in members.items()}

    expected_joins = [
        {1: {0, 1, 2}},
        {1: {0, 1}, 2: {2}},
        {1: {0}, 2: {1}, 3: {2}},
        {1: {0}, 2: {1}, 3: {2}, 4: set()},
    ]
    for i, want in enumerate(expected_joins, start=1):
        members[i] = member(bootstrap, "walk-group", "walk", f"consumer{i}",
                            assignment_strategy="contiguous")  # fmt: skip
        await wait_for(lambda want=want: owned() == want, what=f"after consumer{i} joined")
    expected_leaves = [
        (1, {2: {0}, 3: {1}, 4: {2}}),
        (2, {3: {0, 1}, 4: {2}}),
        (3, {4: {0, 1, 2}}),
    ]
    try:
        for gone, want in expected_leaves:
            await members.pop(gone).stop()
            await wait_for(lambda want=want: owned() == want, what=f"after consumer{gone} left")
    finally:
        for m in members.values():
            await m.stop()


async def test_commits_survive_and_a_fenced_member_cannot_commit(cluster3: LocalCluster) -> None:
    bootstrap = cluster3.bootstrap
    await create_topic(bootstrap, "commits", 2)
    await produce(bootstrap, "commits", [(b"%d" % i, i % 2) for i in range(10)])
    a = member(bootstrap, "commit-group", "commits", "a", enable_auto_commit=False)
    try:
        await wait_for(lambda: len(a.records) == 10, what="a read everything")
        await a.consumer.commit()
        assert await a.consumer.committed(TopicPartition("commits", 0)) == 5
        old_generation = a.consumer._group.membership.generation  # type: ignore[union-attr]
        b = member(bootstrap, "commit-group", "commits", "b", enable_auto_commit=False)
        await wait_for(lambda: len(a.parts()) == 1 and len(b.parts()) == 1, what="split")
        membership = a.consumer._group.membership  # type: ignore[union-attr]
        assert membership.generation > old_generation
        membership.generation = old_generation  # pretend a's rejoin never happened
        with pytest.raises(IllegalGenerationError):
            await membership.commit({TopicPartition("commits", 0): 1})
        assert await a.consumer.committed(TopicPartition("commits", 0)) == 5
        await b.stop()
    finally:
        await a.stop()


async def test_cli_groups_list_describe_reset_delete(cluster3: LocalCluster) -> None:
    from tests.fixtures.cluster import run_odradek

    bootstrap = cluster3.bootstrap

    async def cli(*args: str) -> tuple[int, str, str]:
        done = await asyncio.to_thread(run_odradek, *args, "--bootstrap", bootstrap)
        return done.returncode, done.stdout, done.stderr

    await create_topic(bootstrap, "cli-g", 2)
    await produce(bootstrap, "cli-g", [(b"%d" % i, i % 2) for i in range(10)])
    m = member(bootstrap, "cli-group", "cli-g", "cli-owner", enable_auto_commit=False)
    try:
        await wait_for(lambda: len(m.records) == 10, what="read all")
        await m.consumer.commit()
        code, out, _ = await cli("groups", "list")
        assert code == 0 and "cli-group" in out.split()  # an aligned table, docs/cli.md
        code, out, _ = await cli("groups", "describe", "cli-group")
        lines = out.splitlines()
        assert code == 0 and "generation" in lines[0] and "assignor range" in lines[0]
        assert lines[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                                    "LOG-END-OFFSET", "LAG", "OWNER"]  # fmt: skip
        assert sorted(line.split() for line in lines[2:]) == [
            ["cli-group", "cli-g", "0", "5", "5", "0", "cli-owner"],
            ["cli-group", "cli-g", "1", "5", "5", "0", "cli-owner"],
        ]
        code, _, err = await cli("groups", "reset-offsets", "cli-group", "--topic", "cli-g",
                                 "--to-earliest")  # fmt: skip
        assert code == 1 and "has members" in err
    finally:
        await m.stop()
    code, out, _ = await cli("groups", "reset-offsets", "cli-group", "--topic", "cli-g",
                             "--to-offset", "2")  # fmt: skip
    assert code == 0, out
    code, out, _ = await cli("groups", "describe", "cli-group")
    assert "Empty" in out.splitlines()[0]
    assert sorted(line.split()[3:6] for line in out.splitlines()[2:]) == [["2", "5", "3"]] * 2
    code, _, _ = await cli("groups", "delete", "cli-group")
    assert code == 0
    code, _, err = await cli("groups", "describe", "cli-group")
    assert code == 1 and "GROUP_ID_NOT_FOUND" in err


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[int]]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", {tp.partition for tp in revoked}))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", {tp.partition for tp in assigned}))


async def test_no_task_sees_an_assignment_before_the_assigned_callback(
    cluster3: LocalCluster,
) -> None:
    """As in a Kafka client's poll, the new partitions and the assigned callback come together:
    another task reading assignment() never meets a partition the listener was not told of
    (before, the committed offsets were fetched in between)."""
    bootstrap = cluster3.bootstrap
    await create_topic(bootstrap, "told-first", 2)
    recorder = Recorder()
    early: list[set[int]] = []
    consumer = AsyncConsumer(bootstrap, group_id="told-first-g", client_id="t1", **GROUP_OPTS)  # type: ignore[arg-type]
    consumer.subscribe(["told-first"], listener=recorder)

    def told() -> set[int]:
        return {p for kind, ps in recorder.calls if kind == "assigned" for p in ps}

    async def watch() -> None:
        while True:
            seen = {tp.partition for tp in consumer.assignment()}
            if seen - told():
                early.append(seen - told())
            await asyncio.sleep(0)

    watcher = asyncio.ensure_future(watch())
    m = Member(consumer).start()
    try:
        await wait_for(lambda: len(told()) == 2, what="the assigned callback")
    finally:
        watcher.cancel()
        await m.stop()
    assert not early, f"assignment() showed {early[0]} before the callback"


async def test_pattern_listener_and_max_poll_interval(cluster3: LocalCluster) -> None:
    bootstrap = cluster3.bootstrap
    await create_topic(bootstrap, "pat-a", 2)
    recorder = Recorder()
    consumer = AsyncConsumer(bootstrap, group_id="pat-group", client_id="p1", **GROUP_OPTS)  # type: ignore[arg-type]
    consumer.subscribe(pattern=r"pat-.*", listener=recorder)
    p1 = Member(consumer).start()
    try:
        await wait_for(lambda: {tp.topic for tp in consumer.assignment()} == {"pat-a"})
        assert recorder.calls == [("revoked", set()), ("assigned", {0, 1})]
        await create_topic(bootstrap, "pat-b", 1)  # a new topic matching: a rebalance
        await wait_for(lambda: {tp.topic for tp in consumer.assignment()} == {"pat-a", "pat-b"})
        assert recorder.calls[-2:] == [("revoked", {0, 1}), ("assigned", {0, 1})]
        # a member that stops polling for max_poll_interval_ms leaves; its partitions move
        lazy = AsyncConsumer(bootstrap, group_id="pat-group", client_id="p2",
                             **{**GROUP_OPTS, "max_poll_interval_ms": 1500})  # type: ignore[arg-type]  # fmt: skip
        lazy.subscribe(pattern=r"pat-.*")
        await lazy.poll(timeout_ms=0)  # joins (waits for the rebalance), then never polls again
        await wait_for(lambda: len(lazy.assignment()) > 0 and len(consumer.assignment()) < 3)
        await wait_for(lambda: len(consumer.assignment()) == 3, 20, "lazy member left")
        await lazy.close()
    finally:
        await p1.stop()
