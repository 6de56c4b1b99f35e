"""deploy/acls_cli.py's pure parts: kafka-acls.sh's flags into bindings and filters."""

from __future__ import annotations

import pytest

from deploy.acls_cli import AclArgs, bindings_to_add, filters_for, listing_lines
from deploy.cli import build_parser
from protocol.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from protocol.errors import UsageError
from protocol.principal import KafkaPrincipal

Op = AclOperation
T, G, C, TX = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
APP = KafkaPrincipal.user("app")


def parse(*argv: str) -> AclArgs:
    return AclArgs.of(build_parser().parse_args(["acls", *argv]))


def test_operations_principals_hosts_multiply_out() -> None:
    got = bindings_to_add(
        parse(
            "add",
            "--allow-principal",
            "User:app",
            "--allow-principal",
            "User:ops",
            "--allow-host",
            "10.0.0.1",
            "--operation",
            "read",
            "--operation",
            "Describe",
            "--topic",
            "orders",
            "--resource-pattern-type",
            "PREFIXED",
        )
    )
    assert len(got) == 4
    assert {(str(b.principal), b.operation) for b in got} == {
        ("User:app", Op.READ),
        ("User:app", Op.DESCRIBE),
        ("User:ops", Op.READ),
        ("User:ops", Op.DESCRIBE),
    }
    assert {(b.host, b.pattern_type, b.permission) for b in got} == {("10.0.0.1", PRE, ALLOW)}


def test_deny_and_default_operation_all_and_host_star() -> None:
    (b,) = bindings_to_add(parse("add", "--deny-principal", "User:bob", "--group", "g"))
    assert b == AclBinding(G, "g", LIT, KafkaPrincipal.user("bob"), "*", Op.ALL, DENY)


def test_producer_and_consumer_expand_as_kafka_acls_sh() -> None:
    got = bindings_to_add(
        parse(
            "add",
            "--producer",
            "--allow-principal",
            "User:app",
            "--topic",
            "t",
            "--transactional-id",
            "tx",
            "--idempotent",
        )
    )
    assert {(b.resource_type, b.name, b.operation) for b in got} == {
        (T, "t", Op.WRITE),
        (T, "t", Op.DESCRIBE),
        (T, "t", Op.CREATE),
        (TX, "tx", Op.WRITE),
        (TX, "tx", Op.DESCRIBE),
        (C, "kafka-cluster", Op.IDEMPOTENT_WRITE),
    }
    got = bindings_to_add(
        parse("add", "--consumer", "--allow-principal", "User:app", "--topic", "t", "--group", "g")
    )
    assert {(b.resource_type, b.name, b.operation) for b in got} == {
        (T, "t", Op.READ),
        (T, "t", Op.DESCRIBE),
        (G, "g", Op.READ),
    }
    with pytest.raises(UsageError, match="--consumer needs --topic and --group"):
        bindings_to_add(parse("add", "--consumer", "--allow-principal", "User:a", "--topic", "t"))


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["add", "--topic", "t"], "needs --allow-principal or --deny-principal"),
        (["add", "--allow-principal", "alice", "--topic", "t"], "<type>:<name>"),
        (["add", "--allow-principal", "User:a"], "name a resource"),
        (
            ["add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"],
            "'Fly' is not one of",
        ),
        (
            ["add", "--allow-principal", "User:a", "--operation", "Write", "--group", "g"],
            "Group has no Write operation",
        ),
        (
            [
                "add",
                "--allow-principal",
                "User:a",
                "--topic",
                "t",
                "--resource-pattern-type",
                "match",
            ],
            "add takes literal or prefixed",
        ),
        (["add", "--allow-principal", "User:a", "--topic", ""], "must not be empty"),
    ],
)
def test_mistakes_are_one_usage_line(argv: list[str], why: str) -> None:
    with pytest.raises(UsageError, match=why):
        bindings_to_add(parse(*argv))


def test_filters_for_list_and_remove() -> None:
    assert filters_for(parse("list")) == [AclBindingFilter()]
    assert filters_for(parse("list"), ["User:app"]) == [AclBindingFilter(principal=APP)]
    assert filters_for(parse("list", "--topic", "t", "--resource-pattern-type", "match")) == [
        AclBindingFilter(T, "t", PatternType.MATCH)
    ]
    got = filters_for(
        parse("remove", "--topic", "t", "--allow-principal", "User:app", "--operation", "Read")
    )
    assert got == [AclBindingFilter(T, "t", LIT, APP, None, Op.READ, ALLOW)]


def test_listing_lines_are_kafkas() -> None:
    lines = listing_lines([AclBinding(T, "t", LIT, APP, "*", Op.READ, ALLOW)])
    assert lines == [
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, "
        "patternType=LITERAL)`: ",
        " \t(principal=User:app, host=*, operation=READ, permissionType=ALLOW) ",
        "",
    ]
