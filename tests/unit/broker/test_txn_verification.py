"""KIP-890's defence on a real broker: a transactional batch goes into a partition only when
the transaction coordinator has it in the producer's ongoing transaction; a late batch after
the transaction ended cannot open a hanging transaction."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from coordinator.runtime.states import PartitionState
from coordinator.transaction.records import TRANSACTION_STATE_TOPIC
from coordinator.transaction.service import TransactionCoordinator
from coordinator.transaction.txn import EndAnswer, InitAnswer
from protocol.api.produce import ProducePartition, ProduceRequest, ProduceTopic
from protocol.batch import TRANSACTIONAL_BIT, build_batch, with_producer
from protocol.clock import ManualClock
from protocol.errors import InvalidProducerEpochError, InvalidTxnStateError
from tests.unit.broker.harness import BrokerHarness, running_broker
from transport.connection import BrokerConnection


def txn_batch(pid: int, epoch: int, seq: int) -> bytes:
    raw = bytearray(build_batch([(None, b"v", None, 0)]))
    raw[22] |= TRANSACTIONAL_BIT  # the attributes' low byte; with_producer recomputes the CRC
    return with_producer(raw, pid, epoch, seq)


async def coordinator_for(h: BrokerHarness) -> TransactionCoordinator:
    """The broker's transaction coordinator, made ready: this broker leads the transaction
    state topic's one partition and the coordinator has loaded it."""
    await h.lead(TRANSACTION_STATE_TOPIC, 1)
    txns = h.ctx.transactions
    for _ in range(100):
        if all(o.state is PartitionState.READY for o in txns.runtime.owned.values()):
            break
        await asyncio.sleep(0.01)
    return txns


async def produce(conn: BrokerConnection, partition: int, batch: bytes) -> int:
    req = ProduceRequest(1, 5000, [ProduceTopic("t", [ProducePartition(partition, batch)])], "tx")
    resp = await conn.send(req)
    return int(resp.topics[0].partitions[0].error_code)


async def test_only_partitions_in_the_transaction_take_its_batches(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as h:
        await h.lead("t", 2)
        txns = await coordinator_for(h)
        answer = await txns.init_producer_id("tx", 60_000, -1, -1)
        assert isinstance(answer, InitAnswer) and answer.error == "NONE"
        pid, epoch = answer.producer_id, answer.producer_epoch
        assert await txns.add_partitions("tx", pid, epoch, [("t", 0)]) == {("t", 0): "NONE"}
        conn = await h.connect()
        log1 = h.ctx.replicas.partitions[("t", 1)].log
        assert await produce(conn, 0, txn_batch(pid, epoch, 0)) == 0
        assert await produce(conn, 1, txn_batch(pid, epoch, 0)) == InvalidTxnStateError.code
        assert log1.log_end_offset == 0, "nothing of a partition outside the transaction"

        assert await txns.end_txn("tx", pid, epoch, commit=True) == EndAnswer("NONE")
        log0 = h.ctx.replicas.partitions[("t", 0)].log
        for _ in range(3000):  # the markers go out in the background, then CompleteCommit
            (row,) = txns.describe(["tx"])
            done = getattr(row, "state", "") == "CompleteCommit"
            if done and log0.first_unstable_offset is None and log0.log_end_offset == 2:
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the commit did not complete within 30 s")
        end = log0.log_end_offset
        # a late retry of the ended transaction's producer: no hanging transaction
        assert await produce(conn, 0, txn_batch(pid, epoch, 1)) == InvalidTxnStateError.code
        assert log0.log_end_offset == end and log0.first_unstable_offset is None
        await txns.shutdown()


async def test_transaction_version_2_adds_instead_of_asking(tmp_path: Path) -> None:
    """KIP-890 part 2: for a Produce v12 the leader has the coordinator add the partition (and
    open the transaction) rather than only ask whether it is in it."""
    async with running_broker(tmp_path, clock=ManualClock()) as h:
        await h.lead("t", 2)
        txns = await coordinator_for(h)
        answer = await txns.init_producer_id("tx", 60_000, -1, -1)
        assert isinstance(answer, InitAnswer)
        pid, epoch = answer.producer_id, answer.producer_epoch
        verify = h.ctx.txn_verifier.verify
        assert await verify("tx", pid, epoch, [("t", 1)]) == {("t", 1): InvalidTxnStateError.code}
        assert await verify("tx", pid, epoch, [("t", 1)], 2) == {("t", 1): 0}
        (row,) = txns.describe(["tx"])
        assert (getattr(row, "state", ""), getattr(row, "topics", ())) == (
            "Ongoing",
            (("t", (1,)),),
        )
        assert await verify("tx", pid, epoch + 1, [("t", 0)], 2) == {
            ("t", 0): InvalidProducerEpochError.code
        }
        await txns.shutdown()


def test_a_marker_voids_a_verification_under_way() -> None:
    from broker.producer_state import ProducerStateTable
    from protocol.control import Marker

    table = ProducerStateTable()
    token = table.start_verification(5)
    table.end_txn(5, 0, Marker(True, 0), 10)  # the transaction ended meanwhile
    with pytest.raises(InvalidTxnStateError):  # a verification from before the marker
        table.check_verified(5, 0, token)
    fresh = table.start_verification(5)
    table.check_verified(5, 0, fresh)  # taken once


def test_pipelined_batches_share_the_verification_under_way() -> None:
    """A producer's batches in flight together to one partition: each asks the coordinator,
    and whichever is appended first must not void the others' verification."""
    from broker.producer_state import ProducerStateTable

    table = ProducerStateTable()
    first, second = table.start_verification(5), table.start_verification(5)
    assert first is second
    table.check_verified(5, 0, first)
    table.update(5, 0, 0, 0, 0, 0, transactional=True)  # the first batch opened the txn
    table.check_verified(5, 0, second)
