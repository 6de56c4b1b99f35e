"""`odradek quotas alter|describe`: client quotas (KIP-55/257) in the flags of Kafka's
`kafka-configs.sh --entity-type users|clients`.

    odradek quotas alter --entity-type users --entity-name alice \\
        --add-config producer_byte_rate=1024,consumer_byte_rate=2048
    odradek quotas alter --entity-type users --entity-name alice \\
        --entity-type clients --entity-name app --delete-config producer_byte_rate
    odradek quotas alter --entity-type clients --entity-default --add-config request_percentage=50
    odradek quotas describe [--entity-type users [--entity-name alice | --entity-default]] ...

As kafka-configs.sh, `--entity-type` may be given twice (users then clients) for a
(user, client-id) entity, each followed by its `--entity-name` or `--entity-default`. Describe
lists the entities of exactly the type(s) given (all of a type without a name, the one named,
or the default); without any type, every entity. Output: ENTITY QUOTA VALUE lines, or
`-o json`: one document {"quotas": [{user, client_id, quotas: {key: value}}]} (user/client_id
null when not part of the entity, "<default>" for a default). The broker validates keys and
values (INVALID_REQUEST says why).
"""

from __future__ import annotations

import argparse
from typing import Any

from client.quota_admin import ANY
from deploy.cli_common import admin_from_args
from deploy.cli_output import emit_json, output_options, print_lines, table_lines, wants_json
from protocol.errors import UsageError
from protocol.quota import DEFAULT, QUOTA_KEYS, QuotaEntity

ENTITY_TYPES = {"users": "user", "clients": "client-id"}


class _EntityAction(argparse.Action):
    """Keeps --entity-type/--entity-name/--entity-default in order, as kafka-configs.sh."""

    def __call__(self, parser: Any, ns: Any, values: Any, option: str | None = None) -> None:
        seq = list(getattr(ns, "entities", None) or [])
        seq.append((self.dest, values))
        ns.entities = seq


def add_parser(sub: Any, client: argparse.ArgumentParser) -> None:
    p = sub.add_parser("quotas", help="client quotas of users and client ids (KIP-55)")
    qsub = p.add_subparsers(dest="quotas_command", metavar="ACTION", required=True)
    alter = qsub.add_parser("alter", parents=[client], help="set or remove quotas of an entity")
    _entity_flags(alter)
    alter.add_argument("--add-config", metavar="K=V,...", help="quotas to set")
    alter.add_argument("--delete-config", metavar="K,...", help="quotas to remove")
    alter.add_argument("--validate-only", action="store_true", help="check, change nothing")
    alter.set_defaults(func=cmd_alter)
    describe = qsub.add_parser(
        "describe", parents=[client, output_options(argparse.SUPPRESS)],
        help="entities and their quotas",
    )  # fmt: skip
    _entity_flags(describe)
    describe.set_defaults(func=cmd_describe)


def _entity_flags(p: argparse.ArgumentParser) -> None:
    p.set_defaults(entities=[])
    p.add_argument(
        "--entity-type", dest="type", action=_EntityAction, choices=sorted(ENTITY_TYPES),
        help="users or clients (twice for both)",
    )  # fmt: skip
    p.add_argument("--entity-name", dest="name", action=_EntityAction, metavar="NAME")
    p.add_argument("--entity-default", dest="default", action=_EntityAction, nargs=0,
                   help="the default entity of the type before it")  # fmt: skip


def parse_entities(seq: list[tuple[str, Any]]) -> dict[str, str | None]:
    """The ordered flags -> {"user"/"client-id": name, DEFAULT, or None (any)} (pure)."""
    out: dict[str, str | None] = {}
    current: str | None = None
    for dest, value in seq:
        if dest == "type":
            current = ENTITY_TYPES[value]
            if current in out:
                raise UsageError(f"--entity-type {value} given twice")
            out[current] = None
        elif current is None:
            raise UsageError("--entity-name/--entity-default must follow an --entity-type")
        elif out[current] is not None:
            raise UsageError(f"two names for the {current} entity")
        else:
            out[current] = DEFAULT if dest == "default" else str(value)
            if out[current] == "":
                raise UsageError("--entity-name must not be empty")
    return out


def parse_add_config(text: str | None) -> dict[str, float]:
    """`k=v,k2=v2` -> {k: v}; a UsageError for a malformed pair or a non-number (pure)."""
    out: dict[str, float] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--add-config: {item!r} is not KEY=VALUE")
        try:
            out[key] = float(value)
        except ValueError:
            raise UsageError(f"--add-config: {key} must be a number, not {value!r}") from None
    return out


def cmd_alter(args: argparse.Namespace) -> int:
    wanted = parse_entities(args.entities)
    if not wanted or any(v is None for v in wanted.values()):
        raise UsageError("alter needs --entity-type with --entity-name or --entity-default")
    entity = QuotaEntity(wanted.get("user"), wanted.get("client-id"))
    adds = parse_add_config(args.add_config)
    removes = [k.strip() for k in (args.delete_config or "").split(",") if k.strip()]
    if not adds and not removes:
        raise UsageError(f"nothing to change: give --add-config or --delete-config ({_keys()})")
    with admin_from_args(args) as admin:
        admin.alter_client_quotas(entity, adds, removes, args.validate_only)
    verb = "would be" if args.validate_only else "are"
    print(f"quotas of {entity} {verb} updated")
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    wanted = parse_entities(args.entities)
    named = {k: (ANY if v is None else v) for k, v in wanted.items()}
    strict = bool(wanted)  # as kafka-configs.sh: only entities of exactly the types given
    with admin_from_args(args) as admin:
        found = admin.describe_client_quotas(named.get("user"), named.get("client-id"), strict)
    rows = sorted(found.items(), key=lambda kv: kv[0].entity_path)
    if wants_json(args):
        emit_json({"quotas": [{"user": e.user, "client_id": e.client_id, "quotas": v}
                              for e, v in rows]})  # fmt: skip
        return 0
    print_lines(describe_lines(rows))
    return 0


def describe_lines(rows: list[tuple[QuotaEntity, dict[str, float]]]) -> list[str]:
    table = [[str(e), k, _number(v)] for e, values in rows for k, v in sorted(values.items())]
    return table_lines(["ENTITY", "QUOTA", "VALUE"], table)


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def _keys() -> str:
    return ", ".join(QUOTA_KEYS)
