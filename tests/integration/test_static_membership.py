"""Static group membership (KIP-345) with real clients in real processes.

Members are tests/integration/kafka_group_member.py processes started with `--instance-id`
(the client's group.instance.id). The group is watched from outside with odradek's GroupAdmin
(DescribeGroups: state, generation, each member's instance id and partitions), every wait a poll
with a deadline. What is checked:
- a static member SIGKILLed and restarted within its session timeout gets its old partitions
  back with no rebalance: the generation and every member's partitions stay the same, no member
  reads a partition it was not given, and only the killed member re-reads (its uncommitted tail)
  (confluent-kafka, kafka-python and aiokafka);
- a second live process with the same instance id takes over and the first is fenced
  (FENCED_INSTANCE_ID: librdkafka reports a fatal error);
- `odradek groups remove-members --instance-id` removes a dead static member at once: the group
  rebalances without waiting for its (long) session timeout;
- after the coordinator's broker is killed the new coordinator knows the static members (the
  group record keeps instance ids), and a restarted member still gets its place back;
- odradek's own consumer with `group_instance_id`: the same restart, and fencing
  (FencedInstanceIdError from poll).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from client.consumer import AsyncConsumer
from client.group.admin import GroupAdmin
from client.types import TopicPartition
from deploy.cluster import LocalCluster
from protocol.api.group import GroupDescription
from protocol.errors import FencedInstanceIdError, OdradekError
from protocol.kafka.versions import DESCRIBE_GROUPS, LEAVE_GROUP
from tests.fixtures.cluster import ClusterFactory, run_odradek
from tests.integration import kafka_wire as wire
from tests.integration.kafka_clients import GroupMember, spawn_member
from tests.integration.test_kafka_groups import CONVERGE_S, Scenario, _create

pytestmark = pytest.mark.integration

SESSION_MS = 20_000  # a restart takes a few seconds: well within it
LONG_SESSION_MS = 120_000  # removal by the admin must not wait for this
INSTANCES = ("i0", "i1", "i2")


def _describe(s: Scenario) -> GroupDescription | None:
    async def ask() -> GroupDescription:
        async with GroupAdmin(s.cluster.bootstrap, request_timeout_ms=5000) as admin:
            return await admin.describe_group(s.group)

    try:
        return asyncio.run(ask())
    except OdradekError:
        return None


Placement = dict[str, tuple[str, list[int]]]  # instance id -> (member id, partitions)


def _placement(desc: GroupDescription) -> Placement:
    return {
        str(m.group_instance_id): (m.member_id, sorted(p for tp in m.assignment
                                                       for p in tp.partitions))
        for m in desc.members
    }  # fmt: skip


def _stable(s: Scenario, instances: set[str]) -> GroupDescription | None:
    """The group, once Stable with exactly `instances` and every partition owned once."""
    desc = _describe(s)
    if desc is None or desc.kafka_state != "Stable":
        return None
    placed = _placement(desc)
    owned = sorted(p for _, parts in placed.values() for p in parts)
    ok = set(placed) == instances and owned == list(range(s.partitions))
    return desc if ok else None


def _wait_stable(s: Scenario, instances: set[str], timeout_s: float = CONVERGE_S) -> Placement:
    got = wire.wait_for(lambda: _stable(s, instances), f"{s.group} Stable with {instances}",
                        timeout_s)  # fmt: skip
    assert isinstance(got, GroupDescription)
    return _placement(got)


def _start(s: Scenario, client: str, instance: str, session_ms: int = SESSION_MS,
           client_id: str | None = None) -> GroupMember:  # fmt: skip
    m = spawn_member(client, s.kafka, s.group, s.topic, client_id or f"{client}-{instance}",
                     s.tmp_path, "range", session_ms, max(session_ms, 30_000),
                     instance_id=instance)  # fmt: skip
    s.members.append(m)
    return m


def _lines(m: GroupMember) -> list[tuple[int, int]]:
    """Every (partition, offset) the member's process(es) wrote, repeats included."""
    if not m.out.exists():
        return []
    out = []
    for line in m.out.read_text(errors="replace").splitlines():
        fields = line.split()
        if len(fields) == 2 and not line.startswith("#"):
            out.append((int(fields[0]), int(fields[1])))
    return out


