"""InitProducerId through a real broker (ids from an in-memory block), and what the leader
does with the epochs it hands out: a bumped epoch restarts at sequence 0, the old one is fenced."""

from __future__ import annotations

from pathlib import Path

from protocol.api.produce import ProduceResponse
from protocol.api.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from protocol.batch import build_batch_from_values
from protocol.errors import (
    InvalidProducerEpochError,
    InvalidRequestError,
    NotCoordinatorError,
)
from tests.unit.broker.harness import running_broker
from tests.unit.broker.helpers import TS_MS, produce


def idem(value: bytes, pid: int, epoch: int, seq: int) -> bytes:
    return build_batch_from_values([value], TS_MS, producer_id=pid, producer_epoch=epoch,
                                   base_sequence=seq)  # fmt: skip


async def test_init_producer_id_answers(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        conn = await b.connect()
        answers: list[InitProducerIdResponse] = [
            await conn.send(InitProducerIdRequest(None, 60_000)),
            await conn.send(InitProducerIdRequest(None, 60_000)),
            await conn.send(InitProducerIdRequest(None, 60_000, 0, 0)),
        ]
        assert [(a.error_code, a.producer_id, a.producer_epoch) for a in answers] == [
            (0, 0, 0), (0, 1, 0), (0, 0, 1),
        ]  # fmt: skip
        # a transactional id goes to its transaction coordinator, which this broker is not
        # (it leads no partition of the transaction state topic)
        txn = await conn.send(InitProducerIdRequest("orders-txn", 60_000))
        assert txn.error_code == NotCoordinatorError.code
        assert txn.producer_id == -1
        half = await conn.send(InitProducerIdRequest(None, 60_000, 5, -1))
        assert half.error_code == InvalidRequestError.code


async def test_a_bumped_epoch_restarts_at_zero_and_fences_the_old_one(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        conn = await b.connect()
        first = await conn.send(InitProducerIdRequest(None, 60_000))
        pid = first.producer_id
        codes = []
        for data in (
            idem(b"a", pid, 0, 0),
            idem(b"b", pid, 0, 1),
            idem(b"c", pid, 1, 0),  # the next epoch, from 0
            idem(b"late", pid, 0, 2),  # the old epoch: fenced
        ):
            resp: ProduceResponse = await conn.send(produce("t", 0, data, acks=-1))
            part = resp.topics[0].partitions[0]
            codes.append((part.error_code, part.base_offset))
        assert codes == [(0, 0), (0, 1), (0, 2), (InvalidProducerEpochError.code, -1)]
