"""What a fetch reads of one partition (`PartitionRead`), and how much it may read.

ReplicaManager's fetch reads partitions in request order within a byte budget (`read_limit`,
KIP-74 rules: each partition gets at most its own max and what is left of the total; the first
partition with data may exceed both by one batch so a consumer never gets stuck), and answers
once `fetch_satisfied` (min_bytes, or an error to report). A read of at most SMALL_READ_BYTES (a
caught-up reader's answer, the latency path) comes back as the bytes themselves (`read_slice`,
from the segment file there and then); a larger one as a `FileSlice` that the server sends from
the file (sendfile). Pure data and functions: no partition, log or event loop here.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass

from protocol.codec import FileSlice

NONE = 0
NO_DATA = b""
# Up to this, a read's log data is read into memory at once: its answer then goes out in one
# write with the response around it and the encoder has no slice to stand in for.
SMALL_READ_BYTES = 16 * 1024


def read_slice(s: FileSlice) -> bytes:
    """A slice's bytes, read now. A file shorter than the log's own index says is damage on
    the disk: an OSError (EIO), which takes the log directory offline like any read error."""
    data = os.pread(s.fd, s.length, s.position)
    if len(data) < s.length:
        raise OSError(
            errno.EIO, f"segment file shorter than the {s.length}-byte read at {s.position}"
        )
    return data


@dataclass(slots=True)
class PartitionRead:
    topic: str
    partition: int
    error_code: int
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    records: FileSlice | bytes = NO_DATA
    size_bytes: int = 0
    record_count: int = 0  # offsets in the batches read (metrics: records out)
    last_stable_offset: int = -1
    aborted: list[tuple[int, int]] | None = None  # read_committed: (producer id, first offset)


def read_limit(
    partition_max_bytes: int, remaining_bytes: int, bytes_so_far: int
) -> tuple[int, bool]:
    """(max bytes to read for the next partition, whether one whole batch may exceed it)."""
    limit = max(0, min(partition_max_bytes, remaining_bytes))
    return limit, bytes_so_far == 0


def fetch_satisfied(reads: list[PartitionRead], min_bytes: int) -> bool:
    """A fetch is answered once it has min_bytes, or any partition has an error to report."""
    total = 0
    for r in reads:
        if r.error_code != NONE:
            return True
        total += r.size_bytes
    return total >= min_bytes
