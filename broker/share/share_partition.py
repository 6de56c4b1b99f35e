"""One share partition on its leader: a share group's view of one topic partition (KIP-932,
Kafka's `SharePartition`). Pure: no log, no event loop; time comes in as `now_ms`.

It keeps the share-partition start offset (SPSO: every offset below it is done, acknowledged or
archived), the end offset (SPEO: the first offset never acquired) and, in between, the records
as in-flight batches (`InFlightBatch`, Kafka's InFlightBatch): sorted, disjoint ranges of
offsets that hold records, each in one `InFlight` state (record_states.py), delivery count,
holder and acquisition lock deadline. The records one fetch acquires are one batch; an
acknowledgement, expiry or release that covers only part of a batch splits it at the range's
ends (`_isolate`), and neighbours that agree again are merged (`_coalesce`), so acquiring 500
records and accepting them as one range is a few objects, not 500. An offset in [SPSO, SPEO)
in no batch holds no record (a control batch, or compacted away) and counts as done.
`records` shows them offset by offset (a view, for tests and logs).

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

Two indexes spare every fetch and acknowledgement a scan of the batches: `available_count`,
the AVAILABLE offsets (`next_fetch_offset`, `can_acquire`: normally 0), and `deadline_floor`,
at or below the earliest acquisition lock deadline (`expire` looks at the records only once
`now` reaches it, then sets it exactly; a lock renewed or released leaves it low, which costs
one look too many, never a lock expired late).

`state_batches` is what the leader persists through the share coordinator (the whole
[SPSO, SPEO) window, so the stored state has no holes), `from_state` what a new leader loads.

Invariants: SPSO <= SPEO; every batch is in [SPSO, SPEO), the first not done; no two adjacent
batches in the same state; an ACQUIRED batch has a holder and a deadline; delivery counts never
go down.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
    """One offset's state, as `SharePartition.records` shows it."""

    state: RecordState
    delivery_count: int = 0
    member_id: str | None = None  # the holder while ACQUIRED
    lock_deadline_ms: int = 0  # while ACQUIRED


@dataclass(slots=True)
class InFlightBatch:
    """Offsets first..last (inclusive) that hold records, all in one state (Kafka's
    InFlightBatch): split where one offset's state diverges, merged again when equal."""

    first: int
    last: int
    state: RecordState
    delivery_count: int = 0
    member_id: str | None = None
    lock_deadline_ms: int = 0

    def same(self, other: InFlightBatch) -> bool:
        return (self.state, self.delivery_count, self.member_id, self.lock_deadline_ms) == (
            other.state, other.delivery_count, other.member_id, other.lock_deadline_ms)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Acquired:
    first_offset: int
    last_offset: int
    delivery_count: int


def _last(b: InFlightBatch) -> int:
    return b.last


