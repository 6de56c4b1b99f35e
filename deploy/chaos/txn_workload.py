"""The transactional chaos workload (`--workload txn`): Kafka clients through the Kafka listener.

- Producers (a thread each, confluent-kafka with its own `transactional.id`): each transaction
  sends SENDS_PER_TXN values "<producer>-<txn>-<i>" to random partitions, flushes (so every
  send has its acknowledged offset), then aborts one transaction in ABORT_ONE_IN and commits the
  rest. Outcomes as txn_checker.py defines them: a transaction it chose to abort, or gave up on
  before asking to commit, is "aborted" (no EndTxn(COMMIT) was ever sent for it); one whose
  commit_transaction returned is "committed"; one whose commit raised or took longer than
  COMMIT_TIMEOUT_S is "unknown". After any failure the producer aborts, or is replaced when
  that fails too (init_transactions under the same id fences the old one and ends its
  transaction).
- Readers (a thread each): read_committed consumers that are assigned every partition from the
  beginning (no group, no rebalance) and record every poll: when it returned and its
  (partition, offset, value) records in order.
- Consume-transform-produce (KIP-447): one member of a group reads the topic read_committed
  and copies each value to the output topic in a transaction that also commits the group's
  offsets (send_offsets_to_transaction). After an aborted or failed transaction it rewinds to
  the group's committed offsets (a reset for nothing: the copier's reads are not checked).
  send_offsets_to_transaction runs under a deadline of its own: librdkafka 2.x can block in it
  for good, past its timeout, when the group's coordinator dies during the call (librdkafka
  #5456, #5511: the cached coordinator's broker left the metadata and nothing wakes the
  request). A producer still inside it after CALL_TIMEOUT_S + HUNG_GRACE_S is left where it is
  and replaced: the new one's init_transactions bumps the epoch, which aborts the open
  transaction and fences whatever the stuck one sends later.

Bounds: a transaction has at most SENDS_PER_TXN[1] sends; producers pace themselves with
TXN_GAP_S between transactions; a reader's poll takes at most POLL_MAX records.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

from deploy.chaos import security
from deploy.chaos.client_errors import ClientError
from deploy.chaos.txn_checker import ABORTED, COMMITTED, UNKNOWN, ConsumerLog, Poll, Txn, TxnSend
from deploy.chaos.workload import AckClock

SENDS_PER_TXN = (1, 4)
ABORT_ONE_IN = 5
TXN_GAP_S = 0.02
TXN_TIMEOUT_MS = 30_000
CALL_TIMEOUT_S = 30.0
# shorter than a zombie's pause or a coordinator's failover, so that some commits end unknown
# (and the checker has unknown outcomes to decide); one try, then the producer is aborted or
# replaced, which completes or aborts the transaction on the coordinator
COMMIT_TIMEOUT_S = 4.0
COMMIT_TRIES = 1
POLL_MAX = 500
POLL_S = 0.2
HUNG_GRACE_S = 10.0


class ClientHung(Exception):
    """A client call still running well past the timeout it was given."""


def bounded(call: Callable[[], Any], what: str, timeout_s: float) -> Any:
    """`call()` in a thread of its own; its result, or its exception, or ClientHung when it
    has not returned after `timeout_s` (the thread is then left to itself)."""
    done = threading.Event()
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the caller
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name=f"chaos-{what}", daemon=True).start()
    if not done.wait(timeout_s):
        raise ClientHung(f"{what} still running after {timeout_s:.0f} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def _client_conf(bootstrap: str, **more: Any) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "log_level": 0, **security.librdkafka(), **more}


class ErrorLog:
    """One workload client's errors as client_errors.ClientError, appended from its thread and
    from librdkafka's error callback (fatal ones only: the others are transient connection
    news). `instance` counts its client objects; `txn_since` is when its open transaction
    began (None: none open)."""

    def __init__(self, client: str, t0: float) -> None:
        self.client, self._t0 = client, t0
        self.errors: list[ClientError] = []
        self.instance = 0
        self.txn_since: float | None = None

    def now(self) -> float:
        return round(time.monotonic() - self._t0, 4)

    def add(self, call: str, exc: BaseException) -> None:
        err: Any = exc.args[0] if exc.args else None
        name = getattr(err, "name", None)
        fatal = bool(getattr(err, "fatal", lambda: False)())
        detail = err.str() if callable(getattr(err, "str", None)) else str(exc)
        self.errors.append(ClientError(self.client, self.instance, self.now(), call,
                                       name() if callable(name) else type(exc).__name__,
                                       fatal, detail, self.txn_since))  # fmt: skip

    def callback(self) -> Callable[[Any], None]:
        """librdkafka's error_cb for the current instance."""
        instance = self.instance

        def on_error(err: Any) -> None:
            if err.fatal():
                self.errors.append(ClientError(self.client, instance, self.now(), "error_cb",
                                               err.name(), True, err.str(),
                                               self.txn_since))  # fmt: skip

        return on_error

    def lines(self, last: int) -> list[str]:
        return [f"{e.call}: {e.error}{' (FATAL)' if e.fatal else ''} {e.detail}"
                for e in self.errors[-last:]]  # fmt: skip


