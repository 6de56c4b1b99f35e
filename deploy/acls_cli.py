"""`odradek acls add|list|remove`: Kafka's ACLs in the flags of Kafka's `kafka-acls.sh`.

    odradek acls add --allow-principal User:alice --operation Read --operation Describe \\
        --topic orders [--resource-pattern-type prefixed]
    odradek acls add --producer --allow-principal User:app --topic orders [--transactional-id t]
    odradek acls add --consumer --allow-principal User:app --topic orders --group billing
    odradek acls add --deny-principal User:bob --deny-host 10.0.0.9 --operation Write --topic orders
    odradek acls list [--topic orders [--resource-pattern-type match]] [--principal User:alice]
    odradek acls remove --topic orders [--allow-principal User:alice --operation Read] --force

As kafka-acls.sh: resources are `--topic`, `--group`, `--transactional-id` (each repeatable)
and `--cluster`; `--operation` is repeatable (Kafka's names, any case; default All); hosts
default to `*` for the principals given; `--producer` is Write, Describe and Create on the
topics (Write and Describe on the transactional ids, IdempotentWrite on the cluster with
`--idempotent`), `--consumer` is Read and Describe on the topics and Read on the groups. An
operation a resource type does not have is refused, naming those it has.
`--resource-pattern-type`: literal (default) or prefixed to add; for list and remove also
any (any pattern type, that exact name) or match (every pattern that applies to the name).
`remove` without principals removes every ACL of the resources named; it asks for
confirmation unless `--force`. `list` prints Kafka's lines ("Current ACLs for resource ...")
or `-o json` ({"acls": [{resource_type, name, pattern_type, principal, host, operation,
permission}]}). The building of bindings and filters is pure (tested without a cluster).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from deploy.cli_common import admin_from_args
from deploy.cli_output import emit_json, output_options, print_lines
from protocol.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    parse_enum,
    pascal_name,
)
from protocol.errors import OdradekError, UsageError
from protocol.principal import KafkaPrincipal

PATTERN_TYPES = ("literal", "prefixed", "any", "match")
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation


def add_parser(sub: Any, client: argparse.ArgumentParser) -> None:
    p = sub.add_parser("acls", help="Kafka's ACLs: add, list, remove (kafka-acls.sh's flags)")
    asub = p.add_subparsers(dest="acls_command", metavar="ACTION", required=True)
    add = asub.add_parser("add", parents=[client], help="add ACLs")
    _flags(add)
    add.add_argument("--producer", action="store_true", help="a producer's ACLs on the topics")
    add.add_argument("--consumer", action="store_true", help="a consumer's ACLs (topics, groups)")
    add.add_argument("--idempotent", action="store_true", help="with --producer: IdempotentWrite")
    add.set_defaults(func=cmd_add)
    lst = asub.add_parser(
        "list", parents=[client, output_options(argparse.SUPPRESS)], help="list ACLs"
    )
    _flags(lst)
    lst.add_argument("--principal", action="append", default=[], help="only this principal's")
    lst.set_defaults(func=cmd_list)
    remove = asub.add_parser("remove", parents=[client], help="remove ACLs")
    _flags(remove)
    remove.add_argument("--force", action="store_true", help="do not ask for confirmation")
    remove.set_defaults(func=cmd_remove)


def _flags(p: argparse.ArgumentParser) -> None:
    for flag, what in (
        ("--allow-principal", "principal allowed (User:NAME)"),
        ("--deny-principal", "principal denied"),
        ("--allow-host", "host the allow applies from (default *)"),
        ("--deny-host", "host the deny applies from (default *)"),
        ("--operation", "Read, Write, Create, Delete, Alter, Describe, ..."),
        ("--topic", "a topic (or prefix)"),
        ("--group", "a consumer group"),
        ("--transactional-id", "a transactional id"),
    ):
        p.add_argument(flag, action="append", default=[], help=what)
    p.add_argument("--cluster", action="store_true", help="the cluster resource")
    p.add_argument(
        "--resource-pattern-type",
        choices=PATTERN_TYPES,
        default="literal",
        type=str.lower,
        help="literal (default), prefixed; any, match (list/remove)",
    )


@dataclass(frozen=True)
class AclArgs:
    """The flags, as the pure functions below read them."""

    allow_principals: tuple[str, ...] = ()
    deny_principals: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    deny_hosts: tuple[str, ...] = ()
    operations: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    transactional_ids: tuple[str, ...] = ()
    cluster: bool = False
    pattern_type: str = "literal"
    producer: bool = False
    consumer: bool = False
    idempotent: bool = False

    @classmethod
    def of(cls, args: argparse.Namespace) -> AclArgs:
        return cls(
            tuple(args.allow_principal),
            tuple(args.deny_principal),
            tuple(args.allow_host),
            tuple(args.deny_host),
            tuple(args.operation),
            tuple(args.topic),
            tuple(args.group),
            tuple(args.transactional_id),
            args.cluster,
            args.resource_pattern_type,
            getattr(args, "producer", False),
            getattr(args, "consumer", False),
            getattr(args, "idempotent", False),
        )

    def resources(self) -> list[tuple[ResourceType, str]]:
        out = [(ResourceType.TOPIC, n) for n in self.topics]
        out += [(ResourceType.GROUP, n) for n in self.groups]
        out += [(ResourceType.TRANSACTIONAL_ID, n) for n in self.transactional_ids]
        if self.cluster:
            out.append((ResourceType.CLUSTER, CLUSTER_NAME))
        for _, name in out:
            if not name:
                raise UsageError("a resource name must not be empty")
        return out


def _principals(texts: Iterable[str]) -> list[KafkaPrincipal]:
    try:
        return [KafkaPrincipal.parse(t) for t in texts]
    except OdradekError as exc:
        raise UsageError(f"{exc.message} (e.g. User:alice)") from None


def _operations(texts: Iterable[str]) -> list[AclOperation]:
    ops: list[AclOperation] = []
    for text in texts:
        try:
            op = parse_enum(AclOperation, text)
        except OdradekError:
            op = AclOperation.UNKNOWN
        if op in (AclOperation.UNKNOWN, AclOperation.ANY):
            names = ", ".join(pascal_name(o) for o in AclOperation if o > AclOperation.ANY)
            raise UsageError(f"--operation {text!r} is not one of {names}")
        ops.append(op)
    return ops


def _pattern(text: str, adding: bool) -> PatternType:
    kind = {
        "literal": PatternType.LITERAL,
        "prefixed": PatternType.PREFIXED,
        "any": PatternType.ANY,
        "match": PatternType.MATCH,
    }[text]
    if adding and kind not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise UsageError(
            f"--resource-pattern-type {text} is for list and remove; add takes literal or prefixed"
        )
    return kind


def _convenience(a: AclArgs) -> dict[tuple[ResourceType, str], list[AclOperation]]:
    """kafka-acls.sh's --producer / --consumer expansion: resource -> operations."""
    out: dict[tuple[ResourceType, str], list[AclOperation]] = {}
    if a.producer:
        if not a.topics:
            raise UsageError("--producer needs --topic")
        for t in a.topics:
            out[(ResourceType.TOPIC, t)] = [Op.WRITE, Op.DESCRIBE, Op.CREATE]
        for t in a.transactional_ids:
            out[(ResourceType.TRANSACTIONAL_ID, t)] = [Op.WRITE, Op.DESCRIBE]
        if a.idempotent:
            out[(ResourceType.CLUSTER, CLUSTER_NAME)] = [Op.IDEMPOTENT_WRITE]
    if a.consumer:
        if not a.topics or not a.groups:
            raise UsageError("--consumer needs --topic and --group")
        for t in a.topics:
            out.setdefault((ResourceType.TOPIC, t), []).extend([Op.READ, Op.DESCRIBE])
        for g in a.groups:
            out[(ResourceType.GROUP, g)] = [Op.READ]
    return out


