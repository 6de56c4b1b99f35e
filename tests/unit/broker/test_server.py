"""The broker over a real socket: produce, fetch, pipelining, limits, bad input."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from pathlib import Path
from typing import Any

import msgpack
import pytest

import broker.connection_out
import broker.server
from protocol.api.fetch import FetchResponse
from protocol.api.metadata import MetadataRequest, MetadataResponse
from protocol.api.produce import ProduceResponse
from protocol.batch import CONTROL_BIT, DELETE_HORIZON_BIT, TRANSACTIONAL_BIT, decode_all
from protocol.clock import ManualClock
from protocol.codec import FileSlice, encode_request, split_response
from protocol.errors import (
    CorruptMessageError,
    InvalidRecordError,
    InvalidRequestError,
    InvalidRequiredAcksError,
    InvalidTopicError,
    MessageTooLargeError,
    NotLeaderForPartitionError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from protocol.framing import encode_frame
from tests.unit.broker.harness import FakeTopicStore, RawClient, running_broker
from tests.unit.broker.helpers import batch, fetch, produce, stamped, with_attributes
from tests.unit.compacted_batches import compact


def _records(resp: FetchResponse, partition: int = 0) -> bytes:
    for p in resp.topics[0].partitions:
        if p.partition == partition:
            return bytes(p.records)
    raise AssertionError(f"partition {partition} not in the response")


def _leo(harness: Any, topic: str, partition: int = 0) -> int:
    log = harness.log_manager.get(topic, partition)
    return -1 if log is None else int(log.log_end_offset)


async def test_produce_then_fetch_returns_the_bytes_produced_with_offsets_stamped(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        conn = await b.connect()
        sent = [batch(10, fill=bytes([65 + i])) for i in range(3)]
        bases = []
        for data in sent:
            resp: ProduceResponse = await conn.send(produce("t", 0, data))
            part = resp.topics[0].partitions[0]
            assert part.error_code == 0
            bases.append(part.base_offset)
        assert bases == [0, 10, 20]
        got: FetchResponse = await conn.send(fetch("t", {0: 0}))
        part = got.topics[0].partitions[0]
        assert (part.error_code, part.high_watermark, part.log_end_offset) == (0, 30, 30)
        assert bytes(part.records) == b"".join(
            stamped(d, base) for d, base in zip(sent, bases, strict=True)
        )
        assert [r.offset for r in decode_all(bytes(part.records))] == list(range(30))
        tail: FetchResponse = await conn.send(fetch("t", {0: 20}))
        assert _records(tail) == stamped(sent[2], 20)
        at_end: FetchResponse = await conn.send(fetch("t", {0: 30}))
        assert _records(at_end) == b""
        beyond: FetchResponse = await conn.send(fetch("t", {0: 31}))
        assert beyond.topics[0].partitions[0].error_code == 1  # OFFSET_OUT_OF_RANGE


async def test_many_partitions_per_fetch_with_partition_and_total_limits(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("m", partitions=3)
        conn = await b.connect()
        one = batch(10, 100)
        size = len(one)
        for p in range(3):
            for _ in range(2):
                assert (await conn.send(produce("m", p, one))).topics[0].partitions[
                    0
                ].error_code == 0
        # each partition limited to one batch; all three fit in the total
        resp = await conn.send(fetch("m", {0: 0, 1: 0, 2: 0}, partition_max_bytes=size))
        assert [len(_records(resp, p)) for p in range(3)] == [size, size, size]
        # the total runs out after two and a half batches: the third partition gets nothing
        resp = await conn.send(
            fetch(
                "m",
                {0: 0, 1: 0, 2: 0},
                partition_max_bytes=2 * size,
                max_bytes=2 * size + size // 2,
            )
        )
        assert [len(_records(resp, p)) for p in range(3)] == [2 * size, 0, 0]
        assert all(p.error_code == 0 for p in resp.topics[0].partitions)
        # limits below one batch: only the first partition gets one whole batch (no stall)
        resp = await conn.send(fetch("m", {0: 0, 1: 0, 2: 0}, partition_max_bytes=10, max_bytes=10))
        assert [len(_records(resp, p)) for p in range(3)] == [size, 0, 0]


async def test_long_poll_wakes_as_soon_as_data_arrives(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("lp")
        consumer = await b.connect()
        producer = await b.connect()
        loop = asyncio.get_running_loop()
        started = loop.time()
        waiting = asyncio.create_task(consumer.send(fetch("lp", {0: 0}, max_wait_ms=5000)))
        await asyncio.sleep(0.1)
        assert not waiting.done()  # parked: nothing to return yet
        assert b.ctx.replicas.delayed_fetches == 1
        data = batch(5)
        await producer.send(produce("lp", 0, data))
        resp = await asyncio.wait_for(waiting, 4)
        assert _records(resp) == stamped(data, 0)
        assert loop.time() - started < 4.0  # well before max_wait
        assert b.ctx.replicas.delayed_fetches == 0


async def test_long_poll_times_out_with_an_empty_answer(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("lp")
        conn = await b.connect()
        loop = asyncio.get_running_loop()
        started = loop.time()
        resp = await conn.send(fetch("lp", {0: 0}, max_wait_ms=150))
        assert loop.time() - started >= 0.14
        assert _records(resp) == b"" and resp.topics[0].partitions[0].error_code == 0


async def test_pipelined_requests_are_answered_in_order(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("p")
        raw = await RawClient.connect(b.port)
        # a slow request first (a long poll), then many fast ones, all in one write
        corrs = [raw.send(fetch("p", {0: 0}, max_wait_ms=300))]
        for i in range(60):
            corrs.append(raw.send(produce("p", 0, batch(1)) if i % 2 else MetadataRequest(["p"])))
        got = []
        for _ in corrs:
            corr, code, _body = split_response(await raw.read_frame())
            assert code == 0
            got.append(corr)
        assert got == corrs
        assert _leo(b, "p") == 30
        await raw.close()


async def test_acks_zero_gets_no_response(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("z")
        raw = await RawClient.connect(b.port)
        raw.send(produce("z", 0, batch(3), acks=0))
        meta_corr = raw.send(MetadataRequest(["z"]))
        corr, meta = await raw.read_response(MetadataResponse)
        assert corr == meta_corr
        assert meta.topics[0].partitions[0].leader == 1
        assert _leo(b, "z") == 3
        await raw.close()


@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("unknown topic", UnknownTopicOrPartitionError.code),
        ("unknown partition", UnknownTopicOrPartitionError.code),
        ("not leader", NotLeaderForPartitionError.code),
        ("bad crc", CorruptMessageError.code),
        ("bad magic", CorruptMessageError.code),
        ("old magic 1", CorruptMessageError.code),
        ("transactional", InvalidRecordError.code),
        ("control batch", InvalidRecordError.code),
        ("compacted", InvalidRecordError.code),  # the log cleaner's shapes: never a producer's
        ("delete horizon", InvalidRecordError.code),
        ("two batches", CorruptMessageError.code),
        ("too large", MessageTooLargeError.code),
        ("bad acks", InvalidRequiredAcksError.code),
    ],
)
async def test_bad_produce_gets_its_error_and_writes_nothing(
    tmp_path: Path, case: str, code: int
) -> None:
    store = FakeTopicStore(configs={"t": {"max.message.bytes": "2000"}})
    async with running_broker(tmp_path, topics=store) as b:
        await b.lead("t")
        await b.lead("other", leader=2)
        conn = await b.connect()
        good = batch(10)
        topic, partition, data, acks = "t", 0, good, 1
        if case == "unknown topic":
            topic = "nope"
        elif case == "unknown partition":
            partition = 7
        elif case == "not leader":
            topic = "other"
        elif case == "bad crc":
            data = good[:-1] + bytes([good[-1] ^ 0xFF])
        elif case == "bad magic":
            data = good[:16] + b"\x07" + good[17:]
        elif case == "old magic 1":  # odradek's pre-Kafka batches: same header, other records
            data = good[:16] + b"\x01" + good[17:]
        elif case in ("transactional", "control batch"):
            bit = TRANSACTIONAL_BIT if case == "transactional" else CONTROL_BIT
            data = with_attributes(good, bit)
        elif case == "compacted":
            data = compact(good, [0, 4])
        elif case == "delete horizon":
            data = with_attributes(good, DELETE_HORIZON_BIT)
        elif case == "two batches":
            data = good + good
        elif case == "too large":
            data = batch(30, 100)
        elif case == "bad acks":
            acks = 5
        resp = await conn.send(produce(topic, partition, data, acks=acks))
        assert resp.topics[0].partitions[0].error_code == code
        assert _leo(b, "t") == 0
        assert _leo(b, "other") == 0


@pytest.mark.parametrize(
    ("name", "frame", "answer"),
    [
        ("oversize length", struct.pack(">i", 2 << 20) + b"x" * 100, None),
        ("zero length", struct.pack(">i", 0), None),
        ("garbage msgpack", encode_frame(b"\xc1\xc1\xc1\xc1"), None),
        ("not an envelope", encode_frame(msgpack.packb({"a": 1})), None),
        ("wrong body type", encode_frame(msgpack.packb([0, 0, 7, "x", "not a list"])),
         (7, InvalidRequestError.code)),
        ("wrong field type", encode_frame(msgpack.packb([0, 0, 8, None, [1, "soon", []]])),
         (8, InvalidRequestError.code)),
        ("records not bytes", encode_frame(msgpack.packb(
            [0, 0, 9, None, [1, 100, [["t", [[0, 12345]]]]]])), (9, InvalidRequestError.code)),
        ("unknown api key", encode_frame(msgpack.packb([999, 0, 10, None, []])),
         (10, InvalidRequestError.code)),
        ("unsupported version", encode_frame(msgpack.packb([0, 9, 11, None, []])),
         (11, UnsupportedVersionError.code)),
        # ("not served here" was api 7, ControlledShutdown, which every broker serves now:
        # a broker that is not the controller answers NOT_CONTROLLER.)
    ],
)  # fmt: skip
async def test_bad_input_closes_only_that_connection(
    tmp_path: Path, name: str, frame: bytes, answer: tuple[int, int] | None
) -> None:
    async with running_broker(tmp_path, socket_request_max_bytes=1 << 20) as b:
        await b.lead("t")
        bystander = await b.connect()
        bad = await RawClient.connect(b.port)
        bad.send_bytes(frame)
        if answer is not None:
            corr, code, body = split_response(await bad.read_frame())
            assert (corr, code, body) == (answer[0], answer[1], None)
        assert await bad.at_eof()
        assert _leo(b, "t") == 0  # nothing reached the log
        resp = await bystander.send(produce("t", 0, batch(2)))
        assert resp.topics[0].partitions[0].error_code == 0
        await bad.close()


async def test_answers_before_bad_input_are_still_sent(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        raw = await RawClient.connect(b.port)
        first = raw.send(produce("t", 0, batch(2)))
        raw.send_bytes(encode_frame(msgpack.packb([999, 0, 77, None, []])))
        corr, code, _ = split_response(await raw.read_frame())
        assert (corr, code) == (first, 0)
        corr, code, _ = split_response(await raw.read_frame())
        assert (corr, code) == (77, InvalidRequestError.code)
        assert await raw.at_eof()
        assert _leo(b, "t") == 2
        await raw.close()


@pytest.mark.parametrize("use_sendfile", [True, False])
async def test_sendfile_and_pread_paths_deliver_identical_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_sendfile: bool
) -> None:
    calls = {"sendfile": 0}
    real_sendfile = os.sendfile

    def counting_sendfile(out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        calls["sendfile"] += 1
        return real_sendfile(out_fd, in_fd, offset, count)

    monkeypatch.setattr(broker.connection_out.os, "sendfile", counting_sendfile)
    async with running_broker(tmp_path, fetch_use_sendfile=use_sendfile) as b:
        await b.lead("s")
        conn = await b.connect()
        sent = [batch(100, 1000, fill=bytes([48 + i])) for i in range(30)]  # ~3 MB
        expected = []
        for data in sent:
            resp = await conn.send(produce("s", 0, data))
            expected.append(stamped(data, resp.topics[0].partitions[0].base_offset))
        got = await conn.send(fetch("s", {0: 0}, partition_max_bytes=8 << 20))
        assert _records(got) == b"".join(expected)
        # small fetches, pipelined, exercise the path with the write buffer both empty and not
        many = await asyncio.gather(*(conn.send(fetch("s", {0: i * 100})) for i in range(30)))
        assert [_records(r)[: len(expected[i])] for i, r in enumerate(many)] == expected
    assert (calls["sendfile"] > 0) == use_sendfile


async def test_small_log_slices_join_the_header_in_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fetch answer with little log data goes out as one write (read when the fetch reads:
    SMALL_READ_BYTES), not header+sendfile; a large one still uses sendfile. The bytes are the
    same either way."""
    calls = {"sendfile": 0}
    real_sendfile = os.sendfile

    def counting_sendfile(out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        calls["sendfile"] += 1
        return real_sendfile(out_fd, in_fd, offset, count)

    monkeypatch.setattr(broker.connection_out.os, "sendfile", counting_sendfile)
    async with running_broker(tmp_path) as b:
        await b.lead("small")
        conn = await b.connect()
        small = batch(1, 100)
        resp = await conn.send(produce("small", 0, small))
        got = await conn.send(fetch("small", {0: 0}))
        assert _records(got) == stamped(small, resp.topics[0].partitions[0].base_offset)
        assert calls["sendfile"] == 0
        big = batch(100, 1000)  # ~100 KB: above SMALL_READ_BYTES
        resp = await conn.send(produce("small", 0, big))
        base = resp.topics[0].partitions[0].base_offset
        got = await conn.send(fetch("small", {0: base}))
        assert _records(got) == stamped(big, base)
        assert calls["sendfile"] > 0


async def test_a_small_read_is_the_log_bytes_and_a_large_one_a_file_slice(tmp_path: Path) -> None:
    """The encoder gets a small read's bytes (no stand-in for a slice, no pread at flush) and a
    large read's FileSlice (sendfile)."""
    async with running_broker(tmp_path) as b:
        await b.lead("reads")
        conn = await b.connect()
        small, big = batch(1, 100), batch(100, 1000)
        await conn.send(produce("reads", 0, small))
        resp = await conn.send(produce("reads", 0, big))
        big_at = resp.topics[0].partitions[0].base_offset
        replicas = b.ctx.replicas
        for offset, limit, kind, data in [
            (0, len(small), bytes, stamped(small, 0)),
            (big_at, 1 << 20, FileSlice, stamped(big, big_at)),
        ]:
            req = fetch("reads", {0: offset}, partition_max_bytes=limit)
            (read,) = replicas.read_all(req, replicas.fetch_context(req))
            assert type(read.records) is kind
            records = read.records
            if isinstance(records, FileSlice):
                records = os.pread(records.fd, records.length, records.position)
            assert records == data


@pytest.mark.parametrize("bound", ["requests", "bytes"])
async def test_in_flight_bound_pauses_reading(tmp_path: Path, bound: str) -> None:
    # three parked fetches reach the bound, counted in requests or in request bytes
    frame_bytes = len(encode_request(fetch("f", {0: 0}, max_wait_ms=5000), 1, "raw")) - 4
    limits = (
        {"max_inflight_requests_per_connection": 3}
        if bound == "requests"
        else {"max_inflight_bytes_per_connection": 3 * frame_bytes}
    )
    async with running_broker(tmp_path, **limits) as b:
        await b.lead("f")
        raw = await RawClient.connect(b.port)
        corrs = [raw.send(fetch("f", {0: 0}, max_wait_ms=5000)) for _ in range(3)]
        for _ in range(200):
            conns = list(b.server.connections)
            if any(c.reading_paused for c in conns):
                break
            await asyncio.sleep(0.01)
        (server_side,) = [c for c in b.server.connections if len(c.pending) == 3]
        assert server_side.reading_paused
        corrs.append(raw.send(MetadataRequest(["f"])))
        await asyncio.sleep(0.2)
        assert len(server_side.pending) == 3  # the fourth request was not read
        producer = await b.connect()
        await producer.send(produce("f", 0, batch(1)))
        got = [split_response(await raw.read_frame())[0] for _ in corrs]
        assert got == corrs
        assert not server_side.reading_paused
        await raw.close()


async def test_idle_connections_are_closed(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock, connections_max_idle_ms=60_000) as b:
        await b.lead("i")
        idle = await RawClient.connect(b.port)
        busy = await RawClient.connect(b.port)
        idle.send(MetadataRequest(None))
        await idle.read_frame()
        busy_corr = busy.send(fetch("i", {0: 0}, max_wait_ms=3000))
        await asyncio.sleep(0.05)
        clock.advance(59_000)
        assert b.server.check_idle() == 0
        clock.advance(2_000)
        # closed: the idle client and the harness's controller connection; the busy one has a
        # request pending and stays
        assert b.server.check_idle() == 2
        assert await idle.at_eof()
        producer = await b.connect()
        await producer.send(produce("i", 0, batch(1)))
        corr, code, _ = split_response(await busy.read_frame())
        assert (corr, code) == (busy_corr, 0)
        await idle.close()
        await busy.close()


async def test_connections_beyond_the_limit_are_refused(tmp_path: Path) -> None:
    async with running_broker(tmp_path, max_connections=2) as b:
        await b.lead("c")  # the harness's controller connection is the first
        kept = await RawClient.connect(b.port)
        kept_corr = kept.send(MetadataRequest(None))
        assert (await kept.read_response(MetadataResponse))[0] == kept_corr
        refused = await RawClient.connect(b.port)
        assert await refused.at_eof()
        assert len(b.server.connections) == 2
        await kept.close()
        await refused.close()


@pytest.mark.parametrize("use_sendfile", [True, False])
async def test_a_file_shorter_than_its_slice_closes_the_connection(
    tmp_path: Path, use_sendfile: bool
) -> None:
    """A slice promised more bytes than the file holds (truncated meanwhile): the frame cannot
    be completed, so the connection is closed rather than left with a torn response."""
    async with running_broker(tmp_path, fetch_use_sendfile=use_sendfile) as b:
        path = tmp_path / "short.bin"
        path.write_bytes(b"0123456789" * 5)
        fd = os.open(path, os.O_RDONLY)
        ours, theirs = socket.socketpair()
        try:
            loop = asyncio.get_running_loop()
            _, conn = await loop.connect_accepted_socket(
                lambda: broker.server.Connection(b.server), ours
            )
            assert isinstance(conn, broker.server.Connection)
            assert conn._send_slice(FileSlice(fd, 0, 30))  # fits: sent
            assert not conn._send_slice(FileSlice(fd, 40, 30))  # 10 bytes short: closed
            assert conn.closed
            theirs.setblocking(False)
            received = b""
            for _ in range(100):
                try:
                    chunk = await loop.sock_recv(theirs, 1024)
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                received += chunk
            assert received.startswith(b"0123456789" * 3)
            assert len(received) < 60  # the short slice never completed
        finally:
            os.close(fd)
            theirs.close()


async def test_clients_cannot_produce_to_the_internal_offsets_topic(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("__consumer_offsets")
        conn = await b.connect()
        resp: ProduceResponse = await conn.send(produce("__consumer_offsets", 0, batch(3)))
        assert resp.topics[0].partitions[0].error_code == InvalidTopicError.code
        assert _leo(b, "__consumer_offsets") == 0  # nothing written


async def test_a_peer_retrying_bad_frames_is_logged_once_a_minute(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="odradek.broker.server")
    async with running_broker(tmp_path, socket_request_max_bytes=1 << 20) as b:
        for _ in range(20):  # a client sending a frame too large, reconnecting each time
            bad = await RawClient.connect(b.port)
            bad.send_bytes(struct.pack(">i", 50_000_000))
            assert await bad.at_eof()
            await bad.close()
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.INFO and "above the maximum" in r.getMessage()
    ]
    assert len(lines) == 1, lines