def new_producer(bootstrap: str, transactional_id: str, stop: threading.Event,
                 log: ErrorLog) -> Any:  # fmt: skip
    """A transactional producer with its id initialised (fencing any older one), retried
    until it is or `stop` is set (then None)."""
    from confluent_kafka import Producer  # optional: --workload txn

    while not stop.is_set():
        log.instance += 1
        log.txn_since = None
        producer = Producer(_client_conf(
            bootstrap, **{"transactional.id": transactional_id, "acks": "all",
                          "transaction.timeout.ms": TXN_TIMEOUT_MS, "linger.ms": 2,
                          "error_cb": log.callback()}))  # fmt: skip
        try:
            producer.init_transactions(CALL_TIMEOUT_S)
            return producer
        except Exception as exc:  # the coordinator is down: try again
            log.add("init", exc)
            stop.wait(0.5)
    return None


def recover(producer: Any, bootstrap: str, transactional_id: str, stop: threading.Event,
            log: ErrorLog) -> Any:  # fmt: skip
    """Abort the transaction in progress; replace the producer when that fails."""
    try:
        producer.abort_transaction(CALL_TIMEOUT_S)
        log.txn_since = None
        return producer
    except Exception as exc:
        log.add("abort", exc)
    return new_producer(bootstrap, transactional_id, stop, log)