def bindings_to_add(a: AclArgs) -> list[AclBinding]:
    """The bindings `odradek acls add` creates (pure; UsageError says what is wrong)."""
    allow, deny = _principals(a.allow_principals), _principals(a.deny_principals)
    if not allow and not deny:
        raise UsageError("add needs --allow-principal or --deny-principal")
    pattern = _pattern(a.pattern_type, adding=True)
    if a.producer or a.consumer:
        if a.operations or deny:
            raise UsageError(
                "--producer/--consumer take --allow-principal, not --operation or --deny-principal"
            )
        targets = _convenience(a)
    else:
        resources = a.resources()
        if not resources:
            raise UsageError("name a resource: --topic, --group, --transactional-id or --cluster")
        ops = _operations(a.operations) or [AclOperation.ALL]
        targets = {r: ops for r in resources}
    out: list[AclBinding] = []
    for (kind, name), ops in targets.items():
        _check_supported(kind, ops)
        for perm, principals, hosts in ((ALLOW, allow, a.allow_hosts), (DENY, deny, a.deny_hosts)):
            for p in principals:
                for host in hosts or ("*",):
                    out += [AclBinding(kind, name, pattern, p, host, op, perm) for op in ops]
    return list(dict.fromkeys(out))


def _check_supported(kind: ResourceType, ops: list[AclOperation]) -> None:
    allowed = SUPPORTED_OPERATIONS[kind] | {AclOperation.ALL}
    bad = [o for o in ops if o not in allowed]
    if bad:
        names = ", ".join(sorted(pascal_name(o) for o in allowed))
        raise UsageError(
            f"{pascal_name(kind)} has no {pascal_name(bad[0])} operation; it has: {names}"
        )


