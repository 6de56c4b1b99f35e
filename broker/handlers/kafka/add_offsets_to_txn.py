"""AddOffsetsToTxn (25), v0-v4: a producer about to commit a group's offsets inside its
transaction (TxnOffsetCommit, KIP-447's consume-transform-produce) has the coordinator add the
group's `__consumer_offsets` partition to the transaction, so that its marker ends the commit."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers.kafka._txn import code_of, coordinator
from broker.handlers.txn_common import offsets_partitions, txn_group_refusal
from broker.session import Session
from protocol.errors import OdradekError
from protocol.kafka.codec import KafkaRequest, make, response_class
from protocol.kafka.versions import ADD_OFFSETS_TO_TXN


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    version = request.header.api_version
    n = offsets_partitions(ctx)
    try:
        answer: str | int = txn_group_refusal(ctx, session, req.transactional_id, req.group_id,
                                              "AddOffsetsToTxn")  # fmt: skip
        if not answer:
            answer = await coordinator(ctx).add_offsets(
                req.transactional_id, req.producer_id, req.producer_epoch, req.group_id, n
            )
    except OdradekError as exc:
        answer = exc.code
    code = code_of(answer, "AddOffsetsToTxn", version)
    return make(response_class(ADD_OFFSETS_TO_TXN, version), throttle_time=0, error_code=code)
