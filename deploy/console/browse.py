"""The message browser: one page of a topic's records per request, never a whole partition.

A page is read with a fresh AsyncConsumer: `assign` the partitions picked, `seek` each to its
position, poll until each has reached the end of its range (or the request's deadline). The
ranges bound what is read: paging forward from positions P reads at most `limit` records of
each partition from P (up to its high watermark); paging back from P reads the `limit` before
P. The partitions' records are merged by timestamp (model.merge_page) and the page's first (or,
back, last) `limit` kept. A page comes with two cursors, {partition: offset}: where it starts
(the cursor to page back from) and where it ends (to page forward from); the page keeps them.

A search scans forward from the start (or a cursor), record by record, keeping those whose key,
value or a header holds the text, until it has `limit` matches, reaches every partition's high
watermark, or has scanned `scan_max` records; it answers with how far it got (`scanned`, the
end cursor, `done`), and the page offers to go on from there.

Where to start: earliest (each partition's log start), latest (the last `limit` records before
the high watermark), offset:N, or time:MS (ListOffsets by timestamp; past the last record: the
high watermark).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from client.admin import AsyncAdmin
from client.consumer import AsyncConsumer
from client.types import ConsumerRecord, TopicPartition
from deploy.console import model
from protocol.errors import OdradekError, UnknownTopicOrPartitionError, UsageError

LIMIT_MAX = 200  # records on one page
PARTITIONS_MAX = 64  # picked at once
SCAN_MAX = 20_000  # records one search request looks at
READ_DEADLINE_S = 8.0  # a request returns what it has read by then
PARTITION_FETCH_BYTES = 256 * 1024  # bounds what the consumer buffers per partition


class Range:
    """Offsets [lo, hi) of one partition still to read, and where reading has got to."""

    __slots__ = ("hi", "lo", "pos")

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi, self.pos = lo, hi, lo

    @property
    def done(self) -> bool:
        return self.pos >= self.hi


async def _read(
    bootstrap: str, topic: str, ranges: dict[int, Range], visit: Callable[[ConsumerRecord], bool],
    deadline_s: float = READ_DEADLINE_S,
) -> bool:  # fmt: skip
    """Feed each partition's records in [lo, hi) to `visit` until it says stop (False), every
    range is done, or the deadline passes. Returns True when it stopped early by `visit`."""
    todo = {TopicPartition(topic, p): r for p, r in ranges.items() if not r.done}
    if not todo:
        return False
    consumer = AsyncConsumer(
        bootstrap, client_id="odradek-console-browser", auto_offset_reset="none",
        fetch_max_wait_ms=100, max_partition_fetch_bytes=PARTITION_FETCH_BYTES,
        request_timeout_ms=5000,
    )  # fmt: skip
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    try:
        consumer.assign(todo)
        for tp, r in todo.items():
            consumer.seek(tp, r.pos)
        while todo and loop.time() < end:
            polled = await consumer.poll(timeout_ms=min(500, (end - loop.time()) * 1000))
            for tp, records in polled.items():
                span = todo.get(tp)
                if span is None:
                    continue
                for rec in records:
                    if rec.offset >= span.hi:
                        break
                    span.pos = rec.offset + 1
                    if not visit(rec):
                        return True
                if span.done:
                    consumer.pause(tp)
                    del todo[tp]
    finally:
        await consumer.close()
    return False


async def _bounds(
    admin: AsyncAdmin, topic: str, partitions: list[int]
) -> dict[int, tuple[int, int]]:
    tps = [TopicPartition(topic, p) for p in partitions]
    first = await admin.list_offsets(dict.fromkeys(tps, -2))
    last = await admin.list_offsets(dict.fromkeys(tps, -1))
    return {tp.partition: (first[tp].offset, last[tp].offset) for tp in tps}


async def _start_positions(
    admin: AsyncAdmin, topic: str, start: model.Start, bounds: dict[int, tuple[int, int]],
    limit: int,
) -> dict[int, int]:  # fmt: skip
    if start.kind == "earliest":
        return {p: lo for p, (lo, _) in bounds.items()}
    if start.kind == "latest":
        return {p: max(lo, hi - limit) for p, (lo, hi) in bounds.items()}
    if start.kind == "offset":
        return {p: min(max(start.value, lo), hi) for p, (lo, hi) in bounds.items()}
    found = await admin.list_offsets({TopicPartition(topic, p): start.value for p in bounds})
    return {tp.partition: (bounds[tp.partition][1] if o.offset < 0 else o.offset)
            for tp, o in found.items()}  # fmt: skip


def _cursor(text: dict[str, Any] | None, bounds: dict[int, tuple[int, int]]) -> dict[int, int]:
    """A cursor from the page ({"0": 12, ...}), each offset kept within its partition's bounds."""
    out = {}
    for p, (lo, hi) in bounds.items():
        raw = (text or {}).get(str(p), lo)
        if not isinstance(raw, int) or isinstance(raw, bool):
            raise UsageError(f"cursor of partition {p}: {raw!r} is not an offset")
        out[p] = min(max(raw, lo), hi)
    return out


