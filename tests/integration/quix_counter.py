"""A Quix Streams application with a stateful count per key, as its own process:

    python tests/integration/quix_counter.py --bootstrap B --group G --input T --output O
        --state-dir DIR --count N [--timeout-s 60] [--exactly-once] [--commit-interval-s 5]
        [--pause-ms 0]

Built as Quix's documentation shows it, with its defaults: `Application(broker_address=...,
consumer_group=..., auto_offset_reset="earliest", state_dir=...)`, a JSON input topic, and
`sdf.apply(count, stateful=True)` keeping a running total per message key in the key's state
(RocksDB under --state-dir, with a changelog topic Quix creates itself with
cleanup.policy=compact). Each input message gives one output message, its value with `total`
added, written to --output by `sdf.to_topic`.

It stops after N outputs (`app.run(count=N, timeout=...)`: the timeout, in seconds without a new
message, is a bound for a broken run, not a stop condition a test relies on), then prints the
outputs it made as one JSON list on stdout and exits 0. Quix commits its offsets and flushes its
changelog when it stops. Imports only quixstreams, never odradek.

--exactly-once: `processing_guarantee="exactly-once"` (Quix's transactional producer: each
checkpoint's outputs, changelog writes and consumed offsets in one transaction, the consumer
read_committed). --count 0 --timeout-s 0: run until SIGTERM (Quix's graceful stop, which
commits its checkpoint), then print the outputs (an empty list: nothing is collected).
--commit-interval-s: how often Quix commits a checkpoint (its commit_interval). --pause-ms: a
pause before counting each message, so a test can kill the app halfway through its input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


class Pace:
    """--pause-ms: a pause per message, so that a test can kill the app in the middle of a run."""

    pause_s = 0.0


def count(value: dict[str, Any], state: Any) -> dict[str, Any]:
    """Quix's documented stateful counter: the state is the message key's."""
    if Pace.pause_s:
        time.sleep(Pace.pause_s)
    total = state.get("total", default=0) + 1
    state.set("total", total)
    return {**value, "total": total}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    for name in ("--bootstrap", "--group", "--input", "--output", "--state-dir"):
        parser.add_argument(name, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    parser.add_argument("--exactly-once", action="store_true")
    parser.add_argument("--commit-interval-s", type=float, default=5.0)  # Quix's default
    parser.add_argument("--pause-ms", type=float, default=0.0)
    a = parser.parse_args(argv)
    Pace.pause_s = a.pause_ms / 1000

    from quixstreams import Application

    app = Application(
        broker_address=a.bootstrap,
        consumer_group=a.group,
        auto_offset_reset="earliest",
        state_dir=a.state_dir,
        processing_guarantee="exactly-once" if a.exactly_once else "at-least-once",
        commit_interval=a.commit_interval_s,
    )
    source = app.topic(a.input, value_deserializer="json")
    sink = app.topic(a.output, value_serializer="json")
    sdf = app.dataframe(source)
    sdf = sdf.apply(count, stateful=True)
    sdf.to_topic(sink)
    outputs = app.run(count=a.count, timeout=a.timeout_s)
    print(json.dumps(outputs or []), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
