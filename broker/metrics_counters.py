"""Hot-path counters the broker bumps as it works, read by broker/metrics.py at scrape time.

These are plain ints in plain dicts, with no Prometheus object and no lock on the event loop's
paths: one dict update per produced partition batch and per fetched partition, never per
record (the record count comes from the offsets the log assigned, `last - base + 1`, or a
read's offset range, not from decoding records). The scrape reads them on the same event loop
(broker/metrics.py runs its collection there), so no lock is needed for them.

`FsyncStats` is the exception: fdatasync runs in executor threads (broker/log/flusher.py,
LogManager's flush), so it takes a lock, whose cost is nothing next to an fdatasync. It is one
object per process (`FSYNCS`): fsyncs belong to the process's disks, and brokers run one per
process (in-process tests with several brokers share it, which their tests allow for).
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Iterable
from typing import Protocol

# seconds; an fdatasync on an SSD takes ~0.1-2 ms, on a busy or spinning disk tens of ms
FSYNC_BUCKETS_S: tuple[float, ...] = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
)  # fmt: skip


class FetchedPartition(Protocol):
    """What `TopicTraffic.fetched` reads of a broker/partition_read.py PartitionRead."""

    topic: str
    size_bytes: int
    record_count: int


class TopicTraffic:
    """Bytes and records in and out per topic, and ISR changes, since the broker started."""

    __slots__ = (
        "bytes_in",
        "bytes_out",
        "isr_expands",
        "isr_shrinks",
        "records_in",
        "records_out",
        "replication_bytes_out",
    )  # fmt: skip

    def __init__(self) -> None:
        self.bytes_in: dict[str, int] = {}
        self.records_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}  # to consumers
        self.records_out: dict[str, int] = {}
        self.replication_bytes_out: dict[str, int] = {}  # to followers
        self.isr_shrinks = 0
        self.isr_expands = 0

    def produced(self, topic: str, size_bytes: int, record_count: int) -> None:
        """A client's batch(es) appended by this leader (retried duplicates are not)."""
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + size_bytes
        self.records_in[topic] = self.records_in.get(topic, 0) + record_count

    def fetched(self, replica_id: int, reads: Iterable[FetchedPartition]) -> None:
        """The partitions of one fetch response as sent: replica_id < 0 is a consumer."""
        if replica_id < 0:
            out, records = self.bytes_out, self.records_out
            for r in reads:
                if r.size_bytes:
                    out[r.topic] = out.get(r.topic, 0) + r.size_bytes
                    records[r.topic] = records.get(r.topic, 0) + r.record_count
        else:
            repl = self.replication_bytes_out
            for r in reads:
                if r.size_bytes:
                    repl[r.topic] = repl.get(r.topic, 0) + r.size_bytes

    def isr_changed(self, old_size: int, new_size: int) -> None:
        """The leader wrote a new ISR: a shrink or an expansion (Kafka's IsrShrinksPerSec...)."""
        if new_size < old_size:
            self.isr_shrinks += 1
        elif new_size > old_size:
            self.isr_expands += 1


class FsyncStats:
    """fdatasync count and latency histogram for the process (thread-safe)."""

    def __init__(self, buckets_s: tuple[float, ...] = FSYNC_BUCKETS_S) -> None:
        self.buckets_s = buckets_s
        self._lock = threading.Lock()
        self._counts = [0] * (len(buckets_s) + 1)  # the last one: above every bucket
        self._sum_s = 0.0

    def record(self, seconds: float) -> None:
        i = bisect.bisect_left(self.buckets_s, seconds)
        with self._lock:
            self._counts[i] += 1
            self._sum_s += seconds

    def snapshot(self) -> tuple[list[tuple[str, int]], float, int]:
        """(cumulative (le, count) buckets ending with +Inf, sum of seconds, count)."""
        with self._lock:
            counts, total_s = list(self._counts), self._sum_s
        out: list[tuple[str, int]] = []
        running = 0
        for bound, n in zip((*map(str, self.buckets_s), "+Inf"), counts, strict=True):
            running += n
            out.append((bound, running))
        return out, total_s, running


FSYNCS = FsyncStats()


def timed_fdatasync(fd: int) -> None:
    """os.fdatasync, counted and timed in FSYNCS (only the ones that succeed)."""
    start = time.perf_counter()
    os.fdatasync(fd)
    FSYNCS.record(time.perf_counter() - start)
