"""The native door's codecs of the controller's requests to brokers (LeaderAndIsr,
StopReplica, UpdateMetadata) and a broker's to the controller (ControlledShutdown), see
broker/codecs/native/__init__.py. Native only: Kafka's clients never send them, and brokers
speak to each other over the native door. The partition states and broker addresses pass
through as they are (protocol/api/controller.py's, which the services take).
"""

from __future__ import annotations

from broker.codecs import Codec
from broker.operations import controlled_shutdown, leader_and_isr, stop_replica, update_metadata
from broker.operations.from_controller import PartitionResult
from protocol.api import controller as wire
from protocol.codec import Request


def _errors(partitions: tuple[PartitionResult, ...]) -> list[wire.PartitionError]:
    return [wire.PartitionError(p.topic, p.partition, p.error_code) for p in partitions]


# ----- LeaderAndIsr ---------------------------------------------------------------------------


def _leader_and_isr_in(request: Request) -> leader_and_isr.LeaderAndIsr:
    req: wire.LeaderAndIsrRequest = request.body
    return leader_and_isr.LeaderAndIsr(
        req.controller_id, req.controller_epoch, tuple(req.partition_states),
        tuple(req.live_leaders),
    )  # fmt: skip


def _leader_and_isr_out(
    request: Request, result: leader_and_isr.LeaderAndIsrResult
) -> wire.LeaderAndIsrResponse:
    return wire.LeaderAndIsrResponse(result.error_code, _errors(result.partitions))


LEADER_AND_ISR = Codec(_leader_and_isr_in, _leader_and_isr_out)

# ----- StopReplica ----------------------------------------------------------------------------


def _stop_replica_in(request: Request) -> stop_replica.StopReplica:
    req: wire.StopReplicaRequest = request.body
    return stop_replica.StopReplica(
        req.controller_id, req.controller_epoch, req.delete_partitions,
        tuple((tp.topic, tp.partition) for tp in req.partitions),
    )  # fmt: skip


def _stop_replica_out(
    request: Request, result: stop_replica.StopReplicaResult
) -> wire.StopReplicaResponse:
    return wire.StopReplicaResponse(result.error_code, _errors(result.partitions))


STOP_REPLICA = Codec(_stop_replica_in, _stop_replica_out)

# ----- UpdateMetadata -------------------------------------------------------------------------


def _update_metadata_in(request: Request) -> update_metadata.UpdateMetadata:
    req: wire.UpdateMetadataRequest = request.body
    return update_metadata.UpdateMetadata(
        req.controller_id, req.controller_epoch, tuple(req.partition_states),
        tuple(req.live_brokers), tuple(req.deleted_topics),
    )  # fmt: skip


def _update_metadata_out(
    request: Request, result: update_metadata.UpdateMetadataResult
) -> wire.UpdateMetadataResponse:
    return wire.UpdateMetadataResponse(result.error_code)


UPDATE_METADATA = Codec(_update_metadata_in, _update_metadata_out)

# ----- ControlledShutdown ---------------------------------------------------------------------


def _controlled_shutdown_in(request: Request) -> controlled_shutdown.ControlledShutdown:
    req: wire.ControlledShutdownRequest = request.body
    return controlled_shutdown.ControlledShutdown(req.broker_id)


def _controlled_shutdown_out(
    request: Request, result: controlled_shutdown.ControlledShutdownResult
) -> wire.ControlledShutdownResponse:
    return wire.ControlledShutdownResponse(
        result.error_code, [wire.TopicPartitionRef(t, p) for t, p in result.remaining]
    )


CONTROLLED_SHUTDOWN = Codec(_controlled_shutdown_in, _controlled_shutdown_out)
