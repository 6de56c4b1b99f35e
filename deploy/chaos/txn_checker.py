"""What a transactional chaos run kept: Jepsen's Kafka anomaly classes, from the record alone.

The transactional workload (txn_workload.py) records, per producer, every transaction with its
sends (partition, value, acknowledged offset) and its outcome, and per read_committed consumer
every poll in order (when it returned and the (partition, offset, value) records it gave).
Values are unique ("<producer>-<txn>-<i>"), so a value names its transaction. This module turns
that record into one finding per anomaly class (after jepsen.tests.kafka), each PASS or FAIL
with its first few examples:

    class                  a consumer ... / the history shows ...
    aborted-read           read a value of an aborted transaction (G1a)
    precommitted-read      read a value before its producer asked to commit (read_committed
                           must not: the last stable offset let it through too early)
    lost-write             never read a committed, acknowledged value, though it read its
                           partition past the value's offset
    partial-transaction    a committed or unknown-outcome transaction with some values read and
                           others missed by a consumer that read past them (all or none)
    duplicate              a value at more than one offset (acknowledged or read)
    inconsistent-offset    an offset holding more than one value
    nonmonotonic-poll      a poll began in a partition at or before where the last poll ended
    int-nonmonotonic-poll  offsets not increasing within one poll
    poll-skip              between two polls a consumer skipped a committed offset (it reads
                           every partition from the beginning, by assignment: no rebalance)
    int-poll-skip          the same within one poll
    nonmonotonic-send      a producer's committed values in one partition at offsets out of
                           its send order
    ctp-exactly-once       consume-transform-produce: every committed input value is in the
                           committed output exactly once, and nothing else is
    client-fatal           no client failed fatally (fenced, INVALID_TXN_STATE...) unless the
                           fault schedule explains it (client_errors.py)

Outcomes: "committed" (commit_transaction returned), "aborted" (the workload chose to abort, or
failed before asking to commit: no EndTxn(COMMIT) was ever sent, so it cannot commit) and
"unknown" (commit_transaction raised or timed out). An unknown transaction counts as committed
if any of its values was read, else as aborted; partial-transaction catches one that is both.
Committed offsets ("the version order" of a partition) are the offsets of committed values,
acknowledged or read; skips are measured against them. Times are seconds since the run began.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from deploy.chaos import client_errors
from deploy.chaos.checker import FaultRecord, Finding, finding
from deploy.chaos.client_errors import ClientError

COMMITTED, ABORTED, UNKNOWN = "committed", "aborted", "unknown"
CLASSES = (
    "aborted-read", "precommitted-read", "lost-write", "partial-transaction", "duplicate",
    "inconsistent-offset", "nonmonotonic-poll", "int-nonmonotonic-poll", "poll-skip",
    "int-poll-skip", "nonmonotonic-send",
)  # fmt: skip


@dataclass
class TxnSend:
    partition: int
    value: str
    offset: int | None = None  # acknowledged offset (None: no acknowledgement)


@dataclass
class Txn:
    producer: str
    n: int
    sends: list[TxnSend] = field(default_factory=list)
    outcome: str = ABORTED
    commit_at: float | None = None  # when commit_transaction was called
    error: str | None = None


@dataclass
class Poll:
    at: float  # when the poll returned
    records: list[tuple[int, int, str]]  # (partition, offset, value) in the order given


@dataclass
class ConsumerLog:
    name: str
    polls: list[Poll] = field(default_factory=list)
    positions: dict[int, int] = field(default_factory=dict)  # next offset, at the end
    resets: list[int] = field(default_factory=list)  # poll indexes before which it was moved


@dataclass
class TxnRunRecord:
    topic: str
    partitions: int
    seed: int
    txns: list[Txn] = field(default_factory=list)  # every producer's, each in its order
    consumers: list[ConsumerLog] = field(default_factory=list)
    # consume-transform-produce: None when not run; else the committed output, read back
    ctp_output: list[str] | None = None
    faults: list[FaultRecord] = field(default_factory=list)
    client_errors: list[ClientError] = field(default_factory=list)  # every client's, in order
    txn_timeout_s: float = 30.0  # the producers' transaction.timeout.ms

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic, "partitions": self.partitions, "seed": self.seed,
            "txns": [{"producer": t.producer, "n": t.n, "outcome": t.outcome,
                      "commit_at": t.commit_at, "error": t.error,
                      "sends": [[s.partition, s.value, s.offset] for s in t.sends]}
                     for t in self.txns],
            "consumers": [{"name": c.name, "resets": c.resets,
                           "positions": {str(p): o for p, o in c.positions.items()},
                           "polls": [[pl.at, [list(r) for r in pl.records]] for pl in c.polls]}
                          for c in self.consumers],
            "ctp_output": self.ctp_output,
            "faults": [vars(f) for f in self.faults],
            "client_errors": [e.to_json() for e in self.client_errors],
            "txn_timeout_s": self.txn_timeout_s,
        }  # fmt: skip

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> TxnRunRecord:
        return cls(
            topic=raw["topic"], partitions=raw["partitions"], seed=raw["seed"],
            txns=[Txn(t["producer"], t["n"], [TxnSend(*s) for s in t["sends"]], t["outcome"],
                      t["commit_at"], t["error"]) for t in raw["txns"]],
            consumers=[ConsumerLog(c["name"],
                                   [Poll(at, [(p, o, v) for p, o, v in rs])
                                    for at, rs in c["polls"]],
                                   {int(p): o for p, o in c["positions"].items()},
                                   list(c["resets"])) for c in raw["consumers"]],
            ctp_output=raw.get("ctp_output"),
            faults=[FaultRecord(**f) for f in raw["faults"]],
            client_errors=[ClientError.from_json(e) for e in raw.get("client_errors", [])],
            txn_timeout_s=raw.get("txn_timeout_s", 30.0),
        )  # fmt: skip


@dataclass
class _Facts:
    """What every check needs, derived once."""

    txn_of: dict[str, Txn]  # value -> its transaction
    reads: dict[str, list[tuple[str, int, int, float]]]  # value -> (consumer, p, offset, at)
    offsets: dict[tuple[int, str], set[int]]  # (p, value) -> every offset it was seen at
    committed: set[int]  # id() of transactions that count as committed
    order: dict[int, list[int]]  # partition -> committed offsets, ascending
    reach: dict[str, dict[int, int]]  # consumer -> partition -> offset it read up to (excl.)


def check(run: TxnRunRecord) -> list[Finding]:
    """One finding per anomaly class, in CLASSES' order (plus ctp-exactly-once when run),
    then client-fatal."""
    f = _facts(run)
    out = [
        _aborted_read(f), _precommitted_read(f), _lost_write(run, f), _partial(run, f),
        _duplicate(f), _inconsistent_offset(f),
        *_poll_order(run, f), _nonmonotonic_send(run, f),
    ]  # fmt: skip
    if run.ctp_output is not None:
        out.append(_ctp(run, f))
    out.append(client_errors.check(run.client_errors, run.faults, run.txn_timeout_s))
    return out


def _facts(run: TxnRunRecord) -> _Facts:
    txn_of = {s.value: t for t in run.txns for s in t.sends}
    reads: dict[str, list[tuple[str, int, int, float]]] = {}
    offsets: dict[tuple[int, str], set[int]] = {}
    reach: dict[str, dict[int, int]] = {}
    for c in run.consumers:
        r = reach.setdefault(c.name, dict(c.positions))
        for poll in c.polls:
            for p, o, v in poll.records:
                reads.setdefault(v, []).append((c.name, p, o, poll.at))
                offsets.setdefault((p, v), set()).add(o)
                r[p] = max(r.get(p, 0), o + 1)
    for t in run.txns:
        for s in t.sends:
            if s.offset is not None:
                offsets.setdefault((s.partition, s.value), set()).add(s.offset)
    committed = {
        id(t) for t in run.txns
        if t.outcome == COMMITTED or (t.outcome == UNKNOWN and any(s.value in reads
                                                                  for s in t.sends))
    }  # fmt: skip
    order: dict[int, set[int]] = {}
    for (p, v), os_ in offsets.items():
        owner = txn_of.get(v)
        if owner is not None and id(owner) in committed:
            order.setdefault(p, set()).update(os_)
    return _Facts(txn_of, reads, offsets, committed,
                  {p: sorted(os_) for p, os_ in order.items()}, reach)  # fmt: skip


def _aborted_read(f: _Facts) -> Finding:
    bad = [
        f"{v} (txn aborted) read at {p}@{o} by {who}"
        for v, rs in f.reads.items() if (t := f.txn_of.get(v)) and t.outcome == ABORTED
        for who, p, o, _ in rs[:1]
    ]  # fmt: skip
    return finding("aborted-read", bad, "no aborted value read")


def _precommitted_read(f: _Facts) -> Finding:
    bad = [
        f"{v} read by {who} at {at:.3f}s, commit asked at {t.commit_at:.3f}s"
        for v, rs in f.reads.items()
        if (t := f.txn_of.get(v)) is not None and t.commit_at is not None
        for who, _, _, at in rs if at < t.commit_at
    ]  # fmt: skip
    return finding("precommitted-read", bad, "no value read before its commit was asked")


def _missed(run: TxnRunRecord, f: _Facts, s: TxnSend) -> str | None:
    """The consumer that read s's partition past s without reading it (None: none did)."""
    if s.value in f.reads or s.offset is None:
        return None
    return next((c.name for c in run.consumers
                 if f.reach.get(c.name, {}).get(s.partition, 0) > s.offset), None)  # fmt: skip


