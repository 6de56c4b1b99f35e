"""Fixtures for the client's network tests: a fake cluster of 1..3 in-memory brokers."""

from collections.abc import AsyncIterator

import pytest

from tests.unit.client.fake_broker import FakeState, start_cluster, stop_cluster


@pytest.fixture
async def fake1() -> AsyncIterator[FakeState]:
    state = await start_cluster(1)
    yield state
    await stop_cluster(state)


@pytest.fixture
async def fake3() -> AsyncIterator[FakeState]:
    state = await start_cluster(3)
    yield state
    await stop_cluster(state)
