"""A share consumer's acknowledgement bookkeeping (KIP-932, Kafka's ShareConsumerImpl and
ShareInFlightBatch), pure: which records of the last poll are still to be acknowledged, which
acknowledgements wait to be sent, and the batches they are sent as.

`share.acknowledgement.mode` as Kafka's client:
- implicit (the default): the records of a poll are accepted by the next poll, `commit_sync`,
  `commit_async` or `close` (`settle`); `acknowledge` is refused.
- explicit: each record of a poll is acknowledged by `acknowledge(record, type)` before the
  next poll, which is refused while one is left (`settle`); commit and close send what was
  acknowledged.

Refusals raise ShareStateError, the equivalent of Kafka's IllegalStateException: acknowledging
in implicit mode, a record that is not one of the last poll's (or was already acknowledged),
an unknown type, or polling with records of the last poll unacknowledged in explicit mode.

Offsets acquired without a record (compacted away, or a transaction marker) are sent as GAP
(`gaps`), as Kafka's client does. `take` hands out the waiting acknowledgements per partition
as (first, last, types) batches: runs of consecutive offsets, each with one type for the run
when all agree, else one type per offset.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from protocol.errors import UsageError

GAP, ACCEPT, RELEASE, REJECT = 0, 1, 2, 3
TYPES = {"accept": ACCEPT, "release": RELEASE, "reject": REJECT}
IMPLICIT, EXPLICIT = "implicit", "explicit"
MODES = (IMPLICIT, EXPLICIT)
Part = tuple[str, int]  # (topic, partition)
Batch = tuple[int, int, tuple[int, ...]]  # (first offset, last offset, types)


class ShareStateError(UsageError):
    """The share consumer was used in a way its state does not allow (Kafka's
    IllegalStateException): see the module's docstring."""


class ShareRecord(NamedTuple):
    """One record a share consumer received, and how many times it was delivered."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: object
    delivery_count: int


class ShareAcks:
    def __init__(self, mode: str = IMPLICIT) -> None:
        if mode not in MODES:
            raise UsageError(f"share.acknowledgement.mode must be one of {', '.join(MODES)}, "
                             f"not {mode!r}")  # fmt: skip
        self.mode = mode
        self._in_flight: dict[Part, set[int]] = {}  # the last poll's, not yet acknowledged
        self._waiting: dict[Part, dict[int, int]] = {}  # offset -> type, to send

    def delivered(self, records: Iterable[ShareRecord]) -> None:
        """A poll handed these out: each is to be acknowledged before the next."""
        for r in records:
            self._in_flight.setdefault((r.topic, r.partition), set()).add(r.offset)

    def gaps(self, part: Part, offsets: Iterable[int]) -> None:
        """Acquired offsets with no record: acknowledged as GAP."""
        waiting = self._waiting.setdefault(part, {})
        for offset in offsets:
            waiting[offset] = GAP

    def acknowledge(self, record: ShareRecord, kind: str | int = "accept") -> None:
        if self.mode == IMPLICIT:
            raise ShareStateError("acknowledge() needs share.acknowledgement.mode=explicit: "
                                  "implicit acknowledgement is being used")  # fmt: skip
        code = TYPES.get(kind) if isinstance(kind, str) else kind
        if code not in (ACCEPT, RELEASE, REJECT):
            raise ShareStateError(f"unknown acknowledgement type {kind!r}: accept, release "
                                  "or reject")  # fmt: skip
        part = (record.topic, record.partition)
        offsets = self._in_flight.get(part)
        if offsets is None or record.offset not in offsets:
            raise ShareStateError("The record cannot be acknowledged: it is not one of the "
                                  "last poll's, or it was acknowledged already.")  # fmt: skip
        offsets.discard(record.offset)
        self._waiting.setdefault(part, {})[record.offset] = code

    def settle(self) -> None:
        """Before a poll, commit or close: implicit mode accepts what the last poll handed
        out; explicit mode refuses while any of it is unacknowledged."""
        left = {p: o for p, o in self._in_flight.items() if o}
        if left and self.mode == EXPLICIT:
            count = sum(len(o) for o in left.values())
            raise ShareStateError(f"All records must be acknowledged in explicit "
                                  f"acknowledgement mode ({count} of the last poll's are "
                                  "not).")  # fmt: skip
        for part, offsets in left.items():
            waiting = self._waiting.setdefault(part, {})
            for offset in offsets:
                waiting[offset] = ACCEPT
        self._in_flight = {}

    def forget(self, parts: Iterable[Part]) -> None:
        """Partitions no longer fetched (their records go back when their locks expire)."""
        for part in parts:
            self._in_flight.pop(part, None)
            self._waiting.pop(part, None)

    def has_waiting(self) -> bool:
        return any(self._waiting.values())

    def take(self, parts: Iterable[Part] | None = None) -> dict[Part, list[Batch]]:
        """The waiting acknowledgements (of `parts`, or all) as batches; no longer waiting."""
        chosen = list(self._waiting) if parts is None else [p for p in parts if p in self._waiting]
        out = {}
        for part in chosen:
            waiting = self._waiting.pop(part)
            if waiting:
                out[part] = batches(waiting)
        return out


def batches(types_by_offset: dict[int, int]) -> list[Batch]:
    """Runs of consecutive offsets, one type for a run whose types agree, else one per offset."""
    out: list[Batch] = []
    run: list[tuple[int, int]] = []
    for offset, kind in sorted(types_by_offset.items()):
        if run and offset != run[-1][0] + 1:
            out.append(_batch(run))
            run = []
        run.append((offset, kind))
    if run:
        out.append(_batch(run))
    return out


def _batch(run: list[tuple[int, int]]) -> Batch:
    kinds = tuple(k for _, k in run)
    one = kinds if len(set(kinds)) > 1 else kinds[:1]
    return run[0][0], run[-1][0], one
