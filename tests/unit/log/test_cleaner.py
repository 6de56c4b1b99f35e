"""The log cleaner on real logs (no broker): a pass keeps the latest value of each key, in
offset order; tombstones live until their delete horizon; producers' last batches stay; the
cleaner's swap survives a restart at every step; readers see increasing offsets."""

from __future__ import annotations

import asyncio
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import crc32c
import pytest

from broker.log.cleaner import plan
from broker.log.cleaner.cleaner import clean
from broker.log.cleaner.manager import CleanerSettings, LogCleaner
from broker.log.config import LogConfig
from broker.log.log import Log
from broker.log.manager import LogManager
from broker.log_validator import validate_for_leader
from protocol.batch import (
    HEADER_BYTES,
    BatchHeader,
    build_batch,
    decode_all,
    iter_batches,
)
from protocol.clock import ManualClock
from protocol.record_errors import InvalidRecordsError
from tests.unit.log.conftest import T0, slice_bytes

COMPACT = {"cleanup.policy": "compact", "segment.bytes": "600", "min.cleanable.dirty.ratio": "0.01"}


def keyed(pairs: Sequence[tuple[bytes, bytes | None]], ts: int = T0, **kw: int) -> bytes:
    return build_batch([(k, v, None, ts) for k, v in pairs], **kw)


def read_all(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    out: list[tuple[int, bytes | None, bytes | None]] = []
    pos = log.log_start_offset
    while pos < log.log_end_offset:
        result = log.read(pos, 1 << 20)
        if result.slice is None:
            break
        data = slice_bytes(result)
        assert sum(h.size for _, h in iter_batches(data)) == len(data)  # whole, CRC-valid
        out.extend((r.offset, r.key, r.value) for r in decode_all(data) if r.offset >= pos)
        assert result.next_offset > pos
        pos = result.next_offset
    return out


def latest(writes: Sequence[tuple[bytes, bytes | None]]) -> dict[bytes, bytes | None]:
    out: dict[bytes, bytes | None] = {}
    for k, v in writes:
        out[k] = v
    return out


class Harness:
    def __init__(self, log_dir: Path, clock: ManualClock, **config: str) -> None:
        self.log_dir, self.clock, self.config = log_dir, clock, {**COMPACT, **config}
        self.manager = LogManager(log_dir, LogConfig.from_properties(self.config), clock)
        self.manager.load_all()
        self.hw: int | None = None  # None: the log end
        self.cleaner = self._cleaner()

    def _cleaner(self) -> LogCleaner:
        return LogCleaner(self.manager, self.clock, CleanerSettings(backoff_ms=10), self._hw)

    def _hw(self, topic: str, partition: int) -> int:
        return self.hw if self.hw is not None else self.log.log_end_offset

    @property
    def log(self) -> Log:
        return self.manager.get_or_create("t", 0)

    def clean(self) -> bool:
        return asyncio.run(self.cleaner.clean_once())

    def restart(self) -> None:
        for log in self.manager.logs():
            log.close()
        self.manager = LogManager(self.log_dir, LogConfig.from_properties(self.config), self.clock)
        self.manager.load_all()
        self.cleaner = self._cleaner()


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path / "logs", ManualClock(time_ms=T0))


def test_a_pass_keeps_the_latest_value_of_each_key_in_offset_order(harness: Harness) -> None:
    writes = [(b"k%d" % (i % 7), b"v%d" % i) for i in range(120)]
    for i in range(0, len(writes), 3):
        harness.log.append_as_leader(keyed(writes[i : i + 3]), 1)
    before = harness.log.size_bytes
    assert harness.log.segments.count > 5
    assert harness.clean()
    got = read_all(harness.log)
    want = latest(writes)
    active_base = harness.log.segments.active.base_offset
    cleaned = [(o, k, v) for o, k, v in got if o < active_base]
    assert len({k for _, k, _ in cleaned}) == len(cleaned)  # one record per key below the head
    assert {k: v for _, k, v in got} == want  # and the latest value of every key survives
    assert [o for o, _, _ in got] == sorted(o for o, _, _ in got)
    assert harness.log.size_bytes < before / 3
    assert harness.cleaner.checkpointed("t", 0) == active_base
    assert not harness.clean()  # nothing dirty now
    harness.restart()
    assert {k: v for _, k, v in read_all(harness.log)} == want
    assert not list((harness.log_dir / "t-0").glob("*.cleaned"))


