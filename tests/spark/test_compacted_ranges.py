"""The range reader (spark_connector.fetch.read_range, what a Spark task runs) on a compacted
partition, against the client tests' fake broker serving batches as Kafka's log cleaner leaves
them (tests/unit/compacted_batches.py). No SparkSession: the reader runs on this process's
worker loop, where the fake broker is started too.

A range reads the records left in it and ends: past records gone inside batches, an empty
batch, a gap between batches, a next batch past the range's end, and a log whose last batches
are gone (the leader answers nothing up to its high watermark). None of it is data loss, with
failOnDataLoss on; and none of it waits for offsets that will never come.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from protocol.batch import build_batch, stamp
from spark_connector.fetch import RangePartition, read_range, worker_state
from tests.unit.client.fake_broker import (
    FakeState,
    bootstrap,
    start_cluster,
    stop_cluster,
)
from tests.unit.compacted_batches import compact_log

TS = 1_700_000_000_000
KEPT = [0, 3, 7, 24, 25]
POLL_TIMEOUT_MS = 20_000


def _batch(base: int, n: int, producer_id: int = -1) -> bytes:
    rows = [(b"k%d" % o, b"v%d" % o, None, TS + o) for o in range(base, base + n)]
    idempotent = producer_id >= 0
    raw = bytearray(build_batch(rows, producer_id=producer_id, producer_epoch=0 if idempotent
                                else -1, base_sequence=0 if idempotent else -1))  # fmt: skip
    stamp(raw, base, 0)
    return bytes(raw)


@pytest.fixture
def fake() -> Iterator[FakeState]:
    """A fake broker with topic "c": 0-9 keeping 0, 3 and 7; 10-14 kept empty (its producer's
    last batch); 15-19 gone (a gap); 20-24 keeping 24; 25-29 keeping 25."""
    state = worker_state()
    fake = state.run(start_cluster(1))
    fake.create_topic("c", 1)
    log = [_batch(0, 10), _batch(10, 5, producer_id=5), _batch(15, 5), _batch(20, 5),
           _batch(25, 5)]  # fmt: skip
    fake.store(("c", 0), compact_log(log, lambda o: o in KEPT))
    try:
        yield fake
    finally:
        cluster = state.clusters.pop(bootstrap(fake), None)
        if cluster is not None:
            state.run(cluster.close())
        state.run(stop_cluster(fake))


def _read(fake: FakeState, frm: int, until: int, fetch_bytes: int = 1 << 20) -> list[int]:
    part = RangePartition(bootstrap(fake), "c", 0, frm, until, fail_on_data_loss=True,
                          poll_timeout_ms=POLL_TIMEOUT_MS, fetch_max_bytes=fetch_bytes)  # fmt: skip
    return [o for b in read_range(part) for o in b.to_pydict()["offset"]]


@pytest.mark.parametrize("fetch_bytes", [1 << 20, 1])  # 1: one batch per answer
def test_a_range_reads_the_records_left_in_it(fake: FakeState, fetch_bytes: int) -> None:
    assert _read(fake, 0, 30, fetch_bytes) == KEPT
    assert _read(fake, 4, 25, fetch_bytes) == [7, 24]
    assert _read(fake, 11, 20, fetch_bytes) == []  # an empty batch, then a gap to the end


def test_a_range_ending_in_a_gap_ends_at_the_next_batch(fake: FakeState) -> None:
    started = time.monotonic()
    assert _read(fake, 8, 17) == []  # 8-9 gone, 10-14 empty, 15-16 gone; the next batch is 20
    assert _read(fake, 2, 12) == [3, 7]
    assert time.monotonic() - started < 5  # never waited for 15 or 16


def test_a_log_whose_last_batches_are_gone_ends_the_range(fake: FakeState) -> None:
    """The batches 30-39 were cleaned away whole: the leader's log ends at 40 (its high
    watermark) with nothing from 30 on. The range [26, 40) ends, with no data loss reported."""
    fake.log_end[("c", 0)] = 40
    started = time.monotonic()
    assert _read(fake, 26, 40) == []
    assert _read(fake, 20, 40) == [24, 25]
    assert time.monotonic() - started < POLL_TIMEOUT_MS / 1000 / 2
