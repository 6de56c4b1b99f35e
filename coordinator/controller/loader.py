"""ZooKeeper read into the controller's context (context.py): brokers, topics, states, configs.

How it works: `ZkLoader.read_live_brokers` reads /brokers/ids (each registration with its czxid,
so a bounce shows) and leaves out the registrations fast_death.py proved dead (`probed_dead`,
kept until the broker registers again). `load_topic` reads a topic's assignment, gives a topic
from before KIP-516 its id (`backfill_topic_id`: written into its znode, fenced and conditional
on the version read, as Kafka's controller backfills them), reads its
unclean.leader.election.enable and the partitions' state znodes, moves its replicas Online or
Offline and sets the topic's data watch (events.py `Watches`). `refresh_unclean` reads the
unclean setting again before an election, so a config change counts without a controller
restart (Kafka reads it when it elects).
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.zk import OpSet, ZkBadVersion, ZkClient, ZkNoNode
from coordinator.cluster.zk_paths import BrokerRegistration, LeaderIsrState
from coordinator.controller.context import (
    ControllerContext,
    LiveBroker,
    StateWrites,
    TopicPartition,
)
from coordinator.controller.events import Watches
from coordinator.controller.fast_death import without_probed_dead
from coordinator.controller.states import ReplicaState
from protocol.topic_ids import encode_topic_id, new_topic_id

log = logging.getLogger(__name__)

UNCLEAN_CONFIG = "unclean.leader.election.enable"
BACKFILL_ATTEMPTS = 5  # version conflicts while giving an old topic its id, before giving up


def replicas_online(ctx: ControllerContext, tps: list[TopicPartition]) -> None:
    for tp in tps:
        for r in ctx.replicas(tp):
            target = ReplicaState.ONLINE if r in ctx.live else ReplicaState.OFFLINE
            ctx.move_replica(tp, r, target)


class ZkLoader:
    def __init__(
        self,
        zk: ZkClient,
        ctx: ControllerContext,
        writer: StateWrites,
        watches: Watches,
        *,
        default_unclean: bool,
    ) -> None:
        self.zk = zk
        self.ctx = ctx
        self.writer = writer
        self.watches = watches
        self.default_unclean = default_unclean
        self.probed_dead: dict[int, int] = {}  # broker -> registration czxid proven dead

    async def read_live_brokers(self) -> dict[int, LiveBroker]:
        out: dict[int, LiveBroker] = {}
        for child in await self.zk.get_children(paths.BROKER_IDS):
            try:
                data, stat = await self.zk.get_with_stat(paths.broker_path(int(child)))
                reg = BrokerRegistration.decode(data)
            except (ZkNoNode, ValueError) as exc:
                log.warning("skipping broker registration %s: %s", child, exc)
                continue
            out[int(child)] = LiveBroker(int(child), reg, stat.czxid)
        live, self.probed_dead = without_probed_dead(out, self.probed_dead)
        return live

    async def load_topic(self, topic: str) -> None:
        try:
            data, _ = await self.zk.get(paths.topic_path(topic))
        except ZkNoNode:
            return
        decoded = paths.TopicAssignment.decode(data)
        assignment = decoded.partitions
        topic_id = decoded.topic_id or await self.backfill_topic_id(topic)
        self.ctx.add_topic(topic, assignment, await self.read_unclean(topic), topic_id)
        if await self.zk.exists(paths.partitions_path(topic)) is not None:
            states = await asyncio.gather(*(self.read_state(topic, p) for p in assignment))
            for p, state in zip(assignment, states, strict=True):
                if state is not None:  # else it stays NewPartition: elected later
                    self.ctx.set_leadership((topic, p), *state)
        replicas_online(self.ctx, [(topic, p) for p in assignment])
        await self.watches.watch_topic(topic)

    async def backfill_topic_id(
        self, topic: str, known: uuid.UUID | None = None
    ) -> uuid.UUID | None:
        """A topic from before ids (KIP-516) gets one, as Kafka's controller gives it: written
        into its assignment znode (fenced, conditional on the version read; a concurrent
        change re-reads). `known`: the id the topic had, put back into a znode that lost it
        (rewritten by a tool that does not know ids). None if the topic vanished meanwhile."""
        for _ in range(BACKFILL_ATTEMPTS):
            try:
                data, version = await self.zk.get(paths.topic_path(topic))
            except ZkNoNode:
                return None
            decoded = paths.TopicAssignment.decode(data)
            if decoded.topic_id is not None:
                return decoded.topic_id
            topic_id = known or new_topic_id()
            written = paths.TopicAssignment(decoded.partitions, topic_id).encode()
            try:
                await self.writer.fenced([OpSet(paths.topic_path(topic), written, version)])
            except (ZkBadVersion, ZkNoNode):
                continue
            what = "restored" if known else "assigned"
            log.info("topic %s had no topic id: %s %s", topic, what, encode_topic_id(topic_id))
            return topic_id
        log.warning("topic %s: no topic id written, its znode kept changing", topic)
        return None

    async def read_state(self, topic: str, p: int) -> tuple[LeaderIsrState, int] | None:
        try:
            raw, version = await self.zk.get(paths.partition_state_path(topic, p))
        except ZkNoNode:
            return None
        return LeaderIsrState.decode(raw), version

    async def read_unclean(self, topic: str) -> bool:
        try:
            data, _ = await self.zk.get(paths.topic_config_path(topic))
            config = paths.TopicConfig.decode(data).config
        except (ZkNoNode, ValueError):
            config = {}
        default = "true" if self.default_unclean else "false"
        return config.get(UNCLEAN_CONFIG, default).lower() == "true"

    async def refresh_unclean(self, topics: set[str]) -> None:
        """Read unclean.leader.election.enable again where an election may need it, so a
        change of /config/topics/<t> counts without a controller restart (Kafka reads it when
        it elects)."""
        for topic in sorted(topics):
            if topic in self.ctx.assignments:
                self.ctx.unclean[topic] = await self.read_unclean(topic)
