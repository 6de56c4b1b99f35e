"""Idempotent-producer state of one partition: what makes a retried batch land exactly once.

Kafka's KIP-98, its idempotence part only (no transactions). A producer stamps each batch with
its producer_id, producer_epoch and base_sequence (protocol/batch.py header); per partition the
sequence of a batch's first record follows the last record of the producer's previous batch.
This table keeps, per producer id, its epoch and the last `MAX_RETAINED_BATCHES` (5, the most a
producer keeps in flight per partition) batches appended: (first_seq, last_seq, base_offset,
last_offset). It is pure: the log (broker/log/log.py) feeds it headers.

`check` decides a leader append (producer_id < 0: not idempotent, always APPEND):

    case                                                      verdict
    no state for the producer id, first_seq == 0              APPEND
    no state, first_seq > 0, the table is not `complete`      APPEND (its state may be lost)
    no state, first_seq > 0, the table is `complete`          OUT_OF_ORDER (an earlier batch
                                                              of a new producer is missing)
    epoch older than the producer's                           FENCED (INVALID_PRODUCER_EPOCH)
    epoch newer than the producer's                           APPEND if first_seq == 0,
                                                              else OUT_OF_ORDER
    same first and last seq as a retained batch               DUPLICATE (answer its offsets)
    first_seq == last retained last_seq + 1                   APPEND
    anything else                                             OUT_OF_ORDER

Sequences are int32 counters that wrap from 2**31 - 1 to 0. `update` records a batch appended on
the leader or replicated to a follower; a newer epoch drops the producer's older batches.

`complete` says the table has seen every batch the partition ever held (the rebuild scanned
the whole log from offset 0, or started from an empty log, and no producer was evicted since):
only then does a first sequence above 0 from an unknown id prove a missing batch.

Bounds: at most `max_producers` ids per partition (the least recently appended is forgotten
first: its next batch is then accepted as if new, the only way an evicted producer could
duplicate). State is not snapshotted to disk: the log rebuilds it on open and after every
truncation by scanning the batch headers of its tail (`rebuild_window`: the active segment,
and the one before it while the newer hold less than REBUILD_MAX_BYTES), which stands in for
Kafka's producer-state snapshots. A producer whose last batch lies before that window is
unknown after a restart (APPEND, as above); the scan reads at most two segments' bytes, no
more than recovery after an unclean shutdown reads anyway.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum

from protocol.batch import HEADER_BYTES, NO_PRODUCER_ID, BatchHeader, read_header
from protocol.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError

MAX_RETAINED_BATCHES = 5
DEFAULT_MAX_PRODUCERS = 10_000
SEQUENCE_MODULUS = 2**31
REBUILD_SEGMENTS = 2
REBUILD_MAX_BYTES = 64 * 1024 * 1024
SCAN_CHUNK_BYTES = 1024 * 1024


class Verdict(Enum):
    APPEND = "append"
    DUPLICATE = "duplicate"
    OUT_OF_ORDER = "out_of_order"
    FENCED = "fenced"


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=MAX_RETAINED_BATCHES)
    )


def last_sequence(base_sequence: int, record_count: int) -> int:
    return (base_sequence + record_count - 1) % SEQUENCE_MODULUS


def next_sequence(sequence: int, count: int = 1) -> int:
    return (sequence + count) % SEQUENCE_MODULUS


class ProducerStateTable:
    def __init__(self, max_producers: int = DEFAULT_MAX_PRODUCERS) -> None:
        self.max_producers = max_producers
        self.producers: OrderedDict[int, ProducerEntry] = OrderedDict()
        self.complete = True

    def __len__(self) -> int:
        return len(self.producers)

    def check(
        self, producer_id: int, epoch: int, first_seq: int, last_seq: int
    ) -> tuple[Verdict, BatchMetadata | None]:
        """The verdict on a leader append; with DUPLICATE, the batch it duplicates."""
        if producer_id < 0:
            return Verdict.APPEND, None
        entry = self.producers.get(producer_id)
        if entry is None:
            missing = first_seq != 0 and self.complete
            return (Verdict.OUT_OF_ORDER if missing else Verdict.APPEND), None
        if epoch < entry.epoch:
            return Verdict.FENCED, None
        if epoch > entry.epoch:
            return (Verdict.APPEND if first_seq == 0 else Verdict.OUT_OF_ORDER), None
        for batch in entry.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return Verdict.DUPLICATE, batch
        if not entry.batches or first_seq == next_sequence(entry.batches[-1].last_seq):
            return Verdict.APPEND, None
        return Verdict.OUT_OF_ORDER, None

    def update(
        self,
        producer_id: int,
        epoch: int,
        first_seq: int,
        last_seq: int,
        base_offset: int,
        last_offset: int,
    ) -> None:
        """Record an appended batch (leader or follower)."""
        if producer_id < 0 or first_seq < 0:
            return
        entry = self.producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            entry = ProducerEntry(epoch)
            self.producers[producer_id] = entry
        elif epoch < entry.epoch:
            return  # a fenced epoch's batch replicated byte for byte: keep the newer state
        self.producers.move_to_end(producer_id)
        entry.batches.append(BatchMetadata(first_seq, last_seq, base_offset, last_offset))
        while len(self.producers) > self.max_producers:
            self.producers.popitem(last=False)
            self.complete = False

    def admit(
        self, producer_id: int, epoch: int, base_sequence: int, record_count: int
    ) -> BatchMetadata | None:
        """`check` for a leader append: None to append, the first copy if the batch is a retry;
        raises OutOfOrderSequenceNumberError or InvalidProducerEpochError to refuse it."""
        if producer_id < 0 or base_sequence < 0:
            return None
        last_seq = last_sequence(base_sequence, record_count)
        verdict, first = self.check(producer_id, epoch, base_sequence, last_seq)
        if verdict is Verdict.OUT_OF_ORDER:
            raise OutOfOrderSequenceNumberError(
                f"producer {producer_id} sent sequence {base_sequence} out of order"
            )
        if verdict is Verdict.FENCED:
            raise InvalidProducerEpochError(f"producer {producer_id} epoch {epoch} is fenced")
        return first

    def record(
        self,
        producer_id: int,
        epoch: int,
        base_sequence: int,
        record_count: int,
        base_offset: int,
        last_offset: int,
    ) -> None:
        """`update` from a batch header's fields (not idempotent batches are ignored)."""
        if producer_id >= 0 and base_sequence >= 0:
            last_seq = last_sequence(base_sequence, record_count)
            self.update(producer_id, epoch, base_sequence, last_seq, base_offset, last_offset)

    def last_offsets(self) -> dict[int, int]:
        """Producer id -> the last offset of its last batch (the log cleaner keeps that
        batch, even emptied, so that the producer's state survives cleaning)."""
        return {pid: e.batches[-1].last_offset for pid, e in self.producers.items() if e.batches}

    def update_from_header(self, h: BatchHeader) -> None:
        if h.producer_id == NO_PRODUCER_ID or h.base_sequence < 0:
            return
        self.update(
            h.producer_id, h.producer_epoch, h.base_sequence,
            # from the offset span, not the count: a cleaned batch keeps the one, not the other
            last_sequence(h.base_sequence, h.last_offset - h.base_offset + 1),
            h.base_offset, h.last_offset,
        )  # fmt: skip

    def rebuild(self, headers: Iterable[BatchHeader], complete: bool) -> None:
        """Forget everything, then replay these headers (a log's tail, oldest first);
        `complete`: they are every batch the partition ever held."""
        self.producers.clear()
        self.complete = complete
        for h in headers:
            self.update_from_header(h)


