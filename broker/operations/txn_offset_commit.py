"""TxnOffsetCommit: a transactional producer commits a group's offsets inside its transaction
(KIP-98, with KIP-447's generation, member id and group instance id checked as OffsetCommit
checks them). Sent to the group's coordinator, which appends them to `__consumer_offsets` as
part of the transaction: they become the group's offsets with the COMMIT marker, and are
dropped at ABORT. One error code for all the partitions it commits.

Refusals, in Kafka's order: Write on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
and Read on the group (GROUP_AUTHORIZATION_FAILED) for every partition; then Read on each topic:
a refused topic's partitions answer TOPIC_AUTHORIZATION_FAILED; then each partition this
broker's metadata cache does not know (no such topic, or an index past its partition count)
UNKNOWN_TOPIC_OR_PARTITION (retriable: a topic just created may reach the cache a moment
late); each with a metadata over 4096 characters (Kafka's offset.metadata.max.bytes)
OFFSET_METADATA_TOO_LARGE; the others are committed. Topics are answered in the order asked.
No group coordinator here: COORDINATOR_NOT_AVAILABLE.

Transaction version 2 (Kafka's v5+, `txn_version` 2, KIP-890 part 2): the producer sends no
AddOffsetsToTxn; the group's `__consumer_offsets` partition is added to its transaction here
first (broker/txn_verifier.py, as a Produce v12 adds its partitions), and a refusal answers
every partition: a fenced producer INVALID_PRODUCER_EPOCH, anything retriable
COORDINATOR_NOT_AVAILABLE (Kafka's group coordinator maps NOT_ENOUGH_REPLICAS so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.txn_common import offsets_partitions, txn_group_refusal
from broker.security import rules
from broker.session import Session
from coordinator.group.records import OFFSETS_TOPIC, metadata_too_large
from coordinator.group.records import partition_for as group_partition_for
from coordinator.transaction.txn import TV2
from protocol.errors import (
    CoordinatorNotAvailableError,
    NotEnoughReplicasError,
    OffsetMetadataTooLargeError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)

API = "TxnOffsetCommit"


@dataclass(frozen=True, slots=True)
class OffsetToCommit:
    partition: int
    offset: int
    metadata: str | None = None
    leader_epoch: int = -1  # KIP-320's committed leader epoch; -1: not given


@dataclass(frozen=True, slots=True)
class TxnOffsetCommit:
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    topics: tuple[tuple[str, tuple[OffsetToCommit, ...]], ...]
    generation_id: int = -1  # KIP-447: checked when given
    member_id: str = ""
    group_instance_id: str | None = None
    txn_version: int = 0  # 2 (Kafka v5+): add the offsets partition to the transaction first


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitResult:
    topics: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]  # (partition, error code)


async def run(ctx: BrokerContext, session: Session, req: TxnOffsetCommit) -> TxnOffsetCommitResult:
    refusal = txn_group_refusal(ctx, session, req.transactional_id, req.group_id, API)
    if refusal:
        return _answer(req, lambda topic, partition: refusal)
    denied = rules.denied(ctx, session, rules.READ, rules.TOPIC, (t for t, _ in req.topics),
                          api=API)  # fmt: skip
    known = ctx.metadata.has_partition
    missing = {(t, p.partition) for t, ps in req.topics if t not in denied for p in ps
               if not known(t, p.partition)}  # fmt: skip
    too_large = {(t, p.partition) for t, ps in req.topics if t not in denied for p in ps
                 if metadata_too_large(p.metadata)} - missing  # fmt: skip
    offsets = [(t, p.partition, p.offset, p.metadata, p.leader_epoch)
               for t, ps in req.topics if t not in denied
               for p in ps if (t, p.partition) not in missing | too_large]  # fmt: skip
    code = await _add_offsets_partition(ctx, req) if offsets else 0
    if code:
        return _answer(req, lambda topic, partition: code)
    code = await _commit(ctx, req, offsets) if offsets else 0
    refused, unknown = TopicAuthorizationFailedError.code, UnknownTopicOrPartitionError.code
    large = OffsetMetadataTooLargeError.code
    return _answer(req, lambda topic, partition: refused if topic in denied
                   else unknown if (topic, partition) in missing
                   else large if (topic, partition) in too_large else code)  # fmt: skip


def _answer(req: TxnOffsetCommit, code_of: Callable[[str, int], int]) -> TxnOffsetCommitResult:
    return TxnOffsetCommitResult(tuple(
        (t, tuple((p.partition, code_of(t, p.partition)) for p in ps)) for t, ps in req.topics
    ))  # fmt: skip


async def _add_offsets_partition(ctx: BrokerContext, req: TxnOffsetCommit) -> int:
    """TV2: the implicit AddOffsetsToTxn; 0 once the group's partition is in the transaction."""
    if req.txn_version < TV2:
        return 0
    tp = (OFFSETS_TOPIC, group_partition_for(req.group_id, offsets_partitions(ctx)))
    codes = await ctx.txn_verifier.verify(req.transactional_id, req.producer_id,
                                          req.producer_epoch, [tp], req.txn_version)  # fmt: skip
    code = codes[tp]
    return CoordinatorNotAvailableError.code if code == NotEnoughReplicasError.code else code


async def _commit(
    ctx: BrokerContext, req: TxnOffsetCommit,
    offsets: list[tuple[str, int, int, str | None, int]],
) -> int:  # fmt: skip
    return await ctx.groups.offsets.txn_commit(
        req.group_id, req.producer_id, req.producer_epoch, req.generation_id, req.member_id,
        offsets, req.group_instance_id,
    )  # fmt: skip
