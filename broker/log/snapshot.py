"""Producer-state snapshots: `<offset>.snapshot` (20-digit offset), the producer table
(broker/producer_state.py) as it was just before `<offset>` (Kafka's ProducerStateManager
snapshots), so opening a log replays only the batches after the newest one.

Layout (big-endian):

    int16   version            1
    uint32  crc32c             of every byte after this field
    int8    flags              bit 0: the table was `complete`
    int32   producer count, then per producer:
        int64 producer id   int16 epoch   int32 coordinator epoch
        int64 current txn first offset (-1: none)   int64 txn start ms   int64 last timestamp
        int8  batch count (<= 5), then per batch: int32 first seq, int32 last seq,
              int64 base offset, int64 last offset
    int32   unreplicated count, then per completed txn whose marker was not below the HW:
        int64 producer id   int64 first offset   int64 last offset   int8 is abort

When: at every roll (offset = the new segment's base; written on the loop, fsynced by the next
flush, off the loop: FlushPlan) and at a clean close (fsynced with the close). Kept: the two
newest, and none below the log start offset. A snapshot that fails to decode (bad CRC, torn)
is deleted and the next older one used; none usable: replay from the log start. Truncation
deletes the snapshots above the cut and reloads.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import crc32c

from broker.producer_state import (
    MAX_RETAINED_BATCHES,
    BatchMetadata,
    ProducerEntry,
    ProducerStateTable,
)
from broker.txn_state import CompletedTxn, OngoingTxn
from protocol.errors import KafkaStorageError

SNAPSHOT_SUFFIX = ".snapshot"
VERSION = 1
KEEP = 2
_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_PRODUCER = struct.Struct(">qhiqqqb")
_BATCH = struct.Struct(">iiqq")
_TXN = struct.Struct(">qqqb")
COMPLETE_FLAG = 1


class CorruptSnapshotError(KafkaStorageError):
    """A snapshot that does not decode: it is deleted and an older one used."""


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def list_offsets(directory: Path) -> list[int]:
    """The offsets of the snapshots in `directory`, ascending."""
    out = []
    for path in directory.glob("*" + SNAPSHOT_SUFFIX):
        stem = path.name[: -len(SNAPSHOT_SUFFIX)]
        if len(stem) == 20 and stem.isdigit():
            out.append(int(stem))
    return sorted(out)


def encode(table: ProducerStateTable) -> bytes:
    body = bytearray([COMPLETE_FLAG if table.complete else 0])
    body += _COUNT.pack(len(table.producers))
    for pid, e in table.producers.items():
        txn = table.txns.ongoing.get(pid)
        first = -1 if e.current_txn_first_offset is None else e.current_txn_first_offset
        body += _PRODUCER.pack(pid, e.epoch, e.coordinator_epoch, first,
                               -1 if txn is None else txn.start_ms, e.last_timestamp,
                               len(e.batches))  # fmt: skip
        for b in e.batches:
            body += _BATCH.pack(b.first_seq, b.last_seq, b.base_offset, b.last_offset)
    body += _COUNT.pack(len(table.txns.unreplicated))
    for t in table.txns.unreplicated:
        body += _TXN.pack(t.producer_id, t.first_offset, t.last_offset, int(t.is_abort))
    return _HEAD.pack(VERSION, crc32c.crc32c(body)) + bytes(body)


def load_into(table: ProducerStateTable, data: bytes, complete_allowed: bool) -> None:
    """Replace the table's state by the snapshot's. Raises CorruptSnapshotError."""
    try:
        version, crc = _HEAD.unpack_from(data)
        if version != VERSION or crc32c.crc32c(memoryview(data)[_HEAD.size :]) != crc:
            raise CorruptSnapshotError(f"snapshot version {version} or CRC does not check out")
        at = _HEAD.size
        flags = data[at]
        at += 1
        table.reset(bool(flags & COMPLETE_FLAG) and complete_allowed)
        (count,), at = _COUNT.unpack_from(data, at), at + _COUNT.size
        ongoing: list[OngoingTxn] = []
        for _ in range(count):
            pid, epoch, coord, first, start_ms, last_ts, n = _PRODUCER.unpack_from(data, at)
            at += _PRODUCER.size
            if n > MAX_RETAINED_BATCHES or pid < 0:
                raise CorruptSnapshotError(f"snapshot producer {pid} with {n} batches")
            entry = ProducerEntry(epoch, coordinator_epoch=coord, last_timestamp=last_ts)
            for _ in range(n):
                entry.batches.append(BatchMetadata(*_BATCH.unpack_from(data, at)))
                at += _BATCH.size
            if first >= 0:
                entry.current_txn_first_offset = first
                ongoing.append(OngoingTxn(pid, first, start_ms))
            table.producers[pid] = entry
        for txn in sorted(ongoing, key=lambda t: t.first_offset):
            table.txns.begin(txn.producer_id, txn.first_offset, txn.start_ms)
        (count,), at = _COUNT.unpack_from(data, at), at + _COUNT.size
        for _ in range(count):
            pid, first, last, abort = _TXN.unpack_from(data, at)
            at += _TXN.size
            table.txns.complete(CompletedTxn(pid, first, last, bool(abort)))
        if at != len(data):
            raise CorruptSnapshotError(f"{len(data) - at} bytes follow the snapshot")
    except (struct.error, IndexError, AssertionError) as exc:
        raise CorruptSnapshotError(f"snapshot does not decode: {exc}") from None


def write(path: Path, data: bytes, sync: bool) -> None:
    """Write through a temporary file and rename; fsync it (and the directory) if `sync`."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def fsync_file(path: Path) -> None:
    """Make a snapshot written without `sync` durable (a thread's job: FlushPlan)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return  # deleted since (retention, truncation): nothing to keep
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def prune(directory: Path, log_start_offset: int, above: int | None = None) -> None:
    """Delete snapshots below the log start, above `above` (truncation), and all but the
    KEEP newest."""
    offsets = list_offsets(directory)
    keep = [o for o in offsets if o >= log_start_offset and (above is None or o <= above)]
    keep = keep[-KEEP:]
    for o in offsets:
        if o not in keep:
            snapshot_path(directory, o).unlink(missing_ok=True)