def rebuild_window(sizes_bytes: Sequence[int]) -> int:
    """How many of the newest files (sizes oldest first) a rebuild scans: REBUILD_SEGMENTS,
    fewer when the newer ones already hold REBUILD_MAX_BYTES; at least one."""
    count = total = 0
    for size in reversed(sizes_bytes):
        if count >= REBUILD_SEGMENTS or (count and total >= REBUILD_MAX_BYTES):
            break
        count += 1
        total += size
    return max(count, 1)


def scan_headers(
    read: Callable[[int, int], bytes], size_bytes: int, chunk_bytes: int = SCAN_CHUNK_BYTES
) -> Iterator[BatchHeader]:
    """The headers of the whole batches in a file of `size_bytes`, read in chunks.

    `read(position, length)` returns up to `length` bytes (os.pread on a segment's fd). Only
    headers are read; a batch longer than a chunk is skipped over by its length. A header too
    short to move on, or a partial tail, ends the scan.
    """
    pos = 0
    while size_bytes - pos >= HEADER_BYTES:
        buf = read(pos, min(chunk_bytes, size_bytes - pos))
        at = 0
        while len(buf) - at >= HEADER_BYTES:
            h = read_header(buf, at)
            if h.size < HEADER_BYTES or pos + at + h.size > size_bytes:
                return
            yield h
            at += h.size
        if at == 0:
            return
        pos += at
