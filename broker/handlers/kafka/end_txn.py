"""EndTxn (26), v0-v4: commit or abort the producer's open transaction. Answered once the
coordinator has written PrepareCommit / PrepareAbort; the markers go to every partition in the
background, and the next transaction of the id waits for them (CONCURRENT_TRANSACTIONS)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers.kafka._txn import code_of, coordinator
from broker.handlers.txn_common import txn_refusal
from broker.session import Session
from protocol.errors import OdradekError
from protocol.kafka.codec import KafkaRequest, make, response_class
from protocol.kafka.versions import END_TXN


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    version = request.header.api_version
    try:
        answer: str | int = txn_refusal(ctx, session, req.transactional_id, "EndTxn")
        if not answer:
            answer = await coordinator(ctx).end_txn(
                req.transactional_id, req.producer_id, req.producer_epoch, bool(req.committed)
            )
    except OdradekError as exc:
        answer = exc.code
    return make(response_class(END_TXN, version), throttle_time=0,
                error_code=code_of(answer, "EndTxn", version))  # fmt: skip
