"""`partition.metadata`: the topic id (KIP-516) a partition directory belongs to, as Kafka keeps it.

The file, in Kafka's format (PartitionMetadataFile), two lines:

    version: 0
    topic_id: <the id, 22 characters of url-safe base64, protocol/topic_ids.py>

It is written (atomically: checkpoint.write_atomically) when a LeaderAndIsr carrying the id
first names the partition here, and checked on every later one, including the first after a
restart: a directory whose file holds another id belongs to an older topic of the same name
(deleted and re-created while this broker was away), so the partition is refused with
INCONSISTENT_TOPIC_ID and a log line, never silently mixed. `decide` is that rule, pure.
"""

from __future__ import annotations

import enum
import uuid
from pathlib import Path

from broker.log.checkpoint import write_atomically
from protocol.topic_ids import InvalidTopicIdError, decode_topic_id, encode_topic_id

FILE_NAME = "partition.metadata"
VERSION = 0
MAX_FILE_BYTES = 256  # the file is ~43 bytes; anything far larger is not one


class CorruptPartitionMetadataError(ValueError):
    """A partition.metadata that is not version 0 with a topic id."""


class Verdict(enum.Enum):
    WRITE = "write"  # no file yet: write the id we were given
    KEEP = "keep"  # the file agrees (or the controller sent no id): nothing to do
    MISMATCH = "mismatch"  # the file names another topic: INCONSISTENT_TOPIC_ID


def encode(topic_id: uuid.UUID) -> bytes:
    return f"version: {VERSION}\ntopic_id: {encode_topic_id(topic_id)}\n".encode("ascii")


def decode(data: bytes) -> uuid.UUID:
    try:
        lines = data.decode("ascii").splitlines()
    except UnicodeDecodeError:
        raise CorruptPartitionMetadataError("not ASCII text") from None
    if len(lines) != 2:
        raise CorruptPartitionMetadataError(f"expected 2 lines, got {len(lines)}")
    version = _value(lines[0], "version")
    if version != str(VERSION):
        raise CorruptPartitionMetadataError(f"unknown version {version!r} (expected {VERSION})")
    try:
        return decode_topic_id(_value(lines[1], "topic_id"))
    except InvalidTopicIdError as exc:
        raise CorruptPartitionMetadataError(str(exc)) from None


def _value(line: str, key: str) -> str:
    name, sep, value = line.partition(": ")
    if not sep or name != key:
        raise CorruptPartitionMetadataError(f"expected '{key}: ...', got {line!r}")
    return value.strip()


def read(directory: Path) -> uuid.UUID | None:
    """The id in the directory's file; None when there is none. Raises
    CorruptPartitionMetadataError for a file that is not one."""
    path = directory / FILE_NAME
    try:
        with path.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    if len(data) > MAX_FILE_BYTES:
        raise CorruptPartitionMetadataError(f"{path} is over {MAX_FILE_BYTES} bytes")
    return decode(data)


def write(directory: Path, topic_id: uuid.UUID) -> None:
    write_atomically(directory / FILE_NAME, encode(topic_id))


def decide(stored: uuid.UUID | None, expected: uuid.UUID | None) -> Verdict:
    """What to do with a partition directory holding `stored` when the controller says the
    topic's id is `expected` (None: the topic has no id yet, nothing to check)."""
    if expected is None or stored == expected:
        return Verdict.KEEP
    if stored is None:
        return Verdict.WRITE
    return Verdict.MISMATCH
