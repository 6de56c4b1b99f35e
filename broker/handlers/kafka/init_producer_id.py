"""InitProducerId (22), v0-v4: a producer id for an idempotent producer, from the broker's
producer-id manager (blocks allocated in ZooKeeper, coordinator/cluster/producer_ids.py), or an
epoch bump when a known producer re-initialises (v3+, KIP-360). A transactional id is refused with
an error saying transactions are not supported."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from protocol.errors import OdradekError, UnknownServerError
from protocol.kafka.codec import KafkaRequest, make, response_class
from protocol.kafka.versions import INIT_PRODUCER_ID


async def handle(ctx: BrokerContext, request: KafkaRequest) -> Any:
    req = request.body
    cls = response_class(INIT_PRODUCER_ID, request.header.api_version)
    manager = ctx.producer_ids
    try:
        if manager is None:
            raise UnknownServerError("this broker allocates no producer ids")
        pid, epoch = await manager.init_producer_id(
            req.transactional_id,
            getattr(req, "producer_id", -1),
            getattr(req, "producer_epoch", -1),
        )
    except OdradekError as exc:
        return make(cls, throttle_time=0, error_code=exc.code, producer_id=-1, producer_epoch=-1)
    return make(cls, throttle_time=0, error_code=0, producer_id=pid, producer_epoch=epoch)
