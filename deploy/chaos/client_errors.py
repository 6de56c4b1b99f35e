"""The workload's clients' fatal errors, judged against the fault schedule (pure: no cluster).

A Kafka client's fatal error (librdkafka's `KafkaError.fatal()`: a transactional producer
fenced, INVALID_TXN_STATE, an authorization failure...) ends that client instance: it can only
be replaced. The workloads replace it and go on, so the data checks may all pass while a client
died under them; the finding `client-fatal` makes that visible, and fails the run, unless the
fault schedule explains the error:

    error                          explained when
    _FENCED, PRODUCER_FENCED,      the instance's transaction had been open longer than the
    INVALID_PRODUCER_EPOCH         transaction timeout when it failed, and a fault was in force
                                   during that time: the coordinator aborted the transaction
                                   and bumped the epoch, as Kafka's does (its
                                   abortTimedOutTransactions); a fence of a transaction that
                                   was not that old is another producer's doing, or a bug

Anything else is not explained: no fault of plan.py makes a correct broker send a client a
fatal error. A `ClientError` is one error a client call raised (or librdkafka's error callback
reported), with the instance that had it, when, and whether it was fatal; the record keeps every
one (non-fatal ones are the run's context), and the report prints the last few.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deploy.chaos.checker import FaultRecord, Finding, finding

FENCED = frozenset({"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"})


@dataclass
class ClientError:
    client: str  # the workload's name for it: "p0", "copier"
    instance: int  # which of its client objects (1, 2...: each replacement is a new one)
    at: float  # seconds since the run began
    call: str  # what raised: "init", "produce", "commit", "abort", "copy", "error_cb"
    error: str  # librdkafka's name: "INVALID_TXN_STATE", "_FENCED", "_TIMED_OUT"...
    fatal: bool
    detail: str = ""
    txn_open_since: float | None = None  # when the instance's open transaction began

    def to_json(self) -> list[Any]:
        return [self.client, self.instance, self.at, self.call, self.error, self.fatal,
                self.detail, self.txn_open_since]  # fmt: skip

    @classmethod
    def from_json(cls, raw: list[Any]) -> ClientError:
        return cls(*raw)

    def line(self) -> str:
        return (
            f"{self.client} (instance {self.instance}) {self.call}: {self.error} at {self.at:.1f}s"
        )


def explanation(e: ClientError, faults: list[FaultRecord], txn_timeout_s: float) -> str | None:
    """Why the fault schedule explains fatal error `e` (None: it does not)."""
    if e.error not in FENCED or e.txn_open_since is None:
        return None
    if e.at - e.txn_open_since < txn_timeout_s:
        return None
    during = [f for f in faults if f.skipped is None and f.at_s <= e.at
              and (f.healed_at_s is None or f.healed_at_s >= e.txn_open_since)]  # fmt: skip
    if not during:
        return None
    return (f"its transaction was open {e.at - e.txn_open_since:.1f}s, past the transaction "
            f"timeout, through {during[0].kind} {during[0].target}")  # fmt: skip


def check(errors: list[ClientError], faults: list[FaultRecord], txn_timeout_s: float) -> Finding:
    """`client-fatal`: FAIL with each unexplained fatal error (the first per instance)."""
    first: dict[tuple[str, int], ClientError] = {}
    for e in sorted(errors, key=lambda e: e.at):
        if e.fatal:
            first.setdefault((e.client, e.instance), e)
    bad, explained = [], []
    for e in first.values():
        why = explanation(e, faults, txn_timeout_s)
        if why is None:
            bad.append(f"{e.line()}: {e.detail}" if e.detail else e.line())
        else:
            explained.append(f"{e.line()} ({why})")
    if bad:
        return finding("client-fatal", bad, "")
    if explained:
        return Finding(
            "client-fatal", True, "fatal, explained by the faults: " + "; ".join(explained)
        )
    return Finding("client-fatal", True, f"{len(errors)} client errors, none fatal")
