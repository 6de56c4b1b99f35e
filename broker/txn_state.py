"""Transactions of one partition (KIP-98): the offsets that bound a read_committed consumer.

Pure arithmetic, fed by the producer table (broker/producer_state.py) in offset order:

- an **ongoing** transaction starts at its producer's first transactional batch
  (`begin(pid, first_offset)`) and ends at its marker (`complete`);
- a **completed** transaction whose marker is not yet below the high watermark is
  **unreplicated**: it still holds the last stable offset down at its first offset, since a
  new leader might not have the marker (Kafka's `unreplicatedTxns`);
  `on_high_watermark(hw)` releases those whose marker offset is below `hw`.

    first unstable offset = min(first offset of an ongoing txn,
                                first offset of an unreplicated completed txn)   (None: none)
    last stable offset    = min(first unstable offset, high watermark)

Ongoing transactions begin in offset order, so they sit in a queue by first offset (a producer
has at most one): the oldest live one is at the front (`_ongoing_order`, entries whose producer
has since completed are skipped lazily: amortised O(1)). Completed transactions end in marker
order, so the unreplicated ones leave from the front of a queue as the HW passes their markers;
a monotonic queue of first offsets beside it gives their minimum in O(1) (each entry is pushed
and popped once).

`aborted_in_range` is Kafka's `collectAbortedTransactions` filter over a segment's index
entries; `last_stable_offset_for_index` is Kafka's `lastStableOffset(completedTxn)`: what a
`.txnindex` entry records for an abort (the first offset of the next other ongoing transaction,
else the marker's offset + 1).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import NamedTuple


class CompletedTxn(NamedTuple):
    """A transaction its marker ended: first data offset to the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    is_abort: bool


class AbortedTxn(NamedTuple):
    """One `.txnindex` entry (broker/log/txn_index.py)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class OngoingTxn(NamedTuple):
    producer_id: int
    first_offset: int
    start_ms: int  # when its first batch was appended (DescribeTransactions / -Producers)


class TxnTracker:
    """Ongoing and unreplicated transactions, each kept in offset order."""

    def __init__(self) -> None:
        self.ongoing: dict[int, OngoingTxn] = {}  # producer id -> its open transaction
        self._ongoing_order: deque[OngoingTxn] = deque()  # by first offset; may hold stale ones
        self.unreplicated: deque[CompletedTxn] = deque()  # by marker offset
        self._unreplicated_min: deque[CompletedTxn] = deque()  # first offsets increasing

    def clear(self) -> None:
        self.ongoing.clear()
        self._ongoing_order.clear()
        self.unreplicated.clear()
        self._unreplicated_min.clear()

    def begin(self, producer_id: int, first_offset: int, start_ms: int) -> None:
        assert producer_id not in self.ongoing, f"producer {producer_id} has an open txn"
        txn = OngoingTxn(producer_id, first_offset, start_ms)
        assert not self._ongoing_order or self._ongoing_order[-1].first_offset < first_offset
        self.ongoing[producer_id] = txn
        self._ongoing_order.append(txn)

    def complete(self, txn: CompletedTxn, high_watermark: int | None = None) -> None:
        """The marker of `txn` was appended; unreplicated until the HW passes its offset."""
        open_txn = self.ongoing.pop(txn.producer_id, None)
        assert open_txn is None or open_txn.first_offset == txn.first_offset
        assert not self.unreplicated or self.unreplicated[-1].last_offset < txn.last_offset
        if high_watermark is not None and txn.last_offset < high_watermark:
            return
        self.unreplicated.append(txn)
        while self._unreplicated_min and self._unreplicated_min[-1].first_offset >= (
            txn.first_offset
        ):
            self._unreplicated_min.pop()
        self._unreplicated_min.append(txn)

    def on_high_watermark(self, high_watermark: int) -> bool:
        """Release the completed transactions whose marker is below the HW; True if any."""
        moved = False
        while self.unreplicated and self.unreplicated[0].last_offset < high_watermark:
            gone = self.unreplicated.popleft()
            if self._unreplicated_min and self._unreplicated_min[0] is gone:
                self._unreplicated_min.popleft()
            moved = True
        return moved

    def first_ongoing(self) -> OngoingTxn | None:
        order = self._ongoing_order
        while order and self.ongoing.get(order[0].producer_id) is not order[0]:
            order.popleft()
        return order[0] if order else None

    def first_unstable_offset(self) -> int | None:
        ongoing = self.first_ongoing()
        candidates = [] if ongoing is None else [ongoing.first_offset]
        if self._unreplicated_min:
            candidates.append(self._unreplicated_min[0].first_offset)
        return min(candidates) if candidates else None

    def next_other_ongoing(self, producer_id: int) -> int | None:
        """The first offset of the oldest ongoing transaction of another producer."""
        self.first_ongoing()
        for txn in self._ongoing_order:
            if txn.producer_id != producer_id and self.ongoing.get(txn.producer_id) is txn:
                return txn.first_offset
        return None

    def ongoing_in_order(self) -> Iterator[OngoingTxn]:
        return iter(sorted(self.ongoing.values(), key=lambda t: t.first_offset))


def last_stable_offset(first_unstable: int | None, high_watermark: int) -> int:
    """What a read_committed consumer may read below."""
    return high_watermark if first_unstable is None else min(first_unstable, high_watermark)


def last_stable_offset_for_index(txn: CompletedTxn, next_other_ongoing: int | None) -> int:
    """The LSO a `.txnindex` entry records for an abort (Kafka's lastStableOffset)."""
    return txn.last_offset + 1 if next_other_ongoing is None else next_other_ongoing


def aborted_in_range(
    entries: Iterable[AbortedTxn], start_offset: int, upper_offset: int
) -> list[tuple[int, int]]:
    """(producer id, first offset) of each aborted txn overlapping [start, upper): its marker
    at or after `start` and its first offset before `upper` (Kafka's
    collectAbortedTransactions over one segment's index)."""
    return [
        (e.producer_id, e.first_offset)
        for e in entries
        if e.last_offset >= start_offset and e.first_offset < upper_offset
    ]
