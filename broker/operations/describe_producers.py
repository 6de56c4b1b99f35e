"""DescribeProducers: the active producers of partitions this broker holds a replica of
(leader or follower, as Kafka answers: KIP-664's admin may ask any replica), from the log's
producer state (broker/producer_state.py): id, epoch, last sequence and timestamp, coordinator
epoch, and the first offset of the open transaction (-1: none). A hanging transaction
(kafka-transactions.sh find-hanging) is one whose start offset stays put while its coordinator
has no Ongoing transaction for that producer.

Refusals, per partition with a message: without Read on the topic,
TOPIC_AUTHORIZATION_FAILED; a partition this broker holds no replica of, the leader's error
(NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION).
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.partition import Partition
from broker.producer_state import ProducerRow
from broker.security import rules
from broker.session import Session
from protocol.errors import NotLeaderForPartitionError, OdradekError

API = "DescribeProducers"


@dataclass(frozen=True, slots=True)
class DescribeProducers:
    topics: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class PartitionProducers:
    partition: int
    error_code: int
    error_message: str | None = None
    producers: tuple[ProducerRow, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribeProducersResult:
    topics: tuple[tuple[str, tuple[PartitionProducers, ...]], ...]


def run(ctx: BrokerContext, session: Session, req: DescribeProducers) -> DescribeProducersResult:
    refused = rules.denied(ctx, session, rules.READ, rules.TOPIC, (t for t, _ in req.topics),
                           api=API)  # fmt: skip
    return DescribeProducersResult(tuple(
        (t, tuple(_partition(ctx, session, t, p, t in refused) for p in ps))
        for t, ps in req.topics
    ))  # fmt: skip


def _partition(
    ctx: BrokerContext, session: Session, topic: str, partition: int, refused: bool
) -> PartitionProducers:
    try:
        if refused:
            raise rules.refusal(session, rules.READ, rules.TOPIC, topic)
        rows = _replica(ctx, topic, partition).log.producer_states()
    except OdradekError as exc:
        return PartitionProducers(partition, exc.code, exc.message)
    return PartitionProducers(partition, 0, None, tuple(rows))


def _replica(ctx: BrokerContext, topic: str, partition: int) -> Partition:
    """This broker's replica, leader or follower (Kafka's Partition.activeProducerState reads
    any local log); the leader's checks still refuse one not hosted here or offline."""
    try:
        return ctx.replicas.leader(topic, partition)
    except NotLeaderForPartitionError:
        return ctx.replicas.partitions[(topic, partition)]
