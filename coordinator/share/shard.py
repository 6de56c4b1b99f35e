"""One `__share_group_state` partition's share partitions, and the five state operations
(Kafka's ShareCoordinatorShard). Pure: each operation decides from the shard and returns the
records to append and the answer; `replay` applies an appended (or loaded) record, so a
loaded shard and a live one are the same thing.

A share partition's state (`ShareState`): the state epoch (which InitializeShareGroupState
sets: an initialization or an offset reset of the group), the leader epoch of the last leader
that read it, the share-partition start offset (SPSO), the delivery complete count (KIP-1226)
and the state batches above the SPSO: (first, last, delivery state, delivery count) ranges,
sorted and disjoint, of the records that are Available with a delivery count, Acknowledged or
Archived. A record in no batch and at or above the SPSO was never delivered.

- ShareSnapshot replaces the state; ShareUpdate overlays its batches (`merge`: a newer batch
  wins where they overlap; what falls below the start offset is dropped) and moves the start
  offset unless it is -1. After `per_snapshot` updates the next write is a snapshot again, so a
  load replays at most that many updates after the last snapshot, and compaction (one record
  per key and type) keeps the topic small.
- A tombstone of both keys deletes the state.

Fencing, as Kafka's: a write or read from a leader epoch below the stored one is
FENCED_LEADER_EPOCH, a write or initialization with a state epoch below the stored one
FENCED_STATE_EPOCH. A read with a newer leader epoch records it (a ShareUpdate with nothing
else), so the old leader's writes are fenced from then on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from coordinator.share.records import (
    NO_COUNT,
    NO_OFFSET,
    SNAPSHOT,
    UPDATE,
    ShareKey,
    ShareRecord,
    ShareSnapshot,
    ShareUpdate,
    StateBatch,
)

NONE = 0
FENCED_LEADER_EPOCH = 74
INVALID_REQUEST = 42
FENCED_STATE_EPOCH = 124
UNINITIALIZED = -1  # the start offset read for a share partition without state
NO_EPOCH = -1


@dataclass(slots=True)
class ShareState:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]
    create_timestamp_ms: int
    write_timestamp_ms: int
    delivery_complete_count: int = NO_COUNT
    updates_since_snapshot: int = 0


@dataclass(slots=True)
class Shard:
    states: dict[ShareKey, ShareState] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Result:
    """An operation's records to append (empty: nothing to write) and its answer's error."""

    records: tuple[ShareRecord, ...] = ()
    error_code: int = NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ReadAnswer:
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]
    delivery_complete_count: int = NO_COUNT


# ----- replay ----------------------------------------------------------------------------------


def replay(shard: Shard, record: ShareRecord, _now_ms: int = 0) -> None:
    value, key = record.value, record.key
    if value is None:
        shard.states.pop(key, None)
        return
    if isinstance(value, ShareSnapshot):
        shard.states[key] = ShareState(
            value.snapshot_epoch, value.state_epoch, value.leader_epoch, value.start_offset,
            value.state_batches, value.create_timestamp_ms, value.write_timestamp_ms,
            value.delivery_complete_count,
        )  # fmt: skip
        return
    state = shard.states.get(key)
    if state is None:  # an update without its snapshot (compacted, deleted): nothing to apply
        return
    assert isinstance(value, ShareUpdate)
    if value.start_offset != NO_OFFSET:
        state.start_offset = value.start_offset
    state.leader_epoch = max(state.leader_epoch, value.leader_epoch)
    state.batches = merge(state.batches, value.state_batches, state.start_offset)
    if value.delivery_complete_count != NO_COUNT:
        state.delivery_complete_count = value.delivery_complete_count
    state.updates_since_snapshot += 1


def merge(
    current: Sequence[StateBatch], newer: Sequence[StateBatch], start_offset: int
) -> tuple[StateBatch, ...]:
    """`newer` over `current`: sorted, disjoint batches, none below `start_offset`, adjacent
    batches of the same state and count joined."""
    pieces: list[StateBatch] = []
    for old in current:
        pieces.extend(_minus(old, newer))
    pieces.extend(newer)
    out: list[StateBatch] = []
    for b in sorted(pieces, key=lambda b: b.first_offset):
        if b.last_offset < start_offset:
            continue
        if b.first_offset < start_offset:
            b = StateBatch(start_offset, b.last_offset, b.delivery_state, b.delivery_count)
        last = out[-1] if out else None
        if (last is not None and last.last_offset + 1 == b.first_offset
                and (last.delivery_state, last.delivery_count)
                == (b.delivery_state, b.delivery_count)):  # fmt: skip
            out[-1] = StateBatch(last.first_offset, b.last_offset, b.delivery_state,
                                 b.delivery_count)  # fmt: skip
        else:
            out.append(b)
    return tuple(out)


def _minus(batch: StateBatch, cover: Sequence[StateBatch]) -> list[StateBatch]:
    """The parts of `batch` no batch of `cover` overlaps."""
    parts = [batch]
    for c in cover:
        kept: list[StateBatch] = []
        for p in parts:
            if c.last_offset < p.first_offset or c.first_offset > p.last_offset:
                kept.append(p)
                continue
            if p.first_offset < c.first_offset:
                kept.append(StateBatch(p.first_offset, c.first_offset - 1, p.delivery_state,
                                       p.delivery_count))  # fmt: skip
            if p.last_offset > c.last_offset:
                kept.append(StateBatch(c.last_offset + 1, p.last_offset, p.delivery_state,
                                       p.delivery_count))  # fmt: skip
        parts = kept
    return parts


# ----- operations ------------------------------------------------------------------------------


def initialize(
    shard: Shard, key: ShareKey, state_epoch: int, start_offset: int, now_ms: int
) -> Result:
    """InitializeShareGroupState: a fresh state at `start_offset` (-1: the leader resolves it
    by share.auto.offset.reset when it first reads)."""
    state = shard.states.get(key)
    if state is not None and state_epoch < state.state_epoch:
        return Result((), FENCED_STATE_EPOCH, f"state epoch {state_epoch} is older than "
                      f"{state.state_epoch}")  # fmt: skip
    epoch = 0 if state is None else state.snapshot_epoch + 1
    snapshot = ShareSnapshot(epoch, state_epoch, NO_EPOCH, start_offset, now_ms, now_ms, ())
    return Result((ShareRecord(SNAPSHOT, key, snapshot),))


def read(shard: Shard, key: ShareKey, leader_epoch: int) -> tuple[Result, ReadAnswer | None]:
    """ReadShareGroupState by a (new) leader: the state, and a record of a newer leader
    epoch. A share partition without state reads as UNINITIALIZED."""
    state = shard.states.get(key)
    if state is None:
        return Result(), ReadAnswer(0, NO_EPOCH, UNINITIALIZED, ())
    if leader_epoch < state.leader_epoch:
        return Result((), FENCED_LEADER_EPOCH, f"leader epoch {leader_epoch} is older than "
                      f"{state.leader_epoch}"), None  # fmt: skip
    answer = ReadAnswer(state.state_epoch, leader_epoch, state.start_offset, state.batches,
                        state.delivery_complete_count)  # fmt: skip
    if leader_epoch == state.leader_epoch:
        return Result(), answer
    update = ShareUpdate(state.snapshot_epoch, leader_epoch, NO_OFFSET, ())
    return Result((ShareRecord(UPDATE, key, update),)), answer


def write(
    shard: Shard, key: ShareKey, state_epoch: int, leader_epoch: int, start_offset: int,
    batches: Sequence[StateBatch], delivery_complete_count: int, per_snapshot: int,
    now_ms: int,
) -> Result:  # fmt: skip
    """WriteShareGroupState: the leader's changed batches (and start offset, or -1), as a
    ShareUpdate, or a ShareSnapshot of the merged state every `per_snapshot` updates."""
    for b in batches:
        if b.first_offset > b.last_offset or b.delivery_state not in (0, 2, 4):
            return Result((), INVALID_REQUEST, f"bad state batch {b}")
    state = shard.states.get(key)
    if state is not None and leader_epoch < state.leader_epoch:
        return Result((), FENCED_LEADER_EPOCH, f"leader epoch {leader_epoch} is older than "
                      f"{state.leader_epoch}")  # fmt: skip
    if state is not None and state_epoch < state.state_epoch:
        return Result((), FENCED_STATE_EPOCH, f"state epoch {state_epoch} is older than "
                      f"{state.state_epoch}")  # fmt: skip
    if state is None or state.updates_since_snapshot >= per_snapshot:
        return Result((_snapshot(key, state, state_epoch, leader_epoch, start_offset, batches,
                                 delivery_complete_count, now_ms),))  # fmt: skip
    update = ShareUpdate(state.snapshot_epoch, state.leader_epoch, start_offset, tuple(batches),
                         delivery_complete_count)  # fmt: skip
    return Result((ShareRecord(UPDATE, key, update),))


def _snapshot(
    key: ShareKey, state: ShareState | None, state_epoch: int, leader_epoch: int,
    start_offset: int, batches: Sequence[StateBatch], delivery_complete_count: int,
    now_ms: int,
) -> ShareRecord:  # fmt: skip
    if state is None:
        start = max(start_offset, 0) if start_offset != NO_OFFSET else 0
        value = ShareSnapshot(0, state_epoch, leader_epoch, start, now_ms, now_ms,
                              merge((), batches, start), delivery_complete_count)  # fmt: skip
        return ShareRecord(SNAPSHOT, key, value)
    start = state.start_offset if start_offset == NO_OFFSET else start_offset
    count = (state.delivery_complete_count if delivery_complete_count == NO_COUNT
             else delivery_complete_count)  # fmt: skip
    value = ShareSnapshot(
        state.snapshot_epoch + 1, state.state_epoch, state.leader_epoch, start,
        state.create_timestamp_ms, now_ms, merge(state.batches, batches, start), count,
    )  # fmt: skip
    return ShareRecord(SNAPSHOT, key, value)


def delete(shard: Shard, key: ShareKey) -> Result:
    """DeleteShareGroupState: tombstones of both keys (nothing to do without state)."""
    if key not in shard.states:
        return Result()
    return Result((ShareRecord(SNAPSHOT, key, None), ShareRecord(UPDATE, key, None)))


def summary(shard: Shard, key: ShareKey) -> ReadAnswer:
    """ReadShareGroupStateSummary: the epochs, start offset and delivery complete count,
    without the batches and without fencing anyone."""
    state = shard.states.get(key)
    if state is None:
        return ReadAnswer(0, NO_EPOCH, UNINITIALIZED, ())
    return ReadAnswer(state.state_epoch, state.leader_epoch, state.start_offset, (),
                      state.delivery_complete_count)  # fmt: skip
