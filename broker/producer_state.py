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
first, never one with an open transaction: its next batch is then accepted as if new, the only
way an evicted producer could duplicate).

Transactions (KIP-98): each producer also keeps its last coordinator epoch and its open
transaction's first offset. A transactional batch opens one if none is open (a newer epoch
keeps it open, as Kafka); a marker (`end_txn`) completes it; `admit_marker` is the leader's
check (older producer epoch: INVALID_PRODUCER_EPOCH; older coordinator epoch:
TRANSACTION_COORDINATOR_FENCED). The offsets that bound read_committed reads live in
broker/txn_state.py.

Persistence: the log writes the table as a snapshot (broker/log/snapshot.py, Kafka's
`<offset>.snapshot`) at every roll and at a clean close; on open and after a truncation it
loads the newest sound snapshot at or below the point it must rebuild from and replays the
batch headers after it (markers read too). Without a snapshot it replays from the log start,
and the table is `complete` when that start is offset 0 and the log has no gaps.
`rebuild_window` is the old tail-only bound, kept for callers that scan without snapshots.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from broker.txn_state import AbortedTxn, CompletedTxn, TxnTracker
from broker.txn_state import last_stable_offset_for_index as _index_lso
from protocol.batch import (
    CONTROL_BIT,
    HEADER_BYTES,
    NO_PRODUCER_ID,
    TRANSACTIONAL_BIT,
    BatchHeader,
    read_header,
)
from protocol.control import Marker
from protocol.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
)

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
    coordinator_epoch: int = -1  # of the last marker seen (-1: none)
    current_txn_first_offset: int | None = None  # its open transaction's first offset
    last_timestamp: int = -1  # max timestamp of its last batch or marker


class ProducerRow(NamedTuple):
    """One producer as DescribeProducers shows it."""

    producer_id: int
    producer_epoch: int
    last_sequence: int  # -1: no batch retained
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int  # -1: no open transaction


def last_sequence(base_sequence: int, record_count: int) -> int:
    return (base_sequence + record_count - 1) % SEQUENCE_MODULUS


def next_sequence(sequence: int, count: int = 1) -> int:
    return (sequence + count) % SEQUENCE_MODULUS


