"""The console's decisions, as pure functions of data (no I/O, time given by the caller).

- `partition_status`: "ok", "under-replicated" or "offline", with the cause in a sentence: an
  offline partition's is client/explain.py's `why_no_leader` (what `odradek topics describe`
  prints), an under-replicated one's names the replicas out of the ISR and whether they are down.
- `render_bytes`: a key or value for the page: None, UTF-8 text, JSON (pretty-printed) or hex,
  cut at `limit` bytes (and said so).
- `record_matches`: the browser's search: a substring of the key, the value, or a header's name
  or value (case-insensitive; bytes that are not UTF-8 are searched as their hex too).
- `txn_mark`: a record's transaction mark in the browser ("open", "aborted" or None).
- `parse_start`: "earliest", "latest", "offset:N" or "time:MS" (or an ISO date) -> `Start`.
- `dirty_ratios`: each compacted log's dirty ratio from a broker's Prometheus metrics text
  (the gauge `odradek_log_cleaner_dirty_ratio{topic,partition}`, broker/metrics.py), parsed by
  prometheus_client's own parser.
- `LagHistory`: (time, total lag) per group over the last five minutes (LAG_WINDOW_MS), one
  point per `step_ms` at most.
- `transactions_view`: the open transactions (id, producer id and epoch, state, age, partitions)
  from the coordinators' descriptions, and the hanging ones (client/txn_admin.py's
  find_hanging_transactions), each age counted from `now_ms` so that it grows between refreshes.
- `group_kind_view`: a group's kind for the groups view: Kafka's group type (classic, or
  consumer for KIP-848) and, for a consumer group, its group and target assignment epochs and
  each member's epoch, assigned and target partitions (Kafka's ConsumerGroupDescribe).
- `Section` and `stale_sections`: each part of the snapshot with the time it was last
  refreshed and the error of the last failed refresh; a section whose refresh failed (or, for
  the metadata, whose controller is down) is listed as stale with its age; `refused_sections`
  lists those the broker refused to the reader (an authorization error), with its words.
"""

from __future__ import annotations

import binascii
import datetime
import json
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from client.explain import why_no_leader
from protocol.errors import UsageError

RENDER_LIMIT_BYTES = 16 * 1024  # of one key or value shown on the page
LAG_WINDOW_MS = 5 * 60 * 1000  # the groups' lag chart: the last five minutes
LAG_STEP_MS = 1000
LAG_POINTS_MAX = LAG_WINDOW_MS // LAG_STEP_MS + 1  # per group: the window at one point a second


# ----- partitions --------------------------------------------------------------------------


def _ids(ids: Sequence[int]) -> str:
    return ",".join(map(str, ids))


def partition_status(
    name: str,
    leader: int,
    replicas: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    unclean: bool | None = None,
) -> tuple[str, str | None]:
    """("ok" | "under-replicated" | "offline", the cause or None) for partition `name`."""
    if leader < 0 or leader not in live:
        return "offline", why_no_leader(name, replicas, isr, live, unclean)
    out = [r for r in replicas if r not in isr]
    if not out:
        return "ok", None
    down = [r for r in out if r not in live]
    what = f"replica {out[0]} is" if len(out) == 1 else f"replicas {_ids(out)} are"
    text = f"partition {name}: {what} out of the ISR [{_ids(isr)}]"
    if down:
        text += f" (broker{'s' if len(down) > 1 else ''} {_ids(down)} down)"
    else:
        text += " (catching up)"
    return "under-replicated", text


# ----- records ------------------------------------------------------------------------------


def render_bytes(data: bytes | None, limit: int = RENDER_LIMIT_BYTES) -> dict[str, Any]:
    """{"kind": "null" | "text" | "json" | "hex", "text": ..., "size": n, "truncated": bool}."""
    if data is None:
        return {"kind": "null", "text": "", "size": 0, "truncated": False}
    cut = data[:limit]
    truncated = len(data) > limit
    try:
        text = cut.decode("utf-8")
    except UnicodeDecodeError:
        if not truncated:
            return {"kind": "hex", "text": cut.hex(" "), "size": len(data), "truncated": False}
        try:  # a multi-byte character cut in two at the limit
            text = cut[:-3].decode("utf-8") + cut[-3:].decode("utf-8", "ignore")
        except UnicodeDecodeError:
            return {"kind": "hex", "text": cut.hex(" "), "size": len(data), "truncated": True}
    if not truncated and text.lstrip()[:1] in ("{", "["):
        try:
            pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pass
        else:
            return {"kind": "json", "text": pretty, "size": len(data), "truncated": False}
    return {"kind": "text", "text": text, "size": len(data), "truncated": truncated}


