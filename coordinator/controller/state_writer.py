"""The controller's writes of partition state znodes: batched, fenced, conditional.

How it works: every write is a ZooKeeper transaction that starts with a check of the
/controller_epoch version this controller wrote, so a controller that has been replaced writes
nothing (the check fails; we raise ControllerFenced). Writes go in chunks of `BATCH_PARTITIONS`
partitions per transaction (one round trip for hundreds of partitions, far below ZooKeeper's
1 MB request limit):

- `create_states`: a new topic's `/partitions/<p>` and `/partitions/<p>/state` nodes (and the
  `/partitions` parent if missing). If a chunk fails because some node exists (an earlier
  controller wrote part of it), the chunk is redone one partition at a time, adopting what is
  there.
- `update_states`: each partition's `decide(current) -> (leader, isr) | None`, written with
  leader epoch + 1, conditionally on the znode version the controller last saw. If a chunk fails
  on a version (someone else, later the ISR change of a leader, wrote first), the chunk is
  redone one partition at a time: re-read, decide again, write, up to WRITE_RETRIES times.

The controller's context (coordinator/controller/context.py) is updated only after a write
succeeded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.zk import (
    OpCheck,
    OpCreate,
    OpSet,
    ZkBadVersion,
    ZkClient,
    ZkNodeExists,
    ZkNoNode,
    ZkOp,
)
from coordinator.cluster.zk_paths import LeaderIsrState
from coordinator.controller.context import ControllerContext, Decide, TopicPartition

BATCH_PARTITIONS = 200
WRITE_RETRIES = 5


class ControllerFenced(Exception):
    """Another controller bumped /controller_epoch: this one must stop."""


class StateWriter:
    def __init__(self, zk: ZkClient, ctx: ControllerContext) -> None:
        self.zk = zk
        self.ctx = ctx

    async def fenced(self, ops: Sequence[ZkOp]) -> None:
        """Apply ops only if /controller_epoch is still at the version we wrote."""
        try:
            await self.zk.transaction(
                [OpCheck(paths.CONTROLLER_EPOCH, self.ctx.epoch_zk_version), *ops]
            )
        except (ZkBadVersion, ZkNoNode) as exc:
            if exc.path == paths.CONTROLLER_EPOCH:
                raise ControllerFenced(str(exc)) from None
            raise

    # ----- creation -------------------------------------------------------------------------

    async def create_states(self, states: dict[TopicPartition, LeaderIsrState]) -> None:
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in states:
            by_topic.setdefault(tp[0], []).append(tp)
        for topic, tps in by_topic.items():
            parent_missing = await self.zk.exists(paths.partitions_path(topic)) is None
            for start in range(0, len(tps), BATCH_PARTITIONS):
                chunk = tps[start : start + BATCH_PARTITIONS]
                ops: list[ZkOp] = [OpCreate(paths.partitions_path(topic))] if parent_missing else []
                for tp in chunk:
                    ops.append(OpCreate(paths.partition_path(*tp)))
                    ops.append(OpCreate(paths.partition_state_path(*tp), states[tp].encode()))
                try:
                    await self.fenced(ops)
                except ZkNodeExists:
                    for tp in chunk:
                        await self._create_one(tp, states[tp])
                else:
                    for tp in chunk:
                        self.ctx.set_leadership(tp, states[tp], 0)
                parent_missing = False

    async def _create_one(self, tp: TopicPartition, state: LeaderIsrState) -> None:
        parent = paths.partition_path(*tp)
        if await self.zk.exists(parent) is None:
            await self.zk.ensure_path(parent)
        path = paths.partition_state_path(*tp)
        try:
            await self.fenced([OpCreate(path, state.encode())])
            self.ctx.set_leadership(tp, state, 0)
        except ZkNodeExists:  # an earlier controller wrote it: adopt what is there
            raw, version = await self.zk.get(path)
            self.ctx.set_leadership(tp, LeaderIsrState.decode(raw), version)

    # ----- updates --------------------------------------------------------------------------

    async def update_states(
        self, decisions: Mapping[TopicPartition, Decide], bump: bool = False
    ) -> list[TopicPartition]:
        """Apply each decision; returns the partitions whose state changed. With `bump`, a
        decision equal to the current leader and ISR is still written with leader epoch + 1
        (a reassignment changes the replicas: every replica must hear of it, fenced by epoch)."""
        planned: list[tuple[TopicPartition, LeaderIsrState, int]] = []
        for tp, decide in decisions.items():
            state, version = self.ctx.leadership[tp]
            new = self._next(state, decide, bump)
            if new is not None:
                planned.append((tp, new, version))
        changed: list[TopicPartition] = []
        for start in range(0, len(planned), BATCH_PARTITIONS):
            chunk = planned[start : start + BATCH_PARTITIONS]
            ops = [OpSet(paths.partition_state_path(*tp), new.encode(), v) for tp, new, v in chunk]
            try:
                await self.fenced(ops)
            except ZkBadVersion:
                for tp, _, _ in chunk:
                    if await self._update_one(tp, decisions[tp], bump):
                        changed.append(tp)
                continue
            for tp, new, version in chunk:
                self.ctx.set_leadership(tp, new, version + 1)
                changed.append(tp)
        return changed

    def _next(
        self, state: LeaderIsrState, decide: Decide, bump: bool = False
    ) -> LeaderIsrState | None:
        decision = decide(state)
        if decision is None or (not bump and decision == (state.leader, state.isr)):
            return None
        return LeaderIsrState(decision[0], state.leader_epoch + 1, self.ctx.epoch, decision[1])

    async def _update_one(self, tp: TopicPartition, decide: Decide, bump: bool = False) -> bool:
        path = paths.partition_state_path(*tp)
        raw, version = await self.zk.get(path)
        state = LeaderIsrState.decode(raw)
        for _ in range(WRITE_RETRIES):
            new = self._next(state, decide, bump)
            if new is None:
                self.ctx.set_leadership(tp, state, version)
                return False
            try:
                await self.fenced([OpSet(path, new.encode(), version)])
            except ZkBadVersion:
                raw, version = await self.zk.get(path)
                state = LeaderIsrState.decode(raw)
                continue
            self.ctx.set_leadership(tp, new, version + 1)
            return True
        raise ZkBadVersion(f"{path}: the state kept changing under the controller", path)