class TxnProducer:
    """One transactional id's producer thread; `txns` in the order it ran them."""

    def __init__(
        self, bootstrap: str, name: str, transactional_id: str, topic: str, partitions: int,
        seed: int, t0: float, clock: AckClock,
    ) -> None:  # fmt: skip
        self.name, self.transactional_id = name, transactional_id
        self.txns: list[Txn] = []
        self.errors = ErrorLog(name, t0)
        self._bootstrap, self._topic, self._partitions = bootstrap, topic, partitions
        self._rng = random.Random(f"{seed}-{name}")
        self._t0, self._clock = t0, clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"chaos-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(CALL_TIMEOUT_S * (COMMIT_TRIES + 2))

    def committed(self) -> int:
        return sum(1 for t in list(self.txns) if t.outcome == COMMITTED)

    def _now(self) -> float:
        return round(time.monotonic() - self._t0, 4)

    def _run(self) -> None:
        producer = new_producer(self._bootstrap, self.transactional_id, self._stop, self.errors)
        n = 0
        while producer is not None and not self._stop.is_set():
            txn = Txn(self.name, n)
            self.txns.append(txn)
            n += 1
            if not self._one(producer, txn):
                producer = recover(producer, self._bootstrap, self.transactional_id, self._stop,
                                   self.errors)  # fmt: skip
            self._stop.wait(TXN_GAP_S)

    def _one(self, producer: Any, txn: Txn) -> bool:
        """Run one transaction; False when the producer must be aborted or replaced."""
        try:
            producer.begin_transaction()
            self.errors.txn_since = self._now()
            for i in range(self._rng.randint(*SENDS_PER_TXN)):
                send = TxnSend(self._rng.randrange(self._partitions), f"{txn.producer}-{txn.n}-{i}")
                txn.sends.append(send)
                producer.produce(self._topic, value=send.value.encode(), partition=send.partition,
                                 on_delivery=self._delivered(send, time.monotonic()))  # fmt: skip
            if producer.flush(CALL_TIMEOUT_S) or any(s.offset is None for s in txn.sends):
                raise RuntimeError("a send was not acknowledged")
        except Exception as exc:  # never asked to commit: it cannot commit
            txn.outcome, txn.error = ABORTED, f"before commit: {exc}"
            self.errors.add("produce", exc)
            return False
        if self._rng.randrange(ABORT_ONE_IN) == 0:
            txn.outcome = ABORTED
            try:
                producer.abort_transaction(CALL_TIMEOUT_S)
                self.errors.txn_since = None
                return True
            except Exception as exc:
                txn.error = f"abort: {exc}"
                self.errors.add("abort", exc)
                return False
        return self._commit(producer, txn)

    def _commit(self, producer: Any, txn: Txn) -> bool:
        txn.commit_at = self._now()
        for _ in range(COMMIT_TRIES):
            try:
                producer.commit_transaction(COMMIT_TIMEOUT_S)
                txn.outcome = COMMITTED
                self.errors.txn_since = None
                return True
            except Exception as exc:
                txn.outcome, txn.error = UNKNOWN, f"commit: {exc}"
                self.errors.add("commit", exc)
                if not _retriable(exc):
                    return False
        return False

    def _delivered(self, send: TxnSend, sent_at: float) -> Callable[[Any, Any], None]:
        def done(err: Any, msg: Any) -> None:
            if err is None:
                send.offset = msg.offset()
                self._clock.ack(send.partition, sent_at)

        return done


def _retriable(exc: Exception) -> bool:
    err = exc.args[0] if exc.args else None
    return bool(getattr(err, "retriable", lambda: False)())


class Reader:
    """A read_committed consumer of every partition from the beginning; records its polls."""

    def __init__(self, bootstrap: str, name: str, topic: str, partitions: int, t0: float):
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        self.log = ConsumerLog(name)
        self.errors = ErrorLog(name, t0)
        self.errors.instance = 1
        self._tps = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
        conf = {"group.id": f"{name}-unused", "isolation.level": "read_committed",
                "enable.auto.commit": False, "auto.offset.reset": "earliest"}  # fmt: skip
        self._consumer = Consumer(_client_conf(bootstrap, error_cb=self.errors.callback(), **conf))
        self._consumer.assign(self._tps)
        self._t0 = t0
        self.last_read = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"chaos-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        from confluent_kafka import KafkaException

        while not self._stop.is_set():
            records = []
            for msg in self._consumer.consume(num_messages=POLL_MAX, timeout=POLL_S):
                if msg.error() is not None:
                    self.errors.add("consume", KafkaException(msg.error()))
                    continue
                records.append((int(msg.partition() or 0), int(msg.offset() or 0),
                                (msg.value() or b"").decode()))  # fmt: skip
            if records:
                self.last_read = time.monotonic()
                self.log.polls.append(Poll(round(self.last_read - self._t0, 4), records))

    def positions(self) -> dict[int, int]:
        return {tp.partition: tp.offset for tp in self._consumer.position(self._tps)
                if tp.offset >= 0}  # fmt: skip

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.log.positions = self.positions()
        self._consumer.close()