def _searchable(data: bytes | None) -> str:
    if data is None:
        return ""
    try:
        return data.decode("utf-8").lower()
    except UnicodeDecodeError:
        return binascii.hexlify(data).decode()


def record_matches(
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] | None,
    needle: str,
) -> bool:
    """True when `needle` (case-insensitive) is in the key, the value or a header."""
    n = needle.lower()
    if not n:
        return True
    if n in _searchable(key) or n in _searchable(value):
        return True
    return any(n in name.lower() or n in _searchable(v) for name, v in headers or ())


def render_record(r: Any, limit: int = RENDER_LIMIT_BYTES) -> dict[str, Any]:
    """A ConsumerRecord as the page shows it."""
    return {
        "partition": r.partition,
        "offset": r.offset,
        "timestamp": r.timestamp,
        "key": render_bytes(r.key, limit),
        "value": render_bytes(r.value, limit),
        "headers": [[name, render_bytes(v, limit)] for name, v in r.headers or ()],
    }


def txn_mark(offset: int, stable: int, read_to: int, committed: Collection[int]) -> str | None:
    """A read_uncommitted record's transaction mark: "open" at or past its partition's last
    stable offset `stable`; "aborted" below it when a read_committed read of the offsets up to
    `read_to` did not return it (`committed`: the offsets it returned); else None (committed,
    or not transactional). Past `read_to` (that read ran out of time) nothing is claimed."""
    if offset >= stable:
        return "open"
    if offset < read_to and offset not in committed:
        return "aborted"
    return None


# ----- where the browser starts ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Start:
    kind: str  # "earliest" | "latest" | "offset" | "time"
    value: int = 0  # the offset, or the time in ms since the epoch


def parse_start(text: str) -> Start:
    """ "earliest", "latest", "offset:N", "time:MS" or "time:2026-11-24T01:00:00Z"."""
    text = text.strip()
    if text in ("earliest", "latest"):
        return Start(text)
    kind, sep, arg = text.partition(":")
    if sep and kind == "offset":
        if arg.isdigit():
            return Start("offset", int(arg))
        raise UsageError(f"offset {arg!r} is not a non-negative integer")
    if sep and kind == "time":
        if arg.isdigit():
            return Start("time", int(arg))
        try:
            when = datetime.datetime.fromisoformat(arg.replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(f"time {arg!r} is neither milliseconds nor an ISO date") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.UTC)
        return Start("time", int(when.timestamp() * 1000))
    raise UsageError(f"start {text!r}: use earliest, latest, offset:N or time:MS")


def parse_partitions(text: str, count: int, max_partitions: int) -> list[int]:
    """ "" or "all": every partition; else "0,2,5". Checked against the topic's count."""
    if text.strip() in ("", "all"):
        wanted = list(range(count))
    else:
        try:
            wanted = sorted({int(p) for p in text.split(",") if p.strip()})
        except ValueError:
            raise UsageError(f"partitions {text!r}: give numbers separated by commas") from None
    bad = [p for p in wanted if not 0 <= p < count]
    if bad:
        raise UsageError(f"partition {bad[0]} does not exist (the topic has {count})")
    if len(wanted) > max_partitions:
        raise UsageError(f"at most {max_partitions} partitions at a time")
    return wanted


def merge_page(per_partition: dict[int, list[Any]], limit: int, last: bool) -> list[Any]:
    """One page from each partition's records: ordered by (timestamp, partition, offset); the
    first `limit` (paging forward) or the last `limit` (`last`: paging back)."""
    merged = sorted(
        (r for rs in per_partition.values() for r in rs),
        key=lambda r: (r.timestamp, r.partition, r.offset),
    )
    return merged[-limit:] if last else merged[:limit]


# ----- compaction ---------------------------------------------------------------------------

DIRTY_RATIO_METRIC = "odradek_log_cleaner_dirty_ratio"
IN_FLIGHT_METRIC = "odradek_server_sharepartitionmetrics_inflightmessagecount"
ARCHIVED_METRIC = "odradek_server_sharepartitionmetrics_archivedrecordcount"
ShareCounts = dict[tuple[str, str, int], dict[str, int]]  # (group, topic, partition) -> counts


