#!/usr/bin/env python3
"""Example stream processor with state: a Quix Streams application counting clicks per user,
against the cluster that `make cluster` started (through its Kafka listener).

    make cluster
    .venv/bin/python examples/quix_counts.py --demo 300
    .venv/bin/python examples/quix_counts.py --demo 30 --wipe-state
    .venv/bin/odradek configs describe --topic changelog__click-counter--quix-clicks--default

`--demo N` produces N JSON clicks to `quix-clicks` (five users), then runs the application
until it has made N outputs and prints each user's running total. The count per user is Quix
state (RocksDB under ./.quix-state), backed by a changelog topic that Quix creates itself with
`cleanup.policy=compact`: odradek's log cleaner keeps only the latest total per user there.
`--wipe-state` deletes the local state first: the totals then carry on from the changelog
(the restore a restarted or moved instance does), not from zero. Every run ends by itself.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from client import Admin, NewTopic, Producer  # noqa: E402
from deploy.cli_common import resolve_bootstrap  # noqa: E402
from deploy.cluster import LocalCluster  # noqa: E402

INPUT, OUTPUT, GROUP = "quix-clicks", "quix-click-totals", "click-counter"
USERS = ["alice", "bob", "carol", "dave", "erin"]
CYCLE = [0] * 5 + [1] * 4 + [2] * 3 + [3] * 2 + [4]  # alice 5, bob 4, ... per 15 clicks


def count(value: dict[str, Any], state: Any) -> dict[str, Any]:
    """Quix's stateful function: the state is the message key's (the user's)."""
    total = state.get("total", default=0) + 1
    state.set("total", total)
    return {**value, "total": total}


def produce_clicks(bootstrap: str, n: int) -> None:
    with Admin(bootstrap) as admin:
        if INPUT not in admin.list_topics():
            admin.create_topics([NewTopic(INPUT, 1, 1)])
    with Producer(bootstrap, acks="all") as producer:
        for i in range(n):
            user = USERS[CYCLE[i % len(CYCLE)]]
            value = json.dumps({"user": user, "page": f"page-{i % 7}"}).encode()
            producer.send(INPUT, value, key=user.encode())
        producer.flush()


def run_app(kafka: str, n: int, state_dir: Path) -> dict[str, int]:
    from quixstreams import Application

    app = Application(broker_address=kafka, consumer_group=GROUP, auto_offset_reset="earliest",
                      state_dir=str(state_dir))  # fmt: skip
    sdf = app.dataframe(app.topic(INPUT, value_deserializer="json"))
    sdf = sdf.apply(count, stateful=True)
    sdf.to_topic(app.topic(OUTPUT, value_serializer="json"))
    outputs = app.run(count=n, timeout=30)
    return {out["user"]: out["total"] for out in outputs}


def main() -> int:
    parser = argparse.ArgumentParser(description="count clicks per user with Quix Streams")
    parser.add_argument("--demo", type=int, required=True, help="clicks to produce and count")
    parser.add_argument("--wipe-state", action="store_true", help="delete the local state first")
    parser.add_argument("--state-dir", type=Path, default=Path(".quix-state"))
    args = parser.parse_args()
    bootstrap = resolve_bootstrap(None, os.environ, Path.cwd())
    kafka = LocalCluster.open(Path.cwd() / ".odradek").kafka_bootstrap
    if args.wipe_state:
        shutil.rmtree(args.state_dir, ignore_errors=True)
    produce_clicks(bootstrap, args.demo)
    for user, total in sorted(run_app(kafka, args.demo, args.state_dir).items()):
        print(f"{user} {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
