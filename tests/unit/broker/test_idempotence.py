"""Idempotent produce through real brokers: a retried batch is stored once, on the leader that
first took it and on a new leader after a failover (broker/producer_state.py)."""

from __future__ import annotations

from pathlib import Path

from protocol.api.produce import ProduceResponse
from protocol.batch import build_batch_from_values, decode_all
from protocol.errors import OutOfOrderSequenceNumberError
from tests.unit.broker.harness import running_broker
from tests.unit.broker.helpers import TS_MS, fetch, produce
from tests.unit.broker.replication_cluster import cluster, eventually, log_bytes
from tests.unit.broker.test_replication import T, leos
from tests.unit.broker.test_replication import produce as produce_to

PID = 77


def idem(values: list[bytes], seq: int) -> bytes:
    return build_batch_from_values(values, TS_MS, producer_id=PID, producer_epoch=0,
                                   base_sequence=seq)  # fmt: skip


async def test_the_same_idempotent_batch_twice_is_stored_once(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        conn = await b.connect()
        data = idem([b"a", b"b", b"c"], seq=0)
        answers = []
        for _ in range(2):
            resp: ProduceResponse = await conn.send(produce("t", 0, data))
            part = resp.topics[0].partitions[0]
            answers.append((part.error_code, part.base_offset))
        assert answers == [(0, 0), (0, 0)]
        gap: ProduceResponse = await conn.send(produce("t", 0, idem([b"z"], seq=5)))
        assert gap.topics[0].partitions[0].error_code == OutOfOrderSequenceNumberError.code
        nxt: ProduceResponse = await conn.send(produce("t", 0, idem([b"d"], seq=3)))
        assert (
            nxt.topics[0].partitions[0].error_code,
            nxt.topics[0].partitions[0].base_offset,
        ) == (0, 3)
        got = await conn.send(fetch("t", {0: 0}))
        records = decode_all(bytes(got.topics[0].partitions[0].records))
        assert [(r.offset, r.value) for r in records] == [
            (0, b"a"),
            (1, b"b"),
            (2, b"c"),
            (3, b"d"),
        ]


async def test_a_new_leader_dedups_a_retry_of_a_batch_the_old_leader_acked(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, 3) as c:
        await c.elect(T, leader=1, replicas=[1, 2, 3], isr=[1, 2, 3])
        first, second = idem([b"a", b"b"], seq=0), idem([b"c"], seq=2)
        assert await produce_to(c, 1, first, acks=-1) == (0, 0)
        assert await produce_to(c, 1, second, acks=-1) == (0, 2)  # its answer "was lost"
        await c.stop_node(1)
        await c.elect(T, leader=2, replicas=[1, 2, 3], isr=[2, 3])
        # the producer retries both in order on the new leader: answered, not stored again
        assert await produce_to(c, 2, first, acks=-1) == (0, 0)
        assert await produce_to(c, 2, second, acks=-1) == (0, 2)
        assert await produce_to(c, 2, idem([b"d"], seq=3), acks=-1) == (0, 3)
        await eventually(lambda: set(leos(c).values()) == {4})
        assert log_bytes(c.nodes[2].log(T)) == log_bytes(c.nodes[3].log(T))
        values = [r.value for r in decode_all(log_bytes(c.nodes[3].log(T)))]
        assert values == [b"a", b"b", b"c", b"d"]
