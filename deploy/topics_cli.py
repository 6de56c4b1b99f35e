"""`odradek topics create|list|describe|delete` (client.Admin does the work; deploy/cli.py
registers the `topics` command through `add_parser`, and the other topic subcommands come from
deploy/leaders_cli.py, deploy/records_cli.py and deploy/topics_alter_cli.py).

`list` and `describe` show internal topics (__consumer_offsets, __transaction_state) unless
--exclude-internal, as kafka-topics.sh does. `describe` prints seed 004's listing on stdout
(labels aligned, deploy/cli_views.py) and, on stderr, why each partition without a leader has
none; `--offsets` adds each partition's log start offset and high watermark. Both take
`-o json` (docs/cli.md). `create` takes `--partitions` (and `--replication-factor`) or, as
kafka-topics.sh, `--replica-assignment 1:2,2:3` (a ',' between partitions, a ':' between a
partition's replicas, its first the preferred leader), and warns on stderr when the topic's
min.insync.replicas is above its replication factor (deploy/wait_notes.py). `delete` asks for
each topic on its own: one that cannot go gets its error line and the others still go.
"""

from __future__ import annotations

import argparse
from typing import Any

from deploy import cli_views, leaders_cli, records_cli, topics_alter_cli, wait_notes
from deploy.cli_common import (
    admin_from_args,
    leaderless_notes,
    positive_int,
    print_error,
    progress,
)
from deploy.cli_lines import format_topic, parse_topic_configs
from deploy.cli_output import emit_json, output_options, print_lines, wants_json
from protocol.errors import NetworkError, OdradekError, UsageError, for_code


def add_parser(sub: Any, client: argparse.ArgumentParser) -> None:
    p = sub.add_parser("topics", help="create, list, describe and delete topics")
    tsub = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    create = tsub.add_parser("create", parents=[client], help="create a topic")
    create.add_argument("name", metavar="NAME")
    counts = create.add_mutually_exclusive_group(required=True)
    counts.add_argument("--partitions", type=positive_int)
    create.add_argument("--replication-factor", type=positive_int, help="1 when not given")
    counts.add_argument(
        "--replica-assignment", type=topics_alter_cli.parse_replica_assignment, metavar="1:2,2:3",
        help="each partition's replicas instead of --partitions and --replication-factor, as "
        "kafka-topics.sh: ',' between partitions, ':' between a partition's brokers",
    )  # fmt: skip
    create.add_argument(
        "--config", action="append", metavar="KEY=VALUE", help="a topic config (repeatable)"
    )
    create.set_defaults(func=cmd_topics_create)

    listing = [client, output_options(argparse.SUPPRESS), internal_options()]
    lst = tsub.add_parser("list", parents=listing, help="list topic names")
    lst.set_defaults(func=cmd_topics_list)

    describe = tsub.add_parser("describe", parents=listing, help="partitions, leaders, ISR")
    describe.add_argument("name", metavar="NAME", nargs="?")
    describe.add_argument(
        "--offsets", action="store_true", help="add each partition's log start offset and HW"
    )
    describe.set_defaults(func=cmd_topics_describe)

    delete = tsub.add_parser("delete", parents=[client], help="delete topics")
    delete.add_argument("names", metavar="NAME", nargs="+")
    delete.set_defaults(func=cmd_topics_delete)
    leaders_cli.add_parsers(tsub, client)  # elect-leaders, reassign
    records_cli.add_parsers(tsub, client)  # delete-records
    topics_alter_cli.add_parsers(tsub, client)  # alter-config, add-partitions


def internal_options() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--exclude-internal", action="store_true",
        help="leave out internal topics (__consumer_offsets, __transaction_state), which are "
        "listed by default, as kafka-topics.sh does",
    )  # fmt: skip
    return options


def _new_topic(args: argparse.Namespace) -> Any:
    """The topic asked: counts, or a replica assignment and neither count (kafka-topics.sh)."""
    from client.types import NewTopic

    configs = parse_topic_configs(args.config)
    if args.replica_assignment is not None:  # argparse refuses it with --partitions
        if args.replication_factor is not None:
            raise UsageError(
                "--replica-assignment gives each partition's replicas: leave out "
                "--replication-factor"
            )
        return NewTopic(args.name, -1, -1, configs, args.replica_assignment)
    return NewTopic(args.name, args.partitions, args.replication_factor or 1, configs)


def cmd_topics_create(args: argparse.Namespace) -> int:
    topic = _new_topic(args)
    rf = len(topic.replica_assignment[0]) if topic.replica_assignment else topic.replication_factor
    with admin_from_args(args) as admin:
        admin.create_topics([topic])
        warning = wait_notes.min_insync_warning(admin, args.name, rf)
    print(f"Created topic {args.name}.")
    if warning:
        progress(warning)
    return 0


def cmd_topics_list(args: argparse.Namespace) -> int:
    """Internal topics too, unless --exclude-internal: kafka-topics.sh --list's rule."""
    with admin_from_args(args) as admin:
        if wants_json(args):  # with each topic's partition count and replication factor
            described = cli_views.shown_topics(admin.describe_topics(None), args.exclude_internal)
            emit_json(cli_views.topics_list_doc(described))
            return 0
        names = admin.list_topics(include_internal=not args.exclude_internal)
    print_lines(sorted(names))  # one column: names only, as kafka-topics.sh --list
    return 0


def cmd_topics_describe(args: argparse.Namespace) -> int:
    with admin_from_args(args) as admin:
        descriptions = admin.describe_topics([args.name] if args.name else None)
        if not args.name:  # every topic: internal ones unless --exclude-internal
            descriptions = cli_views.shown_topics(descriptions, args.exclude_internal)
        for d in descriptions:
            if d.error_code:
                raise for_code(d.error_code)(f"topic {d.name!r}")
        names = [d.name for d in descriptions]
        entries = admin.describe_configs(names) if names else {}
        offsets = records_cli.partition_offsets(admin, descriptions) if args.offsets else None
        notes = leaderless_notes(admin, descriptions, entries)
    own = {
        d.name: {e.name: e.value for e in entries.get(d.name, {}).values() if not e.is_default}
        for d in descriptions
    }
    ordered = sorted(descriptions, key=lambda d: d.name)
    if wants_json(args):
        topics = [cli_views.topic_doc(d, own[d.name], offsets) for d in ordered]
        emit_json({"topics": topics, "notes": notes})
    else:
        headers = {d.name: format_topic(d, own[d.name])[0] for d in ordered}
        print_lines(cli_views.describe_lines(ordered, headers, offsets))
    for note in notes:  # on stderr: stdout keeps seed 004's listing, one line per partition
        progress(note)
    return 0


def cmd_topics_delete(args: argparse.Namespace) -> int:
    """Each topic in its own request: one that cannot go (unknown, ...) gets its error line
    and the others still go; 1 when any failed."""
    failed = 0
    with admin_from_args(args) as admin:
        for name in dict.fromkeys(args.names):
            try:
                admin.delete_topics([name])
                print(f"Deleted topic {name}.", flush=True)
            except NetworkError:
                raise  # no broker to ask: the same for every topic
            except OdradekError as exc:
                print_error(str(exc))
                failed += 1
    return 1 if failed else 0