class SharePartition:
    def __init__(self, start_offset: int) -> None:
        self.start_offset = start_offset  # SPSO
        self.end_offset = start_offset  # SPEO
        self.batches: list[InFlightBatch] = []  # sorted, disjoint, in [SPSO, SPEO)
        self.archived_at_limit = 0  # records archived by the delivery count limit
        self.archived = 0  # records archived here (rejected, or at the limit), since made
        self.available_count = 0  # AVAILABLE offsets
        self.deadline_floor = NO_DEADLINE  # <= every ACQUIRED record's lock deadline

    @property
    def records(self) -> RecordsView:
        """The offsets that hold a record, each with its state (a view, for tests and logs)."""
        return RecordsView(self)

    @property
    def available(self) -> set[int]:
        """The AVAILABLE offsets."""
        if not self.available_count:
            return set()
        return {o for b in self.batches if b.state is RecordState.AVAILABLE
                for o in range(b.first, b.last + 1)}  # fmt: skip

    def next_fetch_offset(self) -> int:
        if self.available_count:
            for b in self.batches:
                if b.state is RecordState.AVAILABLE:
                    return b.first
        return self.end_offset

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
        taken: list[Acquired] = []
        finished = self._take(member_id, batches, max_records, limits, now_ms, taken)
        if finished and scanned_to is not None and scanned_to > self.end_offset:
            self.end_offset = scanned_to
        self._advance()
        return _ranges(taken)

    def _take(
        self, member_id: str, batches: Iterable[tuple[int, int]], max_records: int,
        limits: ShareLimits, now_ms: int, taken: list[Acquired],
    ) -> bool:  # fmt: skip
        """Acquire into `taken`; False when a bound stopped it before the batches' end."""
        deadline = now_ms + limits.record_lock_duration_ms
        self.deadline_floor = min(self.deadline_floor, deadline)
        left = max_records
        for first, last in batches:
            lo = max(first, self.start_offset)
            if lo > last:
                continue
            if left <= 0:
                return False
            if lo < self.end_offset:  # records delivered before: only AVAILABLE ones
                hi = min(last, self.end_offset - 1)
                if self.available_count:
                    left = self._take_available(member_id, lo, hi, left, limits, deadline, taken)
                    if left <= 0 and taken[-1].last_offset < last:
                        return False
                lo = hi + 1
                if lo > last:
                    continue
            # new records, from SPEO on
            hi = min(last, lo + left - 1, self.start_offset + limits.max_record_locks - 1)
            if hi >= lo:
                self._append(member_id, lo, hi, deadline)
                taken.append(Acquired(lo, hi, 1))
                left -= hi - lo + 1
            if hi < last:
                return False
        return True

    def _take_available(
        self, member_id: str, lo: int, hi: int, left: int, limits: ShareLimits, deadline: int,
        taken: list[Acquired],
    ) -> int:  # fmt: skip
        """Acquire the AVAILABLE records in [lo, hi], at most `left`; what is left."""
        i = start = bisect.bisect_left(self.batches, lo, key=_last)
        while i < len(self.batches) and left > 0:
            b = self.batches[i]
            if b.first > hi:
                break
            if b.state is RecordState.AVAILABLE:
                a = max(b.first, lo)
                z = min(b.last, hi, a + left - 1)
                i, _ = self._isolate(a, z)
                b = self.batches[i]
                self._move(b, Event.ACQUIRE, limits)
                b.member_id, b.lock_deadline_ms = member_id, deadline
                taken.append(Acquired(a, z, b.delivery_count))
                left -= z - a + 1
            i += 1
        self._coalesce(start - 1, i + 1)
        return left

    def _append(self, member_id: str, lo: int, hi: int, deadline: int) -> None:
        """New records lo..hi acquired: SPEO moves past them."""
        last = self.batches[-1] if self.batches else None
        if (last is not None and last.last + 1 == lo and last.state is RecordState.ACQUIRED
                and last.delivery_count == 1 and last.member_id == member_id
                and last.lock_deadline_ms == deadline):  # fmt: skip
            last.last = hi
        else:
            self.batches.append(InFlightBatch(lo, hi, RecordState.ACQUIRED, 1, member_id, deadline))
        self.end_offset = hi + 1

    def can_acquire(self, limits: ShareLimits) -> bool:
        """Whether a fetch could acquire anything: a record AVAILABLE again, or room for new
        ones under `max_record_locks`."""
        if self.in_flight() < limits.max_record_locks:
            return True
        return self.available_count > 0

    def acknowledge(
        self, member_id: str, first: int, last: int, types: Sequence[int],
        limits: ShareLimits, now_ms: int,
    ) -> int:  # fmt: skip
        """Apply one acknowledgement batch: `types` is one type for the whole range or one per
        offset. All or nothing: an error code (INVALID_REQUEST, INVALID_RECORD_STATE) leaves
        every record as it was."""
        count = last - first + 1
        kinds = set(types)
        if count <= 0 or len(types) not in (1, count) or not kinds <= ACKNOWLEDGE_TYPES:
            return INVALID_REQUEST
        if len(kinds) > 1:  # one type per offset, not all the same: a run per type
            runs, at = [], first
            for t, group in itertools.groupby(types):
                n = sum(1 for _ in group)
                runs.append((at, at + n - 1, Event(t)))
                at += n
        else:
            runs = [(first, last, Event(types[0]))]
        for a, z, event in runs:
            if not self._may_acknowledge(member_id, a, z, event):
                return INVALID_RECORD_STATE
        for a, z, event in runs:
            i, j = self._isolate(a, z)
            for b in self.batches[i:j]:
                self._move(b, event, limits)
                if event is Event.RENEW:
                    b.lock_deadline_ms = now_ms + limits.record_lock_duration_ms
            self._coalesce(i - 1, j + 1)
        self._advance()
        return NONE

    def _may_acknowledge(self, member_id: str, first: int, last: int, event: Event) -> bool:
        """Whether every offset in [first, last] is the member's ACQUIRED record, or holds no
        record within [SPSO, SPEO) and `event` is GAP."""
        gap_ok = event is Event.GAP and self.start_offset <= first and last < self.end_offset
        at = first  # the first offset not yet checked
        i = bisect.bisect_left(self.batches, first, key=_last)
        while i < len(self.batches) and at <= last:
            b = self.batches[i]
            if b.first > last:
                break
            if b.first > at and not gap_ok:
                return False
            if b.state is not RecordState.ACQUIRED or b.member_id != member_id:
                return False
            at = b.last + 1
            i += 1
        return at > last or gap_ok

    def expire(self, now_ms: int, limits: ShareLimits) -> int:
        """Release the records whose acquisition lock has passed; how many there were."""
        if now_ms < self.deadline_floor:
            return 0
        expired = 0
        later = NO_DEADLINE
        for b in self.batches:
            if b.state is not RecordState.ACQUIRED:
                continue
            if b.lock_deadline_ms <= now_ms:
                expired += b.last - b.first + 1
                self._move(b, Event.LOCK_EXPIRED, limits)
            else:
                later = min(later, b.lock_deadline_ms)
        self.deadline_floor = later
        if expired:
            self._coalesce(0, len(self.batches))
            self._advance()
        return expired

    def release_member(self, member_id: str, limits: ShareLimits) -> int:
        """Release every record `member_id` holds (it left); how many there were."""
        held = 0
        for b in self.batches:
            if b.state is RecordState.ACQUIRED and b.member_id == member_id:
                held += b.last - b.first + 1
                self._move(b, Event.MEMBER_GONE, limits)
        if held:
            self._coalesce(0, len(self.batches))
            self._advance()
        return held

    def _move(self, b: InFlightBatch, event: Event, limits: ShareLimits) -> None:
        """Every offset of `b` through `event` (record_states.py's table)."""
        after = next_state(b.state, event, b.delivery_count, limits.delivery_count_limit)
        assert after is not None, (b, event)
        n = b.last - b.first + 1
        if after is RecordState.ARCHIVED and event is not Event.GAP:
            self.archived += n
            if event is not Event.REJECT:
                self.archived_at_limit += n
        if b.state is RecordState.AVAILABLE:
            self.available_count -= n
        if after is RecordState.AVAILABLE:
            self.available_count += n
        if event is Event.ACQUIRE:
            b.delivery_count += 1
        b.state = after
        if after is not RecordState.ACQUIRED:
            b.member_id, b.lock_deadline_ms = None, 0

    def _cut(self, offset: int) -> None:
        """Split the batch holding both offset - 1 and offset, if there is one."""
        i = bisect.bisect_left(self.batches, offset, key=_last)
        if i < len(self.batches):
            b = self.batches[i]
            if b.first < offset <= b.last:
                tail = InFlightBatch(offset, b.last, b.state, b.delivery_count, b.member_id,
                                     b.lock_deadline_ms)  # fmt: skip
                b.last = offset - 1
                self.batches.insert(i + 1, tail)

    def _isolate(self, first: int, last: int) -> tuple[int, int]:
        """Split batches at `first` and after `last`; the index range of those within."""
        self._cut(first)
        self._cut(last + 1)
        i = bisect.bisect_left(self.batches, first, key=_last)
        j = bisect.bisect_right(self.batches, last, key=_last)
        return i, j

    def _coalesce(self, i: int, j: int) -> None:
        """Merge adjacent batches in the same state among batches[i:j]."""
        k = max(i, 0)
        j = min(j, len(self.batches))
        while k + 1 < j:
            b, c = self.batches[k], self.batches[k + 1]
            if b.last + 1 == c.first and b.same(c):
                b.last = c.last
                del self.batches[k + 1]
                j -= 1
            else:
                k += 1

    def _advance(self) -> None:
        """Move SPSO up over the done offsets at the front, forgetting them."""
        k = 0
        for b in self.batches:
            if b.state not in TERMINAL:
                break
            k += 1
        if k:
            self.start_offset = max(self.start_offset, self.batches[k - 1].last + 1)
            del self.batches[:k]
        if self.batches:
            self.start_offset = max(self.start_offset, self.batches[0].first)
        else:
            self.start_offset = self.end_offset


