"""The log's transaction helpers (KIP-98), kept out of log.py: reading stored batches for the
producer table's replay, and the per-segment `.txnindex` queries and writes.

- `segment_entries(seg, from_offset)`: (header, marker) of each whole batch of a segment at or
  after `from_offset`; only headers are read, plus the one small record of each control batch
  (protocol/control.py), by pread.
- `collect_aborted(segments, bases, start, upper)`: Kafka's collectAbortedTransactions: from
  the segment holding `start` on, every aborted txn overlapping [start, upper), stopping at the
  first segment whose index proves no later one can add any (an entry's LSO >= upper).
- `index_abort(segments, bases, entry)`: add an abort to the index of the segment holding its
  marker (if that index does not hold it yet).
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator, Sequence

from broker.log.segment import Segment
from broker.producer_state import scan_headers
from broker.txn_state import AbortedTxn
from protocol.batch import CONTROL_BIT, BatchHeader, InvalidBatchError
from protocol.control import Marker, parse_marker


def segment_entries(
    seg: Segment, from_offset: int = 0
) -> Iterator[tuple[BatchHeader, Marker | None]]:
    fd = seg.fd
    pos = 0  # scan_headers yields the file's batches back to back from position 0
    for h in scan_headers(lambda at, n: os.pread(fd, n, at), seg.size_bytes):
        at, pos = pos, pos + h.size
        if h.last_offset < from_offset:
            continue
        marker = _read_marker(fd, at, h) if h.attributes & CONTROL_BIT else None
        yield h, marker


def _read_marker(fd: int, pos: int, h: BatchHeader) -> Marker | None:
    try:
        return parse_marker(os.pread(fd, h.size, pos))
    except InvalidBatchError:
        return None  # not a transaction marker: it ends nothing


def collect_aborted(
    segments: Sequence[Segment], bases: Sequence[int], start: int, upper: int
) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    if upper <= start:
        return out
    i = max(0, bisect.bisect_right(bases, start) - 1)
    for seg in segments[i:]:
        found, complete = seg.txn_index.collect(start, upper)
        out.extend(found)
        if complete:
            break
    return out


def index_abort(segments: Sequence[Segment], bases: Sequence[int], entry: AbortedTxn) -> None:
    i = bisect.bisect_right(bases, entry.last_offset) - 1
    if i >= 0 and entry.last_offset < segments[i].next_offset:
        segments[i].txn_index.append_if_new(entry)
