"""The message browser: one page of a topic's records per request, never a whole partition.

A page is read with a fresh AsyncConsumer: `assign` the partitions picked, `seek` each to its
position, poll until each has reached the end of its range (or the request's deadline). The
ranges bound what is read: paging forward from positions P reads at most `limit` records of
each partition from P (up to its high watermark); paging back from P reads the `limit` before
P. The partitions' records are merged by timestamp (model.merge_page) and the page's first (or,
back, last) `limit` kept. A page comes with two cursors, {partition: offset}: where it starts
(the cursor to page back from) and where it ends (to page forward from); the page keeps them.

Compacted topics: offsets skip where the log cleaner removed records, so `limit` offsets may
hold fewer records, or none. A range's reading ends at its end offset whatever is left (a record
past it, or the consumer's position past it, ends it: the position moves past empty batches and
gaps). Paging back reads windows of `limit` offsets, widened (doubled) while they hold fewer
than `limit` records, at most BACK_WINDOWS_MAX; paging forward reads `limit` records, however
many offsets they span. A cursor moves past offsets read that held nothing, so a page of gone
offsets is followed by the next, never shown again.

A search scans forward from the start (or a cursor), record by record, keeping those whose key,
value or a header holds the text, until it has `limit` matches, reaches every partition's high
watermark, or has scanned `scan_max` records; it answers with how far it got (`scanned`, the
end cursor, `done`), and the page offers to go on from there.

Where to start: earliest (each partition's log start), latest (the last `limit` records before
the high watermark, found by reading back as a back page does), offset:N, or time:MS
(ListOffsets by timestamp; past the last record: the high watermark).

Values framed with a schema registry id are shown decoded when the request brings a `Decoder`
(deploy/console/schemas.py): it fetches a page's schemas once, then renders each value.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Any, Protocol

from client.admin import AsyncAdmin
from client.consumer import AsyncConsumer
from client.read_committed import READ_COMMITTED, READ_UNCOMMITTED
from client.types import ConsumerRecord, TopicPartition
from deploy.console import model
from protocol.errors import OdradekError, UnknownTopicOrPartitionError, UsageError, for_code

LIMIT_MAX = 200  # records on one page
PARTITIONS_MAX = 64  # picked at once
SCAN_MAX = 20_000  # records one search request looks at
READ_DEADLINE_S = 8.0  # a request returns what it has read by then
PARTITION_FETCH_BYTES = 256 * 1024  # bounds what the consumer buffers per partition
BACK_WINDOWS_MAX = 6  # reads of one back page: windows of limit, 2x, 4x... offsets

# The consumer settings of the browse() in progress (the reader's security settings, the
# isolation level), for the consumers it makes deep down (a context variable: each request's
# task sees its own).
_OPTIONS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "options", default=None
)


class Decoder(Protocol):
    """Values framed with a schema registry id, shown decoded (deploy/console/schemas.py)."""

    async def prepare(self, values: list[bytes | None]) -> None:
        """Fetch what `render` needs for these values."""
        ...

    def render(self, value: bytes | None) -> dict[str, Any] | None:
        """The value as the page shows it, decoded; None: shown as it is."""
        ...


_DECODER: contextvars.ContextVar[Decoder | None] = contextvars.ContextVar("decoder", default=None)


class Range:
    """Offsets [lo, hi) of one partition still to read, where reading has got to, and how many
    records it may still take (None: all in the range)."""

    __slots__ = ("hi", "left", "lo", "pos")

    def __init__(self, lo: int, hi: int, records_max: int | None = None) -> None:
        self.lo, self.hi, self.pos, self.left = lo, hi, lo, records_max

    @property
    def done(self) -> bool:
        return self.pos >= self.hi or self.left == 0

    def took(self, offset: int) -> None:
        self.pos = offset + 1
        if self.left is not None:
            self.left -= 1


async def _read(
    bootstrap: str, topic: str, ranges: dict[int, Range], visit: Callable[[ConsumerRecord], bool],
    deadline_s: float = READ_DEADLINE_S, isolation: str | None = None,
) -> bool:  # fmt: skip
    """Feed each partition's records in [lo, hi) to `visit` until it says stop (False), every
    range is done, or the deadline passes. Returns True when it stopped early by `visit`.
    `isolation`: the consumer's isolation level, if not the request's."""
    todo = {TopicPartition(topic, p): r for p, r in ranges.items() if not r.done}
    if not todo:
        return False
    options = dict(_OPTIONS.get() or {})
    if isolation is not None:
        options["isolation_level"] = isolation
    consumer = AsyncConsumer(
        bootstrap, client_id="odradek-console-browser", auto_offset_reset="none",
        fetch_max_wait_ms=100, max_partition_fetch_bytes=PARTITION_FETCH_BYTES,
        request_timeout_ms=5000, **options,
    )  # fmt: skip
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    try:
        consumer.assign(todo)
        for tp, r in todo.items():
            consumer.seek(tp, r.pos)
        while todo and loop.time() < end:
            polled = await consumer.poll(timeout_ms=min(500, (end - loop.time()) * 1000))
            for tp, span in list(todo.items()):
                for rec in polled.get(tp, ()):
                    if rec.offset >= span.hi:
                        span.pos = span.hi  # nothing left before hi (compacted away)
                        break
                    span.took(rec.offset)
                    if not visit(rec):
                        return True
                    if span.done:
                        break
                if not span.done:  # moved past empty batches and gaps, where no record is
                    span.pos = max(span.pos, min(await consumer.position(tp), span.hi))
                if span.done:
                    consumer.pause(tp)
                    del todo[tp]
    finally:
        await consumer.close()
    return False


async def _bounds(
    admin: AsyncAdmin, topic: str, partitions: list[int], isolation: str = READ_UNCOMMITTED
) -> dict[int, tuple[int, int]]:
    """{partition: (log start, end)}: the end is the high watermark, or with read_committed the
    last stable offset (no record at or past it is committed yet)."""
    tps = [TopicPartition(topic, p) for p in partitions]
    first = await admin.list_offsets(dict.fromkeys(tps, -2))
    last = await admin.list_offsets(dict.fromkeys(tps, -1), isolation)
    return {tp.partition: (first[tp].offset, last[tp].offset) for tp in tps}


async def _partition_count(admin: AsyncAdmin, topic: str) -> int:
    """The topic's partition count, from a Metadata request that names it: the broker answers
    TOPIC_AUTHORIZATION_FAILED (raised as such) when the reader may not Describe it, whether or
    not it exists; the error's words name no topic."""
    described = await admin.describe_topics([topic])
    if not described:
        raise UnknownTopicOrPartitionError()
    if described[0].error_code:
        raise for_code(described[0].error_code)()
    return len(described[0].partitions)