class RecordsView(Mapping[int, InFlight]):
    """offset -> InFlight (a copy) for every offset that holds a record in [SPSO, SPEO)."""

    def __init__(self, sp: SharePartition) -> None:
        self._sp = sp

    def __getitem__(self, offset: int) -> InFlight:
        batches = self._sp.batches
        i = bisect.bisect_left(batches, offset, key=_last)
        if i < len(batches) and batches[i].first <= offset:
            b = batches[i]
            return InFlight(b.state, b.delivery_count, b.member_id, b.lock_deadline_ms)
        raise KeyError(offset)

    def __iter__(self) -> Iterator[int]:
        for b in list(self._sp.batches):
            yield from range(b.first, b.last + 1)

    def __len__(self) -> int:
        return sum(b.last - b.first + 1 for b in self._sp.batches)

    def clear(self) -> None:
        """Forget every record (tests: to show a step looks at none)."""
        self._sp.batches.clear()
        self._sp.available_count = 0


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
    for first, last, state, count in sorted(batches):
        first = max(first, start_offset, sp.end_offset)
        if first > last:
            continue
        loaded = InFlightBatch(first, last, _LOADED.get(state, RecordState.ARCHIVED), count)
        if loaded.state is RecordState.AVAILABLE:
            sp.available_count += last - first + 1
        sp.batches.append(loaded)
        sp.end_offset = last + 1
    sp._coalesce(0, len(sp.batches))
    sp._advance()
    return sp


