"""Transactional offset commits (TxnOffsetCommit, KIP-98/447) in the group coordinator, over a
real broker's `__consumer_offsets` log: pending until the transaction's marker, visible to
OffsetFetch only then (require_stable answers UNSTABLE_OFFSET_COMMIT meanwhile), dropped at an
abort, and the same after a failover replays the log (transactional batches and markers)."""

from __future__ import annotations

from pathlib import Path

from coordinator.group.records import OFFSETS_TOPIC
from protocol.api.group import OffsetFetchRequest, TopicPartitions
from protocol.clock import ManualClock
from protocol.errors import InvalidProducerEpochError, UnstableOffsetCommitError
from tests.unit.broker.harness import running_broker
from tests.unit.coordinator.group.test_service import settle

WANTED = OffsetFetchRequest("g", [TopicPartitions("t", [0, 1])])


def offsets(groups: object, stable: bool = False) -> list[tuple[int, int, int]]:
    resp = groups.offsets.fetch_offsets(WANTED, stable)  # type: ignore[attr-defined]
    return [(p.partition, p.offset, p.error_code) for p in resp.topics[0].partitions]


async def test_txn_offsets_count_only_once_committed(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as h:
        groups = h.ctx.groups
        await h.lead("t", 2)
        await h.lead(OFFSETS_TOPIC, 1)
        await settle(groups)
        assert await groups.offsets.txn_commit("g", 9, 0, -1, "", [("t", 0, 5, None)]) == 0
        assert await groups.offsets.txn_commit("g", 8, 0, -1, "", [("t", 1, 7, None)]) == 0
        assert offsets(groups) == [(0, -1, 0), (1, -1, 0)]  # pending: not the group's yet
        unstable = UnstableOffsetCommitError.code
        assert offsets(groups, stable=True) == [(0, -1, unstable), (1, -1, unstable)]

        # the markers, as WriteTxnMarkers writes them: producer 9 commits, producer 8 aborts
        for pid, commit in ((9, True), (8, False)):
            code = await h.ctx.replicas.append_marker(OFFSETS_TOPIC, 0, pid, 0, 0, commit, 1000)
            assert code == 0
            groups.offsets.complete_txn(0, pid, commit)
        assert offsets(groups, stable=True) == [(0, 5, 0), (1, -1, 0)]

        # a fenced producer's offsets are refused by the log
        await h.ctx.replicas.append_marker(OFFSETS_TOPIC, 0, 9, 1, 0, False, 1000)  # epoch 1
        assert await groups.offsets.txn_commit("g", 9, 0, -1, "", [("t", 1, 1, None)]) == (
            InvalidProducerEpochError.code
        )
        # an open transaction, then a failover: the coordinator, having given the partition
        # up, replays the transactional batches and the markers from the log
        assert await groups.offsets.txn_commit("g", 7, 0, -1, "", [("t", 1, 11, None)]) == 0
        await groups.shutdown()
        again = h.ctx.groups
        again.on_leadership_change()
        await settle(again)
        assert offsets(again, stable=True) == [(0, 5, 0), (1, -1, unstable)]
        await h.ctx.replicas.append_marker(OFFSETS_TOPIC, 0, 7, 0, 0, True, 1000)
        again.offsets.complete_txn(0, 7, True)
        assert offsets(again, stable=True) == [(0, 5, 0), (1, 11, 0)]
        await again.shutdown()


async def test_a_marker_written_while_loading_is_not_lost(tmp_path: Path) -> None:
    """The load replays up to the log end as it is when it gets there: a marker appended after
    the load began (and its live completion called while still loading) ends the transaction."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as h:
        groups = h.ctx.groups
        await h.lead("t", 2)
        await h.lead(OFFSETS_TOPIC, 1)
        await settle(groups)
        assert await groups.offsets.txn_commit("g", 3, 0, -1, "", [("t", 0, 4, None)]) == 0
        await groups.shutdown()
        replicas = h.ctx.replicas
        read = replicas.read_records

        def read_then_mark(*args: object) -> object:
            """The first read of the load: the marker lands right after it, as a
            WriteTxnMarkers that the broker serves while the coordinator is loading."""
            got = read(*args)  # type: ignore[arg-type]
            if getattr(replicas, "read_records", None) is read_then_mark:
                del replicas.read_records  # type: ignore[method-assign]
                p = replicas.partitions[(OFFSETS_TOPIC, 0)]
                p.log.append_control(3, 0, 0, True, p.leader_epoch)
                again.offsets.complete_txn(0, 3, True)  # too early: still loading
            return got

        replicas.read_records = read_then_mark  # type: ignore[method-assign]
        again = h.ctx.groups
        again.on_leadership_change()
        await settle(again)
        assert offsets(again, stable=True) == [(0, 4, 0), (1, -1, 0)]
        await again.shutdown()