class Copier:
    """Consume-transform-produce (KIP-447): the group's member copies each value of `topic` to
    `out_topic` (same partition) in a transaction that commits the group's offsets with it."""

    def __init__(
        self, bootstrap: str, name: str, transactional_id: str, group: str, topic: str,
        out_topic: str, t0: float,
    ) -> None:  # fmt: skip
        from confluent_kafka import Consumer

        self.name = name
        self.errors = ErrorLog(name, t0)  # its producers'
        self.consumer_errors = ErrorLog(f"{name}-consumer", t0)
        self.consumer_errors.instance = 1
        self.copied = 0  # values in committed transactions
        self.last_commit = time.monotonic()  # or the last recovery: the copier's last progress
        self.pending = 0  # values read and not yet in a committed transaction
        self.committed_to: dict[int, int] = {}  # partition -> the offset committed with output
        self.hung: list[Any] = []  # producers left inside a call that never returned
        self._out_topic = out_topic
        self._consumer = Consumer(_client_conf(
            bootstrap, **{"group.id": group, "isolation.level": "read_committed",
                          "enable.auto.commit": False, "auto.offset.reset": "earliest",
                          "session.timeout.ms": 10_000,
                          "error_cb": self.consumer_errors.callback()}))  # fmt: skip
        self._consumer.subscribe([topic])
        self._bootstrap, self._tid = bootstrap, transactional_id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"chaos-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        producer = new_producer(self._bootstrap, self._tid, self._stop, self.errors)
        while producer is not None and not self._stop.is_set():
            msgs = [m for m in self._consumer.consume(num_messages=POLL_MAX, timeout=POLL_S)
                    if m.error() is None]  # fmt: skip
            if not msgs:
                continue
            self.pending = len(msgs)
            try:
                self._copy(producer, msgs)
                self.copied += len(msgs)
                self.pending = 0
                self.last_commit = time.monotonic()
            except ClientHung as exc:  # kept referenced: destroying it could block as well
                self.errors.add("copy", exc)  # the producer is replaced
                self.hung.append(producer)
                producer = new_producer(self._bootstrap, self._tid, self._stop, self.errors)
                self._rewind()
            except Exception as exc:  # aborted or unknown: read again from the group's offsets
                self.errors.add("copy", exc)
                producer = recover(producer, self._bootstrap, self._tid, self._stop, self.errors)
                self._rewind()

    def caught_up(self, ends: dict[int, int]) -> bool:
        """Every input partition's committed offset has reached `ends`: all of it copied."""
        done = dict(self.committed_to)
        return all(done.get(p, 0) >= end for p, end in ends.items())

    def _copy(self, producer: Any, msgs: list[Any]) -> None:
        producer.begin_transaction()
        self.errors.txn_since = self.errors.now()
        for m in msgs:
            producer.produce(self._out_topic, value=m.value(), partition=m.partition())
        assignment = self._consumer.assignment()
        offsets = self._consumer.position(assignment)
        group = self._consumer.consumer_group_metadata()
        bounded(lambda: producer.send_offsets_to_transaction(offsets, group, CALL_TIMEOUT_S),
                "send_offsets_to_transaction", CALL_TIMEOUT_S + HUNG_GRACE_S)  # fmt: skip
        producer.commit_transaction(CALL_TIMEOUT_S)
        self.errors.txn_since = None
        self.committed_to.update((tp.partition, tp.offset) for tp in offsets if tp.offset >= 0)

    def _rewind(self) -> None:
        """Seek every assigned partition back to the group's committed offset (read stable:
        librdkafka's read_committed OffsetFetch asks for no pending offsets)."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        while not self._stop.is_set():
            try:
                assignment = self._consumer.assignment()
                for tp in self._consumer.committed(assignment, CALL_TIMEOUT_S):
                    if tp.offset >= 0:
                        self._consumer.seek(tp)
                    else:  # nothing committed: from the beginning
                        self._consumer.seek(TopicPartition(tp.topic, tp.partition,
                                                           OFFSET_BEGINNING))  # fmt: skip
                self.pending = 0
                self.last_commit = time.monotonic()  # recovered: quiet counts from here
                return
            except Exception as exc:  # the group coordinator moves: again
                self.errors.add("rewind", exc)
                self._stop.wait(0.5)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(CALL_TIMEOUT_S * (COMMIT_TRIES + 2))
        self._consumer.close()