def _lost_write(run: TxnRunRecord, f: _Facts) -> Finding:
    bad, n = [], 0
    for t in run.txns:
        if t.outcome != COMMITTED:
            continue
        for s in t.sends:
            n += 1
            who = _missed(run, f, s)
            if who is not None:
                bad.append(f"{s.value} committed at {s.partition}@{s.offset}, never read "
                           f"though {who} read to {f.reach[who][s.partition]}")  # fmt: skip
    return finding("lost-write", bad, f"{n} committed values, each read")


def _partial(run: TxnRunRecord, f: _Facts) -> Finding:
    bad = []
    for t in run.txns:
        if t.outcome == ABORTED:
            continue
        seen = [s.value for s in t.sends if s.value in f.reads]
        missed = [s.value for s in t.sends if _missed(run, f, s) is not None]
        if seen and missed:
            bad.append(f"{t.producer} txn {t.n} ({t.outcome}): read {seen}, missed {missed}")
    return finding("partial-transaction", bad, "every transaction all or nothing")


def _duplicate(f: _Facts) -> Finding:
    bad = [f"{v} at {p}@{sorted(os_)}" for (p, v), os_ in f.offsets.items() if len(os_) > 1]
    return finding("duplicate", bad, "every value at one offset")


def _inconsistent_offset(f: _Facts) -> Finding:
    at: dict[tuple[int, int], set[str]] = {}
    for (p, v), os_ in f.offsets.items():
        for o in os_:
            at.setdefault((p, o), set()).add(v)
    bad = [f"{p}@{o} holds {sorted(vs)}" for (p, o), vs in sorted(at.items()) if len(vs) > 1]
    return finding("inconsistent-offset", bad, "every offset holds one value")


