"""read_committed on the client (KIP-98): which fetched batches belong to aborted transactions.

A read_committed fetch stops at the partition's last stable offset, so every transaction in
the answer has ended; the broker lists the aborted ones that overlap it (`aborted_transactions`:
producer id and the transaction's first offset). The records of those are still in the log, so
the consumer drops them, as Kafka's fetcher does (CompletedFetch.nextFetchedBatch):

    walk the batches in offset order; for a batch with a producer id,
      first move every aborted transaction whose first offset is at or before the batch's last
      offset into that producer's "aborted" set (they are ordered by first offset);
      an ABORT marker (control batch) of a producer in the set ends its aborted range: remove it;
      a transactional data batch of a producer in the set is dropped.

Whole batches are kept or dropped by their headers (a producer's transaction never shares a
batch with anything else), so no record is looked at in Python; control batches (markers) are
never records and are skipped by protocol/columns.py for either isolation level. The position
still moves past every batch, dropped or not (the caller's `next_offset`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from protocol.batch import CONTROL_BIT, TRANSACTIONAL_BIT, BatchHeader
from protocol.control import parse_marker

READ_UNCOMMITTED = "read_uncommitted"
READ_COMMITTED = "read_committed"
ISOLATION_LEVELS = {READ_UNCOMMITTED: 0, READ_COMMITTED: 1}  # Kafka's names and wire values


def isolation_level_code(name: str) -> int:
    """The wire value of Kafka's isolation level name; ValueError for anything else."""
    if name not in ISOLATION_LEVELS:
        raise ValueError(
            f"isolation_level must be {READ_UNCOMMITTED!r} or {READ_COMMITTED!r}, not {name!r}"
        )
    return ISOLATION_LEVELS[name]


def drop_aborted(
    data: bytes | bytearray | memoryview,
    batches: Sequence[tuple[int, BatchHeader]],
    aborted: Iterable[tuple[int, int]],
) -> list[tuple[int, BatchHeader]]:
    """The (position, header) pairs of `batches` (scanned from `data`, in offset order) that do
    not belong to an aborted transaction; `aborted` is (producer id, first offset) pairs.
    Raises InvalidBatchError for a control batch that is not a marker."""
    pending = sorted(aborted, key=lambda a: a[1])
    if not pending:
        return list(batches)
    at = 0
    aborting: set[int] = set()  # producers inside an aborted range
    kept: list[tuple[int, BatchHeader]] = []
    for pos, h in batches:
        pid = h.producer_id
        if pid >= 0:
            while at < len(pending) and pending[at][1] <= h.last_offset:
                aborting.add(pending[at][0])
                at += 1
            if h.attributes & CONTROL_BIT:
                if pid in aborting and not parse_marker(data, pos).commit:
                    aborting.discard(pid)  # its ABORT marker: the aborted range ends here
                continue  # never a record
            if pid in aborting and h.attributes & TRANSACTIONAL_BIT:
                continue
        kept.append((pos, h))
    return kept