def test_the_cleaner_never_touches_the_active_segment_or_what_is_past_the_hw(
    harness: Harness,
) -> None:
    for i in range(60):
        harness.log.append_as_leader(keyed([(b"same", b"%d" % i)]), 1)
    harness.hw = harness.log.segments.closed()[1].base_offset
    assert harness.clean()
    got = read_all(harness.log)
    below = [o for o, _, _ in got if o < harness.hw]
    assert len(below) == 1  # cleaned below the high watermark
    assert [o for o, _, _ in got if o >= harness.hw] == list(range(harness.hw, 60))


def test_tombstones_stay_until_their_delete_horizon_then_go(harness: Harness) -> None:
    harness.config["delete.retention.ms"] = "1000"
    harness.restart()
    for i in range(30):
        harness.log.append_as_leader(keyed([(b"a%d" % i, b"x"), (b"b", b"%d" % i)]), 1)
    harness.log.append_as_leader(keyed([(b"a3", None)]), 1)  # a tombstone
    for i in range(30):
        harness.log.append_as_leader(keyed([(b"b", b"y%d" % i)]), 1)
    assert harness.clean()
    got = {k: v for _, k, v in read_all(harness.log)}
    assert got[b"a3"] is None  # kept for delete.retention.ms
    harness.clock.advance(1001)
    harness.log.append_as_leader(keyed([(b"b", b"z")]), 1)
    assert harness.clean()  # the horizon passed: a pass is due even with little dirt
    got2 = {k: v for _, k, v in read_all(harness.log)}
    assert b"a3" not in got2
    assert got2[b"a4"] == b"x" and got2[b"b"] == b"z"


def test_a_producers_last_batch_stays_empty_so_its_state_survives(harness: Harness) -> None:
    for seq in range(20):
        harness.log.append_as_leader(
            keyed([(b"k", b"%d" % seq)], producer_id=7, producer_epoch=0, base_sequence=seq), 1
        )
        harness.log.append_as_leader(keyed([(b"k", b"other%d" % seq)]), 1)
    harness.log.roll()
    last = harness.log.producers.last_offsets()[7]
    assert harness.clean()
    headers: list[BatchHeader] = []
    for seg in harness.log.segments.closed():
        data = os.pread(seg.fd, seg.size_bytes, 0)
        headers.extend(h for _, h in iter_batches(data))
    kept = [h for h in headers if h.producer_id == 7]
    assert [h.last_offset for h in kept] == [last]
    assert kept[0].record_count == 0  # emptied, kept for the producer
    again = harness.log.append_as_leader(
        keyed([(b"k", b"retry")], producer_id=7, producer_epoch=0, base_sequence=19), 1
    )
    assert again.duplicate  # the producer's state still knows its last batch


@pytest.mark.parametrize("codec", [1, 4])
def test_compressed_batches_are_rewritten_with_their_codec(harness: Harness, codec: int) -> None:
    for i in range(40):
        harness.log.append_as_leader(keyed([(b"k%d" % (i % 3), b"v%d" % i)] * 2, codec=codec), 1)
    assert harness.clean()
    codecs = set()
    for seg in harness.log.segments.closed():
        codecs |= {h.codec for _, h in iter_batches(os.pread(seg.fd, seg.size_bytes, 0))}
    assert codecs == {codec}
    assert {k: v for _, k, v in read_all(harness.log)}[b"k0"] == b"v39"


def test_a_swap_left_half_done_is_finished_at_start(harness: Harness) -> None:
    for i in range(60):
        harness.log.append_as_leader(keyed([(b"k%d" % (i % 4), b"v%d" % i)]), 1)
    records_before = len(read_all(harness.log))
    want = {k: v for _, k, v in read_all(harness.log)}
    log = harness.log
    old = log.segments.closed()
    # do what a swap does up to its commit, then "crash"
    original = log.segments.hold
    steps: list[str] = []

    def crash_at(step: str) -> None:
        steps.append(step)
        if step == "deleted":
            raise KeyboardInterrupt

    log.segments.hold = crash_at  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        harness.clean()
    log.segments.hold = original  # type: ignore[method-assign]
    assert steps == ["swap", "deleted"]
    assert list((harness.log_dir / "t-0").glob("*.log.swap"))
    log.close_unclean()
    harness.manager = LogManager(harness.log_dir, LogConfig.from_properties(harness.config),
                                 harness.clock)  # fmt: skip
    harness.manager.load_all()
    assert {k: v for _, k, v in read_all(harness.log)} == want
    first = harness.log.segments.closed()[0]
    assert first.base_offset == old[0].base_offset and first.size_bytes < old[0].size_bytes
    assert len(read_all(harness.log)) < records_before  # the swapped-in group is the cleaned one
    names = [p.name for p in (harness.log_dir / "t-0").iterdir()]
    assert not [n for n in names if n.endswith((".swap", ".cleaned", ".swap-end", ".deleted"))]


