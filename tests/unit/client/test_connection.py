"""BrokerConnection against a fake broker: pipelining, correlation, timeouts, disconnects."""

import asyncio
from collections.abc import Callable

import msgpack
import pytest

from protocol.api.fetch import (
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    FetchTopicResponse,
)
from protocol.api.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from protocol.api.metadata import MetadataRequest, MetadataResponse
from protocol.api.produce import ProducePartition, ProduceRequest, ProduceTopic
from protocol.batch import build_batch_from_values
from protocol.codec import decode_request, encode_response
from protocol.errors import NetworkError, RequestTimedOutError, UnsupportedVersionError
from protocol.framing import FrameDecoder
from protocol.schema import Records
from tests.unit.client.fake_broker import FakeState
from transport.connection import BrokerConnection, InlineAnswer, _BrokerProtocol


async def _connect(state: FakeState, **kw: object) -> BrokerConnection:
    return await BrokerConnection.connect("127.0.0.1", state.brokers[1].port, **kw)  # type: ignore[arg-type]


async def test_send_returns_the_decoded_response(fake1: FakeState) -> None:
    fake1.create_topic("t", 3)
    conn = await _connect(fake1, client_id="c1")
    resp = await conn.send(MetadataRequest(["t"]))
    assert isinstance(resp, MetadataResponse)
    assert [p.partition for p in resp.topics[0].partitions] == [0, 1, 2]
    assert resp.brokers[0].port == fake1.brokers[1].port
    await conn.close()
    assert conn.closed


class _CallsSeen:
    """The connection's transport, passed through, with the write calls it got listed."""

    def __init__(self, transport: object) -> None:
        self.transport = transport
        self.calls: list[tuple[str, list[object]]] = []

    def write(self, data: bytes) -> None:
        self.calls.append(("write", [data]))
        self.transport.write(data)  # type: ignore[attr-defined]

    def writelines(self, chunks: list[bytes]) -> None:
        self.calls.append(("writelines", list(chunks)))
        self.transport.writelines(chunks)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.transport, name)


async def test_a_bulk_produce_goes_out_in_one_writelines_holding_its_batches(
    fake1: FakeState,
) -> None:
    """Batches of at least codec.BIG_RECORDS_BYTES are handed to the transport as they are (one
    writev with uvloop), not copied into the frame; a small request is still one write."""
    fake1.create_topic("t", 2)
    conn = await _connect(fake1)
    seen = _CallsSeen(conn._transport)
    conn._transport = seen  # type: ignore[assignment]
    batches = [build_batch_from_values([b"v" * 1000] * 300, 0) for _ in range(2)]
    parts = [ProducePartition(p, Records(b)) for p, b in enumerate(batches)]
    request = ProduceRequest(1, 30_000, [ProduceTopic("t", parts)], None)
    resp = await conn.send(request)
    assert [p.error_code for p in resp.topics[0].partitions] == [0, 0]
    [(kind, chunks)] = seen.calls
    assert kind == "writelines"
    assert [c for c in chunks if any(c is b for b in batches)] == batches
    [frame] = FrameDecoder().feed(b"".join(chunks))  # one whole frame, of this request
    assert decode_request(frame).body == request
    stored = fake1.logs[("t", 0)] + fake1.logs[("t", 1)]
    assert [len(b) for b in stored] == [len(b) for b in batches]
    await conn.send(MetadataRequest(["t"]))
    assert [kind for kind, _ in seen.calls] == ["writelines", "write"]
    await conn.close()


async def test_pipelined_requests_are_matched_to_their_responses(fake1: FakeState) -> None:
    for i in range(20):
        fake1.create_topic(f"t{i}", i + 1)
    conn = await _connect(fake1)
    reqs = [conn.send(MetadataRequest([f"t{i}"])) for i in range(20)]
    resps = await asyncio.gather(*reqs)
    for i, resp in enumerate(resps):
        assert resp.topics[0].name == f"t{i}"
        assert len(resp.topics[0].partitions) == i + 1
    assert fake1.requests["Metadata"] == 20
    await conn.close()


async def test_in_flight_is_bounded(fake1: FakeState) -> None:
    fake1.delay_ms["Metadata"] = 50
    conn = await _connect(fake1, max_in_flight=3)
    tasks = [asyncio.ensure_future(conn.send(MetadataRequest([]))) for _ in range(7)]
    await asyncio.sleep(0.02)
    assert conn.in_flight == 3
    await asyncio.gather(*tasks)
    assert conn.in_flight == 0
    await conn.close()


async def test_timeout_raises_and_connection_survives(fake1: FakeState) -> None:
    fake1.drop.add("Metadata")
    conn = await _connect(fake1)
    with pytest.raises(RequestTimedOutError):
        await conn.send(MetadataRequest([]), timeout_ms=50)
    assert not conn.closed
    assert conn.in_flight == 0
    fake1.drop.clear()
    resp = await conn.send(MetadataRequest([]), timeout_ms=1000)
    assert resp.cluster_id == "fake"
    await conn.close()


