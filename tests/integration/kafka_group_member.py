"""One Kafka client consuming in a group, as its own process, so tests can SIGSTOP and SIGKILL it:

    python tests/integration/kafka_group_member.py --client kafka-python --bootstrap B
        --group G --topic T --client-id ID --out FILE [--assignor range] [--session-ms 5000]
        [--instance-id I] [--group-protocol classic|consumer]

--group-protocol consumer (confluent-kafka only) joins with KIP-848 (group.protocol=consumer):
librdkafka refuses session.timeout.ms, heartbeat.interval.ms and partition.assignment.strategy
then (the coordinator owns them), so none is set, and --assignor names the coordinator's
assignor (group.remote.assignor).

--instance-id makes the member static (KIP-345: the client's group.instance.id): a static
member sends no LeaveGroup on close, and comes back from a restart to its old assignment. Errors
the client reports (librdkafka's fatal FENCED_INSTANCE_ID among them) are noted as `# error`.

At least once, commit after processing: every record a poll returns is "processed" by writing
`<partition> <offset>` to FILE (one line each, flushed before the commit), then the consumer
commits its positions synchronously. A refused commit (the group is rebalancing, the member was
fenced) is ignored: whoever owns the partition next reads those records again. Lines starting
with `#` say what happened (assignments, refused commits), for a failing test's reader.

SIGTERM: stop polling, close the consumer (which sends LeaveGroup) and exit 0.
Imports only the Kafka client named, never odradek.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import IO, Any

HEARTBEAT_MS = 500
MAX_POLL_RECORDS = 50
POLL_S = 0.2
METADATA_WAIT_S = 30.0


class Stop:
    requested = False


def on_term(_sig: int, _frame: Any) -> None:
    Stop.requested = True


def write(out: IO[str], processed: list[tuple[int, int]]) -> None:
    out.write("".join(f"{p} {o}\n" for p, o in processed))
    out.flush()


def note(out: IO[str], what: str) -> None:
    out.write(f"# {what}\n")
    out.flush()


def run_kafka_python(a: argparse.Namespace, out: IO[str]) -> None:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.errors import KafkaError

    from tests.integration.kafka_clients import kafka_python_subscribe

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    static = {"group_instance_id": a.instance_id} if a.instance_id else {}
    c = KafkaConsumer(
        **static, bootstrap_servers=a.bootstrap, group_id=a.group, client_id=a.client_id,
        partition_assignment_strategy=[assignors[a.assignor]], enable_auto_commit=False,
        auto_offset_reset="earliest", session_timeout_ms=a.session_ms,
        heartbeat_interval_ms=HEARTBEAT_MS, max_poll_interval_ms=a.max_poll_ms,
        max_poll_records=MAX_POLL_RECORDS, fetch_max_wait_ms=100,
    )  # fmt: skip
    kafka_python_subscribe(c, [a.topic], wait_s=METADATA_WAIT_S)
    try:
        while not Stop.requested:
            polled = c.poll(timeout_ms=int(POLL_S * 1000))
            processed = [(r.partition, r.offset) for recs in polled.values() for r in recs]
            if processed:
                write(out, processed)
                try:
                    c.commit()
                except KafkaError as exc:
                    note(out, f"commit refused: {exc!r}")
    finally:
        c.close()


def run_confluent(a: argparse.Namespace, out: IO[str]) -> None:
    from confluent_kafka import Consumer, KafkaException

    def error(err: Any) -> None:
        note(out, f"error {err} fatal={err.fatal()}")

    static = {"group.instance.id": a.instance_id} if a.instance_id else {}
    if a.group_protocol == "consumer":  # KIP-848: the coordinator owns the rest
        group: dict[str, Any] = {"group.protocol": "consumer"}
        if a.assignor:
            group["group.remote.assignor"] = a.assignor
    else:
        group = {"partition.assignment.strategy": a.assignor, "session.timeout.ms": a.session_ms,
                 "heartbeat.interval.ms": HEARTBEAT_MS}  # fmt: skip
    c = Consumer({
        **static, **group, "error_cb": error,
        "bootstrap.servers": a.bootstrap, "group.id": a.group, "client.id": a.client_id,
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "max.poll.interval.ms": a.max_poll_ms, "fetch.wait.max.ms": 100,
        "enable.partition.eof": False,
    })  # fmt: skip

    def assigned(_c: Any, parts: list[Any]) -> None:
        note(out, f"assigned {sorted(p.partition for p in parts)}")

    def revoked(_c: Any, parts: list[Any]) -> None:
        note(out, f"revoked {sorted(p.partition for p in parts)}")

    c.subscribe([a.topic], on_assign=assigned, on_revoke=revoked)
    try:
        while not Stop.requested:
            msgs = c.consume(num_messages=MAX_POLL_RECORDS, timeout=POLL_S)
            processed = []
            for m in msgs:
                if m.error() is not None:
                    note(out, f"error {m.error()} fatal={m.error().fatal()}")
                    continue
                processed.append((m.partition(), m.offset()))
            if processed:
                write(out, processed)
                try:
                    c.commit(asynchronous=False)
                except KafkaException as exc:
                    note(out, f"commit refused: {exc!r}")
    finally:
        c.close()


async def run_aiokafka(a: argparse.Namespace, out: IO[str]) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.errors import KafkaError

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    static = {"group_instance_id": a.instance_id} if a.instance_id else {}
    c = AIOKafkaConsumer(
        a.topic, **static, bootstrap_servers=a.bootstrap, group_id=a.group, client_id=a.client_id,
        partition_assignment_strategy=(assignors[a.assignor],), enable_auto_commit=False,
        auto_offset_reset="earliest", session_timeout_ms=a.session_ms,
        heartbeat_interval_ms=HEARTBEAT_MS, max_poll_interval_ms=a.max_poll_ms,
        max_poll_records=MAX_POLL_RECORDS, fetch_max_wait_ms=100,
    )  # fmt: skip
    await c.start()
    try:
        while not Stop.requested:
            polled = await c.getmany(timeout_ms=int(POLL_S * 1000))
            processed = [(r.partition, r.offset) for recs in polled.values() for r in recs]
            if processed:
                write(out, processed)
                try:
                    await c.commit()
                except KafkaError as exc:
                    note(out, f"commit refused: {exc!r}")
    finally:
        await c.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--client", required=True,
                    choices=["kafka-python", "confluent-kafka", "aiokafka"])  # fmt: skip
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--client-id", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--assignor", default=None, help="classic: the client's (range); consumer: "
                    "the coordinator's (group.remote.assignor)")  # fmt: skip
    ap.add_argument("--group-protocol", default="classic", choices=["classic", "consumer"],
                    help="confluent-kafka only: consumer is KIP-848")  # fmt: skip
    ap.add_argument("--session-ms", type=int, default=5000)
    ap.add_argument("--max-poll-ms", type=int, default=30_000)
    ap.add_argument("--instance-id", default=None, help="group.instance.id: a static member")
    ap.add_argument("--log-level", default="WARNING", help="the client's logging, to stderr")
    a = ap.parse_args()
    if a.group_protocol == "consumer" and a.client != "confluent-kafka":
        ap.error(f"{a.client} has no KIP-848 consumer protocol here; use confluent-kafka")
    if a.assignor is None and a.group_protocol == "classic":
        a.assignor = "range"
    logging.basicConfig(level=a.log_level, format="%(asctime)s %(name)s %(message)s")
    signal.signal(signal.SIGTERM, on_term)
    with open(a.out, "a") as out:
        note(out, f"start {a.client} {a.client_id}")
        if a.client == "kafka-python":
            run_kafka_python(a, out)
        elif a.client == "confluent-kafka":
            run_confluent(a, out)
        else:
            asyncio.run(run_aiokafka(a, out))
        note(out, "closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
