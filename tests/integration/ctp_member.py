"""One consume-transform-produce member (KIP-447), as its own process, so tests can SIGKILL it:

    python tests/integration/ctp_member.py --client confluent-kafka --bootstrap B --group G
        --input I --output O --txn-id ID --out FILE [--per-txn 5] [--session-ms 6000]

It consumes I in group G with isolation.level=read_committed and no auto commit, and for each
poll of at most --per-txn records runs one transaction of the producer whose transactional.id
is ID: every record goes to O with the same key and its value + b"!", and the consumed offsets
(each partition's last offset + 1) are committed with send_offsets_to_transaction in the same
transaction, with the consumer's group metadata (confluent-kafka, kafka-python 3: generation
fencing, KIP-447). Then commit_transaction. aiokafka has no KIP-447 (its
send_offsets_to_transaction takes the group id alone), so it runs KIP-98's pattern instead
(`aiokafka-per-partition`: one transactional.id per input partition, not per member).

A transaction the broker refuses (an abortable error: the group rebalanced, a partition moved)
is aborted and the consumer rewound to the group's committed offsets of the partitions it
read, so nothing is skipped; a fatal error (the producer was fenced) ends the process with 3.
A restarted member reuses its transactional.id: init_transactions fences the killed instance
and aborts the transaction it left open.

FILE gets one line per committed transaction, `<time> <partition> <offset> ...` of each record
in it (written after the commit, for a failing test's reader; a SIGKILL can lose the last one),
and `# <time> ...` lines saying what happened (assignments, aborts). SIGTERM: finish the
current transaction, close, exit 0. Imports only the Kafka client named, never odradek.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import time
from typing import IO, Any

HEARTBEAT_MS = 500
POLL_S = 0.2
TXN_TIMEOUT_MS = 10_000  # a killed member's open transaction: aborted by its restart, or this
CALL_TIMEOUT_S = 30.0
COMMIT_TRIES = 5
FENCED_EXIT = 3


class Stop:
    requested = False


def on_term(_sig: int, _frame: Any) -> None:
    Stop.requested = True


def note(out: IO[str], what: str) -> None:
    out.write(f"# {time.time():.3f} {what}\n")
    out.flush()


def committed_line(out: IO[str], records: list[tuple[int, int]]) -> None:
    """`<unix time> <partition> <offset> <partition> <offset> ...`"""
    out.write(f"{time.time():.3f} " + " ".join(f"{p} {o}" for p, o in records) + "\n")
    out.flush()


def next_offsets(records: list[tuple[int, int]]) -> dict[int, int]:
    """partition -> the offset after the last record read from it (the position to commit)."""
    ends: dict[int, int] = {}
    for p, o in records:
        ends[p] = max(ends.get(p, 0), o + 1)
    return ends


# ----- confluent-kafka ---------------------------------------------------------------------------


def run_confluent(a: argparse.Namespace, out: IO[str]) -> int:
    from confluent_kafka import (
        OFFSET_BEGINNING,
        Consumer,
        KafkaException,
        Producer,
        TopicPartition,
    )

    c = Consumer({
        "bootstrap.servers": a.bootstrap, "group.id": a.group, "client.id": a.txn_id,
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "isolation.level": "read_committed", "session.timeout.ms": a.session_ms,
        "heartbeat.interval.ms": HEARTBEAT_MS, "fetch.wait.max.ms": 100,
        "enable.partition.eof": False,
    })  # fmt: skip
    p = Producer({
        "bootstrap.servers": a.bootstrap, "transactional.id": a.txn_id, "linger.ms": 5,
        "transaction.timeout.ms": TXN_TIMEOUT_MS,
    })  # fmt: skip
    p.init_transactions(CALL_TIMEOUT_S)
    note(out, "initialized")

    def assigned(_c: Any, parts: list[Any]) -> None:
        note(out, f"assigned {sorted(tp.partition for tp in parts)}")

    def revoked(_c: Any, parts: list[Any]) -> None:
        note(out, f"revoked {sorted(tp.partition for tp in parts)}")

    def rewind(partitions: list[int]) -> None:
        tps = [TopicPartition(a.input, q) for q in partitions]
        try:
            for tp in c.committed(tps, timeout=CALL_TIMEOUT_S):
                tp.offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                c.seek(tp)
            note(out, f"rewound {[(tp.partition, tp.offset) for tp in tps]}")
        except KafkaException as exc:  # no longer assigned: its next owner starts from committed
            note(out, f"rewind: {exc!r}")

    def commit() -> None:
        for attempt in range(COMMIT_TRIES):
            try:
                p.commit_transaction(CALL_TIMEOUT_S)
                return
            except KafkaException as exc:
                if not exc.args[0].retriable() or attempt == COMMIT_TRIES - 1:
                    raise
                note(out, f"commit retried: {exc!r}")

    c.subscribe([a.input], on_assign=assigned, on_revoke=revoked)
    try:
        while not Stop.requested:
            msgs = c.consume(num_messages=a.per_txn, timeout=POLL_S)
            for m in msgs:
                if m.error() is not None:
                    note(out, f"consume error {m.error()}")
            msgs = [m for m in msgs if m.error() is None]
            if not msgs:
                continue
            records = [(m.partition(), m.offset()) for m in msgs]
            ends = next_offsets(records)
            try:
                p.begin_transaction()
                for m in msgs:
                    p.produce(a.output, key=m.key(), value=m.value() + b"!")
                offsets = [TopicPartition(a.input, q, o) for q, o in ends.items()]
                p.send_offsets_to_transaction(offsets, c.consumer_group_metadata(), CALL_TIMEOUT_S)
                commit()
            except KafkaException as exc:
                err = exc.args[0]
                if err.fatal() or not err.txn_requires_abort():
                    note(out, f"fatal: {exc!r}")
                    return FENCED_EXIT
                note(out, f"aborting: {exc!r}")
                p.abort_transaction(CALL_TIMEOUT_S)
                rewind(sorted(ends))
                continue
            committed_line(out, records)
    finally:
        c.close()
    return 0


# ----- kafka-python ------------------------------------------------------------------------------


def run_kafka_python(a: argparse.Namespace, out: IO[str]) -> int:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.errors import KafkaError, ProducerFencedError
    from kafka.structs import OffsetAndMetadata

    from tests.integration.kafka_clients import kafka_python_subscribe

    c = KafkaConsumer(
        bootstrap_servers=a.bootstrap, group_id=a.group, client_id=a.txn_id,
        enable_auto_commit=False, auto_offset_reset="earliest",
        isolation_level="read_committed", session_timeout_ms=a.session_ms,
        heartbeat_interval_ms=HEARTBEAT_MS, fetch_max_wait_ms=100,
    )  # fmt: skip
    p = KafkaProducer(bootstrap_servers=a.bootstrap, transactional_id=a.txn_id, linger_ms=5,
                      transaction_timeout_ms=TXN_TIMEOUT_MS)  # fmt: skip
    p.init_transactions()
    note(out, "initialized")

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            note(out, f"revoked {sorted(tp.partition for tp in revoked)}")

        def on_partitions_assigned(self, assigned: Any) -> None:
            note(out, f"assigned {sorted(tp.partition for tp in assigned)}")

    def rewind(partitions: list[int]) -> None:
        for q in partitions:
            tp = TopicPartition(a.input, q)
            try:
                offset = c.committed(tp)
                c.seek(tp, offset if offset is not None else 0)
            except (KafkaError, AssertionError, ValueError) as exc:
                note(out, f"rewind {q}: {exc!r}")
                continue
            note(out, f"rewound {q} to {offset}")

    kafka_python_subscribe(c, [a.input], listener=Listener())
    try:
        while not Stop.requested:
            polled = c.poll(timeout_ms=int(POLL_S * 1000), max_records=a.per_txn)
            msgs = [r for recs in polled.values() for r in recs]
            if not msgs:
                continue
            records = [(r.partition, r.offset) for r in msgs]
            ends = next_offsets(records)
            try:
                p.begin_transaction()
                futures = [p.send(a.output, key=r.key, value=r.value + b"!") for r in msgs]
                for f in futures:
                    f.get(timeout=CALL_TIMEOUT_S)
                offsets = {TopicPartition(a.input, q): OffsetAndMetadata(o, "", -1)
                           for q, o in ends.items()}  # fmt: skip
                p.send_offsets_to_transaction(offsets, c.group_metadata())
                p.commit_transaction()
            except ProducerFencedError as exc:
                note(out, f"fatal: {exc!r}")
                return FENCED_EXIT
            except KafkaError as exc:
                note(out, f"aborting: {exc!r}")
                try:
                    p.abort_transaction()
                except KafkaError as again:
                    note(out, f"fatal: abort failed: {again!r}")
                    return FENCED_EXIT
                rewind(sorted(ends))
                continue
            committed_line(out, records)
    finally:
        c.close()
        p.close(timeout=5)
    return 0


# ----- aiokafka ----------------------------------------------------------------------------------


async def run_aiokafka_per_partition(a: argparse.Namespace, out: IO[str]) -> int:
    """KIP-98's pattern for a client without KIP-447: one transactional producer per input
    partition (transactional.id `<group>-<input>-<partition>`, the same in every member), each
    transaction holding one partition's records. A member given a partition starts its producer
    (InitProducerId fences the previous owner's and waits out its transaction), then seeks to
    the committed offset; a lock keeps a rebalance from swapping producers mid-transaction.
    aiokafka also sets the position from the committed offset after an assignment, which may
    land after this seek with an older offset (its OffsetFetch has no require_stable), so each
    partition's next offset is kept here and records below it are skipped."""
    from aiokafka import (
        AIOKafkaConsumer,
        AIOKafkaProducer,
        ConsumerRebalanceListener,
        TopicPartition,
    )
    from aiokafka.errors import KafkaError, ProducerFenced

    producers: dict[int, Any] = {}
    expected: dict[int, int] = {}  # partition -> the next offset to process
    lock = asyncio.Lock()

    async def resume(tp: Any) -> None:
        offset = await c.committed(tp)
        expected[tp.partition] = offset if offset is not None else 0
        c.seek(tp, expected[tp.partition])

    async def start(q: int) -> None:
        if q in producers:
            await producers.pop(q).stop()
        p = AIOKafkaProducer(bootstrap_servers=a.bootstrap, linger_ms=5,
                             transactional_id=f"{a.group}-{a.input}-{q}",
                             transaction_timeout_ms=TXN_TIMEOUT_MS)  # fmt: skip
        await p.start()  # InitProducerId: the previous owner's producer is fenced
        producers[q] = p

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked: Any) -> None:
            async with lock:
                note(out, f"revoked {sorted(tp.partition for tp in revoked)}")

        async def on_partitions_assigned(self, assigned: Any) -> None:
            async with lock:
                for tp in assigned:
                    await start(tp.partition)
                    await resume(tp)
                note(out, f"assigned {sorted(tp.partition for tp in assigned)}, producers up")

    c = AIOKafkaConsumer(
        bootstrap_servers=a.bootstrap, group_id=a.group, client_id=a.txn_id,
        enable_auto_commit=False, auto_offset_reset="earliest",
        isolation_level="read_committed", session_timeout_ms=a.session_ms,
        heartbeat_interval_ms=HEARTBEAT_MS, fetch_max_wait_ms=100,
    )  # fmt: skip
    await c.start()
    note(out, "initialized")
    c.subscribe([a.input], listener=Listener())

    async def one_txn(q: int, msgs: list[Any]) -> None:
        p = producers[q]
        async with p.transaction():
            futures = [await p.send(a.output, key=r.key, value=r.value + b"!") for r in msgs]
            for f in futures:
                await f
            offset = msgs[-1].offset + 1
            await p.send_offsets_to_transaction({TopicPartition(a.input, q): offset}, a.group)

    try:
        while not Stop.requested:
            polled = await c.getmany(timeout_ms=int(POLL_S * 1000), max_records=a.per_txn)
            async with lock:
                for tp, msgs in polled.items():
                    if tp not in c.assignment() or tp.partition not in producers:
                        continue  # revoked meanwhile: its new owner reads it from committed
                    msgs = [r for r in msgs if r.offset >= expected[tp.partition]]
                    if msgs and msgs[0].offset != expected[tp.partition]:
                        note(out, f"{tp.partition}: {msgs[0].offset}, not {expected[tp.partition]}")
                        c.seek(tp, expected[tp.partition])
                        continue
                    if not msgs:
                        continue
                    try:
                        await one_txn(tp.partition, msgs)
                    except (ProducerFenced, KafkaError) as exc:
                        note(out, f"partition {tp.partition} aborted: {exc!r}")
                        await start(tp.partition)
                        await resume(tp)
                        continue
                    expected[tp.partition] = msgs[-1].offset + 1
                    committed_line(out, [(tp.partition, r.offset) for r in msgs])
    finally:
        await c.stop()
        for p in producers.values():
            await p.stop()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    clients = ["confluent-kafka", "kafka-python", "aiokafka-per-partition"]
    ap.add_argument("--client", required=True, choices=clients)
    for name in ("--bootstrap", "--group", "--input", "--output", "--txn-id", "--out"):
        ap.add_argument(name, required=True)
    ap.add_argument("--per-txn", type=int, default=5)
    ap.add_argument("--session-ms", type=int, default=6000)
    ap.add_argument("--log-level", default="WARNING", help="the client's logging, to stderr")
    a = ap.parse_args()
    logging.basicConfig(level=a.log_level, format="%(asctime)s %(name)s %(message)s")
    signal.signal(signal.SIGTERM, on_term)
    with open(a.out, "a") as out:
        note(out, f"start {a.client} {a.txn_id}")
        if a.client == "confluent-kafka":
            code = run_confluent(a, out)
        elif a.client == "kafka-python":
            code = run_kafka_python(a, out)
        else:
            code = asyncio.run(run_aiokafka_per_partition(a, out))
        note(out, f"closed {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
