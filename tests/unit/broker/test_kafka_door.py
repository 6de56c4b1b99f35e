"""The Kafka door over a real socket: ApiVersions, Metadata, produce and fetch of Kafka-built
batches, the same log through both doors, and bad input answered as Kafka answers it."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path
from typing import Any

from broker.apis import KAFKA_SERVED as SERVED  # every API the Kafka door serves
from protocol.api.fetch import FetchResponse
from protocol.batch import build_batch, decode_all
from protocol.kafka import codec
from protocol.kafka.codec import encode_request, make
from protocol.kafka.versions import API_VERSIONS, FETCH, LIST_OFFSETS, METADATA, PRODUCE
from tests.unit.broker.harness import BROKER_ID, running_broker
from tests.unit.broker.helpers import TS_MS, batch, fetch, produce

IO_TIMEOUT_S = 10.0
UNSUPPORTED_VERSION = 35


class KafkaRaw:
    """Kafka frames on a plain stream."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, port: int) -> KafkaRaw:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    def send(self, key: int, version: int, corr: int, **fields: Any) -> None:
        body = make(codec.request_class(key, version), **fields)
        self.writer.write(encode_request(key, version, corr, body))

    async def read(self, key: int, version: int) -> tuple[int, Any]:
        async with asyncio.timeout(IO_TIMEOUT_S):
            (size,) = struct.unpack(">i", await self.reader.readexactly(4))
            frame = await self.reader.readexactly(size)
        return codec.decode_response(key, version, frame)

    async def closed(self) -> bool:
        async with asyncio.timeout(IO_TIMEOUT_S):
            rest = await self.reader.read()
        return rest == b"" and self.reader.at_eof()

    def close(self) -> None:
        self.writer.close()