def is_compacted(policy: str | None) -> bool:
    """True for cleanup.policy "compact" or "compact,delete" (None: not described yet)."""
    return policy is not None and "compact" in policy.split(",")


def dirty_ratios(metrics_text: str) -> dict[tuple[str, int], float]:
    """{(topic, partition): dirty ratio} from one broker's /metrics answer: one sample per
    compacted log it holds, led or followed. A sample that is not a ratio in 0..1 (NaN, a
    partition label that is not a number) is left out; a text that is not Prometheus's text
    format raises ValueError."""
    return leader_readings(metrics_text)[0]


def leader_readings(
    metrics_text: str,
) -> tuple[dict[tuple[str, int], float], ShareCounts]:  # fmt: skip
    """One pass over a broker's /metrics answer: its dirty ratios (as `dirty_ratios`) and the
    share partitions it leads with their `in_flight` and `archived` counts (broker/share/
    metrics.py)."""
    dirty: dict[tuple[str, int], float] = {}
    shares: ShareCounts = {}
    names = {IN_FLIGHT_METRIC: "in_flight", ARCHIVED_METRIC: "archived"}
    for family in text_string_to_metric_families(metrics_text):
        if family.name == DIRTY_RATIO_METRIC:
            for sample in family.samples:
                topic, partition = sample.labels.get("topic"), sample.labels.get("partition", "")
                if topic and partition.isdigit() and 0.0 <= sample.value <= 1.0:
                    dirty[(topic, int(partition))] = float(sample.value)
        elif family.name in names:
            for sample in family.samples:
                group, topic = sample.labels.get("group"), sample.labels.get("topic")
                partition = sample.labels.get("partition", "")
                if group and topic and partition.isdigit() and sample.value >= 0:
                    key = (group, topic, int(partition))
                    shares.setdefault(key, {})[names[family.name]] = int(sample.value)
    return dirty, shares


# ----- lag over time -----------------------------------------------------------------------


@dataclass(slots=True)
class LagHistory:
    """(time ms, total lag) points of one group over the last `window_ms` (by time: refreshes
    come at most one per `step_ms`, often further apart, so a count of points would span more),
    at most one per `step_ms`, at most `max_points` kept."""

    step_ms: int = LAG_STEP_MS
    max_points: int = LAG_POINTS_MAX
    window_ms: int = LAG_WINDOW_MS
    points: deque[tuple[int, int]] = field(default_factory=deque)

    def add(self, now_ms: int, lag: int) -> bool:
        """Record a point (a newer one within `step_ms` replaces the last); True if added."""
        if self.points and now_ms - self.points[-1][0] < self.step_ms:
            self.points[-1] = (self.points[-1][0], lag)
            return False
        self.points.append((now_ms, lag))
        while len(self.points) > self.max_points or self.points[0][0] < now_ms - self.window_ms:
            self.points.popleft()
        return True

    def as_list(self) -> list[list[int]]:
        return [[t, lag] for t, lag in self.points]


# ----- transactions ------------------------------------------------------------------------

OPEN_TXN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


def transactions_view(
    descriptions: Sequence[Any], hanging: Sequence[Any], now_ms: int
) -> dict[str, list[dict[str, Any]]]:
    """{"open": [...], "hanging": [...]}: the open transactions by age (oldest first; a
    description of a transaction that ended meanwhile is left out) and the hanging ones."""
    open_rows = [
        {"id": d.transactional_id, "producer_id": d.producer_id,
         "producer_epoch": d.producer_epoch, "state": d.state, "coordinator": d.coordinator_id,
         "timeout_ms": d.timeout_ms, "age_ms": max(0, now_ms - d.start_time_ms),
         "partitions": [f"{tp.topic}-{tp.partition}" for tp in d.partitions]}
        for d in descriptions if d.state in OPEN_TXN_STATES and d.start_time_ms >= 0
    ]  # fmt: skip
    open_rows.sort(key=lambda r: (-r["age_ms"], r["id"]))
    hanging_rows = [
        {"topic": h.topic, "partition": h.partition, "producer_id": h.producer_id,
         "producer_epoch": h.producer_epoch, "start_offset": h.start_offset,
         "age_ms": max(0, now_ms - h.last_timestamp), "transactional_id": h.transactional_id,
         "reason": h.reason}
        for h in hanging
    ]  # fmt: skip
    return {"open": open_rows, "hanging": hanging_rows}


