"""`odradek topics elect-leaders [TOPIC]` and `odradek topics reassign TOPIC --partition P
--replicas 2,3,4`, the CLI side of issue 4's leader management (client.Admin does the work;
deploy/cli.py registers the subcommands through `add_parsers`).

elect-leaders prints one line per partition: the new leader, "already led by its preferred
replica", or why the preferred replica cannot lead; the exit code is 1 only for errors other
than those two. reassign starts the move, then shows progress on stderr (the replicas still
joining the ISR and those to be dropped) until the controller reports it done, and prints the
partition's final line; `--no-wait` returns once the controller has accepted it. Bootstrap,
Admin client and argument types come from deploy/cli_common.py, as for deploy/cli.py.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from deploy.cli_common import (
    admin_from_args,
    format_partition,
    non_negative_int,
    positive_int,
    progress,
)
from protocol.errors import (
    ElectionNotNeededError,
    PreferredLeaderNotAvailableError,
    UsageError,
)

POLL_INTERVAL_S = 0.5
DEFAULT_REASSIGN_TIMEOUT_S = 600


def parse_replicas(text: str) -> list[int]:
    """'2,3,4' -> [2, 3, 4]; UsageError (via argparse) on anything else."""
    try:
        replicas = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of broker ids like 2,3,4"
        ) from None
    if not replicas or len(set(replicas)) != len(replicas) or min(replicas) < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: need distinct broker ids, like 2,3,4")
    return replicas


def add_parsers(tsub: Any, client: argparse.ArgumentParser) -> None:
    elect = tsub.add_parser(
        "elect-leaders", parents=[client], help="move leadership back to preferred replicas"
    )
    elect.add_argument("name", metavar="TOPIC", nargs="?", help="default: every topic")
    elect.set_defaults(func=cmd_elect_leaders)

    reassign = tsub.add_parser(
        "reassign", parents=[client], help="move a partition to a new replica list"
    )
    reassign.add_argument("name", metavar="TOPIC")
    reassign.add_argument("--partition", type=non_negative_int, required=True)
    reassign.add_argument("--replicas", type=parse_replicas, required=True, metavar="2,3,4")
    reassign.add_argument("--no-wait", action="store_true", help="do not wait until it is done")
    reassign.add_argument(
        "--timeout-s", type=positive_int, default=DEFAULT_REASSIGN_TIMEOUT_S,
        help="give up waiting after this long (the move goes on)",
    )  # fmt: skip
    reassign.set_defaults(func=cmd_reassign)


def cmd_elect_leaders(args: argparse.Namespace) -> int:
    failed = 0
    with admin_from_args(args) as admin:
        results = admin.elect_leaders(args.name)
        leaders = _leaders(admin.describe_topics(sorted({tp.topic for tp in results})))
    for tp, error in sorted(results.items()):
        where = f"Topic: {tp.topic}\tPartition: {tp.partition}"
        if error is None:
            print(f"{where}\tLeader: {leaders.get(tp, -1)} (elected)")
        elif isinstance(error, ElectionNotNeededError):
            print(f"{where}\tLeader: {leaders.get(tp, -1)} (already the preferred replica)")
        elif isinstance(error, PreferredLeaderNotAvailableError):
            print(f"{where}\tnot moved: {error.message}")
        else:
            failed += 1
            print(f"{where}\terror: {error}")
    return 1 if failed else 0


def _leaders(descriptions: list[Any]) -> dict[Any, int]:
    from client.types import TopicPartition

    return {
        TopicPartition(d.name, p.partition): p.leader for d in descriptions for p in d.partitions
    }


def cmd_reassign(args: argparse.Namespace) -> int:
    from client.types import TopicPartition

    tp = TopicPartition(args.name, args.partition)
    with admin_from_args(args) as admin:
        admin.alter_partition_reassignments({tp: args.replicas})
        progress(f"reassigning {args.name}-{args.partition} to {args.replicas}")
        if args.no_wait:
            return 0
        if not _wait_done(admin, tp, args.timeout_s):
            raise UsageError(
                f"{args.name}-{args.partition} is still moving after {args.timeout_s} s "
                "(it goes on; see `odradek topics describe`)"
            )
        [described] = admin.describe_topics([args.name])
    for p in described.partitions:
        if p.partition == args.partition:
            print(format_partition(args.name, p))
    return 0


def _wait_done(admin: Any, tp: Any, timeout_s: float) -> bool:
    """Poll until the reassignment is gone; a progress line each time it changes."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        ongoing = admin.list_partition_reassignments([tp]).get(tp)
        if ongoing is None:
            return True
        line = (
            f"  replicas now {ongoing.replicas}; joining the ISR: {ongoing.adding_replicas}; "
            f"to drop: {ongoing.removing_replicas}"
        )
        if line != last:
            print(line, file=sys.stderr, flush=True)
            last = line
        time.sleep(POLL_INTERVAL_S)
    return False