def filters_for(a: AclArgs, principals: Iterable[str] = ()) -> list[AclBindingFilter]:
    """The filters `list` and `remove` use (pure): one per resource named (every ACL when
    none), narrowed to the principals, hosts and operations given."""
    pattern = _pattern(a.pattern_type, adding=False)
    resources: list[tuple[ResourceType, str | None]] = list(a.resources())
    if not resources:
        resources = [(ResourceType.ANY, None)]
        pattern = PatternType.ANY if a.pattern_type == "literal" else pattern
    entries: list[tuple[KafkaPrincipal | None, str | None, AclPermissionType]] = []
    for perm, texts, hosts in (
        (ALLOW, a.allow_principals, a.allow_hosts),
        (DENY, a.deny_principals, a.deny_hosts),
    ):
        entries += [(p, h, perm) for p in _principals(texts) for h in (hosts or (None,))]
    entries += [(p, None, AclPermissionType.ANY) for p in _principals(principals)]
    if not entries:
        entries = [(None, None, AclPermissionType.ANY)]
    ops = _operations(a.operations) or [AclOperation.ANY]
    return [
        AclBindingFilter(kind, name, pattern, p, host, op, perm)
        for kind, name in resources
        for p, host, perm in entries
        for op in ops
    ]


def listing_lines(bindings: Iterable[AclBinding]) -> list[str]:
    """Kafka's kafka-acls.sh --list lines, one block per resource pattern."""
    by_pattern: dict[tuple[int, str, int], list[AclBinding]] = {}
    for b in bindings:
        by_pattern.setdefault((b.resource_type, b.name, b.pattern_type), []).append(b)
    lines: list[str] = []
    for (kind, name, pattern), group in sorted(by_pattern.items()):
        lines.append(
            f"Current ACLs for resource `ResourcePattern(resourceType="
            f"{ResourceType(kind).name}, name={name}, "
            f"patternType={PatternType(pattern).name})`: "
        )
        lines += [f" \t{b.entry} " for b in group]
        lines.append("")
    return lines


def _json(b: AclBinding) -> dict[str, str]:
    return {
        "resource_type": pascal_name(b.resource_type),
        "name": b.name,
        "pattern_type": b.pattern_type.name,
        "principal": str(b.principal),
        "host": b.host,
        "operation": pascal_name(b.operation),
        "permission": pascal_name(b.permission),
    }


def cmd_add(args: argparse.Namespace) -> int:
    bindings = bindings_to_add(AclArgs.of(args))
    with admin_from_args(args) as admin:
        admin.create_acls(bindings)
    print(f"Adding ACLs ({len(bindings)}):")
    print_lines(listing_lines(bindings))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    filters = filters_for(AclArgs.of(args), args.principal)
    found: dict[AclBinding, None] = {}
    with admin_from_args(args) as admin:
        for f in filters:
            found.update((b, None) for b in admin.describe_acls(f))
    if getattr(args, "output", None) == "json":
        emit_json({"acls": [_json(b) for b in found]})
        return 0
    print_lines(listing_lines(found))
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    a = AclArgs.of(args)
    if not a.resources():
        raise UsageError(
            "name the resource(s) to remove ACLs from: --topic, --group, "
            "--transactional-id or --cluster"
        )
    filters = filters_for(a)
    if not args.force and not _confirm(filters):
        print("nothing removed")
        return 1
    with admin_from_args(args) as admin:
        removed = admin.delete_acls(filters)
    print(f"Removed ACLs ({len(removed)}):")
    print_lines(listing_lines(removed))
    return 0


def _confirm(filters: list[AclBindingFilter]) -> bool:
    if not sys.stdin.isatty():
        raise UsageError("remove asks for confirmation: give --force when not on a terminal")
    shown = ", ".join(f"{f.resource_type.name}:{f.name}" for f in filters)
    answer = input(f"Are you sure you want to remove ACLs from {shown}? (y/n) ")
    return answer.strip().lower() in ("y", "yes")