async def _start_positions(
    admin: AsyncAdmin, bootstrap: str, topic: str, start: model.Start,
    bounds: dict[int, tuple[int, int]], limit: int,
) -> dict[int, int]:  # fmt: skip
    if start.kind == "earliest":
        return {p: lo for p, (lo, _) in bounds.items()}
    if start.kind == "latest":  # where each partition's last `limit` records start
        ends = {p: hi for p, (_, hi) in bounds.items()}
        got, reached = await _read_back(bootstrap, topic, bounds, ends, limit)
        return {p: rs[-limit].offset if len(rs) >= limit else reached[p] for p, rs in got.items()}
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
    security: dict[str, Any] | None = None,
    isolation: str = READ_UNCOMMITTED,
    decoder: Decoder | None = None,
) -> dict[str, Any]:
    """One page (or one search step) as the page shows it: see the module's comment.
    `security`: the reader's security settings (on a secured cluster, the logged-in user's
    own: views.py); `isolation`: read_uncommitted (every record, transactional ones marked)
    or read_committed (only committed transactions', up to the last stable offset);
    `decoder`: values framed with a schema registry id shown decoded."""
    _DECODER.set(decoder)
    if isolation not in (READ_UNCOMMITTED, READ_COMMITTED):
        raise UsageError(f"isolation must be {READ_UNCOMMITTED} or {READ_COMMITTED}")
    _OPTIONS.set(dict(security or {}, isolation_level=isolation))
    if not 1 <= limit <= LIMIT_MAX:
        raise UsageError(f"limit must be between 1 and {LIMIT_MAX}")
    if direction not in ("forward", "back"):
        raise UsageError("direction must be forward or back")
    count = await _partition_count(admin, topic)
    picked = model.parse_partitions(partitions, count, PARTITIONS_MAX)
    bounds = await _bounds(admin, topic, picked, isolation)
    if cursor is not None:
        positions = _cursor(cursor, bounds)
    else:
        start_at = model.parse_start(start)
        positions = await _start_positions(admin, bootstrap, topic, start_at, bounds, limit)
    if search:
        found = await _search(bootstrap, topic, bounds, positions, limit, search, scan_max)
        return await _with_marks(admin, bootstrap, topic, isolation, found)
    if direction == "back":
        got, reached = await _read_back(bootstrap, topic, bounds, positions, limit)
    else:
        got, reached = await _read_forward(bootstrap, topic, bounds, positions, limit)
    page = model.merge_page(got, limit, last=direction == "back")
    first: dict[int, int] = {}
    after: dict[int, int] = {}
    kept: dict[int, int] = {}
    for r in page:
        first.setdefault(r.partition, r.offset)
        after[r.partition] = r.offset + 1
        kept[r.partition] = kept.get(r.partition, 0) + 1
    # a partition whose records read are all on the page (or that had none): its cursor moves
    # to where reading got, past offsets that held no record
    whole = {p: kept.get(p, 0) == len(got[p]) for p in picked}
    if direction == "back":
        start_c = {p: reached[p] if whole[p] else first.get(p, positions[p]) for p in picked}
        end_c = dict(positions)
    else:
        start_c = dict(positions)
        end_c = {p: reached[p] if whole[p] else after.get(p, positions[p]) for p in picked}
    answer = await _answer(page, bounds, start_c, end_c,
                           scanned=sum(len(v) for v in got.values()))  # fmt: skip
    return await _with_marks(admin, bootstrap, topic, isolation, answer)