# ----- freshness -----------------------------------------------------------------------------


@dataclass(slots=True)
class Section:
    """One part of the snapshot: its data as last refreshed and how that went."""

    name: str
    data: Any = None
    updated_ms: int | None = None  # when data was last refreshed (None: never)
    error: str | None = None  # why the last refresh failed (None: it worked)
    refused: str | None = None  # the broker's refusal of (part of) it to this reader

    def ok(self, data: Any, now_ms: int) -> None:
        self.data, self.updated_ms, self.error, self.refused = data, now_ms, None, None

    def failed(self, error: str) -> None:
        self.error = error


def stale_sections(
    sections: Sequence[Section], now_ms: int, controller_down_since_ms: int | None
) -> list[dict[str, Any]]:
    """The stale parts, each {"section", "age_ms", "why"}: a failed refresh (its data is the
    last good one), and the metadata while no controller is up (the brokers' caches are what
    the controller last sent them)."""
    out = []
    for s in sections:
        if s.error is not None:
            age = None if s.updated_ms is None else now_ms - s.updated_ms
            out.append({"section": s.name, "age_ms": age, "why": s.error})
    if controller_down_since_ms is not None:
        out.append({
            "section": "metadata",
            "age_ms": now_ms - controller_down_since_ms,
            "why": "the controller is down: leaders and ISRs are as it last sent them",
        })  # fmt: skip
    return out


def refused_sections(sections: Sequence[Section]) -> list[dict[str, str]]:
    """The parts the broker refused to this reader, each {"section", "why"}: "why" is the
    broker's error (the reader's principal lacks an ACL), shown as it is."""
    return [{"section": s.name, "why": s.refused} for s in sections if s.refused is not None]


def _tps(parts: Sequence[Any] | None) -> list[str]:
    return [f"{t.topic}-{p}" for t in parts or () for p in t.partitions]


def group_kind_view(desc: Any) -> dict[str, Any]:
    """The type and (consumer groups) epochs of a DescribeGroups description; `members` maps
    each member id to its epoch, assigned and target partitions."""
    group_type = getattr(desc, "group_type", "classic")
    if group_type != "consumer":
        return {"type": group_type}
    return {
        "type": group_type,
        "group_epoch": desc.group_epoch,
        "target_epoch": desc.target_assignment_epoch,
        "members": {
            m.member_id: {"epoch": m.member_epoch, "target": _tps(m.target_assignment)}
            for m in desc.members
        },
    }


def group_total_lag(rows: Sequence[dict[str, Any]]) -> int:
    return sum(r["lag"] for r in rows if r.get("lag") is not None)


def share_group_view(
    desc: Any, rows: Sequence[Any], shown: Callable[[str], bool],
    counts: dict[tuple[str, int], dict[str, int]] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """A share group (KIP-932) as the groups view shows it: ShareGroupDescribe's state, epoch
    and members (each member's client id and host, member epoch and partitions; several may
    hold the same partition), the partitions shared, and per share partition the share
    coordinator's start offset and the lag (client/group/share_admin.py's ShareOffsetRow),
    with its leader's in-flight and archived counts (`counts`, by (topic, partition), from the
    leaders' metrics: None where the leader holds no such share partition or was not read)."""
    counts = counts or {}
    members = [
        {"id": m.member_id, "owner": f"{m.client_id}@{m.client_host or '-'}",
         "epoch": m.member_epoch,
         "assignment": [f"{t.topic or t.topic_id}-{p}" for t in m.assignment
                        if shown(t.topic) for p in t.partitions]}
        for m in desc.members
    ]  # fmt: skip
    offsets = [
        {"topic": r.topic, "partition": r.partition, "committed": r.start_offset, "end": None,
         "lag": r.lag, "owner": None,
         "in_flight": counts.get((r.topic, r.partition), {}).get("in_flight"),
         "archived": counts.get((r.topic, r.partition), {}).get("archived")}
        for r in rows if shown(r.topic)
    ]  # fmt: skip
    shared = {a for m in members for a in m["assignment"]}
    return {
        "kind": "share", "type": "share", "state": desc.state, "generation": desc.group_epoch,
        "assignor": desc.assignor_name or None, "members": members, "offsets": offsets,
        "shared_partitions": len(shared), "lag": group_total_lag(offsets),
    }  # fmt: skip
