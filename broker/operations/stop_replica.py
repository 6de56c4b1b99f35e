"""StopReplica (controller -> broker): stop hosting partitions, deleting their logs when
`delete_partitions` is set (topic deletion, a reassignment's removed replicas). After the
checks every controller request makes (broker/operations/from_controller.py: ClusterAction,
then the controller epoch); the answer is each partition's error
(broker/partition_roles.py `stop_replica`).
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.from_controller import PartitionResult, refusal
from broker.session import Session

API = "StopReplica"


@dataclass(frozen=True, slots=True)
class StopReplica:
    controller_id: int
    controller_epoch: int
    delete_partitions: bool
    partitions: tuple[tuple[str, int], ...]  # (topic, partition)


@dataclass(frozen=True, slots=True)
class StopReplicaResult:
    error_code: int  # the whole request's
    partitions: tuple[PartitionResult, ...] = ()


def run(ctx: BrokerContext, session: Session, req: StopReplica) -> StopReplicaResult:
    refused = refusal(ctx, session, API, req.controller_id, req.controller_epoch)
    if refused is not None:
        return StopReplicaResult(refused)
    stop = ctx.replicas.roles.stop_replica
    return StopReplicaResult(0, tuple(
        PartitionResult(topic, p, stop(topic, p, req.delete_partitions))
        for topic, p in req.partitions
    ))  # fmt: skip