def test_plan_dirty_ratio_and_uncleanable_offset() -> None:
    shapes = [(0, 10, 100, T0), (10, 20, 100, T0), (20, 30, 100, T0 + 5000), (30, 35, 50, T0)]
    segs = [plan.SegmentInfo(b, n, size, T0, ts) for b, n, size, ts in shapes]
    r = plan.cleanable_range(segs, 0, 10, 35, T0 + 6000, 0, plan.NO_LIMIT)
    assert (r.first_dirty, r.first_uncleanable, r.clean_bytes, r.dirty_bytes) == (10, 30, 100, 200)
    assert r.dirty_ratio == pytest.approx(2 / 3)
    lagged = plan.cleanable_range(segs, 0, 10, 35, T0 + 6000, 2000, plan.NO_LIMIT)
    assert lagged.first_uncleanable == 20  # a record younger than min.compaction.lag.ms
    hw = plan.cleanable_range(segs, 0, 10, 15, T0 + 6000, 0, plan.NO_LIMIT)
    assert hw.first_uncleanable == 10 and hw.dirty_bytes == 0  # the HW's segment is not cleaned
    hw = plan.cleanable_range(segs, 0, 0, 25, T0 + 6000, 0, plan.NO_LIMIT)
    assert hw.first_uncleanable == 20 and hw.dirty_bytes == 200  # whole segments below it
    must = plan.cleanable_range(segs, 0, 10, 35, T0 + 6000, 0, 1000)
    assert must.must_clean and plan.is_cleanable(must, 0.99)
    assert not plan.is_cleanable(r, 0.9)


def test_a_full_offset_map_ends_the_pass_at_a_segment_and_the_next_goes_on(
    harness: Harness,
) -> None:
    for i in range(90):
        harness.log.append_as_leader(keyed([(b"key-%03d" % i, b"v")]), 1)  # 90 distinct keys
    harness.cleaner.settings = CleanerSettings(dedupe_buffer_bytes=30 * 110)  # ~30 keys
    end = harness.log.segments.active.base_offset
    assert harness.clean()
    first = harness.cleaner.checkpointed("t", 0)
    assert first is not None and 0 < first < end  # stopped where the map was full
    assert first in harness.log.segments.base_offsets() or first == end
    while harness.clean():
        pass
    assert harness.cleaner.checkpointed("t", 0) == end
    assert len(read_all(harness.log)) == 90  # distinct keys: nothing to remove, nothing lost


def test_cleaner_io_is_throttled_to_its_rate(harness: Harness) -> None:
    for i in range(60):
        harness.log.append_as_leader(keyed([(b"k%d" % (i % 3), b"x" * 50)]), 1)
    slept: list[float] = []
    clock = [0.0]

    def sleep(s: float) -> None:
        slept.append(s)
        clock[0] += s

    rate = 2000.0  # bytes per second
    task = harness.cleaner._task(  # what a worker hands its thread, with a fake clock
        harness.log, harness.log.segments.closed(),
        harness.cleaner.cleanable(harness.log, T0), T0,  # type: ignore[arg-type]
    )  # fmt: skip
    task.io_max_bytes_per_second, task.sleep, task.monotonic = rate, sleep, lambda: clock[0]
    result = clean(task)
    for group in result.groups:
        group.new.unlink()
    moved = result.bytes_read + result.bytes_written
    assert moved > 0
    assert sum(slept) >= moved / rate - 1e-6  # never faster than the rate allows


def test_a_compacted_log_rolls_by_max_compaction_lag(harness: Harness) -> None:
    harness.config.update({"max.compaction.lag.ms": "5000", "segment.bytes": "1048576"})
    harness.restart()
    harness.log.append_as_leader(keyed([(b"k", b"1")]), 1)
    harness.clock.advance(5000)
    harness.log.append_as_leader(keyed([(b"k", b"2")]), 1)
    assert harness.log.segments.count == 2  # rolled: the first record can now be cleaned
    harness.clock.advance(1)
    r = harness.cleaner.cleanable(harness.log, harness.clock.time_ms())
    assert r is not None and r.must_clean  # max.compaction.lag.ms passed: due, whatever the ratio
    assert harness.clean()  # it must be cleaned: it is older than max.compaction.lag.ms
    assert harness.cleaner.checkpointed("t", 0) == 1


