"""One confluent-kafka 2.16 ShareConsumer (KIP-932) in a share group, as its own process, run by
the python of .venv-share (the Makefile's `setup` builds it; the project's own venv pins 2.12):

    .venv-share/bin/python tests/integration/share_member.py --bootstrap B --group G
        --topic T --out FILE [--mode accept|release-first|reject|hold|release-hold] [--name N]

`accept` uses the consumer's defaults (implicit acknowledgement: each poll's records are
accepted by the next poll); the other modes acknowledge explicitly
(share.acknowledgement.mode=explicit): `release-first` releases a record on its first delivery
and accepts it on the next, `reject` rejects every record, `hold` takes one poll's records and
then stops polling without acknowledging them (the test SIGKILLs it), `release-hold` releases
one poll's records and stops polling (SIGTERM then sends the releases as it closes).

Each record received is a line `<offset> <delivery count> <what it did>` in FILE, flushed
before it is acknowledged; lines starting with `#` say what happened. SIGTERM: stop, close the
consumer (which sends the pending acknowledgements and leaves the group), exit 0.
Imports only confluent_kafka, never odradek.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import IO, Any

POLL_S = 0.2


class Stop:
    requested = False


def on_term(_sig: int, _frame: Any) -> None:
    Stop.requested = True


def note(out: IO[str], line: str) -> None:
    out.write(line + "\n")
    out.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("--bootstrap", "--group", "--topic", "--out"):
        parser.add_argument(name, required=True)
    parser.add_argument("--mode", default="accept",
                        choices=("accept", "release-first", "reject", "hold",
                                 "release-hold"))  # fmt: skip
    parser.add_argument("--name", default="member")
    a = parser.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    from confluent_kafka import AcknowledgeType, ShareConsumer

    config = {"bootstrap.servers": a.bootstrap, "group.id": a.group, "client.id": a.name}
    if a.mode != "accept":
        config["share.acknowledgement.mode"] = "explicit"
    consumer = ShareConsumer(config)
    consumer.subscribe([a.topic])
    with open(a.out, "a", encoding="utf-8") as out:
        note(out, f"# started {a.mode}")
        while not Stop.requested:
            for msg in consumer.poll(POLL_S):
                if msg.error() is not None:
                    note(out, f"# error {msg.error()}")
                    continue
                count = msg.delivery_count()
                what = {
                    "accept": "accept",
                    "reject": "reject",
                    "hold": "hold",
                    "release-hold": "release",
                }.get(a.mode, "release" if count == 1 else "accept")
                note(out, f"{msg.offset()} {count} {what}")
                if what != "accept" or a.mode != "accept":
                    kind = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE,
                            "reject": AcknowledgeType.REJECT}.get(what)  # fmt: skip
                    if kind is not None:
                        consumer.acknowledge(msg, kind)
            if a.mode in ("hold", "release-hold") and out.tell() > 0 and _holding(a.out):
                note(out, "# holding")
                while not Stop.requested:
                    time.sleep(POLL_S)
        consumer.close()
        note(out, "# closed")
    return 0


def _holding(path: str) -> bool:
    with open(path, encoding="utf-8") as f:
        return any(
            line.endswith((" hold\n", " release\n")) and not line.startswith("#") for line in f
        )  # "# started hold" is not a record held


if __name__ == "__main__":
    sys.exit(main())
