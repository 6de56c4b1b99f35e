"""The share coordinator's shard, pure: the state operations' records, replay, snapshots
every N updates, fencing, and batches merged as Kafka's StateBatchUtil does."""

from __future__ import annotations

import uuid

from coordinator.share import shard as s
from coordinator.share.records import SNAPSHOT, UPDATE, ShareKey, ShareRecord, StateBatch
from coordinator.share.records import decode as decode_record
from coordinator.share.records import encode as encode_record

KEY = ShareKey("jobs", uuid.UUID(int=7), 0)
B = StateBatch


def _apply(shard: s.Shard, result: s.Result) -> None:
    assert result.error_code == s.NONE, result
    for record in result.records:
        # through the bytes, as a load replays them
        s.replay(shard, decode_record(*encode_record(record)))


def _loaded(records: list[ShareRecord]) -> s.Shard:
    shard = s.Shard()
    for record in records:
        s.replay(shard, record)
    return shard


def test_merge_overlays_newer_batches_and_drops_below_start() -> None:
    current = (B(0, 9, 0, 1), B(10, 19, 2, 1))
    newer = (B(5, 12, 4, 3),)
    assert s.merge(current, newer, 0) == (B(0, 4, 0, 1), B(5, 12, 4, 3), B(13, 19, 2, 1))
    assert s.merge(current, newer, 7) == (B(7, 12, 4, 3), B(13, 19, 2, 1))
    # adjacent batches of one state and count are joined
    assert s.merge((B(0, 4, 2, 1),), (B(5, 9, 2, 1),), 0) == (B(0, 9, 2, 1),)


def test_initialize_read_write_round_trip_and_replay_equals_live() -> None:
    shard, log = s.Shard(), []
    for step in (
        lambda: s.initialize(shard, KEY, 1, 100, 1_000),
        lambda: s.read(shard, KEY, 3)[0],
        lambda: s.write(shard, KEY, 1, 3, -1, [B(100, 104, 2, 1), B(105, 106, 0, 2)], -1, 500,
                        2_000),
        lambda: s.write(shard, KEY, 1, 3, 105, [B(105, 105, 2, 2)], 1, 500, 3_000),
    ):  # fmt: skip
        result = step()
        _apply(shard, result)
        log.extend(result.records)
    _, answer = s.read(shard, KEY, 3)
    assert answer == s.ReadAnswer(1, 3, 105, (B(105, 105, 2, 2), B(106, 106, 0, 2)), 1)
    assert [r.record_type for r in log] == [SNAPSHOT, UPDATE, UPDATE, UPDATE]
    # a new coordinator replaying the log has the same state
    assert _loaded(log).states == shard.states


def test_a_snapshot_every_n_updates() -> None:
    shard = s.Shard()
    _apply(shard, s.initialize(shard, KEY, 0, 0, 0))
    types = []
    for i in range(7):
        result = s.write(shard, KEY, 0, -1, -1, [B(i, i, 2, 1)], -1, 3, i)
        types.append(result.records[0].record_type)
        _apply(shard, result)
    assert types == [UPDATE, UPDATE, UPDATE, SNAPSHOT, UPDATE, UPDATE, UPDATE]
    state = shard.states[KEY]
    assert state.batches == (B(0, 6, 2, 1),) and state.snapshot_epoch == 1
    # replaying from the last snapshot alone gives the same state: what compaction keeps
    snap = s.write(s.Shard(states={KEY: state}), KEY, 0, -1, -1, [], -1, 0, 9).records[0]
    assert snap.record_type == SNAPSHOT
    assert _loaded([snap]).states[KEY].batches == state.batches


def test_fencing_by_leader_and_state_epoch() -> None:
    shard = s.Shard()
    _apply(shard, s.initialize(shard, KEY, 2, 0, 0))
    _apply(shard, s.read(shard, KEY, 5)[0])
    old_leader = s.write(shard, KEY, 2, 4, -1, [B(0, 0, 2, 1)], -1, 500, 1)
    assert old_leader.error_code == s.FENCED_LEADER_EPOCH and not old_leader.records
    assert s.read(shard, KEY, 4)[0].error_code == s.FENCED_LEADER_EPOCH
    old_state = s.write(shard, KEY, 1, 5, -1, [B(0, 0, 2, 1)], -1, 500, 1)
    assert old_state.error_code == s.FENCED_STATE_EPOCH
    assert s.initialize(shard, KEY, 1, 0, 0).error_code == s.FENCED_STATE_EPOCH
    # a read at the same leader epoch writes nothing
    assert s.read(shard, KEY, 5)[0].records == ()


def test_uninitialized_delete_and_summary() -> None:
    shard = s.Shard()
    assert s.read(shard, KEY, 0)[1] == s.ReadAnswer(0, -1, s.UNINITIALIZED, ())
    assert s.delete(shard, KEY).records == ()
    _apply(shard, s.initialize(shard, KEY, 0, 40, 0))
    _apply(shard, s.write(shard, KEY, 0, 0, 42, [B(42, 43, 0, 1)], 2, 500, 1))
    assert s.summary(shard, KEY) == s.ReadAnswer(0, -1, 42, (), 2)  # writes set no epoch
    deleted = s.delete(shard, KEY)
    assert [(r.record_type, r.value) for r in deleted.records] == [(SNAPSHOT, None), (UPDATE, None)]
    _apply(shard, deleted)
    assert KEY not in shard.states
    # an update whose snapshot is gone applies to nothing
    s.replay(shard, ShareRecord(UPDATE, KEY, s.ShareUpdate(0, 0, 5, ())))
    assert KEY not in shard.states
