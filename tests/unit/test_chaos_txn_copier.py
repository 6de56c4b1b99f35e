"""The transactional chaos workload's copier survives a client call that never returns
(deploy/chaos/txn_workload.py): librdkafka's send_offsets_to_transaction can block for good
when the group's coordinator dies during it (librdkafka #5456, #5511). The copier leaves that
producer where it is, makes a new one under the same transactional id and copies on.

Fakes stand in for confluent-kafka's Consumer and Producer: what is tested is the workload's
own control flow, with a deadline, not a client."""

from __future__ import annotations

import sys
import threading
import time
import types
from typing import Any

import pytest

from deploy.chaos import txn_workload
from deploy.chaos.txn_run import QUIET_S, copier_done
from deploy.chaos.txn_workload import ClientHung, Copier, bounded


def test_bounded_returns_the_value_or_raises_what_the_call_raised() -> None:
    assert bounded(lambda: 7, "seven", 5.0) == 7
    with pytest.raises(KeyError):
        empty: dict[str, int] = {}
        bounded(lambda: empty["missing"], "missing", 5.0)


def test_bounded_gives_up_on_a_call_that_never_returns() -> None:
    never = threading.Event()
    began = time.monotonic()
    with pytest.raises(ClientHung, match="stuck still running"):
        bounded(never.wait, "stuck", 0.2)
    assert time.monotonic() - began < 5.0
    never.set()


class _Message:
    def __init__(self, partition: int, value: bytes) -> None:
        self._partition, self._value = partition, value

    def error(self) -> None:
        return None

    def partition(self) -> int:
        return self._partition

    def value(self) -> bytes:
        return self._value


class _Consumer:
    """Hands out the input once (and again after each rewind), one message per partition."""

    def __init__(self, conf: dict[str, Any]) -> None:
        self.batches = [[_Message(0, b"a"), _Message(1, b"b")]]
        self.rewinds = 0

    def subscribe(self, topics: list[str]) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[_Message]:
        if self.batches:
            return self.batches.pop(0)
        time.sleep(0.01)
        return []

    def assignment(self) -> list[str]:
        return ["in-0", "in-1"]

    def position(self, assignment: list[str]) -> list[types.SimpleNamespace]:
        return [types.SimpleNamespace(partition=p, offset=1) for p in (0, 1)]

    def consumer_group_metadata(self) -> str:
        return "group"

    def committed(self, assignment: list[str], timeout: float) -> list[Any]:
        self.rewinds += 1
        self.batches.append([_Message(0, b"a"), _Message(1, b"b")])
        return []

    def close(self) -> None:
        pass


class _Producer:
    def __init__(self, hangs: bool) -> None:
        self.hangs, self.committed = hangs, 0
        self.sent: list[tuple[str, int, bytes]] = []
        self.release = threading.Event()

    def begin_transaction(self) -> None:
        pass

    def produce(self, topic: str, value: bytes, partition: int) -> None:
        self.sent.append((topic, partition, value))

    def send_offsets_to_transaction(self, offsets: Any, group: Any, timeout: float) -> None:
        if self.hangs:  # past its own timeout, as librdkafka #5456 does
            self.release.wait()

    def commit_transaction(self, timeout: float) -> None:
        self.committed += 1


def test_a_copier_replaces_a_producer_stuck_in_send_offsets(monkeypatch: Any) -> None:
    stuck, fresh = _Producer(hangs=True), _Producer(hangs=False)
    made = iter([stuck, fresh])
    kafka = types.SimpleNamespace(Consumer=_Consumer, OFFSET_BEGINNING=-2, TopicPartition=tuple)
    monkeypatch.setitem(sys.modules, "confluent_kafka", kafka)
    monkeypatch.setattr(txn_workload, "new_producer", lambda *args: next(made, None))
    monkeypatch.setattr(txn_workload, "CALL_TIMEOUT_S", 0.1)
    monkeypatch.setattr(txn_workload, "HUNG_GRACE_S", 0.1)
    copier = Copier("b:1", "copier", "tid", "group", "in", "out", time.monotonic())
    copier.start()
    deadline = time.monotonic() + 10
    while copier.copied < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        assert copier.copied == 2, copier.errors.errors
        assert copier.hung == [stuck] and stuck.committed == 0
        assert fresh.committed == 1 and {p for _, p, _ in fresh.sent} == {0, 1}
        (hung,) = copier.errors.errors
        assert (hung.call, hung.error, hung.fatal) == ("copy", "ClientHung", False)
        assert hung.detail.startswith("send_offsets_to_transaction still running")
        # its progress is what the run's drain waits on: the offsets committed with the output
        assert copier.caught_up({0: 1, 1: 1}) and not copier.caught_up({0: 2, 1: 1})
        assert copier_done(copier, {0: 1, 1: 1}, now=copier.last_commit)
    finally:
        stuck.release.set()
        copier.stop()


def test_a_copier_that_has_just_recovered_is_not_done(monkeypatch: Any) -> None:
    """The run's drain (txn_run.copier_done): after a rewind nothing is pending, but nothing
    has been copied since either. The rewind counts as progress, so only QUIET_S without any,
    or the offsets committed up to the ends, make the copier done. (A CI run failed this way:
    the output was read 0.1 s after the copier replaced its stuck producer.)"""
    kafka = types.SimpleNamespace(Consumer=_Consumer, OFFSET_BEGINNING=-2, TopicPartition=tuple)
    monkeypatch.setitem(sys.modules, "confluent_kafka", kafka)
    copier = Copier("b:1", "copier", "tid", "group", "in", "out", time.monotonic())
    copier.pending, copier.last_commit = 3, 0.0  # read, then the transaction failed
    before = time.monotonic()
    copier._rewind()
    assert copier.pending == 0 and copier.last_commit >= before
    assert not copier_done(copier, {0: 5}, now=copier.last_commit + 0.1)
    assert copier_done(copier, {0: 5}, now=copier.last_commit + QUIET_S)
    assert not copier_done(copier, None, now=copier.last_commit + 0.1)
    copier.committed_to = {0: 5}
    assert copier_done(copier, {0: 5}, now=copier.last_commit + 0.1)
    copier._consumer.close()
