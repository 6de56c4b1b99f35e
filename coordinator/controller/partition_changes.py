"""Partition state changes the controller applies: first states, re-elections, ISR changes.

How it works: `elect_where_needed` gives new partitions their first state znode (leader = first
eligible replica, leader epoch 0, ISR from election.py `initial_isr`) and elects again the
partitions without a live leader (`decide` replaces that rule, e.g. `reconcile` at failover).
The choices are election.py's pure functions; the writes go through state_writer.py (batched,
fenced, conditional on each znode's version: a conflict re-reads and decides again).

UNCLEAN_ENABLED: unclean.leader.election.enable was turned on, for a topic or as the controller's
default (a dynamic broker config): `on_unclean_enabled` reads it again for the topics with
offline partitions and elects those at once, as Kafka's enableTopicUncleanLeaderElection and
enableDefaultUncleanLeaderElection do, instead of waiting for the next broker change.

ISR_CHANGE: leaders wrote ISR changes and announced them under /isr_change_notification
(coordinator/cluster/isr.py): `on_isr_change` re-reads those partitions' state znodes, sends
UpdateMetadata to every live broker, deletes the notes, and moves on the reassignments
(admin.py) whose partitions changed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from coordinator.cluster.isr import ISR_CHANGE_NOTIFICATION, decode_isr_change
from coordinator.cluster.zk import ZkNoNode
from coordinator.cluster.zk_paths import LeaderIsrState, ZkDataError
from coordinator.controller.admin import advance_reassignments
from coordinator.controller.context import Decide, TopicPartition
from coordinator.controller.election import (
    initial_isr,
    reconcile_at_failover,
    reelect_if_leaderless,
)
from coordinator.controller.event_ops import EventOps

log = logging.getLogger(__name__)


async def elect_where_needed(
    c: EventOps, tps: list[TopicPartition], decide: Callable[..., Any] | None = None
) -> list[TopicPartition]:
    """New partitions get their first state; partitions without a live leader are elected
    again (`decide` replaces that rule, e.g. at failover). Returns those whose state znode
    changed."""
    live = c.ctx.eligible_ids
    fresh: dict[TopicPartition, LeaderIsrState] = {}
    decisions: dict[TopicPartition, Decide] = {}
    for tp in tps:
        if tp[0] in c.ctx.deleting:
            continue
        replicas = c.ctx.replicas(tp)
        if tp in c.ctx.leadership:
            decisions[tp] = partial(
                decide or _reelect, replicas=replicas, live=live,
                unclean=c.ctx.unclean[tp[0]],
            )  # fmt: skip
            continue
        leader = next((r for r in replicas if r in live), None)
        if leader is None:
            log.warning("%s-%d: no live replica among %s; stays new", *tp, replicas)
            continue
        isr = initial_isr(replicas, live, leader, c.config.replicated)
        fresh[tp] = LeaderIsrState(leader, 0, c.epoch, isr)
    await c.writer.create_states(fresh)
    return [*fresh, *await c.writer.update_states(decisions)]


async def on_unclean_enabled(c: EventOps) -> None:
    offline = [tp for tp in c.ctx.partitions() if c.ctx.leader_of(tp) == -1]
    if not offline:
        return
    await c.refresh_unclean({tp[0] for tp in offline})
    changed = await elect_where_needed(c, offline)
    if changed:
        log.info("unclean leader election turned on: %d offline partitions elected", len(changed))
        c.send_leader_and_isr(changed)
        c.send_update_metadata(sorted(c.ctx.live), changed)


async def on_isr_change(c: EventOps) -> None:
    """Leaders changed ISRs (coordinator/cluster/isr.py): re-read those state znodes, tell every
    broker with UpdateMetadata, then delete the notifications."""
    children = await c.zk.get_children(ISR_CHANGE_NOTIFICATION)
    named: set[TopicPartition] = set()
    for child in children:
        try:
            data, _ = await c.zk.get(f"{ISR_CHANGE_NOTIFICATION}/{child}")
            named.update(decode_isr_change(data))
        except (ZkNoNode, ZkDataError) as exc:
            log.warning("skipping ISR change notification %s: %s", child, exc)
    fresh: list[TopicPartition] = []
    for tp in sorted(named):
        if tp[1] not in c.ctx.assignments.get(tp[0], {}) or tp[0] in c.ctx.deleting:
            continue
        state = await c.loader.read_state(*tp)
        if state is not None:
            c.ctx.set_leadership(tp, *state)
            fresh.append(tp)
    if fresh:
        c.send_update_metadata(sorted(c.ctx.live), fresh)
    for child in children:
        with contextlib.suppress(ZkNoNode):
            await c.zk.delete(f"{ISR_CHANGE_NOTIFICATION}/{child}")
    moving = [tp for tp in fresh if tp in c.ctx.reassignments]
    if moving:
        await advance_reassignments(c, moving)


def _reelect(
    s: LeaderIsrState, *, replicas: list[int], live: set[int], unclean: bool
) -> tuple[int, list[int]] | None:
    return reelect_if_leaderless(s.leader, s.isr, replicas, live, unclean)


def reconcile(
    s: LeaderIsrState, *, replicas: list[int], live: set[int], unclean: bool
) -> tuple[int, list[int]] | None:
    return reconcile_at_failover(s.leader, s.isr, replicas, live, unclean)
