"""The streaming reader: Spark's micro-batch Kafka source, as a Python DataSourceStreamReader.

Offsets are JSON-friendly dicts `{topic: {"partition": offset}}` (what Spark checkpoints), the
end of one micro-batch being the start of the next. This object lives on the driver, in the
Python process Spark keeps for the query's planning; tasks only ever see `RangePartition`s.

- `initialOffset()`: `startingOffsets` (default latest) or a starting timestamp, resolved to
  concrete offsets for the partitions that exist when the query first starts.
- `latestOffset(start, limit)`: the high watermark of every partition read now; partitions
  that appeared since `start` begin at their earliest offset; a `ReadMaxRows` limit (from
  `maxOffsetsPerTrigger`, see `getDefaultReadLimit`) is shared across partitions by backlog
  (ranges.rate_limit). With `trigger(availableNow=True)` Spark first calls
  `prepareForTriggerAvailableNow`, which pins the ends to the high watermarks of that moment.
  Spark 4.0/4.1 call `latestOffset()` without arguments: the reader then continues from the
  last end it handed out, with the limit from the options. `minOffsetsPerTrigger` holds a
  micro-batch back (the end stays at the start: Spark runs no batch) while fewer new offsets
  are there, for at most `maxTriggerDelay` since the last batch (ranges.delay_batch; the
  clock is injected); not under availableNow, which must reach its target.
- Lag: Spark's Python data source API has no way to hand custom source metrics to Spark's
  progress reports (`DataSourceStreamReader` has no `metrics()`, pyspark 4.3), so
  `avgOffsetsBehindLatest`, `maxOffsetsBehindLatest` and `minOffsetsBehindLatest` (Spark's
  Kafka source's, ranges.offsets_behind) are logged once per micro-batch on the
  `spark_connector` logger (INFO) and kept in `metrics`; the progress report itself carries
  each partition's `latestOffset` (reportLatestOffset) beside its `endOffset`. And odradek's
  metrics carry the same lag: `commit(end)`, which Spark calls once a micro-batch is done,
  commits `end` to the query's group (`kafka.group.id`, else `groupIdPrefix`-<uuid>, one per
  start of the query) from outside the group, so the brokers' `odradek_coordinator_group_lag`
  (per partition: the high watermark minus `end`), `odradek groups describe` and the console
  show how far the query is behind. The offsets Spark resumes from stay in its checkpoint.
- `partitions(start, end)`: one `RangePartition` per partition with new records (split for
  `minPartitions`). A partition in `start` that is gone, or whose end moved below its start
  (truncation, a topic re-created), is data loss: an error or a warning per `failOnDataLoss`.
"""

from __future__ import annotations

import importlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from spark_connector.avro_values import read_values
from spark_connector.fetch import RangePartition
from spark_connector.lookup import OffsetLookup
from spark_connector.options import ReadOptions, offsets_from_json, offsets_to_json
from spark_connector.planning import offsets_for, report_losses, to_partitions
from spark_connector.ranges import (
    TP,
    DataLoss,
    OffsetRange,
    delay_batch,
    offsets_behind,
    rate_limit,
    split_ranges,
)
from spark_connector.registry import AvroValues

log = logging.getLogger("spark_connector")

try:  # Spark >= 4.2: read limits and the availableNow hook
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow as _AvailableNow
except ImportError:  # Spark 4.0 / 4.1

    class _AvailableNow:  # type: ignore[no-redef]
        """Stand-in base on Spark versions without the mix-in."""


try:
    _limits: Any = importlib.import_module("pyspark.sql.streaming.datasource")
except ImportError:
    _limits = None
ReadMaxRows: Any = getattr(_limits, "ReadMaxRows", None)
ReadAllAvailable: Any = getattr(_limits, "ReadAllAvailable", None)


def _flat(offsets: dict[str, dict[int, int]]) -> dict[TP, int]:
    return {(t, p): o for t, ps in offsets.items() for p, o in ps.items()}


