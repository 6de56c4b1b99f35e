"""AsyncConsumer on a compacted partition (the fake broker serves batches as Kafka's log cleaner
leaves them: tests/unit/compacted_batches.py). Offsets skip; the position after a batch is its
base + last_offset_delta + 1 whether or not its last records (or all of them) are left; a fetch
from an offset that is gone answers with the next batch; none of it is an error."""

from __future__ import annotations

from client.consumer import AsyncConsumer
from client.types import TopicPartition
from protocol.batch import build_batch, stamp
from tests.unit.client.fake_broker import FakeState, bootstrap
from tests.unit.compacted_batches import compact_log

TS = 1_700_000_000_000
TP = TopicPartition("c", 0)
KEPT = [0, 3, 7, 24, 25]
END = 30


def _batch(base: int, n: int, producer_id: int = -1) -> bytes:
    rows = [(b"k%d" % (base + i), b"v%d" % (base + i), None, TS + base + i) for i in range(n)]
    idempotent = producer_id >= 0
    raw = bytearray(build_batch(rows, producer_id=producer_id, producer_epoch=0 if idempotent
                                else -1, base_sequence=0 if idempotent else -1))  # fmt: skip
    stamp(raw, base, 0)
    return bytes(raw)


def compacted(state: FakeState) -> None:
    """0-9 keeping 0, 3 and 7; 10-14 all gone, kept empty (its producer's last batch); 15-19
    gone with their batch (a gap); 20-24 keeping 24 (with a delete horizon); 25-29 keeping 25."""
    state.create_topic("c", 1)
    log = [_batch(0, 10), _batch(10, 5, producer_id=5), _batch(15, 5), _batch(20, 5),
           _batch(25, 5)]  # fmt: skip
    cleaned = compact_log(log, lambda o: o in KEPT,
                          lambda h: TS + 10**6 if h.base_offset == 20 else None)  # fmt: skip
    assert len(cleaned) == 4
    state.store(("c", 0), cleaned)


async def _drain(consumer: AsyncConsumer, rounds: int = 20) -> tuple[list[int], list[int]]:
    """Offsets polled and the position after each poll that brought records, until END."""
    offsets: list[int] = []
    positions: list[int] = []
    for _ in range(rounds):
        got = await consumer.poll(timeout_ms=100)
        offsets += [r.offset for r in got.get(TP, [])]
        if got:
            positions.append(await consumer.position(TP))
        if await consumer.position(TP) >= END:
            break
    return offsets, positions


async def test_reads_every_record_left_and_ends_at_the_log_end(fake1: FakeState) -> None:
    compacted(fake1)
    async with AsyncConsumer(bootstrap(fake1), auto_offset_reset="earliest") as consumer:
        consumer.assign([TP])
        offsets, _ = await _drain(consumer)
        assert offsets == KEPT
        assert await consumer.position(TP) == END and consumer.highwater(TP) == END
        assert await consumer.poll(timeout_ms=50) == {}  # caught up: no error, nothing lost


async def test_one_batch_per_fetch_moves_past_empty_batches_and_gaps(fake1: FakeState) -> None:
    """max_partition_fetch_bytes=1: each answer holds one batch, so one is only the empty
    batch (no records, position 10 -> 15) and the next starts at 20, after the gap at 15."""
    compacted(fake1)
    async with AsyncConsumer(bootstrap(fake1), auto_offset_reset="none",
                             max_partition_fetch_bytes=1) as consumer:  # fmt: skip
        consumer.assign([TP])
        consumer.seek(TP, 0)
        offsets, _ = await _drain(consumer, rounds=40)
        assert offsets == KEPT and await consumer.position(TP) == END
    fetched_from = [o for _, parts in fake1.fetch_log for _, _, o in parts]
    assert {10, 15, 25} <= set(fetched_from)  # after the batches ending at 10, 15 and 25
    assert not {16, 20, 26} & set(fetched_from)  # never an offset inside what is gone


async def test_positions_follow_records_then_the_batch_end(fake1: FakeState) -> None:
    compacted(fake1)
    async with AsyncConsumer(bootstrap(fake1), auto_offset_reset="none",
                             max_poll_records=1) as consumer:  # fmt: skip
        consumer.assign([TP])
        consumer.seek(TP, 0)
        offsets, positions = await _drain(consumer)
        assert offsets == KEPT
        # after a record: its offset + 1; after the last record of what was fetched: the end
        # of its batch (25-29 ends at 30, though 26-29 are gone)
        assert positions == [1, 4, 8, 25, END]


async def test_a_seek_to_an_offset_that_is_gone_reads_on_from_the_next(fake1: FakeState) -> None:
    compacted(fake1)
    async with AsyncConsumer(bootstrap(fake1), auto_offset_reset="none") as consumer:
        consumer.assign([TP])
        for seek_to, first in [(4, 7), (8, 24), (11, 24), (16, 24), (21, 24)]:
            consumer.seek(TP, seek_to)
            offsets, _ = await _drain(consumer)
            assert offsets[0] == first and offsets == [o for o in KEPT if o >= seek_to]
        consumer.seek(TP, 26)  # inside the last batch, after its last record left
        offsets, _ = await _drain(consumer)
        assert offsets == [] and await consumer.position(TP) == END
