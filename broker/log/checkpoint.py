"""Small persisted files of a partition directory, written atomically.

Every checkpoint is text in Kafka's checkpoint layout:

    0                 version
    <n>               number of entries
    <a> [<b>]         one entry per line, decimal integers separated by one space

Files: `recovery-point-offset-checkpoint` and `log-start-offset-checkpoint` (one entry of one
integer) and `leader-epoch-checkpoint` (epoch and start offset per line), in each partition
directory; and in the log directory itself `replication-offset-checkpoint`, the high watermark
of every partition, one `<topic> <partition> <offset>` line each (Kafka's file of that name;
topic names never hold a space).

Writing: the content goes to `<name>.tmp`, which is fsynced, renamed over `<name>`, and the
directory is fsynced, so a crash leaves either the old or the new file, never a torn one. The
entries are checked before writing and again after reading; a file that fails is reported as
`CorruptCheckpointError` and the caller falls back to recovering the value from the log.

`CheckpointFile` is one such file written from the event loop or from a thread (the 60 s pass
and the leader epochs of a LeaderAndIsr write in threads, so their fsyncs do not hold the
loop): writes of one file are serialised by a lock, each write is numbered when it is asked
for, and an older one never lands over a newer one; content equal to the last asked for (or
to what an absent file means) is not written again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from protocol.errors import KafkaStorageError

VERSION = 0
MAX_CHECKPOINT_BYTES = 1 << 20  # a bound on what we read back
# replication-offset-checkpoint: up to LogManager.MAX_LOGS lines of a 249-byte topic name
MAX_PARTITION_OFFSETS_BYTES = 32 << 20
TMP_SUFFIX = ".tmp"


class CorruptCheckpointError(KafkaStorageError):
    """A checkpoint file that does not parse; the value is rebuilt from the log instead."""


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + TMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


class CheckpointFile:
    def __init__(self, path: Path, content: bytes | None = None) -> None:
        """`content`: what the file holds now (or what its absence means), None if unknown."""
        self.path = path
        self._wanted = content  # the content of the newest write asked for
        self._asked = 0  # writes asked for; the number of the newest
        self._landed = 0  # the number of the newest write on disk
        self._lock = threading.Lock()
        self._retired = False

    def holds(self, content: bytes) -> None:
        """The file holds `content` (it was just read, or its absence means that)."""
        self._wanted = content

    def write_job(self, data: bytes, force: bool = False) -> Callable[[], None] | None:
        """A call that writes `data` (from any thread), or None when nothing needs writing.
        Ask on the thread that owns the values (the event loop), in the order they change.
        `force`: even when `data` is what was last asked for, if that ask's job has not landed
        (it may have been dropped unrun, e.g. cancelled in an executor's queue at shutdown)."""
        if self._retired:
            return None
        if data == self._wanted and not (force and self._landed < self._asked):
            return None
        self._wanted = data
        self._asked += 1
        number = self._asked

        def write() -> None:
            with self._lock:
                if number <= self._landed or self._retired:
                    return  # a newer content is on disk already, or the file is let go
                try:
                    write_atomically(self.path, data)
                except BaseException:
                    self._wanted = None  # unknown now: the next ask writes again
                    raise
                self._landed = number

        return write

    def retire(self) -> None:
        """Nothing is written any more, not even a write asked for before (waits for one in
        progress): the directory is being deleted, or has failed, or the log is closed."""
        with self._lock:
            self._retired = True

    def write(self, data: bytes) -> None:
        """Write `data` now, on this thread, unless it is there already: asked for before and
        landed (an ask whose job was dropped unrun is written here)."""
        job = self.write_job(data, force=True)
        if job is not None:
            job()


def encode(entries: Sequence[tuple[int, ...]], arity: int) -> bytes:
    assert all(len(e) == arity for e in entries), "checkpoint entries of the wrong arity"
    lines = [str(VERSION), str(len(entries))]
    lines.extend(" ".join(str(int(v)) for v in entry) for entry in entries)
    return ("\n".join(lines) + "\n").encode("ascii")


def _entry_lines(data: bytes) -> list[str]:
    """The entry lines after the version and count lines (ValueError/UnicodeDecodeError if the
    header is wrong or the count disagrees)."""
    lines = data.decode("ascii").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2 or int(lines[0]) != VERSION:
        raise ValueError("bad version line")
    count = int(lines[1])
    if count != len(lines) - 2:
        raise ValueError(f"{count} entries announced, {len(lines) - 2} present")
    return lines[2:]


def decode(data: bytes, arity: int) -> list[tuple[int, ...]]:
    try:
        entries = [tuple(int(v) for v in line.split(" ")) for line in _entry_lines(data)]
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptCheckpointError(f"checkpoint does not parse: {exc}") from None
    if any(len(e) != arity for e in entries):
        raise CorruptCheckpointError(f"checkpoint entries must have {arity} fields")
    return entries


def read_entries(path: Path, arity: int) -> list[tuple[int, ...]] | None:
    """The entries, or None when the file is absent. CorruptCheckpointError when it is bad."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_CHECKPOINT_BYTES + 1)
    except FileNotFoundError:
        return None
    if len(data) > MAX_CHECKPOINT_BYTES:
        raise CorruptCheckpointError(f"{path.name} is larger than {MAX_CHECKPOINT_BYTES} bytes")
    return decode(data, arity)


def encode_offset(offset: int) -> bytes:
    assert offset >= 0, f"checkpointed offset {offset} is negative"
    return encode([(offset,)], 1)


def read_offset(path: Path) -> int | None:
    """The offset in a one-entry checkpoint; None when absent or corrupt."""
    try:
        entries = read_entries(path, 1)
    except CorruptCheckpointError:
        return None
    if entries is None or len(entries) != 1 or entries[0][0] < 0:
        return None
    return entries[0][0]


def encode_partition_offsets(offsets: Mapping[tuple[str, int], int]) -> bytes:
    """`<topic> <partition> <offset>` lines, sorted, after the version and count lines."""
    for (topic, partition), offset in offsets.items():
        assert topic and not any(c.isspace() for c in topic), f"topic {topic!r} in a checkpoint"
        assert partition >= 0 and offset >= 0, (topic, partition, offset)
    lines = [str(VERSION), str(len(offsets))]
    lines.extend(f"{t} {p} {o}" for (t, p), o in sorted(offsets.items()))
    return ("\n".join(lines) + "\n").encode("ascii")


def decode_partition_offsets(data: bytes) -> dict[tuple[str, int], int]:
    """The inverse of encode_partition_offsets; CorruptCheckpointError when it does not parse."""
    try:
        out: dict[tuple[str, int], int] = {}
        for line in _entry_lines(data):
            topic, partition, offset = line.split(" ")
            key, value = (topic, int(partition)), int(offset)
            if not topic or key[1] < 0 or value < 0 or key in out:
                raise ValueError(f"bad entry {line!r}")
            out[key] = value
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptCheckpointError(f"checkpoint does not parse: {exc}") from None
    return out


def write_partition_offsets(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    data = encode_partition_offsets(offsets)
    assert decode_partition_offsets(data) == dict(offsets)
    write_atomically(path, data)


def read_partition_offsets(path: Path) -> dict[tuple[str, int], int]:
    """The offsets in the file; {} when it is absent. CorruptCheckpointError when it is bad."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PARTITION_OFFSETS_BYTES + 1)
    except FileNotFoundError:
        return {}
    if len(data) > MAX_PARTITION_OFFSETS_BYTES:
        raise CorruptCheckpointError(
            f"{path.name} is larger than {MAX_PARTITION_OFFSETS_BYTES} bytes"
        )
    return decode_partition_offsets(data)
