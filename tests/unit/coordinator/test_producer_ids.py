"""Producer ids without a cluster: block arithmetic, the znode's JSON, InitProducerId's rules
(coordinator/cluster/producer_ids.py's table) and the manager handing ids out of its blocks."""

from __future__ import annotations

import asyncio
import json

import pytest

from coordinator.cluster.producer_ids import (
    BLOCK_SIZE,
    EPOCH_BUMP_MAX,
    FRESH,
    PRODUCER_ID_MAX,
    TRANSACTIONS_UNSUPPORTED,
    InitVerdict,
    MemoryBlockSource,
    ProducerIdManager,
    decide_init,
    decode_block,
    first_block,
    next_block,
)
from coordinator.cluster.zk_paths import ProducerIdBlock, ZkDataError
from protocol.errors import (
    InvalidRequestError,
    TransactionalIdAuthorizationFailedError,
    UnknownServerError,
)

# ----- blocks --------------------------------------------------------------------------------


def test_blocks_follow_each_other_whoever_claims_them() -> None:
    assert first_block(3) == ProducerIdBlock(3, 0, 999) == next_block(None, 3)
    second = next_block(first_block(3), broker_id=1)
    assert second == ProducerIdBlock(1, 1000, 1999)
    assert next_block(second, 2, size=10) == ProducerIdBlock(2, 2000, 2009)
    assert BLOCK_SIZE == 1000  # Kafka's


def test_the_last_block_is_refused_before_int64_overflows() -> None:
    last = ProducerIdBlock(1, PRODUCER_ID_MAX - 2 * BLOCK_SIZE + 1, PRODUCER_ID_MAX - BLOCK_SIZE)
    assert next_block(last, 1).end == PRODUCER_ID_MAX
    with pytest.raises(UnknownServerError, match="exhausted"):
        next_block(next_block(last, 1), 1)


def test_block_json_is_kafkas() -> None:
    data = ProducerIdBlock(2, 1000, 1999).encode()
    assert json.loads(data) == {
        "version": 1, "broker": 2, "block_start": "1000", "block_end": "1999",
    }  # fmt: skip
    kafka = b'{"version":1,"broker":0,"block_start":"0","block_end":"999"}'  # as Kafka writes it
    assert ProducerIdBlock.decode(kafka) == ProducerIdBlock(0, 0, 999)
    assert ProducerIdBlock.decode(data) == ProducerIdBlock(2, 1000, 1999)
    assert decode_block(b"") is None and decode_block(b"  ") is None  # Kafka creates it empty


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b'{"version":1,"broker":0,"block_start":0,"block_end":"999"}',  # a number, not a string
        b'{"version":1,"broker":0,"block_start":"x","block_end":"999"}',
        b'{"version":1,"broker":0,"block_start":"10","block_end":"9"}',  # not a range
        b'{"version":1,"block_start":"0","block_end":"999"}',  # no broker
    ],
)
def test_a_bad_block_node_is_a_data_error(data: bytes) -> None:
    with pytest.raises(ZkDataError):
        ProducerIdBlock.decode(data)


# ----- InitProducerId ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("producer_id", "epoch", "verdict"),
    [
        (-1, -1, FRESH),
        (7, 0, InitVerdict(7, 1)),
        (7, 41, InitVerdict(7, 42)),
        (7, EPOCH_BUMP_MAX - 1, InitVerdict(7, EPOCH_BUMP_MAX)),  # 32766: the last one given
        (7, EPOCH_BUMP_MAX, FRESH),  # 32766 would pass it: a new id
        (7, EPOCH_BUMP_MAX + 1, FRESH),  # 32767 (never given out, but an int16)
    ],
)
def test_init_decisions(producer_id: int, epoch: int, verdict: InitVerdict) -> None:
    assert decide_init(None, producer_id, epoch) == verdict
    assert verdict.fresh == (verdict.producer_id == -1)


@pytest.mark.parametrize(
    ("producer_id", "epoch"),
    [(-1, 0), (-1, 5), (7, -1), (7, -2), (-2, -1), (-5, 3), (7, 2**15)],
)
def test_init_refuses_a_half_given_or_impossible_id_and_epoch(producer_id: int, epoch: int) -> None:
    with pytest.raises(InvalidRequestError):
        decide_init(None, producer_id, epoch)


def test_init_refuses_transactional_ids() -> None:
    with pytest.raises(TransactionalIdAuthorizationFailedError) as refused:
        decide_init("my-txn", -1, -1)
    assert TRANSACTIONS_UNSUPPORTED in str(refused.value)
    assert refused.value.code == 53 and not refused.value.retriable  # clients stop at once
    with pytest.raises(InvalidRequestError):
        decide_init("", -1, -1)  # as Kafka: an empty transactional id is a bad request


# ----- the manager ---------------------------------------------------------------------------


async def test_manager_hands_ids_out_of_its_blocks_in_order() -> None:
    source = MemoryBlockSource(size=3)
    one, two = ProducerIdManager(1, source), ProducerIdManager(2, source)
    got = [await one.next_producer_id() for _ in range(2)]
    got += [await two.next_producer_id(), await one.next_producer_id()]
    got += [await one.next_producer_id()]  # one's first block is used up: a new block
    assert got == [0, 1, 3, 2, 6]
    assert source.latest == ProducerIdBlock(1, 6, 8)


async def test_init_producer_id_fresh_bumped_and_renewed() -> None:
    manager = ProducerIdManager(1, MemoryBlockSource())
    assert await manager.init_producer_id(None, -1, -1) == (0, 0)
    assert await manager.init_producer_id(None, -1, -1) == (1, 0)
    assert await manager.init_producer_id(None, 0, 0) == (0, 1)  # the same id, next epoch
    assert await manager.init_producer_id(None, 0, EPOCH_BUMP_MAX) == (2, 0)
    with pytest.raises(TransactionalIdAuthorizationFailedError):
        await manager.init_producer_id("txn", -1, -1)
    with pytest.raises(InvalidRequestError):
        await manager.init_producer_id(None, 5, -1)
    assert await manager.next_producer_id() == 3  # refusals took no id


class SlowSource(MemoryBlockSource):
    """Claims that take a few loop turns, like a ZooKeeper round trip; counts them."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.claims = 0

    async def claim_block(self, broker_id: int) -> ProducerIdBlock:
        self.claims += 1
        for _ in range(3):
            await asyncio.sleep(0)
        return await super().claim_block(broker_id)


async def test_concurrent_requests_share_one_claim_and_never_an_id() -> None:
    source = SlowSource(size=10)
    manager = ProducerIdManager(1, source)
    ids = await asyncio.gather(*(manager.next_producer_id() for _ in range(25)))
    assert sorted(ids) == list(range(25))
    assert source.claims == 3  # 25 ids from blocks of 10: three claims, no wasted block


class FailingSource:
    def __init__(self) -> None:
        self.calls = 0

    async def claim_block(self, broker_id: int) -> ProducerIdBlock:
        self.calls += 1
        if self.calls == 1:
            raise UnknownServerError("ZooKeeper said no")
        return ProducerIdBlock(broker_id, 100, 199)


async def test_a_failed_claim_is_the_requests_error_and_the_next_request_claims_again() -> None:
    manager = ProducerIdManager(4, FailingSource())
    with pytest.raises(UnknownServerError):
        await manager.init_producer_id(None, -1, -1)
    assert await manager.init_producer_id(None, -1, -1) == (100, 0)
