"""One share partition on its leader: a share group's view of one topic partition (KIP-932,
Kafka's `SharePartition`). Pure: no log, no event loop; time comes in as `now_ms`.

It keeps the share-partition start offset (SPSO: every offset below it is done, acknowledged or
archived), the end offset (SPEO: the first offset never acquired) and, for each offset in
between that holds a record, its `InFlight` state (record_states.py), delivery count, holder
and acquisition lock deadline. An offset in [SPSO, SPEO) with no entry holds no record (a
control batch, or compacted away) and counts as done.

- `next_fetch_offset`: where a fetch reads the log from: the lowest AVAILABLE offset (a
  released or expired record to deliver again) or else SPEO.
- `acquire(member, batches, ...)`: takes, in offset order, the AVAILABLE records and the new
  ones (at or past SPEO) of the data batches read from there, up to `max_records`, and at most
  `max_record_locks` offsets in flight (SPEO - SPSO, Kafka's
  `group.share.partition.max.record.locks`); answers the acquired ranges with their delivery
  counts, as ShareFetch's AcquiredRecords.
- `acknowledge(member, first, last, types)`: ACCEPT / RELEASE / REJECT / GAP / RENEW for the
  member's own acquired records; anything else is INVALID_RECORD_STATE and changes nothing.
- `expire(now)`: records whose lock passed become AVAILABLE again (ARCHIVED at the delivery
  count limit); `release_member`: the same for a member that left.
After each change SPSO moves up over the done offsets at its front, which are then forgotten.

Two indexes spare every fetch and acknowledgement a scan of the window: `available`, the
AVAILABLE offsets (`next_fetch_offset`, `can_acquire`: normally empty), and `deadline_floor`,
at or below the earliest acquisition lock deadline (`expire` looks at the records only once
`now` reaches it, then sets it exactly; a lock renewed or released leaves it low, which costs
one look too many, never a lock expired late).

`state_batches` is what the leader persists through the share coordinator (the whole
[SPSO, SPEO) window, so the stored state has no holes), `from_state` what a new leader loads.

Invariants: SPSO <= SPEO; every entry's offset is in [SPSO, SPEO); an ACQUIRED entry has a
holder and a deadline; delivery counts never go down.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from broker.share.record_states import (
    ACKNOWLEDGE_TYPES,
    TERMINAL,
    Event,
    RecordState,
    next_state,
)

NONE = 0
NO_DEADLINE = 2**62  # no record acquired
INVALID_REQUEST = 42
INVALID_RECORD_STATE = 121


@dataclass(frozen=True, slots=True)
class ShareLimits:
    """A share group's settings that a share partition obeys (group.share.* broker settings,
    or the group's share.* configs)."""

    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_record_locks: int = 2_000


@dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int = 0
    member_id: str | None = None  # the holder while ACQUIRED
    lock_deadline_ms: int = 0  # while ACQUIRED


@dataclass(frozen=True, slots=True)
class Acquired:
    first_offset: int
    last_offset: int
    delivery_count: int


