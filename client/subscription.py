"""A consumer's subscription state: which partitions it reads, and where it is in each.

Per assigned partition it keeps the fetch *position* (the offset of the next record to hand to
the user), whether the user paused it, whether its position must be reset (and to which end),
and the last high watermark seen (for lag). Seed 001: the position lives here, the fetcher only
reads it to build requests and advances it as records are handed out, never as they arrive.

Manual assignment only for now (`assign`); issue 5 adds group subscriptions (`subscribe`), which
will call the same `assign` with what the coordinator hands out.

A partition is *fetchable* when it is assigned, not paused and has a position (no reset pending).
Pure state, no I/O; tests drive it directly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from client.types import TopicPartition, partition_words
from protocol.errors import UsageError

EARLIEST = "earliest"
LATEST = "latest"
NONE = "none"  # no automatic reset: an out-of-range position is the user's to fix
RESET_STRATEGIES = (EARLIEST, LATEST, NONE)


@dataclass(slots=True)
class PartitionState:
    position: int | None = None
    paused: bool = False
    reset_to: str | None = None  # EARLIEST / LATEST while a reset is pending
    high_watermark: int = -1


class SubscriptionState:
    def __init__(self, auto_offset_reset: str = LATEST) -> None:
        if auto_offset_reset not in RESET_STRATEGIES:
            raise UsageError(f"auto_offset_reset must be one of {RESET_STRATEGIES}")
        self.auto_offset_reset = auto_offset_reset
        self._parts: dict[TopicPartition, PartitionState] = {}

    # ----- assignment -------------------------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Replace the assignment; partitions kept keep their position and pause state."""
        new: dict[TopicPartition, PartitionState] = {}
        for tp in partitions:
            tp = _check_tp(tp)
            new[tp] = self._parts.get(tp) or PartitionState()
        self._parts = new

    def assignment(self) -> set[TopicPartition]:
        return set(self._parts)

    def topics(self) -> set[str]:
        return {tp.topic for tp in self._parts}

    def is_assigned(self, tp: TopicPartition) -> bool:
        return tp in self._parts

    # ----- positions --------------------------------------------------------------------------

    def seek(self, tp: TopicPartition, offset: int) -> None:
        if offset < 0:
            raise UsageError(f"cannot seek {partition_words(tp)} to negative offset {offset}")
        state = self._state(tp)
        state.position = offset
        state.reset_to = None

    def request_reset(self, tp: TopicPartition, strategy: str | None = None) -> None:
        """Reset `tp` to the earliest or latest offset before it is fetched again."""
        strategy = strategy or self.auto_offset_reset
        if strategy not in (EARLIEST, LATEST):
            raise UsageError(f"cannot reset {partition_words(tp)} with strategy {strategy!r}")
        state = self._state(tp)
        state.position = None
        state.reset_to = strategy

    def position(self, tp: TopicPartition) -> int | None:
        return self._state(tp).position

    def advance(self, tp: TopicPartition, offset: int) -> None:
        """Records up to offset-1 were handed out: the next one is `offset`."""
        state = self._parts.get(tp)
        if state is not None:
            state.position = offset

    def needs_position(self) -> list[TopicPartition]:
        """Assigned partitions with no position: a reset pending, or never positioned."""
        return [tp for tp, s in self._parts.items() if s.position is None]

    def reset_strategy(self, tp: TopicPartition) -> str:
        return self._state(tp).reset_to or self.auto_offset_reset

    def set_high_watermark(self, tp: TopicPartition, high_watermark: int) -> None:
        state = self._parts.get(tp)
        if state is not None:
            state.high_watermark = high_watermark

    def high_watermark(self, tp: TopicPartition) -> int:
        return self._state(tp).high_watermark

    # ----- pausing ----------------------------------------------------------------------------

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            self._state(tp).paused = True

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            self._state(tp).paused = False

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, s in self._parts.items() if s.paused}

    def is_paused(self, tp: TopicPartition) -> bool:
        state = self._parts.get(tp)
        return state is not None and state.paused

    # ----- fetching ---------------------------------------------------------------------------

    def fetchable(self) -> list[TopicPartition]:
        return [tp for tp, s in self._parts.items() if not s.paused and s.position is not None]

    def is_fetchable(self, tp: TopicPartition) -> bool:
        state = self._parts.get(tp)
        return state is not None and not state.paused and state.position is not None

    def _state(self, tp: TopicPartition) -> PartitionState:
        state = self._parts.get(tp)
        if state is None:
            raise UsageError(f"{partition_words(tp)} is not assigned to this consumer")
        return state


def _check_tp(tp: object) -> TopicPartition:
    if not (
        isinstance(tp, tuple)
        and len(tp) == 2
        and isinstance(tp[0], str)
        and isinstance(tp[1], int)
        and tp[1] >= 0
    ):
        raise UsageError(f"expected TopicPartition(topic, partition), got {tp!r}")
    return TopicPartition(tp[0], tp[1])
