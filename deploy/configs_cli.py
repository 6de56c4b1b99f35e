"""`odradek configs describe (--topic T | --group G | --broker N) [--synonyms] [--docs]`: every
config of a topic, a consumer group (KIP-848's consumer.session.timeout.ms, ...) or a broker
with its value and where the value comes from (Kafka's sources: DYNAMIC_TOPIC_CONFIG, a topic's
own override; DYNAMIC_GROUP_CONFIG, a group's; DYNAMIC_BROKER_CONFIG and
DYNAMIC_DEFAULT_BROKER_CONFIG, a dynamic broker config, the broker's own or the cluster
default's (docs/configs.md); STATIC_BROKER_CONFIG, the broker's config file; DEFAULT_CONFIG, the
built-in default), as `kafka-configs.sh --describe --all` lists them.
`odradek configs alter (--topic T | --group G) --set K=V --delete K [--validate-only]`, as
`kafka-configs.sh --alter --entity-type topics|groups`: changes only the configs named, then
prints the resource's own overrides (`topics alter-config` is the same for a topic).

Aligned columns NAME VALUE SOURCE, plus SYNONYMS (each place the value may come from, first
wins: `name=value (SOURCE)`) with `--synonyms`, and DOC with `--docs`. `-o json`: one
document {resource, name, configs: [{name, value, source, read_only, sensitive, type,
synonyms, documentation}]}. The broker answers from the topic-config registry
(protocol/topic_config.py); this module only asks and prints (client.Admin does the call).
"""

from __future__ import annotations

import argparse
from typing import Any

from deploy.cli_common import admin_from_args
from deploy.cli_output import emit_json, output_options, print_lines, table_lines, wants_json
from deploy.topics_alter_cli import parse_config_changes
from protocol.api.admin import (
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    SOURCE_DYNAMIC_BROKER_CONFIG,
    SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
    SOURCE_GROUP_CONFIG,
    SOURCE_NAMES,
    SOURCE_TOPIC_CONFIG,
    ConfigEntry,
)
from protocol.topic_config import TYPE_CODES

TYPE_NAMES = {code: name for name, code in TYPE_CODES.items()}
KIND_NAMES = {RESOURCE_TOPIC: "topic", RESOURCE_GROUP: "group", RESOURCE_BROKER: "broker"}


def own_sources(kind: int, name: str) -> tuple[int, ...]:
    """The sources of the resource's own overrides: a topic's, a group's, a broker's dynamic
    configs, or the cluster default's (the broker resource "")."""
    if kind == RESOURCE_BROKER:
        return (SOURCE_DYNAMIC_BROKER_CONFIG,) if name else (SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,)
    return (SOURCE_TOPIC_CONFIG,) if kind == RESOURCE_TOPIC else (SOURCE_GROUP_CONFIG,)


def add_parser(sub: Any, client: argparse.ArgumentParser) -> None:
    p = sub.add_parser("configs", help="a topic's, a group's or a broker's configs")
    csub = p.add_subparsers(dest="configs_command", metavar="ACTION", required=True)
    describe = csub.add_parser(
        "describe", parents=[client, output_options(argparse.SUPPRESS)],
        help="every config with its value and source",
    )  # fmt: skip
    _add_target(describe)
    describe.add_argument("--synonyms", action="store_true", help="where else each may come from")
    describe.add_argument("--docs", action="store_true", help="one line of doc per config")
    describe.set_defaults(func=cmd_describe)

    alter = csub.add_parser(
        "alter", parents=[client, output_options(argparse.SUPPRESS)],
        help="set or delete some of a topic's, a group's or the brokers' dynamic configs",
    )  # fmt: skip
    _add_target(alter)
    alter.add_argument("--set", action="append", dest="set_configs", metavar="KEY=VALUE",
                       help="set a config (repeatable)")  # fmt: skip
    alter.add_argument("--delete", action="append", dest="delete_configs", metavar="KEY",
                       help="back to the broker's setting (repeatable)")  # fmt: skip
    alter.add_argument("--validate-only", action="store_true", help="check, change nothing")
    alter.set_defaults(func=cmd_alter)


