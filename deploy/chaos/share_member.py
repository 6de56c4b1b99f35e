"""One member of the share chaos workload, as a process of its own (so that a fault can SIGKILL
it): odradek's ShareConsumer in explicit acknowledgement mode, started by share_workload.py as

    python -m deploy.chaos.share_member --bootstrap B --group G --topic T --out FILE
        --name N --seed S --t0 T0 [--drain]

Each poll's records are decided at random (seeded by --seed and --name: ACCEPT_WEIGHTS, mostly
accept), one JSON line per record written to FILE and flushed before any is acknowledged:

    {"poll": 3, "at": 12.345, "p": 0, "o": 17, "v": "p0-0-8", "c": 1, "a": "release"}

then acknowledged, and sent at once with commit_sync; its answer is one line per poll:

    {"ack": 3, "at": 12.401, "ok": [0], "failed": [1], "errors": {"1": "NotLeaderOrFollower..."}}

`ok` and `failed` are partitions whose acknowledgements the leader answered with success or an
error; the others' outcome is unknown (no answer: a broken connection or a timeout, after which
the acknowledgement may still have been written).

`at` is seconds since T0 on the machine's monotonic clock (the runner's own: CLOCK_MONOTONIC is
one clock for every process). `--drain` accepts everything (the last member of a run, which
takes what is left). SIGTERM: stop polling, close the consumer (it leaves the group), exit 0.
How the client logs in comes as the path of a client properties file in the environment
(COMMAND_CONFIG_ENV: the run's --command-config, or a secure cluster's client.properties).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import IO, Any

from client import ShareConsumer
from client.command_config import load_command_config
from client.share_acks import ShareRecord
from protocol.errors import NetworkError, OdradekError, RequestTimedOutError

COMMAND_CONFIG_ENV = "ODRADEK_CHAOS_COMMAND_CONFIG"
ACCEPT_WEIGHTS = {"accept": 80, "release": 12, "reject": 8}
POLL_MS = 300
# no answer came (the connection broke, or the time ran out): the leader may have written the
# acknowledgement before it died, so its outcome is unknown, not failed
UNANSWERED = (NetworkError, RequestTimedOutError)
MAX_POLL_RECORDS = 20  # small polls: more members get records, more redeliveries interleave


class Stop:
    requested = False


def _on_term(_sig: int, _frame: Any) -> None:
    Stop.requested = True


def _line(out: IO[str], doc: dict[str, Any]) -> None:
    out.write(json.dumps(doc, separators=(",", ":")) + "\n")
    out.flush()


def _decide(rng: random.Random, drain: bool) -> str:
    if drain:
        return "accept"
    kinds = list(ACCEPT_WEIGHTS)
    return rng.choices(kinds, weights=[ACCEPT_WEIGHTS[k] for k in kinds])[0]


def _one_poll(consumer: ShareConsumer, n: int, records: list[ShareRecord], rng: random.Random,
              drain: bool, t0: float, out: IO[str]) -> None:  # fmt: skip
    at = round(time.monotonic() - t0, 4)
    for r in records:
        action = _decide(rng, drain)
        value = (r.value or b"").decode()
        _line(out, {"poll": n, "at": at, "p": r.partition, "o": r.offset, "v": value,
                    "c": r.delivery_count, "a": action})  # fmt: skip
        consumer.acknowledge(r, action)
    try:
        results = consumer.commit_sync()
    except OdradekError:  # no answer: every outcome of this poll stays unknown
        return
    ok = sorted({tp.partition for tp, err in results.items() if err is None})
    failed = sorted({tp.partition for tp, err in results.items()
                     if err is not None and not isinstance(err, UNANSWERED)})  # fmt: skip
    errors = {tp.partition: type(err).__name__ for tp, err in results.items() if err is not None}
    _line(out, {"ack": n, "at": round(time.monotonic() - t0, 4), "ok": ok, "failed": failed,
                "errors": errors})  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="share_member")
    for name in ("--bootstrap", "--group", "--topic", "--out", "--name"):
        parser.add_argument(name, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--t0", type=float, required=True)
    parser.add_argument("--drain", action="store_true")
    a = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_term)
    config = os.environ.get(COMMAND_CONFIG_ENV)
    security = load_command_config(Path(config)).client_options() if config else {}
    rng = random.Random(f"{a.seed}-{a.name}")
    consumer = ShareConsumer(a.bootstrap, group_id=a.group, client_id=a.name,
                             share_acknowledgement_mode="explicit",
                             max_poll_records=MAX_POLL_RECORDS, request_timeout_ms=5000,
                             **security)  # fmt: skip
    consumer.subscribe([a.topic])
    n = 0
    with open(a.out, "a", encoding="utf-8") as out:
        while not Stop.requested:
            try:
                records = consumer.poll(POLL_MS)
            except OdradekError as exc:  # a fault: the consumer goes on with the next poll
                _line(out, {"error": f"{type(exc).__name__}: {exc}"})
                time.sleep(0.2)
                continue
            if records:
                _one_poll(consumer, n, records, rng, a.drain, a.t0, out)
                n += 1
        consumer.close()
        _line(out, {"closed": round(time.monotonic() - a.t0, 4)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
