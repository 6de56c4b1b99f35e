"""InitProducerId: a producer id and epoch.

Without a transactional id (an idempotent producer), from any broker: the broker's
`ProducerIdManager` (coordinator/cluster/producer_ids.py) hands an id out of its
ZooKeeper-claimed block, or the next epoch of a producer's own id (KIP-360). With one, at the
id's transaction coordinator (FindCoordinator key type 1): the id's producer id at a new epoch,
fencing older producers of the id, whose open transaction is aborted first
(CONCURRENT_TRANSACTIONS until it is), and KIP-939's two-phase commit (enable_2pc,
keep_prepared_txn, and the kept transaction's producer id and epoch in the answer).

Refusals: without Write on the transactional id, TRANSACTIONAL_ID_AUTHORIZATION_FAILED; without
one, IdempotentWrite on the cluster or Write on some topic (KIP-679), else
CLUSTER_AUTHORIZATION_FAILED. A producer-id block that cannot be claimed (ZooKeeper out of
reach) is COORDINATOR_LOAD_IN_PROGRESS (retriable) with a message the native door shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.txn_common import NONE, code_of, txn_refusal
from broker.security import rules
from broker.session import Session
from protocol.errors import (
    ClusterAuthorizationFailedError,
    OdradekError,
)

API = "InitProducerId"
NO_PRODUCER_ID = NO_PRODUCER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class InitProducerId:
    transactional_id: str | None
    transaction_timeout_ms: int
    producer_id: int = NO_PRODUCER_ID  # with its epoch: ask for the next epoch (KIP-360)
    producer_epoch: int = NO_PRODUCER_EPOCH
    enable_2pc: bool = False
    keep_prepared_txn: bool = False


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error_code: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    error_message: str | None = None
    ongoing_txn_producer_id: int = NO_PRODUCER_ID  # KIP-939: the kept transaction's
    ongoing_txn_producer_epoch: int = NO_PRODUCER_EPOCH


async def run(ctx: BrokerContext, session: Session, req: InitProducerId) -> InitProducerIdResult:
    refused = _refusal(ctx, session, req.transactional_id)
    if refused:
        return InitProducerIdResult(refused)
    try:
        if req.transactional_id is not None:
            return await _transactional(ctx, req)
        pid, epoch = await ctx.producer_ids.init_producer_id(
            None, req.producer_id, req.producer_epoch
        )
    except OdradekError as exc:
        return InitProducerIdResult(exc.code, error_message=exc.message)
    return InitProducerIdResult(NONE, pid, epoch)


async def _transactional(ctx: BrokerContext, req: InitProducerId) -> InitProducerIdResult:
    assert req.transactional_id is not None
    answer = await ctx.transactions.init_producer_id(
        req.transactional_id, req.transaction_timeout_ms, req.producer_id, req.producer_epoch,
        req.enable_2pc, req.keep_prepared_txn,
    )  # fmt: skip
    if isinstance(answer, int):
        return InitProducerIdResult(answer)
    return InitProducerIdResult(
        code_of(answer.error), answer.producer_id, answer.producer_epoch, None,
        answer.ongoing_txn_producer_id, answer.ongoing_txn_producer_epoch,
    )  # fmt: skip


def _refusal(ctx: BrokerContext, session: Session, transactional_id: str | None) -> int:
    if transactional_id is not None:
        return txn_refusal(ctx, session, transactional_id, API)
    if ctx.authorizer is None or rules.allows(
        ctx, session, rules.IDEMPOTENT_WRITE, rules.CLUSTER, api=API, log_denied=False
    ) or rules.allows_any(ctx, session, rules.WRITE, rules.TOPIC, api=API):  # fmt: skip
        return NONE
    return ClusterAuthorizationFailedError.code
