"""Protobuf values in Confluent's framing, decoded for the console's message browser.

Confluent's ProtobufSerializer writes, after the magic byte 0 and the 4-byte schema id, the
*message indexes*: the path from the schema file's top-level messages to the message written
(`[1, 0]`: the first message nested in the second top-level one), as zigzag varints, the
count first and then each index, except that `[0]` (the first top-level message, the usual
case) is the single byte 0. The message's own bytes follow.

    0x00 | id (4 bytes, big-endian) | count | index... (zigzag varints) | message

`Schema` is what the console keeps per schema id: a descriptor pool holding the schema's file
and the files it imports (each a FileDescriptorProto, as the registry answers them with
`?format=serialized`; protobuf's well-known `google/protobuf/*.proto` from protobuf's own
pool), and the file's descriptor proto to walk the indexes with. `decode(payload, schema)`
reads the indexes and parses the message into a dict (protobuf's JSON mapping, field names as
declared), or None when the payload is not such a message. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf import (  # noqa: F401 (imported for their files in the default pool)
    any_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    field_mask_pb2,
    json_format,
    message_factory,
    struct_pb2,
    timestamp_pb2,
    wrappers_pb2,
)
from google.protobuf.message import DecodeError

INDEXES_MAX = 64  # message indexes in one value (nesting deeper than this is not read)
VARINT_BYTES_MAX = 10


@dataclass(frozen=True, slots=True)
class Schema:
    pool: descriptor_pool.DescriptorPool
    file: descriptor_pb2.FileDescriptorProto


def build(
    main: descriptor_pb2.FileDescriptorProto, imported: Sequence[descriptor_pb2.FileDescriptorProto]
) -> Schema:
    """The pool of a schema file and the files it imports (any order; the well-known ones
    may be left out). ValueError or TypeError when they do not make a pool."""
    pool = descriptor_pool.DescriptorPool()
    by_name = {f.name: f for f in imported}
    added: set[str] = set()

    def add(file: descriptor_pb2.FileDescriptorProto, depth: int = 0) -> None:
        if file.name in added or depth > INDEXES_MAX:
            return
        added.add(file.name)
        for dep in file.dependency:
            if dep in by_name:
                add(by_name[dep], depth + 1)
            elif dep.startswith("google/protobuf/") and dep not in added:
                added.add(dep)
                known = descriptor_pb2.FileDescriptorProto()
                descriptor_pool.Default().FindFileByName(dep).CopyToProto(known)
                pool.Add(known)
        pool.Add(file)

    add(main)
    return Schema(pool, main)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint at `pos`: (value, the position after it). IndexError when cut."""
    raw, shift = 0, 0
    for i in range(VARINT_BYTES_MAX):
        byte = data[pos + i]
        raw |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos + i + 1
    raise ValueError("a message index varint is too long")


def message_indexes(payload: bytes) -> tuple[list[int], int]:
    """The message indexes at the payload's start and where the message begins."""
    count, pos = _varint(payload, 0)
    if count == 0:
        return [0], pos
    if not 0 < count <= INDEXES_MAX:
        raise ValueError(f"{count} message indexes")
    out = []
    for _ in range(count):
        index, pos = _varint(payload, pos)
        out.append(index)
    return out, pos


def _message_name(schema: Schema, indexes: list[int]) -> str:
    """The full name of the message the indexes lead to (IndexError for none)."""
    if any(i < 0 for i in indexes):
        raise IndexError("a negative message index")
    message = schema.file.message_type[indexes[0]]
    names = [message.name]
    for index in indexes[1:]:
        message = message.nested_type[index]
        names.append(message.name)
    return ".".join(p for p in (schema.file.package, *names) if p)


def decode(payload: bytes, schema: Schema) -> tuple[str, dict[str, Any]] | None:
    """(the message's full name, its fields) of a framed value's payload (after the id), or
    None when the payload is not a message of the schema."""
    try:
        indexes, pos = message_indexes(payload)
        name = _message_name(schema, indexes)
        cls = message_factory.GetMessageClass(schema.pool.FindMessageTypeByName(name))
        message = cls.FromString(payload[pos:])
        return name, json_format.MessageToDict(message, preserving_proto_field_name=True)
    except (IndexError, ValueError, KeyError, TypeError, DecodeError):
        return None