def _add_target(parser: argparse.ArgumentParser) -> None:
    """Exactly one of --topic, --group, --broker, --broker-defaults (`target_of` reads it)."""
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", metavar="TOPIC")
    which.add_argument("--group", metavar="GROUP")
    which.add_argument("--broker", type=int, metavar="ID", help="one broker's configs")
    which.add_argument("--broker-defaults", action="store_true",
                       help="the cluster default of the dynamic broker configs")  # fmt: skip


def target_of(args: argparse.Namespace) -> tuple[int, str]:
    """(resource type, name) of --topic, --group, --broker or --broker-defaults (the broker
    resource "", Kafka's cluster default); argparse makes it exactly one."""
    if args.broker_defaults:
        return RESOURCE_BROKER, ""
    if args.topic is not None:
        return RESOURCE_TOPIC, args.topic
    if args.group is not None:
        return RESOURCE_GROUP, args.group
    return RESOURCE_BROKER, str(args.broker)


def cmd_describe(args: argparse.Namespace) -> int:
    kind, name = target_of(args)
    with admin_from_args(args) as admin:
        entries = admin.describe_config_entries(kind, name, args.synonyms, args.docs)
    entries = sorted(entries, key=lambda e: e.name)
    if wants_json(args):
        emit_json({"resource": KIND_NAMES[kind], "name": name,
                   "configs": [entry_doc(e) for e in entries]})  # fmt: skip
        return 0
    print_lines(describe_lines(entries, args.synonyms, args.docs))
    return 0


def cmd_alter(args: argparse.Namespace) -> int:
    configs, removed = parse_config_changes(args.set_configs, args.delete_configs)
    kind, name = target_of(args)
    with admin_from_args(args) as admin:
        admin.alter_configs(name, configs, removed, args.validate_only, kind)
        entries = admin.describe_config_entries(kind, name)
    own = {e.name: e.value for e in sorted(entries, key=lambda e: e.name)
           if e.source in own_sources(kind, name)}  # fmt: skip
    if wants_json(args):
        emit_json({"resource": KIND_NAMES[kind], "name": name,
                   "validate_only": args.validate_only, "configs": own})  # fmt: skip
        return 0
    listed = ",".join(f"{k}={v}" for k, v in own.items())
    label = f"{KIND_NAMES[kind]} {name}" if name else "the broker defaults"
    done = "Valid; nothing changed." if args.validate_only else f"Altered {label}."
    print(f"{done} Configs: {listed}".rstrip())
    return 0


def describe_lines(entries: list[ConfigEntry], synonyms: bool, docs: bool) -> list[str]:
    """The table (pure): NAME VALUE SOURCE [SYNONYMS] [DOC]."""
    headers = ["NAME", "VALUE", "SOURCE"] + (["SYNONYMS"] if synonyms else [])
    headers += ["DOC"] if docs else []
    rows = []
    for e in entries:
        row = [e.name, _value(e), source_name(e.source)]
        if synonyms:
            row.append(", ".join(f"{s.name}={s.value} ({source_name(s.source)})"
                                 for s in e.synonyms) or None)  # fmt: skip
        if docs:
            row.append(e.documentation)
        rows.append(row)
    return table_lines(headers, rows)


def entry_doc(e: ConfigEntry) -> dict[str, Any]:
    return {
        "name": e.name, "value": _value(e), "source": source_name(e.source),
        "read_only": e.read_only, "sensitive": e.is_sensitive,
        "type": TYPE_NAMES.get(e.config_type, "UNKNOWN"),
        "synonyms": [{"name": s.name, "value": s.value, "source": source_name(s.source)}
                     for s in e.synonyms],
        "documentation": e.documentation,
    }  # fmt: skip


def source_name(source: int) -> str:
    return SOURCE_NAMES.get(source, f"SOURCE_{source}")


def _value(e: ConfigEntry) -> str | None:
    return "(sensitive)" if e.is_sensitive else e.value
