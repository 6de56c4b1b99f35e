"""Bounded loop steps (issue 34): a connection's requests and its log data go over several steps.

A read of many frames is dispatched STEP_FRAMES_MAX frames (and STEP_FRAME_BYTES_MAX of their
bytes) per loop step, and a large fetch answer's log data STEP_SEND_BYTES_MAX per step, so
one connection cannot hold the loop for a whole read or a whole fetch. The steps are counted
by the loop iterations between them (each `asyncio.sleep(0)` lets exactly one run), never timed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.server import (
    STEP_FRAME_BYTES_MAX,
    STEP_FRAMES_MAX,
    STEP_SEND_BYTES_MAX,
    Connection,
)
from protocol.api.fetch import FetchResponse
from protocol.api.metadata import MetadataRequest
from protocol.api.produce import ProduceResponse
from protocol.codec import decode_response, encode_request, split_response
from tests.unit.broker.harness import BrokerHarness, RawClient, running_broker
from tests.unit.broker.helpers import batch, fetch, produce, stamped


async def _server_side(b: BrokerHarness, raw: RawClient) -> Connection:
    """The broker's end of `raw`, once a first request has gone both ways."""
    raw.send(MetadataRequest([]))
    await raw.read_frame()
    (conn,) = [c for c in b.server.connections if c.peer.endswith(f"{raw_port(raw)})")]
    return conn


def raw_port(raw: RawClient) -> int:
    return int(raw.writer.get_extra_info("sockname")[1])


async def _dispatch_steps(conn: Connection, data: bytes, total: int) -> list[list[int]]:
    """Feed `data` as one read; the frame sizes dispatched in each loop step until `total`."""
    steps: list[list[int]] = [[]]
    on_frame = conn._on_frame

    def recording(frame: bytes) -> None:
        steps[-1].append(len(frame))
        on_frame(frame)

    conn._on_frame = recording  # type: ignore[method-assign]
    conn.data_received(data)
    for _ in range(10 * total):
        if sum(map(len, steps)) == total:
            break
        steps.append([])
        await asyncio.sleep(0)  # one loop iteration: at most one dispatch step
    return [s for s in steps if s]


@pytest.mark.parametrize("value_bytes", [100, 20_000])
async def test_a_read_of_many_frames_is_dispatched_over_bounded_steps(
    tmp_path: Path, value_bytes: int
) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("s")
        raw = await RawClient.connect(b.port)
        conn = await _server_side(b, raw)
        sent = [batch(1, value_bytes, fill=bytes([65 + i % 26])) for i in range(40)]
        corrs = list(range(100, 140))
        data = b"".join(
            encode_request(produce("s", 0, d), corr, "raw")
            for d, corr in zip(sent, corrs, strict=True)
        )
        steps = await _dispatch_steps(conn, data, len(sent))
        assert sum(map(len, steps)) == len(sent)
        assert all(len(s) <= STEP_FRAMES_MAX for s in steps)
        assert all(len(s) == 1 or sum(s) <= STEP_FRAME_BYTES_MAX for s in steps)
        assert len(steps) >= len(sent) / STEP_FRAMES_MAX  # without the bound: one step
        # every request answered, in order, and the records stored in order
        answers = [decode_response(await raw.read_frame(), ProduceResponse) for _ in sent]
        assert [corr for corr, _ in answers] == corrs
        bases = [r.topics[0].partitions[0].base_offset for _, r in answers]
        assert bases == list(range(len(sent)))
        assert not conn.backlog and not conn.reading_paused
        got = await (await b.connect()).send(fetch("s", {0: 0}, partition_max_bytes=8 << 20))
        assert bytes(got.topics[0].partitions[0].records) == b"".join(
            stamped(d, base) for d, base in zip(sent, bases, strict=True)
        )
        await raw.close()


async def test_frames_beyond_the_in_flight_bound_wait_undispatched(tmp_path: Path) -> None:
    # parked fetches fill the bound of 3; the frames behind them stay in the backlog
    async with running_broker(tmp_path, max_inflight_requests_per_connection=3) as b:
        await b.lead("f")
        raw = await RawClient.connect(b.port)
        conn = await _server_side(b, raw)
        long_polls = [
            encode_request(fetch("f", {0: 0}, max_wait_ms=5000), c, "raw") for c in (1, 2, 3)
        ]
        conn.data_received(
            b"".join([*long_polls, encode_request(MetadataRequest(["f"]), 4, "raw")])
        )
        for _ in range(20):
            await asyncio.sleep(0)
        assert (len(conn.pending), len(conn.backlog), conn.reading_paused) == (3, 1, True)
        await (await b.connect()).send(produce("f", 0, batch(1)))  # the long polls answer
        got = [split_response(await raw.read_frame())[0] for _ in range(4)]
        assert got == [1, 2, 3, 4]
        assert not conn.backlog and not conn.reading_paused
        await raw.close()


@pytest.mark.parametrize("use_sendfile", [True, False])
async def test_a_large_fetch_answer_is_sent_over_bounded_steps(
    tmp_path: Path, use_sendfile: bool
) -> None:
    async with running_broker(tmp_path, fetch_use_sendfile=use_sendfile) as b:
        await b.lead("big")
        producer = await b.connect()
        sent = [batch(100, 1000, fill=bytes([48 + i])) for i in range(12)]  # ~1.2 MB
        expected = []
        for data in sent:
            resp = await producer.send(produce("big", 0, data))
            expected.append(stamped(data, resp.topics[0].partitions[0].base_offset))
        raw = await RawClient.connect(b.port)
        conn = await _server_side(b, raw)
        raw.send(fetch("big", {0: 0}, partition_max_bytes=8 << 20), corr=7)
        raw.send(MetadataRequest(["big"]), corr=8)  # answered after the fetch, in order
        corr, got = decode_response(await raw.read_frame(), FetchResponse)
        assert corr == 7
        assert bytes(got.topics[0].partitions[0].records) == b"".join(expected)
        assert split_response(await raw.read_frame())[0] == 8
        log_bytes = sum(map(len, expected))
        assert conn.send_steps >= log_bytes // STEP_SEND_BYTES_MAX
        assert 0 < conn.send_step_bytes_max <= STEP_SEND_BYTES_MAX
        assert not conn.out and not conn.reading_paused
        await raw.close()
