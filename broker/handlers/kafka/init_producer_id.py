"""InitProducerId (22), v0-v6. Without a transactional id: a producer id for an idempotent
producer, from the broker's producer-id manager (blocks allocated in ZooKeeper,
coordinator/cluster/producer_ids.py), or an epoch bump when a known producer re-initialises
(v3+, KIP-360). With one: the transaction coordinator's answer (coordinator/transaction/), sent
to the id's coordinator: a new epoch fencing older producers, whose open transaction is aborted
first (CONCURRENT_TRANSACTIONS until it is), and v6's two-phase commit (KIP-939: enable_2pc,
keep_prepared_txn, and the kept transaction's producer id and epoch in the answer)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers.kafka._txn import code_of, coordinator
from broker.handlers.txn_common import producer_id_refusal
from broker.session import Session
from protocol.errors import OdradekError, UnknownServerError
from protocol.kafka.codec import KafkaRequest, make, millis, response_class
from protocol.kafka.versions import INIT_PRODUCER_ID


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    version = request.header.api_version
    cls = response_class(INIT_PRODUCER_ID, version)
    pid, epoch = getattr(req, "producer_id", -1), getattr(req, "producer_epoch", -1)
    refused = producer_id_refusal(ctx, session, req.transactional_id)
    if refused:
        return make(cls, throttle_time=0, error_code=refused, producer_id=-1, producer_epoch=-1)
    try:
        if req.transactional_id is not None:
            return await _transactional(ctx, req, version, cls, pid, epoch)
        manager = ctx.producer_ids
        if manager is None:
            raise UnknownServerError("this broker allocates no producer ids")
        pid, epoch = await manager.init_producer_id(None, pid, epoch)
    except OdradekError as exc:
        return make(cls, throttle_time=0, error_code=exc.code, producer_id=-1, producer_epoch=-1)
    return make(cls, throttle_time=0, error_code=0, producer_id=pid, producer_epoch=epoch)


async def _transactional(
    ctx: BrokerContext, req: Any, version: int, cls: Any, pid: int, epoch: int
) -> Any:
    answer = await coordinator(ctx).init_producer_id(
        req.transactional_id, millis(req.transaction_timeout), pid, epoch,
        bool(getattr(req, "enable2_pc", False)), bool(getattr(req, "keep_prepared_txn", False)),
    )  # fmt: skip
    if isinstance(answer, int):
        return make(cls, throttle_time=0, error_code=answer, producer_id=-1, producer_epoch=-1,
                    ongoing_txn_producer_id=-1, ongoing_txn_producer_epoch=-1)  # fmt: skip
    return make(
        cls, throttle_time=0, error_code=code_of(answer.error, "InitProducerId", version),
        producer_id=answer.producer_id, producer_epoch=answer.producer_epoch,
        ongoing_txn_producer_id=answer.ongoing_txn_producer_id,
        ongoing_txn_producer_epoch=answer.ongoing_txn_producer_epoch,
    )  # fmt: skip