def _nested(flat: dict[TP, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[int, int]] = {}
    for (t, p), o in flat.items():
        out.setdefault(t, {})[p] = o
    return offsets_to_json(out)


class OdradekStreamReader(DataSourceStreamReader, _AvailableNow):
    def __init__(
        self,
        opts: ReadOptions,
        values: AvroValues | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.opts = opts
        self.values = values  # valueFormat=avro: how tasks decode values
        self.lookup = OffsetLookup.of(opts)
        self._target: dict[TP, int] | None = None  # availableNow: never read past these
        self._last_end: dict[str, Any] | None = None  # for the no-argument latestOffset()
        self._clock = clock
        self._last_batch_s = clock()  # minOffsetsPerTrigger: when the last batch was let go
        self.metrics: dict[str, str] = {}  # the last micro-batch's offsets behind latest
        self.group_id = opts.group_id or f"{opts.group_id_prefix}-{uuid.uuid4()}"
        self._committed_once = False

    def initialOffset(self) -> dict[str, Any]:
        tps = self.lookup.partitions(self.opts)
        earliest, latest = self.lookup.earliest(tps), self.lookup.latest(tps)
        start = offsets_for(
            self.opts.starting, "starting", tps, self.lookup, latest, self.opts.timestamp_strategy
        )
        resolved = {tp: earliest[tp] if o == -2 else latest[tp] if o == -1 else o
                    for tp, o in start.items()}  # fmt: skip
        self._last_end = _nested(resolved)
        return self._last_end

    def getDefaultReadLimit(self) -> Any:
        if ReadMaxRows is not None and self.opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable() if ReadAllAvailable is not None else None

    def prepareForTriggerAvailableNow(self) -> None:
        tps = self.lookup.partitions(self.opts)
        self._target = self.lookup.latest(tps)

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: Any = None
    ) -> dict[str, Any]:
        if start is None:  # Spark 4.0/4.1
            start = self._last_end if self._last_end is not None else self.initialOffset()
            if self.opts.max_offsets_per_trigger is not None and ReadMaxRows is not None:
                limit = ReadMaxRows(self.opts.max_offsets_per_trigger)
        begin = _flat(offsets_from_json(start))
        latest = self.lookup.latest(self.lookup.partitions(self.opts))
        until = dict(self._target) if self._target is not None else dict(latest)
        if self._held_back(begin, until):
            return start
        max_rows = getattr(limit, "max_rows", None)
        if max_rows is not None:
            new = [tp for tp in until if tp not in begin]
            until = rate_limit(max_rows, begin, until, self.lookup.earliest(new))
        self._report_lag(until, latest)
        self._last_end = _nested(until)
        return self._last_end

    def _held_back(self, begin: dict[TP, int], until: dict[TP, int]) -> bool:
        """minOffsetsPerTrigger (not under availableNow): wait for more, up to the delay."""
        minimum = self.opts.min_offsets_per_trigger
        if minimum is None or self._target is not None:
            return False
        since_ms = (self._clock() - self._last_batch_s) * 1000
        if delay_batch(minimum, begin, until, since_ms, self.opts.max_trigger_delay_ms):
            return True
        self._last_batch_s = self._clock()
        return False

    def _report_lag(self, end: dict[TP, int], latest: dict[TP, int]) -> None:
        self.metrics = offsets_behind(end, latest)
        if self.metrics:
            figures = ", ".join(f"{k} {v}" for k, v in sorted(self.metrics.items()))
            log.info("micro-batch up to %s: %s", _nested(end), figures)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return _nested(self.lookup.latest(self.lookup.partitions(self.opts)))

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        begin, until = _flat(offsets_from_json(start)), _flat(offsets_from_json(end))
        new = [tp for tp in until if tp not in begin]
        first = {**self.lookup.earliest(new), **begin}
        losses = [DataLoss(t, p, o, o + 1, "the partition is gone")
                  for (t, p), o in begin.items() if (t, p) not in until]  # fmt: skip
        ranges = []
        for tp in sorted(until):
            frm, to = first[tp], until[tp]
            if to < frm:
                losses.append(DataLoss(*tp, to, frm, "the partition's end moved below its start"))
                continue
            ranges.append(OffsetRange(tp[0], tp[1], frm, to))
        report_losses(losses, self.opts.fail_on_data_loss)
        pieces = split_ranges(ranges, self.opts.min_partitions, self.opts.max_records_per_partition)
        return list(to_partitions(pieces, self.opts))

    def read(self, partition: InputPartition) -> Any:
        assert isinstance(partition, RangePartition)
        return read_values(partition, self.values)

    def commit(self, end: dict[str, Any]) -> None:
        """The micro-batch up to `end` is done: its end offsets go to the query's group, for
        odradek's lag metrics (Spark resumes from its checkpoint, not from these)."""
        offsets = _flat(offsets_from_json(end))
        self.lookup.commit_group(self.group_id, offsets)
        if not self._committed_once:
            self._committed_once = True
            group = self.group_id
            log.info("committing each micro-batch's end offsets to group %r: its lag is "
                     "odradek_coordinator_group_lag{group=%r}", group, group)  # fmt: skip

    def stop(self) -> None:
        self.lookup.close()
