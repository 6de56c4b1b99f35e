"""A Quix Streams application with a stateful count per key, as its own process:

    python tests/integration/quix_counter.py --bootstrap B --group G --input T --output O
        --state-dir DIR --count N [--timeout-s 60]

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
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def count(value: dict[str, Any], state: Any) -> dict[str, Any]:
    """Quix's documented stateful counter: the state is the message key's."""
    total = state.get("total", default=0) + 1
    state.set("total", total)
    return {**value, "total": total}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    for name in ("--bootstrap", "--group", "--input", "--output", "--state-dir"):
        parser.add_argument(name, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    a = parser.parse_args(argv)

    from quixstreams import Application

    app = Application(
        broker_address=a.bootstrap,
        consumer_group=a.group,
        auto_offset_reset="earliest",
        state_dir=a.state_dir,
    )
    source = app.topic(a.input, value_deserializer="json")
    sink = app.topic(a.output, value_serializer="json")
    sdf = app.dataframe(source)
    sdf = sdf.apply(count, stateful=True)
    sdf.to_topic(sink)
    outputs = app.run(count=a.count, timeout=a.timeout_s)
    print(json.dumps(outputs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