async def _with_marks(
    admin: AsyncAdmin, bootstrap: str, topic: str, isolation: str, answer: dict[str, Any]
) -> dict[str, Any]:
    """The answer with each record's transaction mark ("txn": "aborted", "open" or None) and
    the isolation it was read with. read_committed shows committed records only: none marked.
    read_uncommitted: a record at or past its partition's last stable offset is "open" (a
    transaction open at or before it; read_committed consumers do not see it yet); one below
    it that a read_committed read of the same offsets does not return is "aborted"."""
    answer["isolation"] = isolation
    records = answer["records"]
    for r in records:
        r["txn"] = None
    if isolation == READ_COMMITTED or not records:
        return answer
    spans: dict[int, list[int]] = {}
    for r in records:
        lo_hi = spans.setdefault(r["partition"], [r["offset"], r["offset"] + 1])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], r["offset"]), max(lo_hi[1], r["offset"] + 1)
    stable = await admin.list_offsets(
        {TopicPartition(topic, p): -1 for p in spans}, READ_COMMITTED
    )  # fmt: skip
    lso = {tp.partition: o.offset for tp, o in stable.items()}
    ranges = {p: Range(lo, min(hi, lso[p])) for p, (lo, hi) in spans.items()}
    committed: dict[int, set[int]] = {p: set() for p in spans}

    def visit(r: ConsumerRecord) -> bool:
        committed[r.partition].add(r.offset)
        return True

    await _read(bootstrap, topic, ranges, visit, isolation=READ_COMMITTED)
    read_to = {p: r.pos for p, r in ranges.items()}  # offsets read (a deadline may cut it)
    for r in records:
        r["txn"] = model.txn_mark(r["offset"], lso[r["partition"]], read_to[r["partition"]],
                                  committed[r["partition"]])  # fmt: skip
    return answer


Read = tuple[dict[int, list[ConsumerRecord]], dict[int, int]]
"""Each partition's records read, and where reading got (forward: the offset after what was
read; back: the lowest offset read from)."""


async def _read_forward(
    bootstrap: str, topic: str, bounds: dict[int, tuple[int, int]], positions: dict[int, int],
    limit: int,
) -> Read:  # fmt: skip
    """Up to `limit` records of each partition from its position, up to its high watermark."""
    ranges = {p: Range(pos, bounds[p][1], limit) for p, pos in positions.items()}
    got: dict[int, list[ConsumerRecord]] = {p: [] for p in positions}
    await _read(bootstrap, topic, ranges, _collect(got))
    return got, {p: r.pos for p, r in ranges.items()}


async def _read_back(
    bootstrap: str, topic: str, bounds: dict[int, tuple[int, int]], positions: dict[int, int],
    limit: int,
) -> Read:  # fmt: skip
    """The last `limit` records of each partition before its position (fewer at its log start):
    a window of `limit` offsets, then windows twice as wide before it while a partition has
    fewer than `limit` records (compaction left gaps), at most BACK_WINDOWS_MAX reads within
    the request's deadline. A window not read to its end (the deadline) stops the partition."""
    got: dict[int, list[ConsumerRecord]] = {p: [] for p in positions}
    reached = dict(positions)
    loop = asyncio.get_running_loop()
    end = loop.time() + READ_DEADLINE_S
    width = limit
    for _ in range(BACK_WINDOWS_MAX):
        ranges = {p: Range(max(bounds[p][0], at - width), at) for p, at in reached.items()
                  if len(got[p]) < limit and at > bounds[p][0]}  # fmt: skip
        if not ranges or loop.time() >= end:
            break
        window: dict[int, list[ConsumerRecord]] = {p: [] for p in ranges}
        await _read(bootstrap, topic, ranges, _collect(window), end - loop.time())
        for p, r in ranges.items():
            if r.done:  # else the deadline came: what it read would leave a hole, dropped
                got[p] = window[p] + got[p]
                reached[p] = r.lo
        width *= 2
    return got, reached


def _collect(into: dict[int, list[ConsumerRecord]]) -> Callable[[ConsumerRecord], bool]:
    """A `_read` visitor that keeps every record, by partition."""

    def visit(r: ConsumerRecord) -> bool:
        into[r.partition].append(r)
        return True

    return visit


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
    answer = await _answer(matches, bounds, dict(positions), end_c, scanned=scanned)
    answer["search"] = {"text": needle, "done": all(r.done for r in ranges.values())}
    return answer


async def _answer(
    page: list[ConsumerRecord], bounds: dict[int, tuple[int, int]], start: dict[int, int],
    end: dict[int, int], scanned: int,
) -> dict[str, Any]:  # fmt: skip
    records = [model.render_record(r) for r in page]
    decoder = _DECODER.get()
    if decoder is not None:
        await decoder.prepare([r.value for r in page])
        for r, shown in zip(page, records, strict=True):
            decoded = decoder.render(r.value)
            if decoded is not None:
                shown["value"] = decoded
    return {
        "records": records,
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
