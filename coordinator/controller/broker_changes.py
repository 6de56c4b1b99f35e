"""BROKER_CHANGE and BROKER_PROBED_DEAD: brokers that died, bounced or came back.

How it works: `on_broker_change` re-reads /brokers/ids (loader.py) and diffs the registrations
with the context's (a changed czxid is a bounce: death plus return, context.py
`diff_brokers`). Death: each partition it led gets a new leader from ISR ∩ eligible
(election.py `after_brokers_died`), or goes offline (leader -1, ISR kept); it leaves the ISR of
the others; with many ISR shrinks (over SPLIT_SHRINKS_ABOVE) the new leaders are written and
sent first (Kafka's onBrokerFailure: OnlinePartition elections before OfflineReplica). Return:
offline and new partitions it can lead are elected (partition_changes.py); it gets
LeaderAndIsr for all its replicas and the full metadata; the others get the new broker list and
the changed partitions. Reassignments in progress (admin.py) then move on.

BROKER_PROBED_DEAD: fast_death.py proved that a registration (czxid) refuses connections on
every port; `on_probed_dead` marks it dead in the loader (it stays out of the live set until
the broker registers again) and runs BROKER_CHANGE, seconds before the session expires.
"""

from __future__ import annotations

import logging
from functools import partial

from coordinator.cluster.zk_paths import LeaderIsrState
from coordinator.controller.admin import advance_reassignments
from coordinator.controller.context import Decide, TopicPartition, diff_brokers
from coordinator.controller.election import after_brokers_died
from coordinator.controller.event_ops import EventOps
from coordinator.controller.partition_changes import elect_where_needed
from coordinator.controller.requests import stated
from coordinator.controller.states import ReplicaState

log = logging.getLogger(__name__)

SPLIT_SHRINKS_ABOVE = 200  # ISR shrinks at a death: more are written after the new leaders


async def on_broker_change(c: EventOps) -> None:
    current = await c.loader.read_live_brokers()
    dead, new = diff_brokers(
        {b: x.czxid for b, x in c.ctx.live.items()}, {b: x.czxid for b, x in current.items()}
    )
    if not dead and not new:
        return
    log.info("brokers: dead %s, new %s", dead, new)
    changed: list[TopicPartition] = []
    for b in dead:
        del c.ctx.live[b]
        c.ctx.shutting_down.discard(b)
        c.ctx.offline_log_dirs.discard(b)  # a restart recovers the log directories
        c.ctx.offline_replicas.pop(b, None)
        c.channel.remove_broker(b)
    if dead:
        changed += await _on_brokers_dead(c, dead)
    for b in new:
        c.ctx.live[b] = current[b]
        reg = current[b].registration
        c.channel.add_broker(b, reg.host, reg.port)
    if new:
        changed += await _on_brokers_back(c, new)
    changed = list(dict.fromkeys(changed))
    c.send_leader_and_isr(changed, full_for=new)
    c.send_update_metadata([b for b in sorted(c.ctx.live) if b not in new], changed)
    c.send_update_metadata(new, stated(c.ctx))
    await advance_reassignments(c)


async def on_probed_dead(c: EventOps, broker_id: int | None, czxid: int | None) -> None:
    """`czxid`: the registration the probe found dead (None: no proof waits)."""
    known = c.ctx.live.get(broker_id or 0)
    if broker_id is None or known is None or known.czxid != czxid:
        return  # gone already, or registered again since the probe: nothing proven
    log.warning("broker %d refuses connections on every port: dead", broker_id)
    c.loader.probed_dead[broker_id] = known.czxid
    await on_broker_change(c)


async def _on_brokers_dead(c: EventOps, dead: list[int]) -> list[TopicPartition]:
    """New leaders for the partitions the dead led; with many other partitions to shrink
    (over SPLIT_SHRINKS_ABOVE), those elections are written and sent first (LeaderAndIsr
    and UpdateMetadata), then the ISR shrinks, returned for the caller to send (Kafka's
    onBrokerFailure: OnlinePartition elections before OfflineReplica). With few, one
    round of writes and one request per broker is as fast."""
    await c.refresh_unclean({t for b in dead for t, _ in c.ctx.partitions_on(b)})
    live = c.ctx.eligible_ids
    leaderless: dict[TopicPartition, Decide] = {}
    shrinks: dict[TopicPartition, Decide] = {}
    for tp in c.ctx.partitions():
        replicas = c.ctx.replicas(tp)
        for b in dead:
            if b in replicas:
                c.ctx.move_replica(tp, b, ReplicaState.OFFLINE)
        if tp in c.ctx.leadership and tp[0] not in c.ctx.deleting:
            decide = partial(
                _after_death, replicas=replicas, dead=dead, live=live,
                unclean=c.ctx.unclean[tp[0]],
            )  # fmt: skip
            (leaderless if c.ctx.leader_of(tp) in dead else shrinks)[tp] = decide
    if not leaderless or len(shrinks) <= SPLIT_SHRINKS_ABOVE:
        return await c.writer.update_states({**leaderless, **shrinks})
    elected = await c.writer.update_states(leaderless)
    c.send_leader_and_isr(elected)
    c.send_update_metadata(sorted(c.ctx.live), elected)
    log.info("brokers %s dead: %d partitions have new leaders (sent)", dead, len(elected))
    return await c.writer.update_states(shrinks)


async def _on_brokers_back(c: EventOps, new: list[int]) -> list[TopicPartition]:
    for b in new:
        for tp in c.ctx.partitions_on(b):
            if tp[0] not in c.ctx.deleting:
                c.ctx.move_replica(tp, b, ReplicaState.ONLINE)
    offline = {tp[0] for tp in c.ctx.partitions() if c.ctx.leader_of(tp) == -1}
    await c.refresh_unclean(offline)
    return await elect_where_needed(c, c.ctx.partitions())


def _after_death(
    s: LeaderIsrState, *, replicas: list[int], dead: list[int], live: set[int], unclean: bool
) -> tuple[int, list[int]] | None:
    return after_brokers_died(s.leader, s.isr, replicas, dead, live, unclean)