def _pairs(c: ConsumerLog) -> Iterator[tuple[bool, int, int, int]]:
    """(within one poll?, partition, previous offset, offset) for each successive read of a
    partition by `c`. It starts before offset 0 (it reads from the beginning); after a reset
    (a seek) its first read of each partition follows nothing."""
    start: int | None = -1
    last: dict[int, int | None] = {}
    resets = set(c.resets)
    for i, poll in enumerate(c.polls):
        if i in resets:
            last.clear()
            start = None
        within: set[int] = set()
        for p, o, _ in poll.records:
            prev = last.get(p, start)
            if prev is not None:
                yield p in within, p, prev, o
            within.add(p)
            last[p] = o


def _poll_order(run: TxnRunRecord, f: _Facts) -> list[Finding]:
    found: dict[str, list[str]] = {k: [] for k in
                                   ("nonmonotonic-poll", "int-nonmonotonic-poll", "poll-skip",
                                    "int-poll-skip")}  # fmt: skip
    for c in run.consumers:
        for inner, p, prev, o in _pairs(c):
            prefix = "int-" if inner else ""
            if o <= prev:
                found[f"{prefix}nonmonotonic-poll"].append(f"{c.name} read {p}@{prev} then {o}")
                continue
            skipped = _between(f.order.get(p, []), prev, o)
            if skipped:
                found[f"{prefix}poll-skip"].append(
                    f"{c.name} read {p}@{prev} then {o}, skipping committed {skipped[:5]}"
                )
    n = sum(len(poll.records) for c in run.consumers for poll in c.polls)
    return [finding(k, bad, f"{n} reads in order, none skipped") for k, bad in found.items()]


def _between(order: list[int], lo: int, hi: int) -> list[int]:
    """The committed offsets strictly between lo and hi."""
    return order[bisect.bisect_right(order, lo) : bisect.bisect_left(order, hi)]


def _nonmonotonic_send(run: TxnRunRecord, f: _Facts) -> Finding:
    bad = []
    by_producer = itertools.groupby(sorted(run.txns, key=lambda t: (t.producer, t.n)),
                                    key=lambda t: t.producer)  # fmt: skip
    for producer, txns in by_producer:
        last: dict[int, tuple[int, str]] = {}
        for t in txns:
            if id(t) not in f.committed:
                continue
            for s in t.sends:
                os_ = f.offsets.get((s.partition, s.value))
                if not os_:
                    continue
                o = min(os_)
                prev = last.get(s.partition)
                if prev is not None and o <= prev[0]:
                    bad.append(f"{producer}: {s.value} at {s.partition}@{o}, after "
                               f"{prev[1]} at {prev[0]}, sent earlier")  # fmt: skip
                last[s.partition] = max(prev or (o, s.value), (o, s.value))
    return finding("nonmonotonic-send", bad, "every producer's values in send order")


def _ctp(run: TxnRunRecord, f: _Facts) -> Finding:
    """Every input value that counts as committed is in the output once; nothing else is."""
    want = {s.value for t in run.txns if id(t) in f.committed for s in t.sends}
    counts: dict[str, int] = {}
    for v in run.ctp_output or []:
        counts[v] = counts.get(v, 0) + 1
    bad = [f"{v} in the output {counts.get(v, 0)} times" for v in sorted(want)
           if counts.get(v, 0) != 1]  # fmt: skip
    bad += [f"{v} in the output, not a committed input" for v in sorted(set(counts) - want)]
    return finding("ctp-exactly-once", bad, f"{len(want)} committed inputs, each output once")


def summary(run: TxnRunRecord) -> str:
    """Counts of transactions by outcome and of reads, for the report."""
    outcomes: dict[str, int] = {}
    for t in run.txns:
        outcomes[t.outcome] = outcomes.get(t.outcome, 0) + 1
    reads = sum(len(poll.records) for c in run.consumers for poll in c.polls)
    parts = ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items()))
    return f"transactions: {parts or 'none'}; {reads} reads by {len(run.consumers)} consumers"
