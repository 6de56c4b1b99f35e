"""Driver side: from options to concrete start and end offsets, and from ranges to partitions.

`offsets_for(spec, ...)` turns an `OffsetSpec` (earliest, latest, JSON offsets, a timestamp or
timestamps per partition) into {tp: offset} for the partitions a query reads, asking the
cluster through `OffsetLookup`. As in Spark, JSON offsets must name every partition the
subscription covers (-2 earliest, -1 latest) and nothing else.

`plan_batch` is the whole of a batch read's planning: partitions, start and end offsets,
`resolve_ranges` (with data loss failing or warning), `split_ranges` for `minPartitions`, and
one `RangePartition` per range.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from client.read_committed import isolation_level_code
from protocol.errors import UsageError
from spark_connector.fetch import DataLossError, RangePartition
from spark_connector.lookup import OffsetLookup
from spark_connector.options import EARLIEST, LATEST, OffsetSpec, ReadOptions
from spark_connector.ranges import TP, DataLoss, OffsetRange, resolve_ranges, split_ranges

log = logging.getLogger("spark_connector")


def _per_partition(
    name: str, given: Mapping[str, Mapping[int, int]], tps: Sequence[TP]
) -> dict[TP, int]:
    flat = {(t, p): v for t, ps in given.items() for p, v in ps.items()}
    missing = sorted(set(tps) - set(flat))
    extra = sorted(set(flat) - set(tps))
    if missing:
        names = ", ".join(f"{t}/{p}" for t, p in missing)
        raise UsageError(
            f"{name} must name every partition read; missing {names} (use -2 for earliest, "
            "-1 for latest)"
        )
    if extra:
        names = ", ".join(f"{t}/{p}" for t, p in extra)
        raise UsageError(f"{name} names partitions that are not read: {names}")
    return flat


def offsets_for(
    spec: OffsetSpec,
    which: str,
    tps: Sequence[TP],
    lookup: OffsetLookup,
    latest: Mapping[TP, int],
    past_end: str,
) -> dict[TP, int]:
    """{tp: offset} for a start or end spec (`which` names it in messages); -2/-1 may remain."""
    if spec.kind == "earliest":
        return dict.fromkeys(tps, EARLIEST)
    if spec.kind == "latest":
        return dict.fromkeys(tps, LATEST)
    if spec.kind == "offsets":
        assert spec.offsets is not None
        return _per_partition(f"{which}Offsets", spec.offsets, tps)
    if spec.kind == "timestamp":
        assert spec.timestamp_ms is not None
        query = dict.fromkeys(tps, spec.timestamp_ms)
    else:
        assert spec.offsets is not None
        query = _per_partition(f"{which}OffsetsByTimestamp", spec.offsets, tps)
    return lookup.for_timestamps(query, past_end, latest)


def report_losses(losses: Sequence[DataLoss], fail_on_data_loss: bool) -> None:
    """Fail on the first loss (failOnDataLoss=true) or log each as a warning."""
    for loss in losses:
        if fail_on_data_loss:
            raise DataLossError(
                f"{loss.message()}. Some data may have been lost; set failOnDataLoss=false to "
                "skip it with a warning instead"
            )
        log.warning("%s; skipped (failOnDataLoss=false)", loss.message())


def to_partitions(ranges: Sequence[OffsetRange], opts: ReadOptions) -> list[RangePartition]:
    return [
        RangePartition(
            opts.bootstrap,
            r.topic,
            r.partition,
            r.from_offset,
            r.until_offset,
            opts.fail_on_data_loss,
            opts.include_headers,
            opts.poll_timeout_ms,
            opts.fetch_max_bytes,
            isolation_level_code(opts.isolation_level),
            opts.security,
        )
        for r in ranges
    ]


def plan_batch(opts: ReadOptions, lookup: OffsetLookup) -> list[RangePartition]:
    tps = lookup.partitions(opts)
    if not tps:
        return []
    earliest, latest = lookup.earliest(tps), lookup.latest(tps)
    start = offsets_for(opts.starting, "starting", tps, lookup, latest, opts.timestamp_strategy)
    end = offsets_for(opts.ending, "ending", tps, lookup, latest, "latest")
    ranges, losses = resolve_ranges(start, end, earliest, latest)
    report_losses(losses, opts.fail_on_data_loss)
    pieces = split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)
    return to_partitions(pieces, opts)
