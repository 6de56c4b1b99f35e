"""The controller's requests to brokers, built from its context (context.py) and batched.

How it works: `Requests.send_leader_and_isr` gathers, per live broker not shutting down, the
partitions among `changed` it replicates (plus all of its partitions for the brokers in
`full_for`), and sends one LeaderAndIsr per broker: to the partitions' new leaders first and to
the others once those answered (channel.py `send_leaders_first`), since a follower that asked a
leader-to-be too early would back off for replica_fetch_backoff_ms. `send_update_metadata` sends
one UpdateMetadata with the given partitions and every live broker. `send_full_state` is both,
for brokers that must learn everything (after STARTUP, a return, a RESYNC). Every request carries
the controller's id and epoch.
"""

from __future__ import annotations

from collections.abc import Sequence

from coordinator.controller.channel import ControllerChannel, send_leaders_first
from coordinator.controller.context import ControllerContext, TopicPartition
from protocol.api.controller import LeaderAndIsrRequest, UpdateMetadataRequest
from protocol.api.controller import PartitionState as PartitionStateMsg


def stated(ctx: ControllerContext) -> list[TopicPartition]:
    """The partitions with a written state znode."""
    return [tp for tp in ctx.partitions() if tp in ctx.leadership]


class Requests:
    def __init__(self, ctx: ControllerContext, channel: ControllerChannel, broker_id: int) -> None:
        self.ctx = ctx
        self.channel = channel
        self.broker_id = broker_id

    def send_full_state(self, brokers: list[int]) -> None:
        """Each broker: LeaderAndIsr for all its partitions and the full UpdateMetadata."""
        self.send_leader_and_isr([], full_for=brokers)
        self.send_update_metadata(brokers, stated(self.ctx))

    def send_leader_and_isr(
        self,
        changed: list[TopicPartition],
        *,
        full_for: Sequence[int] = (),
        is_new: bool = False,
    ) -> None:
        per_broker: dict[int, dict[TopicPartition, PartitionStateMsg]] = {}
        for tp in changed:
            for r in self.ctx.replicas(tp):
                if r in self.ctx.live and r not in self.ctx.shutting_down:
                    per_broker.setdefault(r, {})[tp] = self.ctx.partition_state_msg(tp, is_new)
        for b in full_for:
            for tp in self.ctx.partitions_on(b):
                if tp in self.ctx.leadership and tp[0] not in self.ctx.deleting:
                    per_broker.setdefault(b, {}).setdefault(tp, self.ctx.partition_state_msg(tp))
        requests: dict[int, LeaderAndIsrRequest] = {}
        for b, states in sorted(per_broker.items()):
            leaders = {s.leader for s in states.values()}
            live_leaders = [i for i in self.ctx.broker_infos() if i.node_id in leaders]
            requests[b] = LeaderAndIsrRequest(
                self.broker_id, self.ctx.epoch, list(states.values()), live_leaders
            )
        new_leaders = {self.ctx.leadership[tp][0].leader for tp in changed}
        send_leaders_first(self.channel, requests, new_leaders)

    def send_update_metadata(
        self, brokers: list[int], tps: list[TopicPartition], deleted_topics: list[str] | None = None
    ) -> None:
        if not brokers:
            return
        states = [self.ctx.partition_state_msg(tp) for tp in tps if tp in self.ctx.leadership]
        request = UpdateMetadataRequest(
            self.broker_id, self.ctx.epoch, states, self.ctx.broker_infos(), deleted_topics or []
        )
        for b in brokers:
            self.channel.send(b, request)