def _notes(m: GroupMember, prefix: str) -> list[str]:
    if not m.out.exists():
        return []
    return [line for line in m.out.read_text(errors="replace").splitlines()
            if line.startswith(f"# {prefix}")]  # fmt: skip


def _fatal(m: GroupMember) -> list[str]:
    """librdkafka's fatal errors (error_cb's _FATAL, or one flagged fatal) the member noted."""
    return [n for n in _notes(m, "error") if "_FATAL" in n or "fatal=True" in n]


def _kafka_instances(s: Scenario) -> dict[str, str]:
    """instance id -> member id, from Kafka's DescribeGroups v4 at the coordinator."""
    found = wire.ready_coordinator(s.kafka, s.group)
    resp = wire.call(found[1], DESCRIBE_GROUPS, 4, groups=(s.group,),
                     include_authorized_operations=False)  # fmt: skip
    (g,) = resp.groups
    return {str(m.group_instance_id): m.member_id for m in g.members}


def _leave_by_instance(s: Scenario, instances: list[str]) -> dict[str, int]:
    """LeaveGroup v5 at the coordinator's Kafka port, members named by instance id only."""
    found = wire.ready_coordinator(s.kafka, s.group)
    members = tuple(wire.nested(LEAVE_GROUP, 5, "MemberIdentity", member_id="",
                                group_instance_id=i, reason="test") for i in instances)  # fmt: skip
    with wire.KafkaConn(found[1]) as conn:
        resp = conn.call(LEAVE_GROUP, 5, group_id=s.group, members=members)
    assert resp.error_code.value == wire.NONE
    return {str(m.group_instance_id): m.error_code.value for m in resp.members}


def _generation(s: Scenario) -> int:
    desc = wire.wait_for(lambda: _describe(s), "the group's description", CONVERGE_S)
    return int(desc.generation_id)


def _wait_back(s: Scenario, instance: str, old_id: str) -> None:
    """The restarted `instance` is in the Stable group under a new member id, well within its
    session timeout (a dynamic member would wait for the old one's expiry, then rebalance)."""

    def back() -> bool:
        desc = _stable(s, set(INSTANCES))
        return desc is not None and _placement(desc)[instance][0] != old_id

    wire.wait_for(back, f"{instance} back with a new member id", SESSION_MS / 1000)


def _restart_each_without_rebalance(s: Scenario, client: str) -> tuple[int, Placement]:
    """Three static members; each in turn is SIGKILLed and restarted: no rebalance."""
    members = {i: _start(s, client, i) for i in INSTANCES}
    placed = _wait_stable(s, set(INSTANCES))
    s.wait_all_committed()
    generation = _generation(s)
    revoked = {i: len(_notes(m, "revoked")) for i, m in members.items()}  # the first joins'
    settled = {i: len(_lines(m)) for i, m in members.items()}  # what they read while joining
    at_kill: dict[str, dict[int, int]] = {}  # the group's committed offsets at each kill
    for instance in INSTANCES:
        old_id = placed[instance][0]
        at_kill[instance] = s.committed()
        members[instance].kill()  # no LeaveGroup, no last commit
        s.produce(10)
        members[instance] = _start(s, client, instance)  # the same out file: appended
        _wait_back(s, instance, old_id)
        s.wait_all_committed()  # the restarted member reads its partitions again
        now = _placement(wire.wait_for(lambda: _stable(s, set(INSTANCES)), "Stable", 30))
        assert {i: p for i, (_, p) in now.items()} == {i: p for i, (_, p) in placed.items()}
        assert _generation(s) == generation, "a static member's restart made a rebalance"
        placed = now
    for instance, m in members.items():
        mine = set(placed[instance][1])
        read = _lines(m)[settled[instance] :]
        assert {p for p, _ in read} <= mine, (instance, "read another member's partition")
        assert read, f"{instance} read nothing"
        # read twice: only the killed member's uncommitted tail (at or past the committed offset)
        twice = [(p, o) for (p, o), n in Counter(read).items() if n > 1]
        assert all(o >= at_kill[instance].get(p, 0) for p, o in twice), (instance, twice)
        # librdkafka notes its own revocations: none since the group first settled
        assert len(_notes(m, "revoked")) == revoked[instance], _notes(m, "revoked")
    return generation, placed


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "aiokafka"])
def test_static_members_restart_without_rebalance(
    cluster3: LocalCluster, tmp_path: Path, client: str
) -> None:
    s = Scenario.new(cluster3, tmp_path, f"static-{client}")
    s.produce(20)
    try:
        _restart_each_without_rebalance(s, client)
    finally:
        s.stop_all()
    s.check_all_processed()


