"""A partition's fetched data between its arrival and the user: one job, turning a Fetch
answer's bytes into records, once.

On arrival `scan_fetched` walks the whole batches (CRC checked, a partial tail ignored) and
gives the offset after the last one; the bytes and the batch list are kept as a
`CompletedFetch`, whose records are decoded on the first `take` (so a response is decoded while
the next fetch is already on its way), by the C record walker (protocol/columns.py: no Python
code per record) with the cyclic GC paused (`decode_scanned`). client/fetcher.py makes and
holds them; `decode_fetched` is the two steps at once (tests, tools).
"""

from __future__ import annotations

import gc

from client.types import ConsumerRecord, TopicPartition, partition_words
from protocol.batch import BatchHeader, InvalidBatchError, iter_batches
from protocol.columns import segments, to_records


class CompletedFetch:
    """One partition's fetched data not yet handed out, and where the user will be after.

    The batches were scanned (CRC checked) on arrival, which also gives `next_offset`; their
    records are decoded on the first `take`, so a response is decoded while the next fetch is
    already on its way.
    """

    __slots__ = ("batches", "data", "index", "next_offset", "position", "records", "tp")

    def __init__(
        self,
        tp: TopicPartition,
        data: bytes,
        batches: list[tuple[int, BatchHeader]],
        position: int,
        next_offset: int,
    ) -> None:
        self.tp = tp
        self.data = data
        self.batches = batches
        self.records: list[ConsumerRecord] | None = None  # decoded on the first take
        self.index = 0
        self.position = position  # the subscription position this data continues from
        self.next_offset = next_offset  # the position once every record is handed out

    def take(self, n: int) -> list[ConsumerRecord]:
        """Up to n records (decoding them first if needed); raises InvalidBatchError."""
        if self.records is None:
            self.records = decode_scanned(self.tp, self.data, self.batches, self.position)
            self.data = b""
            self.batches = []
        records = self.records
        if self.index == 0 and n >= len(records):
            chunk = records  # all of it, the common case: handed over, not copied
        else:
            chunk = records[self.index : self.index + n]
        self.index += len(chunk)
        self.position = chunk[-1].offset + 1 if chunk else self.position
        return chunk

    @property
    def exhausted(self) -> bool:
        return self.records is not None and self.index >= len(self.records)


def scan_fetched(
    data: bytes, fetch_offset: int, check_crcs: bool = True
) -> tuple[list[tuple[int, BatchHeader]], int]:
    """The whole batches in `data` as (position, header), CRC-checked (a partial tail is
    ignored), and the offset after the last one (`fetch_offset` when there is none)."""
    batches = list(iter_batches(data, check_crc=check_crcs))
    next_offset = fetch_offset
    for _, header in batches:
        next_offset = max(next_offset, header.next_offset)
    return batches, next_offset


def decode_fetched(
    tp: TopicPartition, data: bytes, fetch_offset: int, check_crcs: bool = True
) -> tuple[list[ConsumerRecord], int]:
    """Records at or after `fetch_offset` in `data` (whole batches; a partial tail is ignored),
    and the offset after the last whole batch (`fetch_offset` when there is none)."""
    batches, next_offset = scan_fetched(data, fetch_offset, check_crcs)
    return decode_scanned(tp, data, batches, fetch_offset), next_offset


def decode_scanned(
    tp: TopicPartition, data: bytes, batches: list[tuple[int, BatchHeader]], fetch_offset: int
) -> list[ConsumerRecord]:
    """The records of scanned batches at or after `fetch_offset`, made into ConsumerRecords by
    the C record walker (protocol/columns.py: no Python code per record). Raises
    InvalidBatchError (CorruptRecordError) naming `tp`.

    The cyclic GC is paused meanwhile: decoding makes hundreds of thousands of tuples (no
    cycles among them), and with GC on, the collections they trigger cost as much as the
    decoding itself when the caller holds many records. The pause is bounded by one response
    (fetch_max_bytes). (Paused inline: a context manager cost ~3 us of a lone record's way.)
    """
    gc_was_enabled = gc.isenabled()
    try:
        segs, _ = segments(data, batches, fetch_offset)
        gc.disable()
        return to_records(ConsumerRecord, tp.topic, tp.partition, segs)
    except InvalidBatchError as exc:
        raise type(exc)(f"{partition_words(tp)}: {exc.message}") from None
    finally:
        if gc_was_enabled:
            gc.enable()
