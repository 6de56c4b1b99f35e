"""Group administration follows a moving coordinator, and the client leaves no connection
unowned when brokers die and connections are reopened.

- `GroupAdmin` (and `odradek groups describe`, which uses it) asks FindCoordinator again while
  the broker it names refuses connections or answers that it is not (yet) the coordinator, so
  describing a group right after its coordinator's broker is killed succeeds once the group
  has moved (a ZooKeeper session timeout later), within a few seconds.
- A consumer's heartbeat task and its commits both look the coordinator up after it dies: they
  must end with one connection, not one each (the other would be left open, unclosed).
- A connection whose opener was cancelled, or which opens while the client closes, is still
  closed (an unclosed transport is a ResourceWarning, an error under pytest here).
"""

from __future__ import annotations

import asyncio
import gc
import time

import pytest

from client.cluster import Cluster
from client.group.admin import GroupAdmin
from client.group.membership import GroupMembership, GroupSettings
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import TEST_SESSION_TIMEOUT_MS, ClusterFactory, run_odradek
from tests.integration.test_groups import create_topic, member, produce, wait_for
from transport.connection import BrokerConnection

pytestmark = pytest.mark.integration

GROUP = "moving-group"
FOLLOW_BOUND_S = TEST_SESSION_TIMEOUT_MS / 1000 + 10  # the move itself, then a few seconds


@pytest.mark.slow  # kills or pauses brokers
def test_groups_describe_follows_a_killed_coordinator(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(3)  # LocalCluster runs its own event loop: outside ours
    asyncio.run(_commit_offsets(cluster.bootstrap))

    first = asyncio.run(_find_coordinator(cluster.bootstrap))
    cluster.kill(first)
    started = time.monotonic()
    desc, rows = asyncio.run(_lag(cluster.bootstrap))  # the full list, the dead broker too
    took_s = time.monotonic() - started
    assert took_s < FOLLOW_BOUND_S, f"describe took {took_s:.1f} s"
    assert desc.state == "Empty"
    assert [(r.partition, r.current_offset) for r in rows] == [(0, 10), (1, 10), (2, 10)]

    cluster.start(first)
    second = asyncio.run(_find_coordinator(cluster.bootstrap))
    cluster.kill(second)
    started = time.monotonic()
    done = run_odradek("groups", "describe", GROUP, "--bootstrap", cluster.bootstrap)
    took_s = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert took_s < FOLLOW_BOUND_S, f"odradek groups describe took {took_s:.1f} s"
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"group {GROUP}: type classic, state Empty"), done.stdout
    assert [line.split()[1:5] for line in lines[2:]] == [
        ["moving", str(p), "10", "10"] for p in range(3)
    ], done.stdout


async def _commit_offsets(bootstrap: str) -> None:
    await create_topic(bootstrap, "moving", 3, rf=3)
    await produce(bootstrap, "moving", [(b"%d" % i, i % 3) for i in range(30)])
    reader = member(bootstrap, GROUP, "moving", "reader", enable_auto_commit=False)
    reader.commit_each_poll = True
    try:
        await wait_for(lambda: len(reader.records) >= 30, 40, "every record read")
        async with GroupAdmin(bootstrap) as admin:
            want = {("moving", p): 10 for p in range(3)}

            async def committed() -> bool:
                return await admin.committed(GROUP) == want

            deadline = asyncio.get_running_loop().time() + 20
            while not await committed():
                assert asyncio.get_running_loop().time() < deadline, "offsets not committed"
                await asyncio.sleep(0.1)
    finally:
        await reader.stop()  # leaves: the group is Empty, its offsets stay


async def _find_coordinator(bootstrap: str) -> int:
    async with GroupAdmin(bootstrap) as admin:
        return await admin.find_coordinator(GROUP)


async def _lag(bootstrap: str) -> tuple[object, list[object]]:
    async with GroupAdmin(bootstrap) as admin:
        desc, rows = await admin.lag(GROUP)
    return desc, list(rows)


# ----- connections nobody owns -----------------------------------------------------------------


def _open_connections(since: set[int]) -> list[BrokerConnection]:
    gc.collect()
    return [
        o for o in gc.get_objects()
        if isinstance(o, BrokerConnection) and id(o) not in since and not o.closed
    ]  # fmt: skip


def _existing() -> set[int]:
    return {id(o) for o in gc.get_objects() if isinstance(o, BrokerConnection)}


async def test_concurrent_coordinator_lookups_share_one_connection(cluster3: LocalCluster) -> None:
    cluster = Cluster(cluster3.bootstrap)
    await cluster.request_update()
    membership = GroupMembership(cluster, GroupSettings("lookups"))
    before = _existing()
    try:
        # the heartbeat task and a commit, both after the coordinator connection dropped
        a, b = await asyncio.gather(membership._coordinator(), membership._coordinator())
        assert a is b
    finally:
        await membership.close(leave=False)
        await cluster.close()
    assert _open_connections(before) == []


async def test_a_connection_opened_for_a_cancelled_caller_is_closed(
    cluster3: LocalCluster,
) -> None:
    cluster = Cluster(cluster3.bootstrap)
    meta = await cluster.request_update()
    node = max(meta.brokers)
    before = _existing()
    caller = asyncio.ensure_future(cluster.connection(node))
    await asyncio.sleep(0)  # the open is under way
    caller.cancel()
    await asyncio.sleep(0.5)  # it completes for nobody in particular
    closing = asyncio.ensure_future(cluster.connection(min(meta.brokers)))
    await asyncio.sleep(0)
    await cluster.close()  # with an open under way
    await asyncio.gather(closing, return_exceptions=True)
    await asyncio.sleep(0.2)
    assert _open_connections(before) == []
