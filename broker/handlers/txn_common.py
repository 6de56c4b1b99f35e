"""What both doors' transaction handlers share (native broker/handlers/*txn*.py and the Kafka
door's broker/handlers/kafka/): the transaction coordinator they call, error names of
coordinator/transaction/txn.py turned into wire codes, and the number of `__consumer_offsets`
partitions AddOffsetsToTxn needs to name a group's partition.

The native protocol always knows PRODUCER_FENCED (90); the Kafka door maps it to
INVALID_PRODUCER_EPOCH for request versions older than KIP-588 (kafka/_txn.py).
"""

from __future__ import annotations

from broker.context import BrokerContext
from coordinator.group.records import OFFSETS_TOPIC
from coordinator.transaction import txn as ops
from coordinator.transaction.service import TransactionCoordinator
from protocol.errors import CoordinatorNotAvailableError


def coordinator(ctx: BrokerContext) -> TransactionCoordinator:
    if ctx.transactions is None:
        raise CoordinatorNotAvailableError("this broker runs no transaction coordinator")
    return ctx.transactions


def code_of(answer: str | int, knows_producer_fenced: bool = True) -> int:
    """A service answer (an error name, or a coordinator error code) as a wire code."""
    if isinstance(answer, int):
        return answer
    return ops.error_code(answer, knows_producer_fenced)


def offsets_partitions(ctx: BrokerContext) -> int:
    """How many partitions `__consumer_offsets` has (or will have, once created)."""
    parts = ctx.metadata.topics.get(OFFSETS_TOPIC)
    if parts:
        return len(parts)
    return ctx.groups.runtime.partition_count() if ctx.groups else 0