async def browse(
    admin: AsyncAdmin,
    bootstrap: str,
    topic: str,
    *,
    partitions: str = "",
    start: str = "earliest",
    cursor: dict[str, Any] | None = None,
    direction: str = "forward",
    limit: int = 50,
    search: str = "",
    scan_max: int = SCAN_MAX,
) -> dict[str, Any]:
    """One page (or one search step) as the page shows it: see the module's comment."""
    if not 1 <= limit <= LIMIT_MAX:
        raise UsageError(f"limit must be between 1 and {LIMIT_MAX}")
    if direction not in ("forward", "back"):
        raise UsageError("direction must be forward or back")
    meta = await admin.describe_cluster()
    count = meta.num_partitions(topic)
    if count is None:
        raise UnknownTopicOrPartitionError(f"no topic {topic!r}")
    picked = model.parse_partitions(partitions, count, PARTITIONS_MAX)
    bounds = await _bounds(admin, topic, picked)
    if cursor is not None:
        positions = _cursor(cursor, bounds)
    else:
        positions = await _start_positions(admin, topic, model.parse_start(start), bounds, limit)
    if search:
        return await _search(bootstrap, topic, bounds, positions, limit, search, scan_max)
    if direction == "back":
        ranges = {p: Range(max(bounds[p][0], pos - limit), pos) for p, pos in positions.items()}
    else:
        ranges = {p: Range(pos, min(bounds[p][1], pos + limit)) for p, pos in positions.items()}
    got: dict[int, list[ConsumerRecord]] = {p: [] for p in picked}

    def keep(r: ConsumerRecord) -> bool:
        got[r.partition].append(r)
        return True

    await _read(bootstrap, topic, ranges, keep)
    page = model.merge_page(got, limit, last=direction == "back")
    first: dict[int, int] = {}
    after: dict[int, int] = {}
    for r in page:
        first.setdefault(r.partition, r.offset)
        after[r.partition] = r.offset + 1
    if direction == "back":
        start_c = {p: first.get(p, positions[p]) for p in picked}
        end_c = dict(positions)
    else:
        start_c = dict(positions)
        end_c = {p: after.get(p, positions[p]) for p in picked}
    return _answer(page, bounds, start_c, end_c, scanned=sum(len(v) for v in got.values()))


async def _search(
    bootstrap: str, topic: str, bounds: dict[int, tuple[int, int]], positions: dict[int, int],
    limit: int, needle: str, scan_max: int,
) -> dict[str, Any]:  # fmt: skip
    ranges = {p: Range(pos, bounds[p][1]) for p, pos in positions.items()}
    matches: list[ConsumerRecord] = []
    scanned = 0

    def visit(r: ConsumerRecord) -> bool:
        nonlocal scanned
        scanned += 1
        if model.record_matches(r.key, r.value, r.headers, needle):
            matches.append(r)
        return len(matches) < limit and scanned < scan_max

    await _read(bootstrap, topic, ranges, visit)
    matches.sort(key=lambda r: (r.timestamp, r.partition, r.offset))
    end_c = {p: r.pos for p, r in ranges.items()}
    answer = _answer(matches, bounds, dict(positions), end_c, scanned=scanned)
    answer["search"] = {"text": needle, "done": all(r.done for r in ranges.values())}
    return answer


def _answer(
    page: list[ConsumerRecord], bounds: dict[int, tuple[int, int]], start: dict[int, int],
    end: dict[int, int], scanned: int,
) -> dict[str, Any]:  # fmt: skip
    return {
        "records": [model.render_record(r) for r in page],
        "bounds": {str(p): list(b) for p, b in bounds.items()},
        "start": {str(p): o for p, o in start.items()},
        "end": {str(p): o for p, o in end.items()},
        "at_start": all(start[p] <= lo for p, (lo, _) in bounds.items()),
        "at_end": all(end[p] >= hi for p, (_, hi) in bounds.items()),
        "scanned": scanned,
    }


def error_text(exc: BaseException) -> str:
    """One line for the page."""
    if isinstance(exc, OdradekError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
