"""Fast death detection with real broker processes and ZooKeeper
(coordinator/controller/fast_death.py).

The clusters run with a 30 s ZooKeeper session timeout, so anything that happens while a killed
broker's /brokers/ids registration still exists (same czxid) happened before the session could
have expired: the assertions are on that ordering, not on wall-clock figures.

- A SIGKILLed leader (not the controller): its partitions get new leaders while its old
  registration node still exists; restarted at once, it replaces that stale registration (a new
  czxid, long before the old session expires) and is taken back into every ISR.
- A SIGSTOPped leader: its ports do not refuse (the kernel still completes handshakes), so the
  controller's prober, run against its registered endpoints, proves nothing, and it stays
  leader with the same registration; ZooKeeper's session expiry remains its judge.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from client import Admin, NewTopic, PartitionDescription
from coordinator.cluster import zk_paths as paths
from coordinator.cluster.zk_paths import BrokerRegistration
from coordinator.controller.context import LiveBroker
from coordinator.controller.fast_death import DeathProber, Outcome, endpoints, probe_endpoint
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import ClusterFactory, alive_bootstrap, wait_until

pytestmark = pytest.mark.integration

SESSION_MS = 30_000
WAIT_S = 20.0  # well inside the session: every wait here ends before it could expire
TOPIC = "fast"


@pytest.fixture
def zk_of() -> Iterator[list[KazooClient]]:
    clients: list[KazooClient] = []
    yield clients
    for client in clients:
        client.stop()
        client.close()


def _zk(cluster: LocalCluster, clients: list[KazooClient]) -> KazooClient:
    client = KazooClient(hosts=cluster.zookeeper_connect)
    client.start(timeout=15)
    clients.append(client)
    return client


def _partitions(cluster: LocalCluster) -> list[PartitionDescription]:
    try:
        with Admin(alive_bootstrap(cluster), request_timeout_ms=2000) as admin:
            (desc,) = admin.describe_topics([TOPIC])
    except Exception:  # a broker died under the admin: ask again
        return []
    return sorted(desc.partitions, key=lambda p: p.partition) if not desc.error_code else []


def _steady(cluster: LocalCluster) -> list[PartitionDescription]:
    def full() -> list[PartitionDescription]:
        parts = _partitions(cluster)
        ok = len(parts) == 3 and all(p.leader >= 0 and len(p.isr) == 3 for p in parts)
        return parts if ok else []

    return wait_until(full, "every partition led with 3 replicas in its ISR", WAIT_S)


def _start(factory: ClusterFactory) -> tuple[LocalCluster, list[PartitionDescription], int]:
    """A cluster, the topic (one partition led by each broker), and a leader that is not the
    controller."""
    cluster = factory(3, session_timeout_ms=SESSION_MS)
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 3, 3)])
    parts = _steady(cluster)
    controller = cluster.controller_id()
    victim = next(p.leader for p in parts if p.leader != controller)
    return cluster, parts, victim


@pytest.mark.slow  # kills or pauses brokers
def test_killed_leader_replaced_while_registered_then_back(
    cluster_factory: ClusterFactory, zk_of: list[KazooClient]
) -> None:
    cluster, parts, victim = _start(cluster_factory)
    zk = _zk(cluster, zk_of)
    node = paths.broker_path(victim)
    old = zk.exists(node)
    assert old is not None
    led = [p.partition for p in parts if p.leader == victim]

    cluster.kill(victim, "KILL")

    def moved() -> list[PartitionDescription]:
        now = _partitions(cluster)
        ok = len(now) == 3 and all(now[i].leader not in (victim, -1) for i in led)
        return now if ok else []

    after = wait_until(moved, f"new leaders for broker {victim}'s partitions", WAIT_S)
    still = zk.exists(node)
    assert still is not None and still.czxid == old.czxid, "elected only after the session ended"
    assert all(victim not in after[i].isr for i in led)

    cluster.start(victim)  # its old session is still alive: the registration is replaced
    back = zk.exists(node)
    assert back is not None and back.czxid != old.czxid
    wait_until(
        lambda: all(victim in p.isr for p in _partitions(cluster)) and len(_partitions(cluster)),
        f"broker {victim} back in every ISR",
        WAIT_S,
    )


@pytest.mark.slow  # kills or pauses brokers
def test_paused_leader_is_not_proven_dead(
    cluster_factory: ClusterFactory, zk_of: list[KazooClient]
) -> None:
    cluster, parts, victim = _start(cluster_factory)
    zk = _zk(cluster, zk_of)
    data, stat = zk.get(paths.broker_path(victim))
    broker = LiveBroker(victim, BrokerRegistration.decode(data), stat.czxid)
    cluster.kill(victim, "STOP")
    try:
        dead: list[tuple[int, int]] = []

        async def probe() -> tuple[list[Outcome], int]:
            prober = DeathProber({victim: broker}.get, lambda b, z: dead.append((b, z)))
            prober.suspect(victim)
            await prober.wait_idle(10.0)
            outcomes = [await probe_endpoint(h, p) for h, p in endpoints(broker)]
            return outcomes, prober.probes

        outcomes, probes = asyncio.run(probe())
        assert probes == 1 and dead == []
        assert len(outcomes) == 2 and Outcome.REFUSED not in outcomes
        led = [p.partition for p in parts if p.leader == victim]
        # the admin asks a random known broker, the paused one too: it times out there and
        # asks the next (a read)
        described = wait_until(lambda: _partitions(cluster), "an answer", WAIT_S / 2)
        assert all(described[i].leader == victim for i in led)
        now = zk.exists(paths.broker_path(victim))  # and all of that inside the old session
        assert now is not None and now.czxid == stat.czxid
    finally:
        os.kill(cluster.broker(victim).pid, signal.SIGCONT)


@pytest.mark.slow  # kills or pauses brokers
def test_killed_controller_replaced_while_registered(
    cluster_factory: ClusterFactory, zk_of: list[KazooClient]
) -> None:
    """The controller's own death: the other brokers see its ports refuse and delete its
    /controller; the new controller then finds the dead broker's registration still there but
    its ports refusing, and moves its leaderships, all inside the old session."""
    cluster = cluster_factory(3, session_timeout_ms=SESSION_MS)
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 3, 3)])
    parts = _steady(cluster)
    zk = _zk(cluster, zk_of)
    controller = cluster.controller_id()
    assert controller is not None
    node = paths.broker_path(controller)
    old = zk.exists(node)
    old_ctrl = zk.exists(paths.CONTROLLER)
    assert old is not None and old_ctrl is not None
    led = [p.partition for p in parts if p.leader == controller]
    assert led  # one partition per broker

    cluster.kill(controller, "KILL")

    def moved() -> list[PartitionDescription]:
        now = _partitions(cluster)
        ok = len(now) == 3 and all(now[i].leader not in (controller, -1) for i in led)
        return now if ok else []

    wait_until(moved, "new leaders for the controller's partitions", WAIT_S)
    new_ctrl = zk.exists(paths.CONTROLLER)
    assert new_ctrl is not None and new_ctrl.czxid != old_ctrl.czxid
    still = zk.exists(node)
    assert still is not None and still.czxid == old.czxid, "elected only after the session ended"
