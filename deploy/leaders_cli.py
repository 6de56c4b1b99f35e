"""`odradek topics elect-leaders [TOPIC]` and `odradek topics reassign TOPIC --partition P
--replicas 2,3,4`, the CLI side of issue 4's leader management (client.Admin does the work;
deploy/cli.py registers the subcommands through `add_parsers`).

elect-leaders prints one line per partition (its labels aligned): the new leader, "already
led by its preferred replica", or why the preferred replica cannot lead; the exit code is 1
only for errors other than those two. reassign starts the move, then shows progress on stderr
(the replicas still joining the ISR and those to be dropped: a line each time it changes, or a
bar of the partitions done on a terminal or with --progress) until the controller reports it
done, and prints the partition's final line; `--no-wait` returns once the controller has
accepted it. Both take `-o json` (docs/cli.md). Bootstrap, Admin client and argument types
come from deploy/cli_common.py, as for deploy/cli.py.
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
from deploy.cli_output import (
    NullMeter,
    done_text,
    emit_json,
    field_lines,
    meter,
    output_options,
    print_lines,
    progress_options,
    wants_json,
)
from deploy.cli_views import partition_doc
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
    listing = [client, output_options(argparse.SUPPRESS)]
    elect = tsub.add_parser(
        "elect-leaders", parents=listing, help="move leadership back to preferred replicas"
    )
    elect.add_argument("name", metavar="TOPIC", nargs="?", help="default: every topic")
    elect.set_defaults(func=cmd_elect_leaders)

    reassign = tsub.add_parser(
        "reassign", parents=[*listing, progress_options(argparse.SUPPRESS)],
        help="move a partition to a new replica list",
    )  # fmt: skip
    reassign.add_argument("name", metavar="TOPIC")
    reassign.add_argument("--partition", type=non_negative_int, required=True)
    reassign.add_argument("--replicas", type=parse_replicas, required=True, metavar="2,3,4")
    reassign.add_argument("--no-wait", action="store_true", help="do not wait until it is done")
    reassign.add_argument(
        "--timeout-s", type=positive_int, default=DEFAULT_REASSIGN_TIMEOUT_S,
        help="give up waiting after this long (the move goes on)",
    )  # fmt: skip
    reassign.set_defaults(func=cmd_reassign)


def election_doc(tp: Any, error: Exception | None, leader: int) -> dict[str, Any]:
    """One partition of `elect-leaders -o json`; result: elected, already-preferred,
    not-moved (the preferred replica cannot lead; `error` says why) or error."""
    if error is None:
        result = "elected"
    elif isinstance(error, ElectionNotNeededError):
        result = "already-preferred"
    elif isinstance(error, PreferredLeaderNotAvailableError):
        result = "not-moved"
    else:
        result = "error"
    message = None if error is None or result == "already-preferred" else str(error)
    if isinstance(error, PreferredLeaderNotAvailableError):
        message = error.message
    return {"topic": tp.topic, "partition": tp.partition, "leader": None if leader < 0 else leader,
            "result": result, "error": message}  # fmt: skip


MARKERS = {"elected": "(elected)", "already-preferred": "(already the preferred replica)"}


def election_lines(docs: list[dict[str, Any]]) -> list[str]:
    rows = []
    for d in docs:
        fields = [("Topic", d["topic"]), ("Partition", str(d["partition"]))]
        if d["result"] in MARKERS:
            leader = "none" if d["leader"] is None else str(d["leader"])
            rows.append(([*fields, ("Leader", leader)], MARKERS[d["result"]]))
        elif d["result"] == "not-moved":
            rows.append((fields, f"not moved: {d['error']}"))
        else:
            rows.append((fields, f"error: {d['error']}"))
    return field_lines(rows)


def cmd_elect_leaders(args: argparse.Namespace) -> int:
    with admin_from_args(args) as admin:
        results = admin.elect_leaders(args.name)
        described = admin.describe_topics(sorted({tp.topic for tp in results}))
    leaders, preferred = _leaders(described), _preferred(described)
    docs = [
        election_doc(
            tp, error, preferred.get(tp, -1) if _led_by_preferred(error) else leaders.get(tp, -1)
        )
        for tp, error in sorted(results.items())
    ]
    if wants_json(args):
        emit_json({"partitions": docs})
    else:
        print_lines(election_lines(docs))
    return 1 if any(d["result"] == "error" for d in docs) else 0


def _led_by_preferred(error: Exception | None) -> bool:
    """Elected, or already led by it: the leader is the preferred replica (the metadata read
    just after the election may not show it yet)."""
    return error is None or isinstance(error, ElectionNotNeededError)


def _preferred(descriptions: list[Any]) -> dict[Any, int]:
    from client.types import TopicPartition

    return {
        TopicPartition(d.name, p.partition): p.replicas[0] if p.replicas else -1
        for d in descriptions
        for p in d.partitions
    }


def _leaders(descriptions: list[Any]) -> dict[Any, int]:
    from client.types import TopicPartition

    return {
        TopicPartition(d.name, p.partition): p.leader for d in descriptions for p in d.partitions
    }


def cmd_reassign(args: argparse.Namespace) -> int:
    from client.types import TopicPartition

    tp = TopicPartition(args.name, args.partition)
    doc: dict[str, Any] = {"topic": args.name, "partition": args.partition,
                           "target_replicas": args.replicas, "done": False}  # fmt: skip
    with admin_from_args(args) as admin:
        admin.alter_partition_reassignments({tp: args.replicas})
        progress(f"reassigning {args.name}-{args.partition} to {args.replicas}")
        if not args.no_wait:
            deadline = time.monotonic() + args.timeout_s
            with meter(args, f"reassigning {args.name}-{args.partition}", total=1) as bar:
                if not _wait_done(admin, tp, args.timeout_s, bar):
                    raise UsageError(
                        f"{args.name}-{args.partition} is still moving after {args.timeout_s} s "
                        "(it goes on; see `odradek topics describe`)"
                    )
            final = _described(admin, args.name, args.partition, args.replicas, deadline)
            doc |= {"done": True, **partition_doc(args.name, final, None)}
    if wants_json(args):
        emit_json(doc)
    elif doc["done"]:
        print(format_partition(args.name, final))
    return 0


def _described(admin: Any, topic: str, partition: int, replicas: list[int], deadline: float) -> Any:
    """The partition as described once the metadata shows its new replicas. The controller has
    finished when the reassignment is gone, but each broker's metadata cache learns it by an
    UpdateMetadata of its own: the broker asked may not have yet. Until `deadline`, else as it
    is then."""
    while True:
        [described] = admin.describe_topics([topic])
        [final] = [p for p in described.partitions if p.partition == partition]
        if list(final.replicas) == list(replicas) or time.monotonic() >= deadline:
            return final
        time.sleep(POLL_INTERVAL_S)


def _wait_done(admin: Any, tp: Any, timeout_s: float, bar: NullMeter) -> bool:
    """Poll until the reassignment is gone; a progress line each time it changes (stderr), and
    the bar's count of partitions done."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        ongoing = admin.list_partition_reassignments([tp]).get(tp)
        if ongoing is None:
            bar.update(1, 1, done_text(1, 1, "partitions done"))
            return True
        line = (
            f"  replicas now {ongoing.replicas}; joining the ISR: {ongoing.adding_replicas}; "
            f"to drop: {ongoing.removing_replicas}"
        )
        bar.update(0, 1, f"0/1 partitions done, joining the ISR: {ongoing.adding_replicas}")
        if line != last and not bar.live:  # the bar shows it otherwise
            print(line, file=sys.stderr, flush=True)
        last = line
        time.sleep(POLL_INTERVAL_S)
    return False
