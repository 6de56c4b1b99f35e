"""What a share fetch may acquire of the batches it read (pure): the data batches' offset
ranges, and the offset after the last whole batch, from the log's bytes (batch headers only,
no record is decoded).

Left out: control batches (transaction markers) and, with read_committed, the batches of
aborted transactions: `aborted` is the read's (producer id, first offset) list, as a Fetch
answer carries it, and a producer's batches from its first offset up to its next control
batch are aborted, as Kafka's consumer reads them. Those offsets are never delivered; the
share partition passes over them (share_partition.py `scanned_to`).

`covering` cuts a read down to the batches that hold the acquired offsets, as Kafka's
ShareFetchUtils slices the fetched records: a fetch reads up to its byte budget (a whole
megabyte of small records) but acquires at most `max_records` of it, and sending the rest made
every answer carry, and every client parse, many times the records it may deliver.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.batch import CONTROL_BIT, TRANSACTIONAL_BIT, iter_batches


def acquirable(
    records: bytes, aborted: Sequence[tuple[int, int]] | None = None
) -> tuple[list[tuple[int, int]], int | None]:
    """((first, last) of each deliverable batch, the offset after the last whole batch or
    None when there is none)."""
    pending = sorted(aborted or (), key=lambda a: a[1])  # (producer id, first offset)
    open_aborts: set[int] = set()
    out: list[tuple[int, int]] = []
    scanned_to: int | None = None
    for _, h in iter_batches(records, check_crc=False):
        while pending and pending[0][1] <= h.base_offset:
            open_aborts.add(pending.pop(0)[0])
        scanned_to = h.next_offset
        if h.attributes & CONTROL_BIT:
            open_aborts.discard(h.producer_id)
            continue
        if h.attributes & TRANSACTIONAL_BIT and h.producer_id in open_aborts:
            continue
        out.append((h.base_offset, h.last_offset))
    return out, scanned_to


def covering(records: bytes, first: int, last: int) -> bytes:
    """The whole batches of `records` from the one that holds `first` to the one that holds
    `last` (and any between them); empty when none does."""
    start = end = -1
    for pos, h in iter_batches(records, check_crc=False):
        if h.last_offset < first:
            continue
        if h.base_offset > last:
            break
        if start < 0:
            start = pos
        end = pos + h.size
    return records[start:end] if start >= 0 else b""


def read_budget(
    bytes_per_offset: float, fetch_offset: int, end_offset: int, max_records: int, max_bytes: int
) -> int:
    """The bytes a share fetch from `fetch_offset` reads (no estimate yet: `max_bytes`)."""
    if bytes_per_offset <= 0:
        return max_bytes
    offsets = max(0, end_offset - fetch_offset) + max_records
    return max(1, min(max_bytes, int(bytes_per_offset * offsets * 1.25)))
