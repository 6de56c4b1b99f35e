"""Consumer groups under faults: a paused consumer, coordinator failover, at-least-once.

Consumers here are either in-process (tests/integration/test_groups.py's `Member`) or
`odradek consume --group` subprocesses, which can be paused (SIGSTOP) and killed (SIGKILL)
like real ones. Each test bounds every wait; processes are stopped by the PIDs started here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest

from client import TopicPartition
from client.group.admin import GroupAdmin
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import ClusterFactory, odradek_command
from tests.integration.test_groups import create_topic, member, produce, wait_for

pytestmark = pytest.mark.integration


def spawn_consumer(bootstrap: str, topic: str, group: str, out: Path,
                   session_ms: int = 2000) -> subprocess.Popen[bytes]:  # fmt: skip
    args = ["consume", topic, "--group", group, "--bootstrap", bootstrap, "--from-beginning",
            "--session-timeout-ms", str(session_ms), "--print-key"]  # fmt: skip
    with out.open("ab") as sink:
        return subprocess.Popen([*odradek_command(), *args], stdout=sink,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)  # fmt: skip


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGCONT)
            os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


async def coordinator_of(bootstrap: str, group: str) -> int:
    async with GroupAdmin(bootstrap) as admin:
        conn = await admin._coordinator(group)
        await conn.close()
        for _ in range(50):
            from protocol.api.group import FindCoordinatorRequest

            resp = await admin.cluster.send_to_any(FindCoordinatorRequest(group))
            if resp.error_code == 0:
                return int(resp.node_id)
            await asyncio.sleep(0.1)
    raise AssertionError("no coordinator")


async def test_paused_consumer_loses_its_partitions_and_rejoins(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    bootstrap = cluster3.bootstrap
    await create_topic(bootstrap, "paused", 2)
    here = member(bootstrap, "paused-group", "paused", "here")
    proc = spawn_consumer(bootstrap, "paused", "paused-group", tmp_path / "out.txt")
    try:
        await wait_for(lambda: len(here.parts()) == 1, 40, "the subprocess took a partition")
        os.kill(proc.pid, signal.SIGSTOP)  # past its 2 s session timeout
        await wait_for(lambda: here.parts() == {0, 1}, 20, "its partitions moved here")
        async with GroupAdmin(bootstrap) as admin:
            assert len((await admin.describe_group("paused-group")).members) == 1
        os.kill(proc.pid, signal.SIGCONT)  # its heartbeat is refused: it rejoins
        await wait_for(lambda: len(here.parts()) == 1, 30, "it rejoined")
        async with GroupAdmin(bootstrap) as admin:
            assert len((await admin.describe_group("paused-group")).members) == 2
    finally:
        stop(proc)
        await here.stop()


@pytest.mark.slow  # kills or pauses brokers
def test_coordinator_failover_at_rest_and_during_a_rebalance(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(3)  # LocalCluster runs its own event loop: outside ours
    asyncio.run(_failover(cluster))


async def _failover(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap
    await create_topic(bootstrap, "fo", 3, rf=3)
    await produce(bootstrap, "fo", [(b"%d" % i, i % 3) for i in range(30)])
    a = member(bootstrap, "fo-group", "fo", "a", enable_auto_commit=False)
    b = member(bootstrap, "fo-group", "fo", "b", enable_auto_commit=False)
    a.commit_each_poll = b.commit_each_poll = True
    tps = [TopicPartition("fo", p) for p in range(3)]
    try:
        await wait_for(lambda: len(a.records) + len(b.records) >= 30, 40, "all read")
        await wait_for(lambda: len(a.parts()) + len(b.parts()) == 3 and
                       bool(a.parts()) and bool(b.parts()), 20)  # fmt: skip
        committed = {tp: await a.consumer.committed(tp) for tp in tps}
        assert committed == {tp: 10 for tp in tps}
        # at rest: kill the coordinator's broker
        first = await coordinator_of(bootstrap, "fo-group")
        await asyncio.to_thread(cluster.kill, first)
        await produce(bootstrap, "fo", [(b"x%d" % i, i % 3) for i in range(30)])
        await wait_for(lambda: len(a.records) + len(b.records) >= 60, 60, "read after failover")
        after = {tp: await a.consumer.committed(tp) for tp in tps}
        assert all(after[tp] is not None and after[tp] >= committed[tp] for tp in tps), after
        # during a rebalance: a third member joins and the (new) coordinator dies at once
        await asyncio.to_thread(cluster.start, first)
        c = member(bootstrap, "fo-group", "fo", "c", enable_auto_commit=False)
        c.commit_each_poll = True
        await asyncio.sleep(0.3)
        await asyncio.to_thread(cluster.kill, await coordinator_of(bootstrap, "fo-group"))
        await wait_for(lambda: all(len(m.parts()) == 1 for m in (a, b, c)), 60, "re-formed")
        final = {tp: await c.consumer.committed(tp) for tp in tps}
        assert all(final[tp] is not None and final[tp] >= after[tp] for tp in tps), final
        await c.stop()
    finally:
        await a.stop()
        await b.stop()


@pytest.mark.slow  # kills or pauses brokers
def test_at_least_once_while_consumers_and_a_broker_die(
    cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    """Consumers commit after processing (printing); one is SIGKILLed and replaced, the
    coordinator's broker is SIGKILLed. Every record is processed at least once, and no
    committed offset ever goes backwards (sampled all along)."""
    cluster = cluster_factory(3)
    asyncio.run(_at_least_once(cluster, tmp_path))


def _values(paths: list[Path]) -> set[str]:
    out = set()
    for path in paths:
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                _key, _, value = line.partition("\t")
                out.add(value)
    return out


async def _sample_committed(bootstrap: str, group: str, seen: dict[int, list[int]],
                            stop: asyncio.Event) -> None:  # fmt: skip
    async with GroupAdmin(bootstrap, request_timeout_ms=3000) as admin:
        while not stop.is_set():
            with contextlib.suppress(Exception):  # a coordinator moving is expected here
                for (_, p), offset in (await admin.committed(group)).items():
                    seen.setdefault(p, []).append(offset)
            await asyncio.sleep(0.2)


async def _at_least_once(cluster: LocalCluster, tmp_path: Path) -> None:
    bootstrap, group = cluster.bootstrap, "alo-group"
    await create_topic(bootstrap, "alo", 3, rf=3)
    first = [(b"k%d" % i, i % 3) for i in range(150)]
    await produce(bootstrap, "alo", first)
    outs = [tmp_path / f"out{i}.txt" for i in range(4)]
    procs = [spawn_consumer(bootstrap, "alo", group, outs[i]) for i in range(3)]
    seen: dict[int, list[int]] = {}
    stop_sampling = asyncio.Event()
    sampler = asyncio.ensure_future(_sample_committed(bootstrap, group, seen, stop_sampling))
    try:
        await wait_for(lambda: len(_values(outs)) >= 20, 60, "consumption started")
        stop(procs[0])  # SIGKILL: no leave, no final commit
        procs.append(spawn_consumer(bootstrap, "alo", group, outs[3]))
        await asyncio.to_thread(cluster.kill, await coordinator_of(bootstrap, group))
        second = [(b"k%d" % i, i % 3) for i in range(150, 300)]
        await produce(bootstrap, "alo", second)
        want = {f"value-k{i}" for i in range(300)}
        await wait_for(lambda: want <= _values(outs), 90, "every record processed")
        await asyncio.sleep(1.5)  # a few more samples after the last commits
    finally:
        stop_sampling.set()
        await sampler
        for proc in procs:
            stop(proc)
    assert seen, "no committed offsets were sampled"
    for partition, offsets in seen.items():
        assert offsets == sorted(offsets), f"partition {partition} went back: {offsets}"
