"""One confluent-kafka consumer on the KIP-848 protocol (group.protocol=consumer), as its own
process, so tests can SIGTERM (close: it leaves with epoch -1) or SIGKILL it:

    python tests/integration/kip848_member.py --bootstrap B --group G --topic T
        --client-id ID --out FILE [--assignor uniform|range] [--protocol consumer|classic]
        [--instance-id I]

librdkafka refuses session.timeout.ms, heartbeat.interval.ms and partition.assignment.strategy
with group.protocol=consumer (the coordinator owns them), so none is set then; the server
assignor is group.remote.assignor. At least once, commit after processing: each record is
written as `<partition> <offset>` to FILE (flushed) before a synchronous commit; a refused
commit is noted and ignored. Lines starting with `#` say what happened (assignments, errors).
Imports only confluent_kafka, never odradek.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import IO, Any

MAX_RECORDS = 50
POLL_S = 0.2


class Stop:
    requested = False


def on_term(_sig: int, _frame: Any) -> None:
    Stop.requested = True


def note(out: IO[str], what: str) -> None:
    out.write(f"# {what}\n")
    out.flush()


def config(a: argparse.Namespace, out: IO[str]) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": a.bootstrap,
        "group.id": a.group,
        "client.id": a.client_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
        "enable.partition.eof": False,
        "error_cb": lambda err: note(out, f"error {err} fatal={err.fatal()}"),
    }
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id  # a static member: leaves with epoch -2
    if a.protocol == "consumer":
        conf["group.protocol"] = "consumer"
        if a.assignor:
            conf["group.remote.assignor"] = a.assignor
    else:
        conf.update(
            {
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "partition.assignment.strategy": a.assignor or "range",
            }
        )
    return conf


def run(a: argparse.Namespace, out: IO[str]) -> None:
    from confluent_kafka import Consumer, KafkaException

    c = Consumer(config(a, out))

    def assigned(_c: Any, parts: list[Any]) -> None:
        note(out, f"assigned {sorted(p.partition for p in parts)}")

    def revoked(_c: Any, parts: list[Any]) -> None:
        note(out, f"revoked {sorted(p.partition for p in parts)}")

    c.subscribe([a.topic], on_assign=assigned, on_revoke=revoked)
    try:
        while not Stop.requested:
            msgs = c.consume(num_messages=MAX_RECORDS, timeout=POLL_S)
            processed = []
            for m in msgs:
                if m.error() is not None:
                    note(out, f"error {m.error()} fatal={m.error().fatal()}")
                    continue
                processed.append((m.partition(), m.offset()))
            if processed:
                out.write("".join(f"{p} {o}\n" for p, o in processed))
                out.flush()
                try:
                    c.commit(asynchronous=False)
                except KafkaException as exc:
                    note(out, f"commit refused: {exc!r}")
    finally:
        c.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--client-id", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--assignor", default=None)
    ap.add_argument("--protocol", default="consumer", choices=["consumer", "classic"])
    ap.add_argument("--instance-id", default=None)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    with open(a.out, "a") as out:
        note(out, f"start {a.protocol} {a.client_id}")
        run(a, out)
        note(out, "closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
