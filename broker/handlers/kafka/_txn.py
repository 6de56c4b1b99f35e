"""What the Kafka door's transaction handlers share: the coordinator they call, and error
names (coordinator/transaction/txn.py) turned into the code a request version knows.

KIP-588 added PRODUCER_FENCED (90); older versions get INVALID_PRODUCER_EPOCH (47) for it:
InitProducerId before v4, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn before v2,
TxnOffsetCommit before v3.
"""

from __future__ import annotations

from broker.context import BrokerContext
from coordinator.transaction import txn as ops
from coordinator.transaction.service import TransactionCoordinator
from protocol.errors import CoordinatorNotAvailableError

FENCED_FROM: dict[str, int] = {
    "InitProducerId": 4,
    "AddPartitionsToTxn": 2,
    "AddOffsetsToTxn": 2,
    "EndTxn": 2,
    "TxnOffsetCommit": 3,
}


def coordinator(ctx: BrokerContext) -> TransactionCoordinator:
    if ctx.transactions is None:
        raise CoordinatorNotAvailableError("this broker runs no transaction coordinator")
    return ctx.transactions


def code_of(answer: str | int, api: str, version: int) -> int:
    """A service answer (an error name, or a coordinator error code) as a wire code."""
    if isinstance(answer, int):
        return answer
    return ops.error_code(answer, version >= FENCED_FROM.get(api, 0))