class SharePartition:
    def __init__(self, start_offset: int) -> None:
        self.start_offset = start_offset  # SPSO
        self.end_offset = start_offset  # SPEO
        self.records: dict[int, InFlight] = {}
        self.archived_at_limit = 0  # records archived by the delivery count limit
        self.archived = 0  # records archived here (rejected, or at the limit), since made
        self.available: set[int] = set()  # the AVAILABLE offsets
        self.deadline_floor = NO_DEADLINE  # <= every ACQUIRED record's lock deadline

    def next_fetch_offset(self) -> int:
        return min(self.available, default=self.end_offset)

    def in_flight(self) -> int:
        """Offsets between SPSO and SPEO (what `max_record_locks` bounds)."""
        return self.end_offset - self.start_offset

    def acquire(
        self, member_id: str, batches: Iterable[tuple[int, int]], max_records: int,
        limits: ShareLimits, now_ms: int, scanned_to: int | None = None,
    ) -> list[Acquired]:  # fmt: skip
        """Acquire records of `batches` ((first, last) offsets of the data batches read, in
        order) for `member_id`; the acquired ranges, each with one delivery count.
        `scanned_to`: the offset after the last batch read (control and aborted batches
        included): when nothing cut the acquisition short, SPEO moves up to it, so offsets
        that hold no record to deliver are passed over once, not read again."""
        taken: list[tuple[int, int]] = []  # (offset, delivery count)
        finished = self._take(member_id, batches, max_records, limits, now_ms, taken)
        if finished and scanned_to is not None and scanned_to > self.end_offset:
            self.end_offset = scanned_to
        self._advance()
        return _ranges(taken)

    def _take(
        self, member_id: str, batches: Iterable[tuple[int, int]], max_records: int,
        limits: ShareLimits, now_ms: int, taken: list[tuple[int, int]],
    ) -> bool:  # fmt: skip
        """Acquire into `taken`; False when a bound stopped it before the batches' end."""
        deadline = now_ms + limits.record_lock_duration_ms
        self.deadline_floor = min(self.deadline_floor, deadline)
        for first, last in batches:
            for offset in range(max(first, self.start_offset), last + 1):
                if len(taken) >= max_records:
                    return False
                if offset < self.end_offset:
                    entry = self.records.get(offset)
                    if entry is None or entry.state is not RecordState.AVAILABLE:
                        continue
                    self.available.discard(offset)
                elif offset - self.start_offset >= limits.max_record_locks:
                    return False
                else:
                    entry = self.records[offset] = InFlight(RecordState.AVAILABLE)
                    self.end_offset = offset + 1
                entry.state = RecordState.ACQUIRED
                entry.delivery_count += 1
                entry.member_id, entry.lock_deadline_ms = member_id, deadline
                taken.append((offset, entry.delivery_count))
        return True

    def can_acquire(self, limits: ShareLimits) -> bool:
        """Whether a fetch could acquire anything: a record AVAILABLE again, or room for new
        ones under `max_record_locks`."""
        if self.in_flight() < limits.max_record_locks:
            return True
        return bool(self.available)

    def acknowledge(
        self, member_id: str, first: int, last: int, types: Sequence[int],
        limits: ShareLimits, now_ms: int,
    ) -> int:  # fmt: skip
        """Apply one acknowledgement batch: `types` is one type for the whole range or one per
        offset. All or nothing: an error code (INVALID_REQUEST, INVALID_RECORD_STATE) leaves
        every record as it was."""
        count = last - first + 1
        if count <= 0 or len(types) not in (1, count) or not set(types) <= ACKNOWLEDGE_TYPES:
            return INVALID_REQUEST
        events = [Event(t) for t in types] if len(types) == count else [Event(types[0])] * count
        for offset, event in zip(range(first, last + 1), events, strict=True):
            entry = self.records.get(offset)
            if entry is None:
                if event is Event.GAP and self.start_offset <= offset < self.end_offset:
                    continue  # no record there, and the client says so
                return INVALID_RECORD_STATE
            if entry.state is not RecordState.ACQUIRED or entry.member_id != member_id:
                return INVALID_RECORD_STATE
        for offset, event in zip(range(first, last + 1), events, strict=True):
            entry = self.records.get(offset)
            if entry is not None:
                self._move(offset, entry, event, limits)
                if event is Event.RENEW:
                    entry.lock_deadline_ms = now_ms + limits.record_lock_duration_ms
        self._advance()
        return NONE

    def expire(self, now_ms: int, limits: ShareLimits) -> int:
        """Release the records whose acquisition lock has passed; how many there were."""
        if now_ms < self.deadline_floor:
            return 0
        acquired = [(o, e) for o, e in self.records.items() if e.state is RecordState.ACQUIRED]
        expired = [(o, e) for o, e in acquired if e.lock_deadline_ms <= now_ms]
        later = [e.lock_deadline_ms for _, e in acquired if e.lock_deadline_ms > now_ms]
        self.deadline_floor = min(later, default=NO_DEADLINE)
        for offset, entry in expired:
            self._move(offset, entry, Event.LOCK_EXPIRED, limits)
        if expired:
            self._advance()
        return len(expired)

    def release_member(self, member_id: str, limits: ShareLimits) -> int:
        """Release every record `member_id` holds (it left); how many there were."""
        held = [
            (o, e) for o, e in self.records.items()
            if e.state is RecordState.ACQUIRED and e.member_id == member_id
        ]  # fmt: skip
        for offset, entry in held:
            self._move(offset, entry, Event.MEMBER_GONE, limits)
        if held:
            self._advance()
        return len(held)

    def _move(self, offset: int, entry: InFlight, event: Event, limits: ShareLimits) -> None:
        after = next_state(entry.state, event, entry.delivery_count, limits.delivery_count_limit)
        assert after is not None, (entry, event)
        if after is RecordState.ARCHIVED and event is not Event.GAP:
            self.archived += 1
            if event is not Event.REJECT:
                self.archived_at_limit += 1
        entry.state = after
        if after is RecordState.AVAILABLE:
            self.available.add(offset)
        if after is not RecordState.ACQUIRED:
            entry.member_id, entry.lock_deadline_ms = None, 0

    def _advance(self) -> None:
        """Move SPSO up over the done offsets at the front, forgetting them."""
        while self.start_offset < self.end_offset:
            entry = self.records.get(self.start_offset)
            if entry is not None and entry.state not in TERMINAL:
                break
            self.records.pop(self.start_offset, None)
            self.start_offset += 1


