"""UpdateMetadata (controller -> broker): refresh the metadata cache (live brokers, the
controller, partition states, deleted topics: broker/metadata_cache.py `apply`), after the
checks every controller request makes (broker/operations/from_controller.py: ClusterAction,
then the controller epoch).
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.from_controller import refusal
from broker.session import Session
from protocol.api.controller import PartitionState
from protocol.api.metadata import BrokerInfo

API = "UpdateMetadata"


@dataclass(frozen=True, slots=True)
class UpdateMetadata:
    controller_id: int
    controller_epoch: int
    partition_states: tuple[PartitionState, ...]
    live_brokers: tuple[BrokerInfo, ...]
    deleted_topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class UpdateMetadataResult:
    error_code: int


def run(ctx: BrokerContext, session: Session, req: UpdateMetadata) -> UpdateMetadataResult:
    refused = refusal(ctx, session, API, req.controller_id, req.controller_epoch)
    if refused is not None:
        return UpdateMetadataResult(refused)
    ctx.metadata.apply(req)
    return UpdateMetadataResult(0)
