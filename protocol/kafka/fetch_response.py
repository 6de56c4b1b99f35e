"""The Kafka Fetch response (v4-v18) as chunks: bytes, and `FileSlice`s sent from the segments.

kio encodes whole entities in memory; a fetch response's records must go from the segment file
to the socket without passing through Python (sendfile), so this one response is laid out here,
from Kafka's FetchResponse.json, with the records as `FileSlice` chunks. Layout (v12 is
flexible: compact strings, arrays and records as uvarint(n + 1), null as 0, and an empty tagged
field section, one 0 byte, closing each struct):

    throttle_time_ms int32
    error_code int16                               v7+
    session_id int32                               v7+ (the fetch session, KIP-227; 0: none)
    responses [
      topic string (v4-v12) | topic_id uuid, 16 bytes (v13+, KIP-516)
      partitions [
        partition_index int32, error_code int16, high_watermark int64,
        last_stable_offset int64, log_start_offset int64 (v5+),
        aborted_transactions [producer_id int64, first_offset int64] (nullable: null unless
        read_committed),
        preferred_read_replica int32 (v11+, -1), records (nullable bytes),
        tagged fields (v12+): 1 current_leader {leader_id int32, leader_epoch int32}, only
        with NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH and a known leader (KIP-951)
      ]
    ]
    tagged fields (v16+): 0 node_endpoints [node_id int32, host string, port int32, rack
      nullable string], the leaders named by current_leader (KIP-951)

v15 (replica_state in the request), v17 (replica directory ids, KIP-853) and v18 (the
follower's high watermark, KIP-1166) change only the request, for followers: the response is
v14's.

Tests check every version against kio's reader.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from protocol.codec import Chunk, FileSlice
from protocol.varint import write_uvarint

MIN_VERSION = 4
MAX_VERSION = 18
FLEXIBLE_FROM = 12
TOPIC_IDS_FROM = 13
NODE_ENDPOINTS_FROM = 16
CURRENT_LEADER_TAG = 1
NODE_ENDPOINTS_TAG = 0

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PARTITION_HEAD = struct.Struct(">ihqqq")  # index, error, hw, last stable, log start
_PARTITION_HEAD_V4 = struct.Struct(">ihqq")  # v4 has no log start offset
_ABORTED = struct.Struct(">qq")  # producer id, first offset


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    partition: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    records: bytes | FileSlice | None
    last_stable_offset: int = -1  # -1: the high watermark (no transactions known)
    aborted: list[tuple[int, int]] | None = None  # (producer id, first offset); None: null
    current_leader: tuple[int, int] | None = None  # (leader id, leader epoch): a leader hint


@dataclass(frozen=True, slots=True)
class NodeEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


class _Writer:
    """Collects bytes, cutting a new chunk around each FileSlice."""

    def __init__(self, flexible: bool) -> None:
        self.flexible = flexible
        self.chunks: list[Chunk] = []
        self.buf = bytearray()
        self.size = 0

    def raw(self, data: bytes) -> None:
        self.buf += data

    def length(self, n: int) -> None:
        """An array or string length (n >= 0)."""
        self.buf += write_uvarint(n + 1) if self.flexible else _I32.pack(n)

    def string(self, value: str) -> None:
        data = value.encode()
        self.buf += write_uvarint(len(data) + 1) if self.flexible else _I16.pack(len(data))
        self.buf += data

    def null_array(self) -> None:
        self.buf += b"\x00" if self.flexible else _I32.pack(-1)

    def tags(self) -> None:
        if self.flexible:
            self.buf += b"\x00"

    def tagged(self, fields: list[tuple[int, bytes]]) -> None:
        """A tagged-field section: count, then (tag, size, bytes) each, tags ascending."""
        self.buf += write_uvarint(len(fields))
        for tag, data in fields:
            self.buf += write_uvarint(tag) + write_uvarint(len(data)) + data

    def records(self, value: bytes | FileSlice | None) -> None:
        if value is None:
            self.null_array()
            return
        n = value.length if isinstance(value, FileSlice) else len(value)
        self.length(n)
        if isinstance(value, FileSlice):
            if n:
                self._cut()
                self.chunks.append(value)
                self.size += n
        else:
            self.buf += value

    def _cut(self) -> None:
        if self.buf:
            self.chunks.append(bytes(self.buf))
            self.size += len(self.buf)
            self.buf = bytearray()

    def finish(self, header: bytes) -> list[Chunk]:
        self._cut()
        total = len(header) + self.size
        return [_I32.pack(total) + header, *self.chunks]


def encode_fetch_response(
    version: int,
    header: bytes,
    topics: list[tuple[str | uuid.UUID | None, list[FetchedPartition]]],
    error_code: int = 0,
    throttle_time_ms: int = 0,
    session_id: int = 0,
    node_endpoints: list[NodeEndpoint] | None = None,
) -> list[Chunk]:
    """The whole response frame (size, `header`, body) as chunks. Each topic is its name
    before v13 and its id (None: the null id) from v13."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError(f"Fetch response v{version} is not encoded here")
    w = _Writer(version >= FLEXIBLE_FROM)
    w.raw(_I32.pack(throttle_time_ms))
    if version >= 7:
        w.raw(_I16.pack(error_code) + _I32.pack(session_id))
    w.length(len(topics))
    for topic, partitions in topics:
        if version >= TOPIC_IDS_FROM:
            w.raw((topic if isinstance(topic, uuid.UUID) else uuid.UUID(int=0)).bytes)
        else:
            w.string(topic if isinstance(topic, str) else "")
        w.length(len(partitions))
        for p in partitions:
            lso = p.high_watermark if p.last_stable_offset < 0 else p.last_stable_offset
            if version >= 5:
                w.raw(_PARTITION_HEAD.pack(p.partition, p.error_code, p.high_watermark,
                                           lso, p.log_start_offset))  # fmt: skip
            else:
                w.raw(_PARTITION_HEAD_V4.pack(p.partition, p.error_code, p.high_watermark,
                                              lso))  # fmt: skip
            if p.aborted is None:
                w.null_array()
            else:
                w.length(len(p.aborted))
                for producer_id, first_offset in p.aborted:
                    w.raw(_ABORTED.pack(producer_id, first_offset))
                    w.tags()
            if version >= 11:
                w.raw(_I32.pack(-1))  # preferred read replica: the leader
            w.records(p.records)
            if w.flexible and p.current_leader is not None:
                w.tagged([(CURRENT_LEADER_TAG, _I32.pack(p.current_leader[0])
                           + _I32.pack(p.current_leader[1]) + b"\x00")])  # fmt: skip
            else:
                w.tags()
        w.tags()
    if version >= NODE_ENDPOINTS_FROM and node_endpoints:
        w.tagged([(NODE_ENDPOINTS_TAG, _node_endpoints(node_endpoints))])
    else:
        w.tags()
    return w.finish(header)


def _node_endpoints(nodes: list[NodeEndpoint]) -> bytes:
    e = _Writer(flexible=True)
    e.length(len(nodes))
    for n in nodes:
        e.raw(_I32.pack(n.node_id))
        e.string(n.host)
        e.raw(_I32.pack(n.port))
        if n.rack is None:
            e.raw(b"\x00")
        else:
            e.string(n.rack)
        e.tags()
    return bytes(e.buf)
