"""DescribeProducers (61), v0: the active producers of partitions this broker holds a replica of
(leader or follower, as Kafka answers: KIP-664's admin may ask any replica), from the log's
producer state (broker/producer_state.py): id, epoch, last sequence and timestamp,
coordinator epoch, and the first offset of the open transaction (-1: none). A hanging
transaction (kafka-transactions.sh find-hanging) is one whose start offset stays put while
its coordinator has no Ongoing transaction for that producer."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.partition import Partition
from broker.security import rules
from broker.session import Session
from protocol.errors import NotLeaderForPartitionError, OdradekError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import DESCRIBE_PRODUCERS


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    cls = response_class(DESCRIBE_PRODUCERS, request.header.api_version)
    topic_cls = nested(cls, "TopicResponse")
    part_cls = nested(cls, "PartitionResponse")
    producer_cls = nested(cls, "ProducerState")
    topics = []
    refused = rules.denied(
        ctx,
        session,
        rules.READ,
        rules.TOPIC,
        (t.name for t in request.body.topics),
        api="DescribeProducers",
    )
    for t in request.body.topics:
        parts = []
        for p in t.partition_indexes:
            try:
                if t.name in refused:
                    raise rules.refusal(session, rules.READ, rules.TOPIC, t.name)
                rows = _replica(ctx, t.name, int(p)).log.producer_states()
            except OdradekError as exc:
                parts.append(make(part_cls, partition_index=p, error_code=exc.code,
                                  error_message=exc.message, active_producers=()))  # fmt: skip
                continue
            parts.append(make(part_cls, partition_index=p, error_code=0, error_message=None,
                              active_producers=tuple(make(producer_cls, **r._asdict())
                                                     for r in rows)))  # fmt: skip
        topics.append(make(topic_cls, name=t.name, partitions=tuple(parts)))
    return make(cls, throttle_time=0, topics=tuple(topics))


def _replica(ctx: BrokerContext, topic: str, partition: int) -> Partition:
    """This broker's replica, leader or follower (Kafka's Partition.activeProducerState reads
    any local log); the leader's checks still refuse one not hosted here or offline."""
    try:
        return ctx.replicas.leader(topic, partition)
    except NotLeaderForPartitionError:
        return ctx.replicas.partitions[(topic, partition)]