# A persisted state batch: (first offset, last offset, delivery state, delivery count), the
# delivery state as Kafka persists it: 0 Available (an acquired record is persisted Available,
# so a new leader delivers it again with its count), 2 Acknowledged, 4 Archived.
StateRange = tuple[int, int, int, int]
_PERSISTED = {RecordState.AVAILABLE: 0, RecordState.ACQUIRED: 0, RecordState.ACKNOWLEDGED: 2,
              RecordState.ARCHIVED: 4}  # fmt: skip
_LOADED = {0: RecordState.AVAILABLE, 2: RecordState.ACKNOWLEDGED, 4: RecordState.ARCHIVED}


def from_state(start_offset: int, batches: Iterable[StateRange]) -> SharePartition:
    """A share partition as the share coordinator keeps it (a new leader's load): SPSO at
    `start_offset`, each batch's offsets in their state with their delivery count, and SPEO
    after the last batch. Offsets below SPSO, or in no batch, are left out (done)."""
    sp = SharePartition(start_offset)
    for first, last, state, count in batches:
        for offset in range(max(first, start_offset), last + 1):
            loaded = sp.records[offset] = InFlight(_LOADED.get(state, RecordState.ARCHIVED), count)
            if loaded.state is RecordState.AVAILABLE:
                sp.available.add(offset)
        sp.end_offset = max(sp.end_offset, last + 1)
    sp._advance()
    return sp


def state_batches(sp: SharePartition) -> tuple[list[StateRange], int]:
    """What to persist: every offset in [SPSO, SPEO) as ranges of one delivery state and count
    (an offset with no record as Archived, count 0), and how many of them are done (KIP-1226's
    delivery complete count)."""
    out: list[StateRange] = []
    done = 0
    first, run = sp.start_offset, (-1, -1)  # the current run's first offset, (state, count)
    for offset in range(sp.start_offset, sp.end_offset):
        entry = sp.records.get(offset)
        key = (4, 0) if entry is None else (_PERSISTED[entry.state], entry.delivery_count)
        done += key[0] != 0
        if key != run:
            if offset > first:
                out.append((first, offset - 1, *run))
            first, run = offset, key
    if sp.end_offset > first:
        out.append((first, sp.end_offset - 1, *run))
    return out, done


def _ranges(taken: list[tuple[int, int]]) -> list[Acquired]:
    """Consecutive offsets with the same delivery count, as ranges (one object per range)."""
    out: list[Acquired] = []
    if not taken:
        return out
    first, last, count = taken[0][0], taken[0][0], taken[0][1]
    for offset, c in taken[1:]:
        if offset == last + 1 and c == count:
            last = offset
            continue
        out.append(Acquired(first, last, count))
        first, last, count = offset, offset, c
    out.append(Acquired(first, last, count))
    return out