def test_only_a_log_that_was_cleaned_takes_offset_gaps_at_recovery(harness: Harness) -> None:
    """A gap in a log never cleaned is a torn or broken log (recovery cuts there); once the
    cleaner swapped a segment in (offset-gaps marker), gaps are the cleaner's."""
    for i in range(40):
        harness.log.append_as_leader(keyed([(b"k%d" % (i % 3), b"v%d" % i)]), 1)
    assert not (harness.log.directory / "offset-gaps").exists()
    assert harness.clean()
    assert (harness.log.directory / "offset-gaps").exists()
    want = read_all(harness.log)
    offsets = [o for o, _, _ in want]
    start = harness.log.log_start_offset
    assert offsets != list(range(start, start + len(offsets)))  # gaps
    harness.log.close_unclean()
    (harness.log.directory / "recovery-point-offset-checkpoint").unlink(missing_ok=True)
    harness.manager = LogManager(harness.log_dir, LogConfig.from_properties(harness.config),
                                 harness.clock)  # fmt: skip
    harness.manager.load_all()
    assert read_all(harness.log) == want
    harness.log.truncate_to(offsets[-2])  # into a cleaned segment: its tail is rescanned
    assert read_all(harness.log) == want[:-1] or read_all(harness.log) == want[:-2]


def test_a_tombstoned_key_stays_deleted_when_the_hw_is_inside_a_closed_segment(
    harness: Harness,
) -> None:
    """A high watermark inside a closed segment ends the cleanable range at that segment's
    base: the segment is neither mapped nor counted clean (else its tombstone could later go
    while older values of its key, never rewritten, came back)."""
    harness.config["delete.retention.ms"] = "10"
    harness.restart()
    for i in range(30):
        harness.log.append_as_leader(keyed([(b"k", b"old%d" % i)]), 1)
    harness.log.append_as_leader(keyed([(b"k", None)]), 1)  # the tombstone, at 30
    for i in range(30):
        harness.log.append_as_leader(keyed([(b"other", b"%d" % i)]), 1)
    harness.hw = 31  # inside the closed segment holding the tombstone and older values of k
    for _ in range(4):
        harness.clean()
        harness.clock.advance(20)  # past the tombstone's horizon after a pass or two
        harness.hw = harness.log.log_end_offset  # the replicas caught up
    assert [r for r in read_all(harness.log) if r[1] == b"k"] == []  # deleted, and gone


def _with_offset_delta(batch: bytes, delta: int) -> bytes:
    """A one-record uncompressed batch whose record claims offset delta `delta` (one byte of
    zigzag), its CRC made good: what no producer writes, yet a CRC does not catch."""
    out = bytearray(batch)
    at = HEADER_BYTES + 1 + 1 + 1  # record length (1 byte here), attributes, timestamp delta
    assert out[at] == 0 and delta < 64
    out[at] = delta * 2
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def test_a_record_claiming_an_offset_outside_its_batch_is_refused_not_trusted(
    harness: Harness,
) -> None:
    bad = _with_offset_delta(keyed([(b"k", b"forged")]), 50)
    cfg = LogConfig.from_properties(COMPACT)
    with pytest.raises(InvalidRecordsError, match="offset delta 50") as refused:
        validate_for_leader(bad, cfg, T0)  # the produce path of a compacted topic
    assert [e.batch_index for e in refused.value.record_errors] == [0]
    for i in range(20):
        harness.log.append_as_leader(keyed([(b"k", b"v%d" % i)]), 1)
    harness.log.append_as_leader(bad, 1)  # past the produce check (a test only)
    harness.log.roll()
    harness.clean()
    assert ("t", 0) in harness.cleaner.uncleanable  # refused, left alone
    values, pos = [], 0
    while pos < 20:  # the records before the forged one, segment by segment
        result = harness.log.read(pos, 1 << 20, max_offset=20)
        values += [r.value for r in decode_all(slice_bytes(result))]
        pos = result.next_offset
    assert values == [b"v%d" % i for i in range(20)]  # nothing dropped