async def test_send_now_writes_at_once_within_the_in_flight_bound(fake1: FakeState) -> None:
    """send_now writes without awaiting anything, or not at all: a slot is taken at the write
    and given back when the answer comes (or fails), and waiting senders get theirs in turn."""
    fake1.delay_ms["Metadata"] = 50
    conn = await _connect(fake1, max_in_flight=2)
    first, second = conn.send_now(MetadataRequest([])), conn.send_now(MetadataRequest([]))
    assert first is not None and second is not None and conn.in_flight == 2
    assert conn.send_now(MetadataRequest([])) is None  # no free slot: nothing written
    waiting = asyncio.ensure_future(conn.send(MetadataRequest([])))
    await asyncio.sleep(0.01)
    assert conn.in_flight == 2 and not waiting.done()
    resp = await conn.wait_answer(first, "Metadata", 1000)
    assert resp.cluster_id == "fake"
    assert (await waiting).cluster_id == "fake"  # it took the slot the first answer gave back
    await conn.wait_answer(second, "Metadata", 1000)
    assert conn.in_flight == 0
    fake1.drop.add("Metadata")
    lost = conn.send_now(MetadataRequest([]))
    assert lost is not None
    with pytest.raises(RequestTimedOutError):
        await conn.wait_answer(lost, "Metadata", 30)
    assert conn.in_flight == 0  # the timed-out request gave its slot back
    assert conn.send_now(MetadataRequest([])) is not None
    assert conn.send_now(MetadataRequest([])) is not None
    await conn.close()
    with pytest.raises(NetworkError):
        conn.send_now(MetadataRequest([]))


async def test_a_sender_cancelled_while_waiting_for_a_slot_passes_it_on(fake1: FakeState) -> None:
    fake1.delay_ms["Metadata"] = 30
    conn = await _connect(fake1, max_in_flight=1)
    holder = asyncio.ensure_future(conn.send(MetadataRequest([])))
    await asyncio.sleep(0.005)
    cancelled = asyncio.ensure_future(conn.send(MetadataRequest([])))
    after = asyncio.ensure_future(conn.send(MetadataRequest([])))
    await asyncio.sleep(0.005)
    cancelled.cancel()
    await holder
    assert (await after).cluster_id == "fake"
    assert cancelled.cancelled() and conn.in_flight == 0
    await conn.close()


