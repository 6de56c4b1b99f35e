"""The controller's channel against a tiny in-process broker on a local socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from coordinator.controller.channel import BrokerChannel
from protocol.api.controller import UpdateMetadataRequest, UpdateMetadataResponse
from protocol.codec import decode_request, encode_error_response, encode_response
from protocol.errors import StaleControllerEpochError
from protocol.framing import FrameDecoder
from tests.fixtures.zk import free_port, wait_until


class FakeBroker:
    """Answers UpdateMetadata; a stale epoch (below `min_epoch`) gets STALE_CONTROLLER_EPOCH."""

    def __init__(self, min_epoch: int = 0) -> None:
        self.seen: list[Any] = []
        self.min_epoch = min_epoch
        self.server: asyncio.Server | None = None

    async def start(self, port: int) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder()
        while data := await reader.read(65536):
            for frame in decoder.feed(data):
                req = decode_request(frame)
                self.seen.append(req.body)
                corr = req.header.correlation_id
                if req.body.controller_epoch < self.min_epoch:
                    writer.write(encode_error_response(corr, StaleControllerEpochError.code))
                else:
                    writer.write(encode_response(corr, UpdateMetadataResponse(0)))
        writer.close()

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


def update(epoch: int) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(1, epoch, [], [], [])


async def no_sleep(_s: float) -> None:
    await asyncio.sleep(0.01)


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    b = FakeBroker(min_epoch=2)
    yield b
    await b.stop()


async def test_in_order_with_retry_until_the_broker_listens(broker: FakeBroker) -> None:
    port = free_port()
    channel = BrokerChannel(1, sleep=no_sleep)
    answers: list[tuple[int, Any]] = []
    channel.add_broker(7, "127.0.0.1", port)
    for epoch in (2, 3, 4):
        channel.send(7, update(epoch), lambda b, r: answers.append((b, r)))
    await asyncio.sleep(0.1)  # nobody listens yet: the sender backs off and retries
    assert answers == []
    await broker.start(port)
    await wait_until(lambda: len(answers) == 3, 5, "three answers")
    assert [r.controller_epoch for r in broker.seen] == [2, 3, 4]
    assert all(b == 7 and r == UpdateMetadataResponse(0) for b, r in answers)
    # An error answer is handed back, not retried.
    channel.send(7, update(1), lambda b, r: answers.append((b, r)))
    await wait_until(lambda: len(answers) == 4, 5, "the stale answer")
    assert isinstance(answers[-1][1], StaleControllerEpochError)
    assert len(broker.seen) == 4
    await channel.close()


async def test_full_queue_is_dropped_and_reported() -> None:
    overflowed: list[int] = []
    channel = BrokerChannel(1, on_overflow=overflowed.append, queue_max=2, sleep=no_sleep)
    channel.add_broker(3, "127.0.0.1", free_port())  # nobody listens
    for epoch in range(5):
        channel.send(3, update(epoch))
    assert overflowed == [3]
    assert channel.queued(3) <= 2
    channel.remove_broker(3)
    channel.send(3, update(9))  # no broker: dropped with a warning, nothing raised
    assert channel.queued(3) == 0
    await channel.close()
