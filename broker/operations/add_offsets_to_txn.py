"""AddOffsetsToTxn: a transactional producer about to commit a group's offsets inside its
transaction (TxnOffsetCommit, KIP-447's consume-transform-produce) has the transaction
coordinator add the group's `__consumer_offsets` partition to the transaction, so that its
marker ends the commit.

Refusals: Write on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then Read on
the group (GROUP_AUTHORIZATION_FAILED); no transaction coordinator here:
COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.txn_common import code_of, offsets_partitions, txn_group_refusal
from broker.session import Session
from protocol.errors import OdradekError

API = "AddOffsetsToTxn"


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxn:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnResult:
    error_code: int


async def run(ctx: BrokerContext, session: Session, req: AddOffsetsToTxn) -> AddOffsetsToTxnResult:
    refused = txn_group_refusal(ctx, session, req.transactional_id, req.group_id, API)
    if refused:
        return AddOffsetsToTxnResult(refused)
    try:
        answer = await ctx.transactions.add_offsets(
            req.transactional_id, req.producer_id, req.producer_epoch, req.group_id,
            offsets_partitions(ctx),
        )  # fmt: skip
    except OdradekError as exc:
        answer = exc.code
    return AddOffsetsToTxnResult(code_of(answer))
