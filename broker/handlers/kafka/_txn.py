"""What the Kafka door's transaction handlers share: the coordinator they call
(broker/handlers/txn_common.py, shared with the native door), and error names
(coordinator/transaction/txn.py) turned into the code a request version knows.

KIP-588 added PRODUCER_FENCED (90); older versions get INVALID_PRODUCER_EPOCH (47) for it:
InitProducerId before v4, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn before v2,
TxnOffsetCommit before v3.
"""

from __future__ import annotations

from broker.handlers import txn_common
from broker.handlers.txn_common import coordinator

FENCED_FROM: dict[str, int] = {
    "InitProducerId": 4,
    "AddPartitionsToTxn": 2,
    "AddOffsetsToTxn": 2,
    "EndTxn": 2,
    "TxnOffsetCommit": 3,
}


def code_of(answer: str | int, api: str, version: int) -> int:
    """A service answer (an error name, or a coordinator error code) as a wire code."""
    return txn_common.code_of(answer, version >= FENCED_FROM.get(api, 0))


__all__ = ["FENCED_FROM", "code_of", "coordinator"]