async def test_an_inline_answers_callbacks_run_inside_the_read_that_brings_it(
    fake1: FakeState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An InlineAnswer is settled in buffer_updated (an answer) or in the close (a lost
    connection), its callbacks run there, and its slot is given back first."""
    reading = False
    original = _BrokerProtocol.buffer_updated

    def buffer_updated(self: _BrokerProtocol, nbytes: int) -> None:
        nonlocal reading
        reading = True
        try:
            original(self, nbytes)
        finally:
            reading = False

    monkeypatch.setattr(_BrokerProtocol, "buffer_updated", buffer_updated)
    conn = await _connect(fake1, max_in_flight=1)
    seen: list[tuple[bool, int, object]] = []
    answer = conn.send_now(MetadataRequest([]), InlineAnswer())
    answer.add_done_callback(lambda a: seen.append((reading, conn.in_flight, a.result())))
    for _ in range(100):
        if seen:
            break
        await asyncio.sleep(0.01)
    assert seen and seen[0][:2] == (True, 0)
    assert isinstance(seen[0][2], MetadataResponse)
    fake1.drop.add("Metadata")
    lost = conn.send_now(MetadataRequest([]), InlineAnswer())
    failed: list[BaseException | None] = []
    lost.add_done_callback(lambda a: failed.append(a.exception()))
    conn.abort()
    assert len(failed) == 1 and isinstance(failed[0], NetworkError)


async def test_disconnect_fails_every_pending_request(fake1: FakeState) -> None:
    fake1.drop.add("Metadata")
    conn = await _connect(fake1)
    tasks = [asyncio.ensure_future(conn.send(MetadataRequest([]))) for _ in range(5)]
    await asyncio.sleep(0.02)
    fake1.brokers[1].kill_connections()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(r, NetworkError) for r in results)
    assert conn.closed
    with pytest.raises(NetworkError):
        await conn.send(MetadataRequest([]))


async def test_connect_refused_is_a_network_error() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(NetworkError):
        await BrokerConnection.connect("127.0.0.1", port, connect_timeout_ms=1000)


class _RawServer:
    """A server answering each request frame with `reply(frame)` (bytes), for odd answers."""

    def __init__(self, reply: Callable[[bytes], bytes]) -> None:
        self.reply = reply
        self.writers: list[asyncio.StreamWriter] = []
        self.port = 0

    async def __aenter__(self) -> "_RawServer":
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for w in self.writers:
            w.close()
        self.server.close()
        await self.server.wait_closed()
        await asyncio.sleep(0.01)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        decoder = FrameDecoder()
        while data := await reader.read(65536):
            for frame in decoder.feed(data):
                writer.write(self.reply(frame))
        writer.close()


def _corr(frame: bytes) -> int:
    return int(msgpack.unpackb(frame)[2])


async def test_undecodable_response_closes_and_fails_all() -> None:
    async with _RawServer(lambda frame: b"\x00\x00\x00\x03abc") as srv:
        conn = await BrokerConnection.connect("127.0.0.1", srv.port)
        with pytest.raises(NetworkError):
            await conn.send(MetadataRequest([]), timeout_ms=2000)
        assert conn.closed


async def test_envelope_error_code_raises_its_class() -> None:
    def reply(frame: bytes) -> bytes:
        body = msgpack.packb([_corr(frame), 35, None])
        return len(body).to_bytes(4, "big") + body

    async with _RawServer(reply) as srv:
        conn = await BrokerConnection.connect("127.0.0.1", srv.port)
        with pytest.raises(UnsupportedVersionError):
            await conn.send(MetadataRequest([]), timeout_ms=2000)
        assert not conn.closed
        await conn.close()


async def test_wrong_response_shape_closes_connection() -> None:
    wrong = ListOffsetsRequest(-1, [ListOffsetsTopic("x", [ListOffsetsPartition(0, -1)])])
    async with _RawServer(lambda frame: encode_response(_corr(frame), wrong)) as srv:
        conn = await BrokerConnection.connect("127.0.0.1", srv.port)
        with pytest.raises(NetworkError, match="expected 4 fields"):
            await conn.send(MetadataRequest([]), timeout_ms=2000)
        assert conn.closed


async def test_a_raising_inline_callback_does_not_break_the_read_that_brings_its_answer(
    fake1: FakeState,
) -> None:
    """A callback of an InlineAnswer runs inside buffer_updated: one that raises is reported
    to the loop's exception handler, the answer's other callbacks still run, and the answer
    is not taken for an undecodable one (the connection and the answers after it live on)."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        conn = await _connect(fake1)
        first = conn.send_now(MetadataRequest([]), InlineAnswer())
        second = conn.send_now(MetadataRequest([]), InlineAnswer())
        seen: list[object] = []
        first.add_done_callback(lambda a: 1 / 0)
        first.add_done_callback(lambda a: seen.append(a.result()))
        second.add_done_callback(lambda a: seen.append(a.result()))
        for _ in range(100):
            if len(seen) == 2:
                break
            await asyncio.sleep(0.01)
        assert [type(r) for r in seen] == [MetadataResponse, MetadataResponse]
        assert not conn.closed and conn.in_flight == 0
        assert [type(c.get("exception")) for c in reported] == [ZeroDivisionError]
        assert (await conn.send(MetadataRequest([]), timeout_ms=1000)).cluster_id == "fake"
        await conn.close()
    finally:
        loop.set_exception_handler(None)


async def test_a_raising_inline_callback_does_not_break_the_close(fake1: FakeState) -> None:
    """A callback of an InlineAnswer failed by a lost connection runs inside the close: one
    that raises is reported, and the close still fails every other pending request, wakes the
    writers and closes the socket."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        fake1.drop.add("Metadata")
        conn = await _connect(fake1)
        raising = conn.send_now(MetadataRequest([]), InlineAnswer())
        raising.add_done_callback(lambda a: 1 / 0)
        inline = conn.send_now(MetadataRequest([]), InlineAnswer())
        plain = conn.send_now(MetadataRequest([]))
        await asyncio.sleep(0.02)
        fake1.brokers[1].kill_connections()
        with pytest.raises(NetworkError):
            await conn.wait_answer(plain, "Metadata", 1000)
        assert inline.done() and isinstance(inline.exception(), NetworkError)
        assert conn.closed and conn.in_flight == 0 and conn._writable.is_set()
        assert conn._transport is not None and conn._transport.is_closing()
        assert [type(c.get("exception")) for c in reported] == [ZeroDivisionError]
    finally:
        loop.set_exception_handler(None)


async def test_a_large_fetch_answers_records_are_views_of_its_frame_when_asked() -> None:
    """send_now(record_views=True): the records of a large answer are read-only views of the
    frame (not copied out of it by msgpack); without it, bytes as before."""
    records = bytes(range(256)) * 512  # 128 KiB: a frame above RECORD_VIEWS_FROM_FRAME_BYTES

    def reply(frame: bytes) -> bytes:
        part = FetchPartitionResponse(0, 0, 10, 0, 10, records)
        return encode_response(_corr(frame), FetchResponse(0, [FetchTopicResponse("t", [part])]))

    request = FetchRequest(-1, 0, 1, 1 << 20, [FetchTopic("t", [FetchPartition(0, 0, 1 << 20)])])
    async with _RawServer(reply) as srv:
        conn = await BrokerConnection.connect("127.0.0.1", srv.port)
        for views, kind in ((True, memoryview), (False, bytes)):
            answer = conn.send_now(request, record_views=views)
            resp = await conn.wait_answer(answer, "Fetch", 5000)
            got = resp.topics[0].partitions[0].records
            assert type(got) is kind and got == records
        await conn.close()