def test_a_deleted_partition_leaves_no_checkpoint_and_its_void_pass_no_failure(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(40):
        harness.log.append_as_leader(keyed([(b"k%d" % (i % 3), b"v")]), 1)
    assert harness.clean()
    assert harness.cleaner.checkpointed("t", 0) is not None
    harness.log.append_as_leader(keyed([(b"k0", b"w")] * 20), 1)
    harness.log.roll()

    def delete_meanwhile(task: object) -> None:
        harness.manager.delete("t", 0)  # the partition goes while its pass runs
        raise FileNotFoundError("the directory was renamed under the pass")

    monkeypatch.setattr("broker.log.cleaner.manager.clean", delete_meanwhile)
    assert harness.clean()
    assert harness.manager.failure is None  # not a disk failure
    assert not harness.cleaner.uncleanable
    assert harness.cleaner.checkpointed("t", 0) is None  # a new partition starts clean


def test_a_cleaned_log_never_claims_to_know_every_producer(harness: Harness) -> None:
    for i in range(40):
        harness.log.append_as_leader(keyed([(b"k%d" % (i % 3), b"v")]), 1)
    assert harness.clean()
    harness.restart()
    assert harness.log.segments.has_gaps and not harness.log.producers.complete


async def test_reconfigure_starts_and_retires_workers_live(tmp_path: Path) -> None:
    """log.cleaner.threads changed as a dynamic broker config: more workers start at once,
    fewer retire, and the run goes on (Kafka's LogCleaner.reconfigure)."""
    manager = LogManager(tmp_path, LogConfig.from_properties(COMPACT), ManualClock(time_ms=T0))
    cleaner = LogCleaner(manager, ManualClock(time_ms=T0), CleanerSettings(backoff_ms=10),
                         lambda t, p: None)  # fmt: skip

    async def settled(count: int) -> None:
        async with asyncio.timeout(10):
            while cleaner.workers_running != count:
                await asyncio.sleep(0.01)

    running = asyncio.create_task(cleaner.run())
    try:
        await settled(1)
        cleaner.reconfigure(CleanerSettings(threads=3, backoff_ms=10))
        await settled(3)
        cleaner.reconfigure(CleanerSettings(threads=2, backoff_ms=5_000))
        await settled(2)
        assert not running.done() and cleaner.settings.backoff_ms == 5_000
    finally:
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    assert cleaner.workers_running == 0


def test_each_log_dir_keeps_its_own_checkpoint_and_a_moving_log_waits(tmp_path: Path) -> None:
    from broker.log.dir_moves import ReplicaMoves

    clock = ManualClock(time_ms=T0)
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    manager = LogManager(dirs, LogConfig.from_properties(COMPACT), clock)
    manager.load_all()
    logs = [manager.get_or_create("t", p) for p in (0, 1)]  # one in each directory
    for log in logs:
        for i in range(40):
            log.append_as_leader(keyed([(b"k%d" % (i % 3), b"v%d" % i)]), 1)
    cleaner = LogCleaner(manager, clock, CleanerSettings(backoff_ms=10),
                         lambda t, p: manager.get(t, p).log_end_offset)  # type: ignore[union-attr]  # fmt: skip
    ReplicaMoves(manager, {}).request(("t", 1), dirs[0])  # t-1 moves: not cleaned meanwhile
    assert asyncio.run(cleaner.clean_once()) and not asyncio.run(cleaner.clean_once())
    assert cleaner.checkpointed("t", 1) is None
    files = [(d / "cleaner-offset-checkpoint").read_text().splitlines()[2:] for d in dirs]
    assert files == [[f"t 0 {cleaner.checkpointed('t', 0)}"], []]
    restarted = LogCleaner(manager, clock, CleanerSettings(), lambda t, p: None)
    assert restarted.checkpointed("t", 0) == cleaner.checkpointed("t", 0)


async def test_each_groups_swap_is_its_own_loop_step(harness: Harness) -> None:
    """A pass's swaps wait on the file system (renames, unlinks: ms each when the disk is busy),
    so no loop step does two: a counter task that steps in between sees each swap apart."""
    for i in range(60):  # distinct keys: nothing is dropped, every cleaned segment stays full
        harness.log.append_as_leader(keyed([(b"k%d" % i, b"v" * 40)]), 1)
    log = harness.log
    assert log.segments.count > 4
    steps = 0
    seen: list[int] = []
    replace = log.replace_segments

    def counted(*args: Any) -> bool:
        seen.append(steps)
        return replace(*args)

    log.replace_segments = counted  # type: ignore[method-assign]

    async def count() -> None:
        nonlocal steps
        while True:
            steps += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count())
    try:
        assert await harness.cleaner.clean_once()
    finally:
        counter.cancel()
    assert len(seen) > 2  # several groups in the pass
    assert len(set(seen)) == len(seen)  # and never two swaps in one loop step
    assert [k for _, k, _ in read_all(log)] == [b"k%d" % i for i in range(60)]