class ProducerStateTable:
    def __init__(self, max_producers: int = DEFAULT_MAX_PRODUCERS) -> None:
        self.max_producers = max_producers
        self.producers: OrderedDict[int, ProducerEntry] = OrderedDict()
        self.complete = True
        self.txns = TxnTracker()  # ongoing and unreplicated transactions (txn_state.py)
        self.high_watermark: int | None = None  # the partition's, once told (Log)
        # KIP-890: producer id -> the token of a verification under way (`start_verification`)
        self.verifications: dict[int, object] = {}

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
        transactional: bool = False,
        timestamp: int = -1,
    ) -> None:
        """Record an appended batch (leader or follower); a transactional one opens its
        producer's transaction if none is (a newer epoch keeps it open, as Kafka does). A
        transactional batch without a sequence (a coordinator's, e.g. TxnOffsetCommit's offsets
        in `__consumer_offsets`) opens the transaction and records no batch."""
        if producer_id < 0 or (first_seq < 0 and not transactional):
            return
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = ProducerEntry(epoch)
            self.producers[producer_id] = entry
        elif epoch > entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        elif epoch < entry.epoch:
            return  # a fenced epoch's batch replicated byte for byte: keep the newer state
        self.producers.move_to_end(producer_id)
        if first_seq >= 0:
            entry.batches.append(BatchMetadata(first_seq, last_seq, base_offset, last_offset))
        entry.last_timestamp = timestamp
        if transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = base_offset
            self.txns.begin(producer_id, base_offset, timestamp)
        self._evict()

    def _evict(self) -> None:
        """Forget the least recently appended producers beyond max_producers; never one with
        an open transaction (Kafka expires none of those either)."""
        for _ in range(len(self.producers)):
            if len(self.producers) <= self.max_producers:
                return
            pid, oldest = next(iter(self.producers.items()))
            if oldest.current_txn_first_offset is not None:
                self.producers.move_to_end(pid)
                continue
            del self.producers[pid]
            self.complete = False

    def admit(
        self,
        producer_id: int,
        epoch: int,
        base_sequence: int,
        record_count: int,
        transactional: bool = False,
    ) -> BatchMetadata | None:
        """`check` for a leader append: None to append, the first copy if the batch is a retry;
        raises OutOfOrderSequenceNumberError or InvalidProducerEpochError to refuse it, and
        InvalidTxnStateError for a plain batch from a producer whose transaction is open."""
        if producer_id < 0 or base_sequence < 0:
            return None
        last_seq = last_sequence(base_sequence, record_count)
        verdict, first = self.check(producer_id, epoch, base_sequence, last_seq)
        if verdict is Verdict.OUT_OF_ORDER:
            raise OutOfOrderSequenceNumberError(
                f"producer {producer_id} sent sequence {base_sequence} out of order"
            )
        if verdict is Verdict.FENCED:
            current = self.producers[producer_id].epoch
            raise InvalidProducerEpochError(
                f"producer {producer_id} epoch {epoch} is fenced: a newer instance holds epoch "
                f"{current}"
            )
        entry = self.producers.get(producer_id)
        if (
            first is None
            and not transactional
            and entry is not None
            and (entry.current_txn_first_offset is not None)
        ):
            raise InvalidTxnStateError(
                f"producer {producer_id} sent a non-transactional batch while its transaction "
                f"from offset {entry.current_txn_first_offset} is open"
            )
        return first

    # ----- KIP-890: a transactional batch only into a transaction the coordinator knows ------

    def in_transaction(self, producer_id: int, epoch: int) -> bool:
        """The producer's transaction is open here at this epoch: no verification needed."""
        entry = self.producers.get(producer_id)
        return (entry is not None and entry.epoch == epoch
                and entry.current_txn_first_offset is not None)  # fmt: skip

    def start_verification(self, producer_id: int) -> object:
        """Before asking the coordinator whether this partition is in the producer's
        transaction: a token the append must still find (Kafka's VerificationGuard). A marker
        for the producer voids it, so a batch verified for a transaction that ended while the
        answer was on its way cannot open a new, hanging one."""
        token = self.verifications.get(producer_id)
        if token is not None:  # pipelined batches share the verification under way (Kafka)
            return token
        token = self.verifications[producer_id] = object()
        while len(self.verifications) > self.max_producers:  # bounded: the oldest goes
            del self.verifications[next(iter(self.verifications))]
        return token

    def check_verified(self, producer_id: int, epoch: int, token: object | None) -> None:
        """The append's check of a transactional batch: its transaction is open here, or the
        coordinator verified it under `token`, still current; else INVALID_TXN_STATE."""
        if self.in_transaction(producer_id, epoch):
            return
        if token is None or self.verifications.get(producer_id) is not token:
            raise InvalidTxnStateError(
                f"producer {producer_id}: this partition is not in its transaction (the "
                f"transaction coordinator did not add it, or the transaction ended)"
            )
        del self.verifications[producer_id]

    def admit_coordinator(self, producer_id: int, epoch: int) -> None:
        """The check on a coordinator's transactional batch (no sequence): an epoch older
        than the producer's is INVALID_PRODUCER_EPOCH (a fenced producer's offsets)."""
        entry = self.producers.get(producer_id)
        if entry is not None and epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {producer_id} epoch {epoch} is fenced (epoch {entry.epoch} is current)"
            )

    def admit_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> None:
        """The leader's checks on a marker (WriteTxnMarkers), as Kafka's ProducerAppendInfo:
        an older producer epoch is INVALID_PRODUCER_EPOCH, an older coordinator epoch
        TRANSACTION_COORDINATOR_FENCED. Followers and recovery take markers unchecked."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"marker for producer {producer_id} at epoch {epoch}, older than {entry.epoch}"
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"marker for producer {producer_id} from coordinator epoch {coordinator_epoch}, "
                f"older than {entry.coordinator_epoch}"
            )

    def end_txn(
        self,
        producer_id: int,
        epoch: int,
        marker: Marker,
        offset: int,
        timestamp: int = -1,
    ) -> CompletedTxn | None:
        """Record a marker appended at `offset`: the producer's open transaction, if any, is
        completed (returned; it holds the LSO until the HW passes `offset`). A marker with no
        open transaction completes nothing (Kafka: it changes neither LSO nor index)."""
        self.verifications.pop(producer_id, None)
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(epoch)
        self.producers.move_to_end(producer_id)
        if epoch > entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        entry.coordinator_epoch = marker.coordinator_epoch
        entry.last_timestamp = timestamp
        first, entry.current_txn_first_offset = entry.current_txn_first_offset, None
        self._evict()
        if first is None:
            return None
        done = CompletedTxn(producer_id, first, offset, not marker.commit)
        self.txns.complete(done, self.high_watermark)
        return done

    def index_entry(self, txn: CompletedTxn) -> AbortedTxn:
        """The `.txnindex` entry of an abort just completed."""
        lso = _index_lso(txn, self.txns.next_other_ongoing(txn.producer_id))
        return AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso)

    def on_high_watermark(self, high_watermark: int) -> bool:
        """The partition's HW moved: completed transactions below it stop holding the LSO."""
        self.high_watermark = high_watermark
        return self.txns.on_high_watermark(high_watermark)

    def first_unstable_offset(self) -> int | None:
        return self.txns.first_unstable_offset()

    def ongoing_transactions(self) -> list[tuple[int, int, int, int]]:
        """(producer id, producer epoch, first offset, start timestamp) of every open
        transaction, oldest first (DescribeProducers / DescribeTransactions)."""
        out = []
        for txn in self.txns.ongoing_in_order():
            entry = self.producers.get(txn.producer_id)
            epoch = -1 if entry is None else entry.epoch
            out.append((txn.producer_id, epoch, txn.first_offset, txn.start_ms))
        return out

    def rows(self) -> list[ProducerRow]:
        """Every known producer, for DescribeProducers."""
        out = []
        for pid, e in self.producers.items():
            last_seq = e.batches[-1].last_seq if e.batches else -1
            txn = -1 if e.current_txn_first_offset is None else e.current_txn_first_offset
            out.append(ProducerRow(pid, e.epoch, last_seq, e.last_timestamp,
                                   e.coordinator_epoch, txn))  # fmt: skip
        return out

    def record(
        self,
        producer_id: int,
        epoch: int,
        base_sequence: int,
        record_count: int,
        base_offset: int,
        last_offset: int,
        transactional: bool = False,
        timestamp: int = -1,
    ) -> None:
        """`update` from a batch header's fields (batches neither idempotent nor
        transactional are ignored)."""
        if producer_id >= 0 and (base_sequence >= 0 or transactional):
            last_seq = last_sequence(base_sequence, record_count) if base_sequence >= 0 else -1
            self.update(producer_id, epoch, base_sequence, last_seq, base_offset, last_offset,
                        transactional, timestamp)  # fmt: skip

    def last_offsets(self) -> dict[int, int]:
        """Producer id -> the last offset of its last batch (the log cleaner keeps that
        batch, even emptied, so that the producer's state survives cleaning)."""
        return {pid: e.batches[-1].last_offset for pid, e in self.producers.items() if e.batches}

    def update_from_header(
        self, h: BatchHeader, marker: Marker | None = None
    ) -> CompletedTxn | None:
        """Replay one stored batch; a control batch needs its `marker` (protocol/control.py).
        Returns the transaction a marker completed."""
        if h.producer_id == NO_PRODUCER_ID:
            return None
        if h.attributes & CONTROL_BIT:
            if marker is None:
                return None
            return self.end_txn(h.producer_id, h.producer_epoch, marker, h.base_offset,
                                h.max_timestamp)  # fmt: skip
        transactional = bool(h.attributes & TRANSACTIONAL_BIT)
        if h.base_sequence < 0 and not transactional:
            return None
        # from the offset span, not the count: a cleaned batch keeps the one, not the other
        span = h.last_offset - h.base_offset + 1
        last_seq = last_sequence(h.base_sequence, span) if h.base_sequence >= 0 else -1
        self.update(h.producer_id, h.producer_epoch, h.base_sequence, last_seq, h.base_offset,
                    h.last_offset, transactional, h.max_timestamp)  # fmt: skip
        return None

    def reset(self, complete: bool) -> None:
        """Forget everything (then replay, or load a snapshot)."""
        self.producers.clear()
        self.txns.clear()
        self.verifications.clear()
        self.complete = complete

    def replay(self, entries: Iterable[tuple[BatchHeader, Marker | None]]) -> Iterator[AbortedTxn]:
        """Apply stored batches (oldest first); yields the index entry of each abort met."""
        for h, marker in entries:
            done = self.update_from_header(h, marker)
            if done is not None and done.is_abort:
                yield self.index_entry(done)

    def rebuild(
        self, headers: Iterable[BatchHeader | tuple[BatchHeader, Marker | None]], complete: bool
    ) -> None:
        """Forget everything, then replay these headers (a log's tail, oldest first; control
        batches with their markers); `complete`: they are every batch the partition held."""
        self.reset(complete)
        pairs = (x if isinstance(x, tuple) else (x, None) for x in headers)
        for _ in self.replay(pairs):
            pass


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