def state_batches(sp: SharePartition) -> tuple[list[StateRange], int]:
    """What to persist: every offset in [SPSO, SPEO) as ranges of one delivery state and count
    (an offset with no record as Archived, count 0), and how many of them are done (KIP-1226's
    delivery complete count)."""
    out: list[StateRange] = []
    done = 0
    at = sp.start_offset

    def add(first: int, last: int, state: int, count: int) -> None:
        if out and out[-1][1] + 1 == first and out[-1][2:] == (state, count):
            out[-1] = (out[-1][0], last, state, count)
        else:
            out.append((first, last, state, count))

    for b in sp.batches:
        if b.first > at:
            add(at, b.first - 1, 4, 0)
            done += b.first - at
        state = _PERSISTED[b.state]
        add(b.first, b.last, state, b.delivery_count)
        if state:
            done += b.last - b.first + 1
        at = b.last + 1
    if sp.end_offset > at:
        add(at, sp.end_offset - 1, 4, 0)
        done += sp.end_offset - at
    return out, done


def _ranges(taken: list[Acquired]) -> list[Acquired]:
    """Adjacent acquired ranges with the same delivery count, merged."""
    out: list[Acquired] = []
    for a in taken:
        if (
            out
            and out[-1].last_offset + 1 == a.first_offset
            and out[-1].delivery_count == a.delivery_count
        ):
            out[-1] = Acquired(out[-1].first_offset, a.last_offset, a.delivery_count)
        else:
            out.append(a)
    return out
