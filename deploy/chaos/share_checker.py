"""What a share-group chaos run kept (issue 35): the share group's promises, from the record alone.

The share workload records every acknowledged produce ((partition, offset) and its unique
value) and, per member, every delivery in the order the member got it: when its poll returned
(`at`, seconds since the run began), the record, the delivery count the broker gave, what the
member did with it (accept, release, reject, or nothing: it died or stopped holding it) and how
that acknowledgement ended (ok: the broker answered success; failed: it answered an error;
unknown: no answer, the member or its broker died). After the faults are healed, a last member
drains the group, so that every record still Available is delivered once more. The checks,
each PASS or FAIL with its first few examples:

    check                   the history shows ...
    accepted-or-archived    every acknowledged produce accepted exactly once (an ok accept),
                            or archived: rejected (an ok reject), or delivered exactly
                            share.delivery.count.limit times and never accepted; or its last
                            delivery was accepted or rejected without an answer (the leader
                            died meanwhile) and it never came again: the acknowledgement was
                            written before the leader died, or the record would have come
                            back (real runs show this: an acknowledgement's answer lost in a
                            leader's SIGKILL, its write kept)
    delivered-after-done    no delivery of a record after an ok accept or an ok reject of it
                            was answered (failovers included: the state is durable)
    never-two-at-once       no record delivered to a second member while a first one's
                            acquisition lock held: a later delivery comes after the earlier
                            one was given back (a release), its acknowledgement failed, its
                            lock ran out, its member was SIGKILLed (its connection's close
                            gives its records back at once, as Kafka's leader does), or a
                            failover came between (no lock survives one)
    counts-never-down       each record's delivery counts, in delivery order, rise with each
                            delivery (never down; equal only across a failover, when the
                            last acquisition's count may not have been written yet), and
                            stay within 1..share.delivery.count.limit
    unknown-record          nothing delivered that no acknowledged or unacknowledged produce
                            wrote (share fetches never invent records)

The lock check leaves `slack_s` for the time between the broker's acquisition and the member's
poll returning (the member's clock starts later than the lock's). Pure: no I/O; time is what the
record says.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import astuple, dataclass, field
from typing import Any

from deploy.chaos.checker import Finding, finding

ACCEPT, RELEASE, REJECT, NOTHING = "accept", "release", "reject", "nothing"
OK, FAILED, UNKNOWN = "ok", "failed", "unknown"

Key = tuple[int, int]  # (partition, offset)


@dataclass(frozen=True)
class Delivery:
    member: str
    at: float  # when the member's poll returned it
    partition: int
    offset: int
    value: str
    count: int  # the delivery count the broker gave
    action: str = NOTHING  # accept | release | reject | nothing
    outcome: str = UNKNOWN  # ok | failed | unknown: how its acknowledgement ended
    answered_at: float | None = None  # when the acknowledgement's answer came (ok or failed)

    @property
    def key(self) -> Key:
        return (self.partition, self.offset)


@dataclass
class ShareRunRecord:
    limit: int  # share.delivery.count.limit
    lock_s: float  # share.record.lock.duration.ms, in seconds
    produced: dict[Key, str] = field(default_factory=dict)  # acknowledged produces
    unacknowledged: set[str] = field(default_factory=set)  # values sent without an answer
    deliveries: list[Delivery] = field(default_factory=list)  # every member's, any order
    failovers: list[float] = field(default_factory=list)  # when a partition's leader changed
    deaths: dict[str, float] = field(default_factory=dict)  # member -> when it was SIGKILLed
    slack_s: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return {"limit": self.limit, "lock_s": self.lock_s, "slack_s": self.slack_s,
                "produced": [[p, o, v] for (p, o), v in sorted(self.produced.items())],
                "unacknowledged": sorted(self.unacknowledged),
                "deliveries": [list(astuple(d)) for d in self.deliveries],
                "failovers": self.failovers, "deaths": self.deaths}  # fmt: skip

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> ShareRunRecord:
        run = cls(int(doc["limit"]), float(doc["lock_s"]), slack_s=float(doc["slack_s"]))
        run.produced = {(int(p), int(o)): str(v) for p, o, v in doc["produced"]}
        run.unacknowledged = set(doc["unacknowledged"])
        run.deliveries = [Delivery(*d) for d in doc["deliveries"]]
        run.failovers = [float(t) for t in doc["failovers"]]
        run.deaths = {str(m): float(t) for m, t in doc.get("deaths", {}).items()}
        return run


def summary(run: ShareRunRecord) -> str:
    """One line: how much the run did (what the checks had to judge)."""
    ds = run.deliveries
    acted = {k: sum(1 for d in ds if d.action == k) for k in (ACCEPT, RELEASE, REJECT)}
    again = sum(1 for d in ds if d.count > 1)
    return (
        f"{len(run.produced)} records produced, {len(ds)} deliveries ({again} "
        f"redeliveries): {acted[ACCEPT]} accepts, {acted[RELEASE]} releases, "
        f"{acted[REJECT]} rejects, {len(run.failovers)} failover times"
    )


def check(run: ShareRunRecord) -> list[Finding]:
    """Every check of the module docstring, in its order."""
    by_key = _by_key(run.deliveries)
    return [
        _accepted_or_archived(run, by_key), _delivered_after_done(by_key),
        _never_two_at_once(run, by_key), _counts_never_down(run, by_key), _unknown_record(run),
    ]  # fmt: skip


def _by_key(deliveries: Iterable[Delivery]) -> dict[Key, list[Delivery]]:
    out: dict[Key, list[Delivery]] = defaultdict(list)
    for d in deliveries:
        out[d.key].append(d)
    for ds in out.values():
        ds.sort(key=lambda d: (d.at, d.count))
    return out


def _ok(ds: Iterable[Delivery], action: str) -> list[Delivery]:
    return [d for d in ds if d.action == action and d.outcome == OK]


def _accepted_or_archived(run: ShareRunRecord, by_key: dict[Key, list[Delivery]]) -> Finding:
    bad, accepted, rejected, exhausted, unanswered = [], 0, 0, 0, 0
    for key, value in sorted(run.produced.items()):
        ds = by_key.get(key, [])
        accepts, rejects = _ok(ds, ACCEPT), _ok(ds, REJECT)
        if len(accepts) == 1 and not rejects:
            accepted += 1
        elif not accepts and rejects:
            rejected += 1
        elif not accepts and ds and max(d.count for d in ds) == run.limit:
            exhausted += 1
        elif not accepts and ds and ds[-1].action in (ACCEPT, REJECT) and ds[-1].outcome == UNKNOWN:
            unanswered += 1  # its last acknowledgement was written, as nothing came after it
        elif accepts:
            bad.append(f"{value} at {key}: accepted {len(accepts)} times, rejected {len(rejects)}")
        elif not ds:
            bad.append(f"{value} at {key}: never delivered")
        else:
            top = max(d.count for d in ds)
            bad.append(f"{value} at {key}: delivered {len(ds)} times (count up to {top} of "
                       f"{run.limit}), never accepted or rejected")  # fmt: skip
    return finding("accepted-or-archived", bad,
                   f"{accepted} accepted once, {rejected} rejected, {exhausted} archived at the "
                   f"delivery limit, {unanswered} acknowledged without an answer and not "
                   f"delivered again, of {len(run.produced)} acknowledged produces")  # fmt: skip


def _delivered_after_done(by_key: dict[Key, list[Delivery]]) -> Finding:
    bad = []
    for key, ds in sorted(by_key.items()):
        done = [d for d in ds if d.action in (ACCEPT, REJECT) and d.outcome == OK]
        if not done:
            continue
        first = min(d.answered_at if d.answered_at is not None else d.at for d in done)
        for d in ds:
            if d.at > first:
                bad.append(f"{key} delivered to {d.member} at {d.at:.3f} (count {d.count}) "
                           f"after its {done[0].action} was answered at {first:.3f}")  # fmt: skip
    return finding("delivered-after-done", bad, "no record delivered after its accept or reject")


def _never_two_at_once(run: ShareRunRecord, by_key: dict[Key, list[Delivery]]) -> Finding:
    bad, pairs = [], 0
    for key, ds in sorted(by_key.items()):
        for earlier, later in itertools.pairwise(ds):
            pairs += 1
            if not _freed(run, earlier, later):
                bad.append(f"{key} delivered to {earlier.member} at {earlier.at:.3f} (count "
                           f"{earlier.count}) and to {later.member} at {later.at:.3f} (count "
                           f"{later.count}), inside the {run.lock_s:g} s lock")  # fmt: skip
    return finding("never-two-at-once", bad, f"{pairs} redeliveries, each after its lock ended")


def _freed(run: ShareRunRecord, earlier: Delivery, later: Delivery) -> bool:
    """Whether `earlier`'s acquisition had ended when `later` was delivered: given back (a
    release that reached the broker, as far as anyone knows), refused (a failed acknowledgement:
    the lock had gone), its lock run out, its member's death (SIGKILL closes its connection,
    and the leader gives back what the member held at once), or a failover in between (Kafka
    persists no lock: a new leader makes an acquired record Available again)."""
    if earlier.action == RELEASE or earlier.outcome == FAILED:
        return True
    death = run.deaths.get(earlier.member)
    if death is not None and earlier.at - run.slack_s <= death <= later.at + run.slack_s:
        return True
    if later.at + run.slack_s >= earlier.at + run.lock_s:
        return True
    return _failover_between(run, earlier, later)


def _failover_between(run: ShareRunRecord, earlier: Delivery, later: Delivery) -> bool:
    return any(earlier.at - run.slack_s <= f <= later.at + run.slack_s for f in run.failovers)


def _counts_never_down(run: ShareRunRecord, by_key: dict[Key, list[Delivery]]) -> Finding:
    bad = []
    for key, ds in sorted(by_key.items()):
        for earlier, later in itertools.pairwise(ds):
            if later.count < earlier.count or (
                later.count == earlier.count and not _failover_between(run, earlier, later)
            ):
                bad.append(f"{key}: count {earlier.count} ({earlier.member} at "
                           f"{earlier.at:.3f}) then {later.count} ({later.member} at "
                           f"{later.at:.3f})")  # fmt: skip
        over = [d for d in ds if d.count > run.limit or d.count < 1]
        bad += [f"{key}: delivery count {d.count} outside 1..{run.limit}" for d in over]
    return finding("counts-never-down", bad, "every record's counts rise, within the limit")


def _unknown_record(run: ShareRunRecord) -> Finding:
    bad = []
    for d in run.deliveries:
        known = run.produced.get(d.key)
        if known != d.value and not (known is None and d.value in run.unacknowledged):
            bad.append(f"{d.member} got {d.value!r} at {d.key}, which holds {known!r}")
    return finding("unknown-record", bad, f"{len(run.deliveries)} deliveries, each of a record "
                   "a producer wrote")  # fmt: skip
