"""The controller's requests to a broker (broker/operations/leader_and_isr.py, stop_replica.py,
update_metadata.py) and a broker's ControlledShutdown to the controller, tested once against
the operations: on an in-process broker (tests/unit/broker/harness.py, which plays the
controller), ControlledShutdown's controller call on a stand-in (the controller side is
coordinator/controller/admin.py's, tested with a real cluster in
tests/integration/test_controller.py). The native codecs are tested apart
(test_controller_codecs.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from broker.context import ControllerEpoch
from broker.operations import controlled_shutdown, leader_and_isr, stop_replica, update_metadata
from broker.operations.from_controller import PartitionResult
from broker.security.authorizer import AclCache, Authorizer
from broker.session import Session
from protocol.acl import AclOperation, ResourceType
from protocol.api.metadata import BrokerInfo
from protocol.errors import (
    ClusterAuthorizationFailedError,
    NotControllerError,
    NotLeaderForPartitionError,
    RequestTimedOutError,
    StaleControllerEpochError,
)
from protocol.principal import KafkaPrincipal
from tests.unit.broker.harness import BROKER_ID, running_broker
from tests.unit.broker.helpers import batch, produce
from tests.unit.broker.test_acl_rules import grant

SESSION = Session(principal=KafkaPrincipal.user("alice"), peer_host="127.0.0.1", peer_port=5555)
LIVE = (BrokerInfo(BROKER_ID, "127.0.0.1", 1),)
STALE = StaleControllerEpochError.code


async def _no_roles(*_: Any) -> list[tuple[str, int, int]]:
    return []


async def _no_config(_: str) -> dict[str, str]:
    return {}


# For test_table.py: a request model per API, and what its operation needs on the context.
SAMPLES: dict[str, Any] = {
    "LeaderAndIsr": leader_and_isr.LeaderAndIsr(0, 1, (), LIVE),
    "StopReplica": stop_replica.StopReplica(0, 1, False, (("t", 0),)),
    "UpdateMetadata": update_metadata.UpdateMetadata(0, 1, (), LIVE, ()),
    "ControlledShutdown": controlled_shutdown.ControlledShutdown(2),
}
CONTEXTS: dict[str, Any] = {
    "LeaderAndIsr": {
        "controller_epoch": ControllerEpoch(),
        "replicas": SimpleNamespace(roles=SimpleNamespace(apply_leader_and_isr=_no_roles)),
        "topics": SimpleNamespace(read_topic_config=_no_config),
    },
    "StopReplica": {
        "controller_epoch": ControllerEpoch(),
        "replicas": SimpleNamespace(roles=SimpleNamespace(stop_replica=lambda *_: 0)),
    },
    "UpdateMetadata": {
        "controller_epoch": ControllerEpoch(),
        "metadata": SimpleNamespace(apply=lambda _: None),
    },
}


async def test_a_stale_controller_epoch_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    """Moved from test_admin.py (the native door's)."""
    async with running_broker(tmp_path) as b:
        b.controller_epoch = 5
        await b.lead("t")
        follower = b.state("t", 0, leader=2, replicas=[1, 2])
        old = 4
        lai = await leader_and_isr.run(
            b.ctx, SESSION, leader_and_isr.LeaderAndIsr(0, old, (follower,), LIVE)
        )
        assert lai == leader_and_isr.LeaderAndIsrResult(STALE)
        um = update_metadata.UpdateMetadata(0, old, (), LIVE, ("t",))
        assert update_metadata.run(b.ctx, SESSION, um).error_code == STALE
        sr = stop_replica.StopReplica(0, old, True, (("t", 0),))
        assert stop_replica.run(b.ctx, SESSION, sr) == stop_replica.StopReplicaResult(STALE)
        # still the leader, still in the metadata, the log still there
        conn = await b.connect()
        resp = await conn.send(produce("t", 0, batch(1)))
        assert resp.topics[0].partitions[0].error_code == 0
        assert b.ctx.metadata.describe(["t"])[0].partitions[0].leader == BROKER_ID
        assert b.log_manager.get("t", 0) is not None
        # a newer epoch is obeyed: become follower, produce is refused
        b.controller_epoch = 6
        b.leader_epochs[("t", 0)] = 1
        newer = b.state("t", 0, leader=2, replicas=[1, 2])
        lai = await leader_and_isr.run(
            b.ctx, SESSION, leader_and_isr.LeaderAndIsr(0, 6, (newer,), LIVE)
        )
        assert lai == leader_and_isr.LeaderAndIsrResult(0, (PartitionResult("t", 0, 0),))
        resp = await conn.send(produce("t", 0, batch(1)))
        assert resp.topics[0].partitions[0].error_code == NotLeaderForPartitionError.code


async def test_without_cluster_action_nothing_changes_not_even_the_epoch(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        seen = b.ctx.controller_epoch.current
        auth = ClusterAuthorizationFailedError.code
        sr = stop_replica.StopReplica(0, seen + 1, True, (("t", 0),))
        assert stop_replica.run(b.ctx, SESSION, sr) == stop_replica.StopReplicaResult(auth)
        um = update_metadata.UpdateMetadata(0, seen + 1, (), (), ("t",))
        assert update_metadata.run(b.ctx, SESSION, um).error_code == auth
        lai = leader_and_isr.LeaderAndIsr(0, seen + 1, (), ())
        assert (await leader_and_isr.run(b.ctx, SESSION, lai)).error_code == auth
        shutdown = controlled_shutdown.ControlledShutdown(BROKER_ID)
        assert (await controlled_shutdown.run(b.ctx, SESSION, shutdown)).error_code == auth
        assert b.ctx.controller_epoch.current == seen
        assert b.log_manager.get("t", 0) is not None
        assert [t.name for t in b.ctx.metadata.describe(["t"])] == ["t"]
        grant(authz, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER)
        assert stop_replica.run(b.ctx, SESSION, sr).error_code == 0
        assert b.ctx.controller_epoch.current == seen + 1


async def test_stop_replica_deletes_the_log_only_when_asked(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("keep")
        await b.lead("drop")
        epoch = b.controller_epoch
        kept = stop_replica.run(b.ctx, SESSION, stop_replica.StopReplica(0, epoch, False, (
            ("keep", 0),)))  # fmt: skip
        dropped = stop_replica.run(b.ctx, SESSION, stop_replica.StopReplica(0, epoch, True, (
            ("drop", 0),)))  # fmt: skip
        assert kept.partitions == (PartitionResult("keep", 0, 0),)
        assert dropped.partitions == (PartitionResult("drop", 0, 0),)
        assert b.log_manager.get("keep", 0) is not None
        assert b.log_manager.get("drop", 0) is None
        assert ("keep", 0) not in b.ctx.replicas.roles.partitions


async def test_update_metadata_sets_brokers_controller_and_forgets_deleted_topics(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        await b.lead("gone")
        live = (BrokerInfo(BROKER_ID, "127.0.0.1", 1), BrokerInfo(7, "127.0.0.1", 2))
        um = update_metadata.UpdateMetadata(7, b.controller_epoch, (), live, ("gone",))
        assert update_metadata.run(b.ctx, SESSION, um) == update_metadata.UpdateMetadataResult(0)
        assert b.ctx.metadata.controller_id == 7
        assert b.ctx.metadata.live_broker_ids() == [BROKER_ID, 7]
        assert [t.name for t in b.ctx.metadata.describe(None)] == ["t"]


class StandInController:
    """What controller_call.call needs of a Controller: `call(work, timeout_s)`."""

    def __init__(self, answer: Callable[[], Awaitable[Any]]) -> None:
        self.answer = answer
        self.timeouts: list[float] = []

    async def call(self, work: Any, timeout_s: float) -> Any:
        self.timeouts.append(timeout_s)
        return await self.answer()


def _ctx(controller: StandInController | None) -> Any:
    return SimpleNamespace(authorizer=None, elector=SimpleNamespace(active_controller=controller))


async def test_controlled_shutdown_is_the_controllers_and_lists_what_the_broker_still_leads() -> (
    None
):
    req = controlled_shutdown.ControlledShutdown(2)
    refused = await controlled_shutdown.run(_ctx(None), SESSION, req)
    assert refused == controlled_shutdown.ControlledShutdownResult(NotControllerError.code)

    async def remaining() -> list[tuple[str, int]]:
        return [("t", 1)]

    async def too_slow() -> None:
        raise TimeoutError

    async def not_now() -> None:
        raise NotControllerError("resigned")

    controller = StandInController(remaining)
    moved = await controlled_shutdown.run(_ctx(controller), SESSION, req)
    assert moved == controlled_shutdown.ControlledShutdownResult(0, (("t", 1),))
    assert controller.timeouts == [controlled_shutdown.CALL_TIMEOUT_MS / 1000]
    late = await controlled_shutdown.run(_ctx(StandInController(too_slow)), SESSION, req)
    assert late.error_code == RequestTimedOutError.code
    gone = await controlled_shutdown.run(_ctx(StandInController(not_now)), SESSION, req)
    assert gone == controlled_shutdown.ControlledShutdownResult(NotControllerError.code)
