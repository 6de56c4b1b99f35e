"""What a chaos run kept, decided from its record alone (pure: no cluster, no clock).

The runner (deploy/chaos/runner.py) records a run as plain data, `RunRecord`, and this module
turns it into findings, one per check, each PASS or FAIL with the first examples of what broke:

    check                  holds when
    acked-present          every acknowledged record is in the log at the offset its ack gave
    acked-once             every acknowledged record is in the log exactly once
    send-order             per producer and partition, the stored records (acknowledged or
                           not) are in send order
    unacked-at-most-once   a record whose send failed is stored at most once
    offsets-contiguous     the log's offsets run from its start without a gap
    replicas-identical     every replica holds the same bytes up to the high watermark
                           (digests of the segment files' batches; see runner.py)
    group-saw-acked        the consumer group received every acknowledged record
    commits-monotonic      no committed offset the run observed went backwards

Values are unique per producer: the runner sends "<producer>-<partition>-<n>" with n counting
that producer's sends to the partition, so a value names its sender and its send position.
`availability` summarises, per fault kind, the seconds from a fault to the first acknowledged
write on a partition it affected (p50 and max). Everything is JSON-able, so a recorded run can
be checked again later (`odradek chaos check FILE`), and the tests feed it runs with injected
anomalies.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

MAX_EXAMPLES = 5


@dataclass
class Send:
    """One record a producer sent: acknowledged at `offset`, or failed with `error`."""

    value: str
    offset: int | None = None
    error: str | None = None

    @property
    def acked(self) -> bool:
        return self.offset is not None


@dataclass
class FaultRecord:
    kind: str
    target: str  # e.g. "broker 2", "brokers 1,3"
    at_s: float  # seconds since the run started
    healed_at_s: float | None = None
    affected: list[int] = field(default_factory=list)  # partitions whose leader was hit
    recovered_s: float | None = None  # fault -> first acknowledged write on an affected one
    skipped: str | None = None  # why it was not injected (needs root, ...)


@dataclass
class RunRecord:
    topic: str
    partitions: int
    seed: int
    # producer -> partition -> sends in send order
    sends: dict[str, dict[int, list[Send]]] = field(default_factory=dict)
    # partition -> the log as read back from the leader: [(offset, value)]
    log: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    log_start: dict[int, int] = field(default_factory=dict)
    # partition -> broker -> digest of the bytes up to the high watermark
    replica_digests: dict[int, dict[int, str]] = field(default_factory=dict)
    # partition -> every value the group's consumers received
    consumed: dict[int, list[str]] = field(default_factory=dict)
    # partition -> committed offsets observed: (start s, end s, offset, who) for commits that
    # succeeded (who: the member) and for samples read back (who: "sample")
    commits: dict[int, list[tuple[float, float, int, str]]] = field(default_factory=dict)
    faults: list[FaultRecord] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic, "partitions": self.partitions, "seed": self.seed,
            "sends": {pr: {str(p): [[s.value, s.offset, s.error] for s in sends]
                           for p, sends in by_p.items()} for pr, by_p in self.sends.items()},
            "log": {str(p): [[o, v] for o, v in log] for p, log in self.log.items()},
            "log_start": {str(p): o for p, o in self.log_start.items()},
            "replica_digests": {str(p): {str(b): d for b, d in ds.items()}
                                for p, ds in self.replica_digests.items()},
            "consumed": {str(p): vs for p, vs in self.consumed.items()},
            "commits": {str(p): [list(c) for c in cs] for p, cs in self.commits.items()},
            "faults": [vars(f) for f in self.faults],
        }  # fmt: skip

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> RunRecord:
        return cls(
            topic=raw["topic"], partitions=raw["partitions"], seed=raw["seed"],
            sends={pr: {int(p): [Send(*s) for s in sends] for p, sends in by_p.items()}
                   for pr, by_p in raw["sends"].items()},
            log={int(p): [(o, v) for o, v in log] for p, log in raw["log"].items()},
            log_start={int(p): o for p, o in raw.get("log_start", {}).items()},
            replica_digests={int(p): {int(b): d for b, d in ds.items()}
                             for p, ds in raw["replica_digests"].items()},
            consumed={int(p): vs for p, vs in raw["consumed"].items()},
            commits={int(p): [(a, b, o, who) for a, b, o, who in cs]
                     for p, cs in raw["commits"].items()},
            faults=[FaultRecord(**f) for f in raw["faults"]],
        )  # fmt: skip


@dataclass(frozen=True)
class Finding:
    check: str
    ok: bool
    detail: str  # counts when it holds, the first examples when it does not


def check(run: RunRecord) -> list[Finding]:
    """Every check of the module docstring, in its order."""
    return [
        _acked_present(run), _acked_once(run), _send_order(run), _unacked_at_most_once(run),
        _offsets_contiguous(run), _replicas_identical(run), _group_saw_acked(run),
        _commits_monotonic(run),
    ]  # fmt: skip


def passed(findings: Iterable[Finding]) -> bool:
    return all(f.ok for f in findings)


def finding(name: str, bad: list[str], ok_detail: str) -> Finding:
    if not bad:
        return Finding(name, True, ok_detail)
    more = f" (and {len(bad) - MAX_EXAMPLES} more)" if len(bad) > MAX_EXAMPLES else ""
    return Finding(name, False, "; ".join(bad[:MAX_EXAMPLES]) + more)


def _positions(run: RunRecord) -> dict[int, dict[str, list[int]]]:
    """partition -> value -> the offsets holding it."""
    out: dict[int, dict[str, list[int]]] = {}
    for p, log in run.log.items():
        where = out.setdefault(p, {})
        for offset, value in log:
            where.setdefault(value, []).append(offset)
    return out


def _acked(run: RunRecord) -> Iterable[tuple[str, int, Send]]:
    for producer, by_p in run.sends.items():
        for p, sends in by_p.items():
            for s in sends:
                if s.acked:
                    yield producer, p, s


def _acked_present(run: RunRecord) -> Finding:
    at = {p: dict(log) for p, log in run.log.items()}
    bad, n = [], 0
    for _, p, s in _acked(run):
        n += 1
        found = at.get(p, {}).get(s.offset)  # type: ignore[arg-type]
        if found != s.value:
            bad.append(f"{s.value} acknowledged at {p}@{s.offset}, which holds {found!r}")
    return finding("acked-present", bad, f"{n} acknowledged records at their offsets")


def _acked_once(run: RunRecord) -> Finding:
    where = _positions(run)
    bad = [
        f"{s.value} stored at {p}@{where[p][s.value]}"
        for _, p, s in _acked(run)
        if len(where.get(p, {}).get(s.value, [])) > 1
    ]
    return finding("acked-once", bad, "no acknowledged record stored twice")


def _send_order(run: RunRecord) -> Finding:
    where = _positions(run)
    bad = []
    for producer, by_p in run.sends.items():
        for p, sends in by_p.items():
            last_offset, last_value = -1, ""
            for s in sends:
                for offset in where.get(p, {}).get(s.value, []):
                    if offset < last_offset:
                        bad.append(
                            f"{producer} partition {p}: {s.value} at {offset} before "
                            f"{last_value} at {last_offset}, sent earlier"
                        )
                    last_offset, last_value = max(last_offset, offset), s.value
    return finding("send-order", bad, "every producer's records in send order")


def _unacked_at_most_once(run: RunRecord) -> Finding:
    where = _positions(run)
    bad, stored, failed = [], 0, 0
    for by_p in run.sends.values():
        for p, sends in by_p.items():
            for s in sends:
                if s.acked:
                    continue
                failed += 1
                copies = where.get(p, {}).get(s.value, [])
                stored += bool(copies)
                if len(copies) > 1:
                    bad.append(f"unacknowledged {s.value} stored at {p}@{copies}")
    return finding(
        "unacked-at-most-once", bad, f"{failed} failed sends, {stored} of them stored once"
    )


def _offsets_contiguous(run: RunRecord) -> Finding:
    bad = []
    for p, log in sorted(run.log.items()):
        start = run.log_start.get(p, 0)
        offsets = [o for o, _ in log]
        if offsets != list(range(start, start + len(offsets))):
            gap = next(
                (f"{a} then {b}" for a, b in itertools.pairwise(offsets) if b != a + 1),
                f"starts at {offsets[0] if offsets else None}, not {start}",
            )
            bad.append(f"partition {p}: {gap}")
    total = sum(len(log) for log in run.log.values())
    return finding("offsets-contiguous", bad, f"{total} records without a gap")


def _replicas_identical(run: RunRecord) -> Finding:
    bad = []
    for p, digests in sorted(run.replica_digests.items()):
        if len(set(digests.values())) > 1:
            shown = ", ".join(f"broker {b}: {d[:12]}" for b, d in sorted(digests.items()))
            bad.append(f"partition {p}: {shown}")
    n = sum(len(d) for d in run.replica_digests.values())
    return finding("replicas-identical", bad, f"{n} replicas byte-identical up to the HW")


def _group_saw_acked(run: RunRecord) -> Finding:
    seen = {p: set(vs) for p, vs in run.consumed.items()}
    missed = [
        f"{s.value} ({p}@{s.offset})" for _, p, s in _acked(run) if s.value not in seen.get(p, ())
    ]
    if missed:
        missed = [f"never consumed: {m}" for m in missed]
    total = sum(len(vs) for vs in run.consumed.values())
    return finding("group-saw-acked", missed, f"{total} records consumed")


def _commits_monotonic(run: RunRecord) -> Finding:
    """An observation that began after another one ended must not see a lower offset (events
    that overlap in time may land in either order)."""
    bad = []
    for p, events in sorted(run.commits.items()):
        by_end = sorted(events, key=lambda e: e[1])
        done, high, high_who = 0, -1, ""
        for start, _, offset, who in sorted(events):
            while done < len(by_end) and by_end[done][1] < start:
                if by_end[done][2] > high:
                    high, high_who = by_end[done][2], by_end[done][3]
                done += 1
            if offset < high:
                bad.append(
                    f"partition {p}: {high} ({high_who}) then {offset} ({who}) at {start:.2f}s"
                )
    n = sum(len(cs) for cs in run.commits.values())
    return finding("commits-monotonic", bad, f"{n} commit observations, none went back")


def availability(faults: Iterable[FaultRecord]) -> dict[str, dict[str, float | int | None]]:
    """Per fault kind: how many were injected, and p50/max seconds to the first acknowledged
    write on an affected partition (faults that hit no partition's leader are not timed)."""
    out: dict[str, dict[str, float | int | None]] = {}
    by_kind: dict[str, list[FaultRecord]] = {}
    for f in faults:
        if f.skipped is None:
            by_kind.setdefault(f.kind, []).append(f)
    for kind, items in sorted(by_kind.items()):
        times = [f.recovered_s for f in items if f.recovered_s is not None]
        out[kind] = {
            "count": len(items),
            "timed": len(times),
            "p50_s": round(statistics.median(times), 3) if times else None,
            "max_s": round(max(times), 3) if times else None,
        }
    return out
