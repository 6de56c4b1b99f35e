"""Several log directories (JBOD): placement, names and the copier's decisions as pure functions;
the LogManager over two directories (loading, one directory failing, the high watermark
checkpoints); and ReplicaMoves moving a replica between them on real logs."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from broker.config import load_config
from broker.log.config import LogConfig
from broker.log.dir_moves import ReplicaMoves
from broker.log.dir_placement import (
    Kind,
    Step,
    check_unique,
    entry_kind,
    move_step,
    next_log_dir,
    parse_log_dirs,
)
from broker.log.manager import HW_CHECKPOINT_FILE, LogManager
from protocol.batch import build_batch
from protocol.clock import ManualClock
from protocol.errors import (
    KafkaStorageError,
    ReplicaNotAvailableError,
    UsageError,
)
from tests.unit.log.conftest import T0, batch, read_values

A, B, C = Path("/a"), Path("/b"), Path("/c")
HEX = "0123456789abcdef0123456789abcdef"


# ----- pure decisions ---------------------------------------------------------------------------


def test_a_new_log_goes_to_the_online_dir_with_fewest_logs_ties_by_order() -> None:
    assert next_log_dir([A, B, C], {A: 2, B: 1, C: 1}, set()) == B
    assert next_log_dir([A, B, C], {}, set()) == A
    assert next_log_dir([A, B, C], {A: 0, B: 5, C: 1}, {A}) == C
    assert next_log_dir([A, B], {A: 0, B: 0}, {A, B}) is None


def test_entries_of_a_log_dir_are_named_as_kafka_names_them() -> None:
    assert entry_kind("t-0") == (Kind.CURRENT, "t-0")
    assert entry_kind(f"my-topic-12.{HEX}-future") == (Kind.FUTURE, "my-topic-12")
    assert entry_kind(f"t-3.{HEX}-delete") == (Kind.DELETE, "t-3")
    assert entry_kind("t-0.xyz-future") == (Kind.CURRENT, "t-0.xyz-future")  # not a uuid


def test_a_partition_in_two_dirs_is_an_error_naming_both() -> None:
    check_unique({("t", 0): [A / "t-0"], ("t", 1): [B / "t-1"]})
    with pytest.raises(UsageError, match=r"t-0 are found in both /a/t-0 and /b/t-0"):
        check_unique({("t", 0): [A / "t-0", B / "t-0"]})


def test_log_dirs_setting_takes_a_list_or_commas_and_refuses_twice_or_none() -> None:
    assert parse_log_dirs("/a, /b") == (A, B)
    assert parse_log_dirs(["/a"]) == (A,)
    for bad in ("", [], "/a,/a", 5, ["/a", 3]):
        with pytest.raises(UsageError, match="log_dirs"):
            parse_log_dirs(bad)


def test_log_dirs_take_precedence_over_log_dir(tmp_path: Path) -> None:
    config = load_config(None, broker_id=1, log_dir="/x", log_dirs="/a,/b")
    assert (config.log_dir, config.all_log_dirs) == (A, (A, B))
    assert load_config(None, broker_id=1, log_dir="/x").all_log_dirs == (Path("/x"),)
    assert load_config(None, broker_id=1, log_dirs=["/a"]).log_dir == A
    path = tmp_path / "b.toml"
    path.write_text('broker_id = 1\nlog_dirs = ["/a", "/a"]\n')
    with pytest.raises(UsageError, match=f"config file {path}: log_dirs names a directory twice"):
        load_config(path)


@pytest.mark.parametrize(
    ("start", "end", "future_end", "diverged", "expected"),
    [
        (0, 10, 0, None, (Step.COPY, 0)),
        (0, 10, 4, None, (Step.COPY, 4)),
        (0, 10, 10, None, (Step.SWAP, 10)),
        (0, 10, 12, None, (Step.TRUNCATE, 10)),  # the current log was truncated
        (0, 10, 8, 5, (Step.TRUNCATE, 5)),  # and then appended at another epoch
        (0, 10, 8, 8, (Step.COPY, 8)),  # the epochs agree up to the future end
        (7, 10, 0, None, (Step.TRUNCATE, 7)),  # the log start moved past the future end
    ],
)
def test_the_copiers_next_step(
    start: int, end: int, future_end: int, diverged: int | None, expected: tuple[Step, int]
) -> None:
    assert move_step(start, end, future_end, diverged) == expected


# ----- the LogManager over two directories ------------------------------------------------------


@pytest.fixture
def dirs(tmp_path: Path) -> list[Path]:
    return [tmp_path / "d1", tmp_path / "d2"]


def make(dirs: list[Path], clock: ManualClock) -> LogManager:
    manager = LogManager(dirs, LogConfig(), clock)
    manager.load_all()
    return manager


def test_new_logs_spread_over_the_dirs_and_load_from_both(
    dirs: list[Path], clock: ManualClock
) -> None:
    m = make(dirs, clock)
    where = [m.get_or_create("t", p).directory.parent for p in range(4)]
    assert where == [dirs[0], dirs[1], dirs[0], dirs[1]]
    m.get("t", 1).append_as_leader(batch([b"x", b"y"]), 0)  # type: ignore[union-attr]
    m.shutdown()
    again = make(dirs, clock)
    assert {(log.topic, log.partition) for log in again.logs()} == {("t", p) for p in range(4)}
    assert again.dir_of(("t", 1)) == dirs[1] and again.get("t", 1).log_end_offset == 2  # type: ignore[union-attr]


def test_a_partition_current_in_both_dirs_stops_the_start(
    dirs: list[Path], clock: ManualClock
) -> None:
    for d in dirs:
        (d / "t-0").mkdir(parents=True)
    with pytest.raises(UsageError, match="duplicate log directories for t-0"):
        make(dirs, clock)


def test_a_future_log_left_without_its_current_becomes_current(
    dirs: list[Path], clock: ManualClock
) -> None:
    m = make(dirs, clock)
    future = m.get_or_create("t", 0)
    future.append_as_leader(batch([b"a"]), 3)
    m.shutdown()
    (dirs[0] / "t-0").rename(dirs[1] / f"t-0.{HEX}-future")  # the swap renamed the current away
    again = make(dirs, clock)
    assert again.dir_of(("t", 0)) == dirs[1] and again.future(("t", 0)) is None
    assert read_values(again.get("t", 0)) == [(0, b"a")]  # type: ignore[arg-type]


def test_one_failed_dir_takes_only_its_logs_offline(dirs: list[Path], clock: ManualClock) -> None:
    m = make(dirs, clock)
    seen = []
    m.add_failure_listener(seen.append)
    on_first, on_second = m.get_or_create("t", 0), m.get_or_create("t", 1)
    eio = OSError(errno.EIO, "I/O error")
    assert m.fail(eio, "append to t-0", ("t", 0)) and not m.fail(eio, "again", ("t", 0))
    assert [f.directory for f in seen] == [dirs[0]] and not m.offline
    assert m.is_offline(("t", 0)) and not m.is_offline(("t", 1))
    with pytest.raises(KafkaStorageError):
        on_first.append_as_leader(batch([b"a"]), 0)
    on_second.append_as_leader(batch([b"b"]), 0)  # the other directory serves on
    assert m.get_or_create("t", 2).directory.parent == dirs[1]  # new logs avoid the failed one
    m.write_high_watermarks({("t", 0): 0, ("t", 1): 1})
    assert (dirs[1] / HW_CHECKPOINT_FILE).read_text().splitlines()[1:] == ["1", "t 1 1"]
    m.fail(eio, "flush of t-1", on_second.directory)
    assert m.offline and [f.directory for f in seen] == dirs


# ----- moving a replica -------------------------------------------------------------------------


def pbatch(values: list[bytes], seq: int) -> bytes:
    rows = [(None, v, None, T0) for v in values]
    return build_batch(rows, producer_id=77, producer_epoch=2, base_sequence=seq)


def run_moves(moves: ReplicaMoves, key: tuple[str, int]) -> int:
    steps = 0
    while moves.step(key):
        steps += 1
        assert steps < 1000
    return steps


def test_a_moved_replica_keeps_offsets_epochs_and_producers(
    dirs: list[Path], clock: ManualClock
) -> None:
    m = make(dirs, clock)
    log = m.get_or_create("t", 0)
    hosted = SimpleNamespace(log=log, high_watermark=0)
    moves = ReplicaMoves(m, {("t", 0): hosted}, copy_bytes_max=200)
    seq = 0
    for epoch in (1, 1, 3):
        log.append_as_leader(pbatch([b"v%d" % seq, b"w%d" % seq], seq), epoch)
        seq += 2
    log.epochs.assign(5, log.log_end_offset)  # a new leadership, no batch yet
    old_dir = log.directory
    moves.request(("t", 0), dirs[1])
    assert moves.moving(("t", 0)) and m.future(("t", 0)).directory.parent == dirs[1]  # type: ignore[union-attr]
    moves.step(("t", 0))  # a step of copying; the partition keeps taking appends meanwhile
    log.append_as_leader(pbatch([b"late"], seq), 5)
    run_moves(moves, ("t", 0))
    new = hosted.log
    assert new is m.get("t", 0) and new is not log and new.directory == dirs[1] / "t-0"
    assert [v for _, v in read_values(new)] == [b"v0", b"w0", b"v2", b"w2", b"v4", b"w4", b"late"]
    assert new.epochs.entries() == [(1, 0), (3, 4), (5, 6)]
    assert new.producers.last_offsets() == {77: 6}
    assert not old_dir.exists() and m.future(("t", 0)) is None
    new.append_as_leader(pbatch([b"next"], seq + 1), 5)  # the producer's sequence goes on
    m.shutdown()
    assert make(dirs, clock).dir_of(("t", 0)) == dirs[1]


def test_a_move_follows_a_truncated_current_log(dirs: list[Path], clock: ManualClock) -> None:
    m = make(dirs, clock)
    moves = ReplicaMoves(m, {})
    log = m.get_or_create("t", 0)
    for i in range(4):
        log.append_as_leader(batch([b"%d" % i]), 1)
    moves.request(("t", 0), dirs[1])
    moves.step(("t", 0))
    assert m.future(("t", 0)).log_end_offset == 4  # type: ignore[union-attr]
    log.truncate_to(2)  # a follower truncated to its new leader
    log.append_as_leader(batch([b"new"]), 2)
    run_moves(moves, ("t", 0))
    assert [v for _, v in read_values(m.get("t", 0))] == [b"0", b"1", b"new"]  # type: ignore[arg-type]


def test_a_move_asked_before_the_replica_exists_places_it(
    dirs: list[Path], clock: ManualClock
) -> None:
    m = make(dirs, clock)
    moves = ReplicaMoves(m, {})
    with pytest.raises(ReplicaNotAvailableError):
        moves.request(("t", 0), dirs[1], hosted=False)
    assert m.get_or_create("t", 0).directory.parent == dirs[1]  # not the emptier-first dirs[0]


def test_no_new_move_while_a_dir_is_offline(tmp_path: Path, clock: ManualClock) -> None:
    three = [tmp_path / f"d{i}" for i in range(3)]
    m = make(three, clock)
    moves = ReplicaMoves(m, {})
    m.get_or_create("t", 0)
    m.fail(OSError(errno.EIO, "I/O error"), "flush", three[2])
    with pytest.raises(KafkaStorageError, match=f"Log directory {three[2]} is offline"):
        moves.request(("t", 0), three[2])
    with pytest.raises(KafkaStorageError, match="are offline"):
        moves.request(("t", 0), three[1])
    moves.request(("t", 0), three[0])  # where it is: nothing to do
    assert not moves.moving(("t", 0))


def test_a_failing_destination_fails_its_dir_not_the_source(
    dirs: list[Path], clock: ManualClock
) -> None:
    m = make(dirs, clock)
    moves = ReplicaMoves(m, {})
    log = m.get_or_create("t", 0)
    log.append_as_leader(batch([b"a"]), 1)
    moves.request(("t", 0), dirs[1])
    future = m.future(("t", 0))
    assert future is not None
    seg = future.segments.active  # its next write fails for real (EBADF: a read-only fd)
    read_only = os.open(seg.log_path, os.O_RDONLY)
    os.close(seg.fd)
    seg.fd = read_only
    assert not moves._guarded_step(("t", 0))
    assert list(m.failures) == [dirs[1]] and not m.is_offline(("t", 0))
    log.append_as_leader(batch([b"b"]), 1)  # the partition serves on from its source
    assert not moves._guarded_step(("t", 0))  # the move waits (its future log is offline)


def test_a_failing_source_fails_its_dir_not_the_destination(
    dirs: list[Path], clock: ManualClock
) -> None:
    m = make(dirs, clock)
    moves = ReplicaMoves(m, {})
    log = m.get_or_create("t", 0)
    log.append_as_leader(batch([b"a"]), 1)
    moves.request(("t", 0), dirs[1])
    seg = log.segments.active  # its reads fail for real (EBADF: a write-only fd)
    write_only = os.open(seg.log_path, os.O_WRONLY)
    os.close(seg.fd)
    seg.fd = write_only
    assert not moves._guarded_step(("t", 0))
    assert list(m.failures) == [dirs[0]] and m.is_offline(("t", 0))
    assert not m.future(("t", 0)).closed  # type: ignore[union-attr]


def test_a_destination_that_cannot_take_the_future_log_fails(
    dirs: list[Path], clock: ManualClock
) -> None:
    m = make(dirs, clock)
    moves = ReplicaMoves(m, {})
    m.get_or_create("t", 0)
    dirs[1].rmdir()
    dirs[1].write_text("not a directory any more")
    with pytest.raises(KafkaStorageError, match="failed"):
        moves.request(("t", 0), dirs[1])
    assert list(m.failures) == [dirs[1]] and not moves.moving(("t", 0))
