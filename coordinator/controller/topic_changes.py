"""TOPIC_CHANGE, PARTITION_MODIFICATIONS and TOPIC_DELETION: topics and partitions come and go.

How it works:
- TOPIC_CHANGE (`on_topic_change`): /brokers/topics children; topics gone from it leave the
  context, new ones are loaded (loader.py) and started: their state znodes (leader = first live
  replica, leader epoch 0, partition_changes.py) and LeaderAndIsr(is_new) to their replicas,
  UpdateMetadata to everyone.
- PARTITION_MODIFICATIONS (`on_partition_modifications`): each topic's /brokers/topics/<t> has a
  data watch (events.py `Watches`, Kafka's PartitionModificationsHandler); partitions found there
  that the context lacks were added (CreatePartitions, coordinator/cluster/topics.py) and start
  as a new topic's do. A znode that lost its topic id gets it back. Other changes of the znode
  are this controller's own reassignment writes, already in the context.
- TOPIC_DELETION (`on_topic_deletion`): for each topic under /admin/delete_topics,
  StopReplica(delete_partitions) to its live replicas (its partitions and replicas move through
  the state tables to NonExistent / ReplicaDeletionStarted), delete the topic's znodes and then
  the /admin marker, UpdateMetadata(deleted_topics) to everyone.
"""

from __future__ import annotations

import contextlib
import logging

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.zk import ZkNoNode
from coordinator.controller.context import TopicPartition
from coordinator.controller.event_ops import EventOps
from coordinator.controller.loader import replicas_online
from coordinator.controller.partition_changes import elect_where_needed
from coordinator.controller.states import PartitionState, ReplicaState
from protocol.api.controller import StopReplicaRequest, TopicPartitionRef

log = logging.getLogger(__name__)


async def on_topic_change(c: EventOps) -> None:
    names = set(await c.zk.get_children(paths.BROKER_TOPICS))
    for gone in [t for t in c.ctx.assignments if t not in names]:
        c.ctx.remove_topic(gone)
        c.watches.unwatch_topic(gone)
    added = sorted(t for t in names if t not in c.ctx.assignments)
    for topic in added:
        await c.loader.load_topic(topic)
    await _start_new_partitions(c, [tp for tp in c.ctx.partitions() if tp[0] in added])


async def _start_new_partitions(c: EventOps, tps: list[TopicPartition]) -> None:
    """New partitions (a new topic's, or added to one): their first state znodes,
    LeaderAndIsr(is_new) to their replicas, UpdateMetadata to every live broker."""
    changed = await elect_where_needed(c, tps)
    if changed:
        c.send_leader_and_isr(changed, is_new=True)
        c.send_update_metadata(sorted(c.ctx.live), changed)


async def on_topic_deletion(c: EventOps) -> None:
    marked = await c.zk.get_children(paths.ADMIN_DELETE_TOPICS)
    deleted: list[str] = []
    for topic in marked:
        if topic in c.ctx.assignments:
            c.ctx.deleting.add(topic)
            _stop_replicas(c, topic)
            deleted.append(topic)
        await _delete_topic_znodes(c, topic)
        c.ctx.remove_topic(topic)
        c.watches.unwatch_topic(topic)
    if deleted:
        c.send_update_metadata(sorted(c.ctx.live), [], deleted_topics=deleted)


def _stop_replicas(c: EventOps, topic: str) -> None:
    per_broker: dict[int, list[TopicPartitionRef]] = {}
    for p in sorted(c.ctx.assignments[topic]):
        tp = (topic, p)
        if c.ctx.partition_state(tp) is not PartitionState.NON_EXISTENT:
            if c.ctx.partition_state(tp) is not PartitionState.OFFLINE:
                c.ctx.move_partition(tp, PartitionState.OFFLINE)
            c.ctx.move_partition(tp, PartitionState.NON_EXISTENT)
        for r in c.ctx.replicas(tp):
            c.ctx.move_replica(tp, r, ReplicaState.OFFLINE)
            c.ctx.move_replica(tp, r, ReplicaState.DELETION_STARTED)
            if r in c.ctx.live:
                per_broker.setdefault(r, []).append(TopicPartitionRef(topic, p))
    for b, refs in sorted(per_broker.items()):
        c.channel.send(b, StopReplicaRequest(c.broker_id, c.epoch, True, refs))


async def _delete_topic_znodes(c: EventOps, topic: str) -> None:
    for path, recursive in (
        (paths.topic_path(topic), True),
        (paths.topic_config_path(topic), False),
        (paths.delete_topic_path(topic), False),
    ):
        with contextlib.suppress(ZkNoNode):
            await c.zk.delete(path, recursive=recursive)


async def on_partition_modifications(c: EventOps) -> None:
    topics = c.watches.take_modified()
    added: list[TopicPartition] = []
    for topic in sorted(topics):
        known = c.ctx.assignments.get(topic)
        if known is None or topic in c.ctx.deleting:
            continue
        try:
            data, _ = await c.zk.get(paths.topic_path(topic))
        except ZkNoNode:
            continue  # deleted: TOPIC_CHANGE / TOPIC_DELETION handle it
        decoded = paths.TopicAssignment.decode(data)
        assignment = decoded.partitions
        if decoded.topic_id is None and topic in c.ctx.topic_ids:
            await c.loader.backfill_topic_id(topic, c.ctx.topic_ids[topic])
        new = {p: r for p, r in assignment.items() if p not in known}
        if not new:
            continue
        c.ctx.add_topic(topic, {**known, **new}, c.ctx.unclean[topic])
        tps = [(topic, p) for p in sorted(new)]
        replicas_online(c.ctx, tps)
        added += tps
        log.info("topic %s: partitions %s added", topic, sorted(new))
    await _start_new_partitions(c, added)