def test_duplicate_instance_is_fenced_and_admin_removal_rebalances_at_once(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    s = Scenario.new(cluster3, tmp_path, "static-fence")
    s.produce(20)
    try:
        members = {i: _start(s, "confluent-kafka", i, LONG_SESSION_MS) for i in INSTANCES}
        placed = _wait_stable(s, set(INSTANCES))
        generation = _generation(s)
        assert _kafka_instances(s) == {i: member for i, (member, _) in placed.items()}
        described = run_odradek("groups", "describe", s.group, "--members",
                                "--bootstrap", s.cluster.bootstrap)  # fmt: skip
        assert described.returncode == 0, described.stderr
        rows = [line.split() for line in described.stdout.splitlines()[2:]]
        assert sorted((r[0], r[1]) for r in rows) == sorted(
            (member, i) for i, (member, _) in placed.items()
        ), described.stdout

        # a second process with i0's instance id: it takes i0's place, the first is fenced
        dup = _start(s, "confluent-kafka", "i0", LONG_SESSION_MS, client_id="dup-i0")
        fatal = wire.wait_for(lambda: _fatal(members["i0"]),
                              "the first i0 to be fenced (a fatal error)", CONVERGE_S)  # fmt: skip
        assert any("fenced by other consumer" in n for n in fatal), fatal
        now = _wait_stable(s, set(INSTANCES))
        assert now["i0"][0] != placed["i0"][0] and now["i0"][1] == placed["i0"][1]
        assert _generation(s) == generation  # the takeover did not rebalance
        members["i0"].stop()
        members["i0"] = dup

        # i2 dies: a static member is waited for until its session times out (2 minutes)...
        members["i2"].kill()
        done = run_odradek("groups", "remove-members", s.group, "--instance-id", "i2",
                           "--bootstrap", s.cluster.bootstrap)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "removed" in done.stdout and "i2" in done.stdout, done.stdout
        # ...unless an admin removes it: the rest rebalance at once
        after = _wait_stable(s, {"i0", "i1"}, LONG_SESSION_MS / 4000)
        assert sorted(p for _, ps in after.values() for p in ps) == list(range(s.partitions))
        assert _generation(s) > generation
        missing = run_odradek("groups", "remove-members", s.group, "--instance-id", "i2",
                              "--bootstrap", s.cluster.bootstrap)  # fmt: skip
        assert missing.returncode == 1 and "UNKNOWN_MEMBER_ID" in missing.stdout, missing.stdout

        # Kafka's admin (removeMembersFromConsumerGroup) sends LeaveGroup v3+ by instance id:
        # one result per member, here removed and unknown
        assert _leave_by_instance(s, ["i1", "nobody"]) == {
            "i1": wire.NONE,
            "nobody": wire.UNKNOWN_MEMBER_ID,
        }
    finally:
        s.stop_all()


@pytest.mark.slow  # kills or pauses brokers
def test_static_members_survive_a_coordinator_failover(
    cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    cluster = cluster_factory(3)
    s = Scenario.new(cluster, tmp_path, "static-failover")
    s.produce(20)
    try:
        members = {i: _start(s, "confluent-kafka", i) for i in INSTANCES}
        placed = _wait_stable(s, set(INSTANCES))
        s.wait_all_committed()
        generation = _generation(s)
        settled = {i: len(_lines(m)) for i, m in members.items()}  # what they read while joining
        first = int(wire.wait_for(lambda: wire.find_coordinator(s.kafka, s.group),
                                  "a coordinator", 30)[0])  # fmt: skip
        cluster.kill(first)
        wire.wait_for(
            lambda: (f := wire.find_coordinator(s.kafka, s.group)) is not None and f[0] != first,
            "the coordinator to move", CONVERGE_S,
        )  # fmt: skip
        # the new coordinator loaded the group record: same members, instance ids, generation
        moved = _wait_stable(s, set(INSTANCES))
        assert moved == placed and _generation(s) == generation
        old_id = placed["i1"][0]
        members["i1"].kill()
        s.produce(10)
        members["i1"] = _start(s, "confluent-kafka", "i1")
        _wait_back(s, "i1", old_id)
        s.wait_all_committed()
        back = _wait_stable(s, set(INSTANCES))
        assert {i: p for i, (_, p) in back.items()} == {i: p for i, (_, p) in placed.items()}
        assert _generation(s) == generation
        # read since the group settled, one count per instance: the restarted i1 appends to its
        # first life's file, and that life may have read every partition before the others joined
        counts = Counter(pt for i, m in members.items() for pt in _lines(m)[settled[i] :])
        twice = {p for (p, _), n in counts.items() if n > 1}
        assert twice <= set(placed["i1"][1]), twice  # only the killed member's tail again
    finally:
        s.stop_all()
    s.check_all_processed()


# ----- odradek's own consumer ------------------------------------------------------------------


class NativeMember:
    """An AsyncConsumer with a group_instance_id, polled by its own task (a JoinGroup waits for
    the whole rebalance, so members must poll side by side); a fencing error is kept."""

    def __init__(self, bootstrap: str, group: str, topic: str, instance: str) -> None:
        self.consumer = AsyncConsumer(
            bootstrap, group_id=group, group_instance_id=instance, client_id=instance,
            session_timeout_ms=SESSION_MS, heartbeat_interval_ms=300,
            auto_offset_reset="earliest",
        )  # fmt: skip
        self.consumer.subscribe([topic])
        self.fenced: FencedInstanceIdError | None = None
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            try:
                await self.consumer.poll(timeout_ms=100)
            except FencedInstanceIdError as exc:
                self.fenced = exc
                return

    def assignment(self) -> set[TopicPartition]:
        return self.consumer.assignment()

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, OdradekError):
            await self._task
        await self.consumer.close()


async def _until(check: Callable[[], Awaitable[object]], what: str) -> object:
    deadline = asyncio.get_running_loop().time() + CONVERGE_S
    while True:
        got = await check()
        if got:
            return got
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


async def test_native_static_member_restarts_without_rebalance_and_a_duplicate_is_fenced(
    cluster3: LocalCluster,
) -> None:
    """Two odradek consumers with group_instance_id: one closes (no LeaveGroup) and a new one
    with its instance id gets its partitions back in the same generation, while the other never
    saw a rebalance; then a third takes the other's instance id and fences it."""
    bootstrap = cluster3.bootstrap
    topic, group = (f"static-native-{uuid.uuid4().hex[:8]}" for _ in range(2))
    await asyncio.to_thread(_create, bootstrap, topic, 4, 3)
    a = NativeMember(bootstrap, group, topic, "na")
    b = NativeMember(bootstrap, group, topic, "nb")
    members = [a, b]
    async with GroupAdmin(bootstrap, request_timeout_ms=5000) as admin:

        async def view() -> GroupDescription | None:
            try:
                return await admin.describe_group(group)
            except OdradekError:
                return None

        try:

            async def settled() -> GroupDescription | None:
                v = await view()
                ok = v is not None and v.state == "Ready" and len(v.members) == 2
                return v if ok and a.assignment() and b.assignment() else None

            first = await _until(settled, "two static native members")
            assert isinstance(first, GroupDescription)
            ids = {m.group_instance_id: m.member_id for m in first.members}
            assert set(ids) == {"na", "nb"}
            a_parts, b_parts = a.assignment(), b.assignment()
            await b.close()  # static: no LeaveGroup, nb stays in the group
            b2 = NativeMember(bootstrap, group, topic, "nb")
            members.append(b2)

            async def back() -> GroupDescription | None:
                v = await view()
                now = {m.group_instance_id: m.member_id for m in v.members} if v else {}
                ok = b2.assignment() and now.get("nb") not in (None, ids["nb"])
                return v if ok else None

            again = await _until(back, "nb back under a new member id")
            assert isinstance(again, GroupDescription)
            assert again.generation_id == first.generation_id, "the restart made a rebalance"
            assert b2.assignment() == b_parts and a.assignment() == a_parts

            c = NativeMember(bootstrap, group, topic, "na")  # takes na's place: a is fenced
            members.append(c)

            async def fenced() -> bool:
                return a.fenced is not None

            await _until(fenced, "the first na to be fenced")
            assert "group_instance_id" in str(a.fenced)
            last = await view()
            assert last is not None and last.generation_id == first.generation_id
            assert {m.group_instance_id for m in last.members} == {"na", "nb"}
        finally:
            for m in members:
                await m.close()