async def test_api_versions_lists_what_is_served(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        c = await KafkaRaw.connect(b.kafka_port)
        c.send(API_VERSIONS, 3, 1, client_software_name="t", client_software_version="1")
        corr, resp = await c.read(API_VERSIONS, 3)
        assert corr == 1 and resp.error_code.value == 0
        served = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        assert served == SERVED
        assert served[PRODUCE] == (0, 13)
        c.close()


async def test_api_versions_too_new_gets_unsupported_version_in_v0(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        c = await KafkaRaw.connect(b.kafka_port)
        # a future ApiVersions: v0 header fields, then a body we cannot know
        c.writer.write(struct.pack(">ihhih", 8 + 2 + 6, API_VERSIONS, 99, 5, -1) + b"\x00" * 6)
        corr, resp = await c.read(API_VERSIONS, 0)
        assert corr == 5
        assert resp.error_code.value == UNSUPPORTED_VERSION
        assert {k.api_key for k in resp.api_keys} == set(SERVED)
        c.close()


async def test_metadata_gives_kafka_endpoints(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("orders", partitions=2)
        c = await KafkaRaw.connect(b.kafka_port)
        c.send(METADATA, 9, 1, topics=None, allow_auto_topic_creation=False,
               include_cluster_authorized_operations=False,
               include_topic_authorized_operations=False)  # fmt: skip
        _, resp = await c.read(METADATA, 9)
        assert [(br.node_id, br.host, br.port) for br in resp.brokers] == [
            (BROKER_ID, "127.0.0.1", b.kafka_port)
        ]
        (topic,) = resp.topics
        assert topic.name == "orders"
        assert [(p.partition_index, p.leader_id) for p in topic.partitions] == [
            (0, BROKER_ID),
            (1, BROKER_ID),
        ]
        c.close()


async def test_bad_frame_closes_after_answering_what_came_before(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        c = await KafkaRaw.connect(b.kafka_port)
        c.send(API_VERSIONS, 0, 1)
        c.writer.write(struct.pack(">i", 6) + b"\x00\x03\x00\x09\xff\xff")  # truncated header
        corr, resp = await c.read(API_VERSIONS, 0)
        assert corr == 1 and resp.error_code.value == 0
        assert await c.closed()
        c.close()


async def test_unserved_version_closes_the_connection(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        c = await KafkaRaw.connect(b.kafka_port)
        c.writer.write(struct.pack(">ihhih", 10, FETCH, 3, 7, -1))  # Fetch v3: not served
        assert await c.closed()
        c.close()
        # the broker carries on: a new connection is served
        c2 = await KafkaRaw.connect(b.kafka_port)
        c2.send(API_VERSIONS, 0, 2)
        assert (await c2.read(API_VERSIONS, 0))[0] == 2
        c2.close()


async def test_one_log_through_both_doors(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        c = await KafkaRaw.connect(b.kafka_port)
        records = build_batch([(b"key", b"k-one", None, TS_MS), (None, b"k-two", None, TS_MS)])
        produce_cls = codec.request_class(PRODUCE, 9)
        part = make(codec.nested(produce_cls, "PartitionProduceData"), index=0, records=records)
        topic = make(
            codec.nested(produce_cls, "TopicProduceData"), name="t", partition_data=(part,)
        )
        c.send(PRODUCE, 9, 1, transactional_id=None, acks=1, timeout=5000, topic_data=(topic,))
        _, resp = await c.read(PRODUCE, 9)
        (presp,) = resp.responses[0].partition_responses
        assert presp.error_code.value == 0 and presp.base_offset == 0
        # the native door reads the same records
        native = await b.connect()
        got: FetchResponse = await native.send(fetch("t", {0: 0}))
        stored = got.topics[0].partitions[0].records
        assert [r.value for r in decode_all(stored)] == [b"k-one", b"k-two"]
        # and the Kafka door serves the very bytes stored (only offsets and epoch stamped)
        for version in (4, 11, 12):
            fetch_cls = codec.request_class(FETCH, version)
            fp = make(codec.nested(fetch_cls, "FetchPartition"), partition=0, fetch_offset=0,
                      partition_max_bytes=1 << 20, current_leader_epoch=-1,
                      last_fetched_epoch=-1, log_start_offset=-1)  # fmt: skip
            ft = make(codec.nested(fetch_cls, "FetchTopic"), topic="t", partitions=(fp,))
            c.send(FETCH, version, 10 + version, replica_id=-1, max_wait=0, min_bytes=1,
                   max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                   topics=(ft,), forgotten_topics_data=(), rack_id="")  # fmt: skip
            corr, fresp = await c.read(FETCH, version)
            assert corr == 10 + version
            p = fresp.responses[0].partitions[0]
            assert p.high_watermark == 2
            assert bytes(p.records) == bytes(stored)
        # ListOffsets: latest is the high watermark
        lo_cls = codec.request_class(LIST_OFFSETS, 6)
        lp = make(codec.nested(lo_cls, "ListOffsetsPartition"), partition_index=0,
                  current_leader_epoch=-1, timestamp=-1)  # fmt: skip
        lt = make(codec.nested(lo_cls, "ListOffsetsTopic"), name="t", partitions=(lp,))
        c.send(LIST_OFFSETS, 6, 30, replica_id=-1, isolation_level=0, topics=(lt,))
        _, lresp = await c.read(LIST_OFFSETS, 6)
        assert lresp.topics[0].partitions[0].offset == 2
        c.close()


def _fetch_v12(session_id: int, epoch: int, parts: dict[int, int], **more: Any) -> dict[str, Any]:
    fetch_cls = codec.request_class(FETCH, 12)
    fps = tuple(
        make(codec.nested(fetch_cls, "FetchPartition"), partition=p, fetch_offset=offset,
             partition_max_bytes=1 << 20, current_leader_epoch=-1, last_fetched_epoch=-1,
             log_start_offset=-1)
        for p, offset in parts.items()
    )  # fmt: skip
    topics = (make(codec.nested(fetch_cls, "FetchTopic"), topic="t", partitions=fps),)
    fields = dict(replica_id=-1, max_wait=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                  session_id=session_id, session_epoch=epoch, topics=topics if parts else (),
                  forgotten_topics_data=(), rack_id="")  # fmt: skip
    fields.update(more)
    return fields


async def test_a_kafka_client_that_asks_for_a_fetch_session_gets_incremental_answers(
    tmp_path: Path,
) -> None:
    """KIP-227 as kafka-python uses it: epoch 0 opens a session; each later fetch names what
    moved and is answered with the partitions that have something new."""
    async with running_broker(tmp_path) as b:
        await b.lead("t", partitions=3)
        native = await b.connect()
        assert (await native.send(produce("t", 0, batch(2)))).topics[0].partitions[
            0
        ].error_code == 0
        c = await KafkaRaw.connect(b.kafka_port)
        c.send(FETCH, 12, 1, **_fetch_v12(0, 0, {0: 0, 1: 0, 2: 0}))
        _, full = await c.read(FETCH, 12)
        assert full.error_code.value == 0 and full.session_id != 0
        got = {p.partition_index: p for t in full.responses for p in t.partitions}
        assert sorted(got) == [0, 1, 2] and len(decode_all(bytes(got[0].records))) == 2
        sid = full.session_id

        c.send(FETCH, 12, 2, **_fetch_v12(sid, 1, {0: 2}))  # partition 0 moved past its records
        _, quiet = await c.read(FETCH, 12)
        assert quiet.error_code.value == 0 and quiet.session_id == sid
        assert quiet.responses == ()  # nothing new anywhere: an empty answer

        assert (await native.send(produce("t", 2, batch(1)))).topics[0].partitions[
            0
        ].error_code == 0
        c.send(FETCH, 12, 3, **_fetch_v12(sid, 2, {}))
        _, moved = await c.read(FETCH, 12)
        assert [(p.partition_index, p.high_watermark) for t in moved.responses
                for p in t.partitions] == [(2, 1)]  # fmt: skip

        c.send(FETCH, 12, 4, **_fetch_v12(sid, 2, {}))  # an epoch already used
        _, stale = await c.read(FETCH, 12)
        assert stale.error_code.value == 71 and stale.responses == ()  # INVALID_FETCH_SESSION_EPOCH
        c.send(FETCH, 12, 5, **_fetch_v12(sid + 1, 1, {}))
        _, unknown = await c.read(FETCH, 12)
        assert unknown.error_code.value == 70  # FETCH_SESSION_ID_NOT_FOUND
        c.close()
