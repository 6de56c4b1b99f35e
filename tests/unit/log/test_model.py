"""The log against a plain list model, across random appends, reads, truncations, retention,
rolls, crashes (close without the marker, optionally with a torn tail) and reopens."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from broker.log.config import LogConfig
from broker.log.durability import RECOVERY_POINT_FILE
from broker.log.log import Log
from protocol.batch import decode_all, iter_batches
from protocol.clock import ManualClock
from protocol.errors import OffsetOutOfRangeError

from .conftest import batch, slice_bytes

CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=150, retention_ms=None)


class LogModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="odradek-model-"))
        self.directory = self.root / "model-0"
        self.clock = ManualClock()
        self.log = Log.open(self.directory, CONFIG, self.clock)
        self.batches: list[tuple[int, list[bytes], int]] = []  # (base offset, values, epoch)
        self.start = 0
        self.epoch = 0

    # ----- the model ----------------------------------------------------------------------

    @property
    def end(self) -> int:
        if not self.batches:
            return self.start
        base, values, _ = self.batches[-1]
        return base + len(values)

    def records_between(self, first: int, stop: int) -> list[tuple[int, bytes]]:
        out = []
        for base, values, _ in self.batches:
            out += [(base + i, v) for i, v in enumerate(values) if first <= base + i < stop]
        return out

    def expected_epochs(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []  # (epoch, start offset)
        for base, _, epoch in self.batches:
            if not out or epoch > out[-1][0]:
                out.append((epoch, base))
        return out

    # ----- rules ----------------------------------------------------------------------------

    @rule(values=st.lists(st.binary(max_size=80), min_size=1, max_size=4), bump=st.booleans())
    def append(self, values: list[bytes], bump: bool) -> None:
        self.epoch += bump
        info = self.log.append_as_leader(batch(values), self.epoch)
        assert info.base_offset == self.end
        self.batches.append((info.base_offset, values, self.epoch))

    @rule(data=st.data(), max_bytes=st.integers(1, 1500), hw=st.booleans())
    def read(self, data: st.DataObject, max_bytes: int, hw: bool) -> None:
        offset = data.draw(st.integers(self.start, self.end))
        max_offset = data.draw(st.integers(offset, self.end)) if hw else None
        result = self.log.read(offset, max_bytes, max_offset)
        if result.slice is None:
            assert offset == self.end or max_offset is not None
            return
        records = decode_all(slice_bytes(result))
        assert result.first_offset <= offset < result.next_offset
        assert max_offset is None or result.next_offset <= max_offset
        assert [(r.offset, r.value) for r in records] == self.records_between(
            result.first_offset, result.next_offset
        )

    @rule(data=st.data())
    def read_out_of_range(self, data: st.DataObject) -> None:
        offset = data.draw(st.sampled_from([self.start - 1, self.end + 1]))
        if offset >= 0:
            with pytest.raises(OffsetOutOfRangeError):
                self.log.read(offset, 100)

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.start, self.end))
        self.log.truncate_to(offset)
        self.batches = [b for b in self.batches if b[0] + len(b[1]) - 1 < offset]

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(keep_bytes=st.integers(0, 3000))
    def retention_by_bytes(self, keep_bytes: int) -> None:
        self.log.update_config(replace(CONFIG, retention_bytes=keep_bytes))
        self.log.delete_retained_segments()
        self.log.update_config(CONFIG)
        self.start = self.log.log_start_offset
        self.batches = [b for b in self.batches if b[0] >= self.start]
        assert not self.batches or self.batches[0][0] == self.start

    @rule()
    def clean_restart(self) -> None:
        self.log.close()
        self.log = Log.open(self.directory, CONFIG, self.clock)

    @rule(tear=st.integers(0, 300), lose_checkpoint=st.booleans())
    def crash(self, tear: int, lose_checkpoint: bool) -> None:
        self.log.close_unclean()
        if lose_checkpoint:
            (self.directory / RECOVERY_POINT_FILE).unlink(missing_ok=True)
        if tear and self.batches:
            self._tear_last_batch(tear)
        self.log = Log.open(self.directory, CONFIG, self.clock)

    def _tear_last_batch(self, tear: int) -> None:
        path = [p for p in sorted(self.directory.glob("*.log")) if p.stat().st_size][-1]
        data = path.read_bytes()
        (_, last), *_ = reversed(list(iter_batches(data)))
        with open(path, "r+b") as f:
            f.truncate(len(data) - 1 - tear % last.size)
        assert last.base_offset == self.batches[-1][0]
        self.batches.pop()

    @precondition(lambda self: self.batches)
    @rule()
    def offset_for_timestamp(self) -> None:
        found = self.log.times.offset_for_timestamp(0)
        assert found is not None and found[0] == self.start

    # ----- invariants -----------------------------------------------------------------------

    @invariant()
    def offsets_match(self) -> None:
        assert self.log.log_end_offset == self.end
        assert self.log.log_start_offset == self.start
        assert self.log.log_start_offset <= self.log.recovery_point <= self.log.log_end_offset

    @invariant()
    def epochs_match(self) -> None:
        entries = self.log.epochs.entries()
        expected = self.expected_epochs()
        # The cache may remember an epoch whose batches retention removed, moved to the start.
        assert entries[len(entries) - len(expected) :] == expected

    def teardown(self) -> None:
        self.log.close_unclean()
        shutil.rmtree(self.root, ignore_errors=True)


LogModel.TestCase.settings = settings(
    max_examples=int(os.environ.get("ODRADEK_MODEL_EXAMPLES", "100")),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestLogModel = LogModel.TestCase
