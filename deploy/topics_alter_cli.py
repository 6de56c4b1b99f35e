"""`odradek topics alter-config TOPIC --set KEY=VALUE --delete KEY` and `odradek topics
add-partitions TOPIC --partitions N [--replica-assignment 1:2,2:3,3:1]`: changing a topic after it
was created (client.Admin's alter_configs and create_partitions do the work; deploy/cli.py
registers the subcommands through `add_parsers`).

alter-config changes only the configs named (the others keep their overrides; a deleted one
goes back to the broker default) and prints the topic's overrides afterwards; every broker
applies the change to its logs. add-partitions takes the new total, returns once the new
partitions have leaders, and prints every partition's line. `--validate-only` checks without
changing anything. Both take `-o json` (docs/cli.md). Helpers come from deploy/cli_common.py,
as for deploy/cli.py.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from deploy.cli_common import admin_from_args, positive_int, progress
from deploy.cli_output import emit_json, field_lines, output_options, wants_json
from deploy.cli_views import partition_doc, partition_fields
from deploy.wait_notes import MIN_INSYNC, min_insync_warning
from protocol.errors import UsageError


def parse_config_changes(
    sets: Sequence[str] | None, deletes: Sequence[str] | None
) -> tuple[dict[str, str], list[str]]:
    """(["k=v", ...], ["k", ...]) -> ({k: v}, [k]); UsageError on a malformed item, a key named
    twice, or nothing to do."""
    configs: dict[str, str] = {}
    for item in sets or ():
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not key or not value:
            raise UsageError(f"--set expects key=value, got {item!r}")
        if key in configs:
            raise UsageError(f"--set names {key} twice")
        configs[key] = value
    removed = [key.strip() for key in deletes or ()]
    for key in removed:
        if not key or "=" in key:
            raise UsageError(f"--delete expects a config name, got {key!r}")
        if key in configs or removed.count(key) > 1:
            raise UsageError(f"{key} is named twice")
    if not configs and not removed:
        raise UsageError("nothing to change: give --set KEY=VALUE or --delete KEY")
    return configs, removed


def parse_replica_assignment(text: str) -> tuple[tuple[int, ...], ...]:
    """kafka-topics.sh's '1:2,2:3' -> ((1, 2), (2, 3)): partition 0 on brokers 1 and 2, ...
    (`topics create` and `add-partitions` both take it, as kafka-topics' --create and --alter)."""
    try:
        out = tuple(tuple(int(b) for b in part.split(":")) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not replica lists like 1:2,2:3 (',' between partitions, ':' between "
            "a partition's brokers)"
        ) from None
    if any(min(replicas) < 0 for replicas in out):
        raise argparse.ArgumentTypeError(f"{text!r}: broker ids are >= 0, like 1:2,2:3")
    return out


def add_parsers(tsub: Any, client: argparse.ArgumentParser) -> None:
    listing = [client, output_options(argparse.SUPPRESS)]
    alter = tsub.add_parser(
        "alter-config", parents=listing, help="set or delete some of a topic's configs"
    )
    alter.add_argument("name", metavar="TOPIC")
    alter.add_argument("--set", action="append", dest="set_configs", metavar="KEY=VALUE",
                       help="set a topic config (repeatable)")  # fmt: skip
    alter.add_argument("--delete", action="append", dest="delete_configs", metavar="KEY",
                       help="back to the broker default (repeatable)")  # fmt: skip
    alter.add_argument("--validate-only", action="store_true", help="check, change nothing")
    alter.set_defaults(func=cmd_alter_config)

    add = tsub.add_parser(
        "add-partitions", parents=listing, help="raise a topic's number of partitions"
    )
    add.add_argument("name", metavar="TOPIC")
    add.add_argument("--partitions", type=positive_int, required=True, help="the new total")
    add.add_argument("--replica-assignment", type=parse_replica_assignment, metavar="1:2,2:3",
                     help="every partition's replicas, as kafka-topics --alter: the "
                          "existing partitions' are skipped (default: placed)")  # fmt: skip
    add.add_argument("--validate-only", action="store_true", help="check, change nothing")
    add.set_defaults(func=cmd_add_partitions)


def cmd_alter_config(args: argparse.Namespace) -> int:
    configs, removed = parse_config_changes(args.set_configs, args.delete_configs)
    with admin_from_args(args) as admin:
        admin.alter_configs(args.name, configs, removed, args.validate_only)
        entries = admin.describe_configs([args.name]).get(args.name, {})
        warning = _min_insync_warning(admin, args, configs, removed)
    if warning:
        progress(warning)
    overrides = {e.name: e.value for e in sorted(entries.values(), key=lambda e: e.name)
                 if not e.is_default}  # fmt: skip
    if wants_json(args):
        emit_json({"topic": args.name, "validate_only": args.validate_only,
                   "configs": overrides})  # fmt: skip
        return 0
    own = ",".join(f"{k}={v}" for k, v in overrides.items())
    if args.validate_only:
        print(f"Valid; nothing changed. Topic: {args.name} Configs: {own}".rstrip())
    else:
        print(f"Altered topic {args.name}. Topic: {args.name} Configs: {own}".rstrip())
    return 0


def _min_insync_warning(
    admin: Any, args: argparse.Namespace, configs: dict[str, str], removed: list[str]
) -> str | None:
    """deploy/wait_notes.py's warning when min.insync.replicas was set (or deleted, back to
    the default) and is now above the replication factor; with --validate-only, the value
    given is checked (a deletion only validated is not)."""
    if MIN_INSYNC not in configs and MIN_INSYNC not in removed:
        return None
    if not args.validate_only:
        return min_insync_warning(admin, args.name)
    if MIN_INSYNC not in configs:
        return None
    return min_insync_warning(admin, args.name, value=configs[MIN_INSYNC])


def cmd_add_partitions(args: argparse.Namespace) -> int:
    with admin_from_args(args) as admin:
        assignments = None
        if args.replica_assignment is not None:  # kafka-topics --alter: the existing skipped
            [before] = admin.describe_topics([args.name])
            added = args.replica_assignment[len(before.partitions) :]
            assignments = {args.name: [list(replicas) for replicas in added]}
        admin.create_partitions({args.name: args.partitions}, assignments,
                                validate_only=args.validate_only)  # fmt: skip
        [described] = admin.describe_topics([args.name])
    partitions = sorted(described.partitions, key=lambda p: p.partition)
    if wants_json(args):
        docs = [partition_doc(args.name, p, None) for p in partitions]
        emit_json({"topic": args.name, "validate_only": args.validate_only,
                   "partition_count": len(partitions), "partitions": docs})  # fmt: skip
        return 0
    if args.validate_only:
        print(f"Valid; topic {args.name} still has {len(partitions)} partitions.")
        return 0
    print(f"Topic {args.name} now has {len(partitions)} partitions.")
    for line in field_lines([partition_fields(args.name, p, None) for p in partitions]):
        print(line)
    return 0
