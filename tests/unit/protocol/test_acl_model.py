"""protocol/acl.py: Kafka's codes and names, the filter matching rules, the ZooKeeper JSON."""

from __future__ import annotations

import json

import pytest

from protocol.acl import (
    AclBinding,
    AclBindingFilter,
    AclEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    decode_change,
    entries_from_json,
    entries_to_json,
    extended_change,
    literal_change,
    parse_enum,
    pascal_name,
)
from protocol.errors import InvalidRequestError
from protocol.principal import KafkaPrincipal

ALICE = KafkaPrincipal.user("alice")
T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def binding(
    kind: ResourceType = T,
    name: str = "orders",
    pattern: PatternType = LIT,
    principal: KafkaPrincipal = ALICE,
    host: str = "*",
    op: AclOperation = AclOperation.READ,
    perm: AclPermissionType = ALLOW,
) -> AclBinding:
    return AclBinding(kind, name, pattern, principal, host, op, perm)


def test_kafka_codes() -> None:
    assert [(r.name, r.value) for r in ResourceType] == [
        ("UNKNOWN", 0),
        ("ANY", 1),
        ("TOPIC", 2),
        ("GROUP", 3),
        ("CLUSTER", 4),
        ("TRANSACTIONAL_ID", 5),
        ("DELEGATION_TOKEN", 6),
        ("USER", 7),
    ]
    assert [(p.name, p.value) for p in PatternType] == [
        ("UNKNOWN", 0),
        ("ANY", 1),
        ("MATCH", 2),
        ("LITERAL", 3),
        ("PREFIXED", 4),
    ]
    assert AclOperation.IDEMPOTENT_WRITE == 12 and AclOperation.DESCRIBE_TOKENS == 14
    assert AclOperation.CLUSTER_ACTION == 9 and AclOperation.ALL == 2
    assert (AclPermissionType.ANY, DENY, ALLOW) == (1, 2, 3)


def test_names_are_kafkas_and_read_back_any_case() -> None:
    assert pascal_name(ResourceType.TRANSACTIONAL_ID) == "TransactionalId"
    assert pascal_name(AclOperation.DESCRIBE_CONFIGS) == "DescribeConfigs"
    for text in ("DescribeConfigs", "DESCRIBE_CONFIGS", "describe-configs", "describeconfigs"):
        assert parse_enum(AclOperation, text) == AclOperation.DESCRIBE_CONFIGS
    with pytest.raises(InvalidRequestError, match="unknown AclOperation 'Fly'"):
        parse_enum(AclOperation, "Fly")


@pytest.mark.parametrize(
    ("selector", "pattern", "expected"),
    [
        (AclBindingFilter(), ResourcePattern(T, "orders", LIT), True),
        (AclBindingFilter(resource_type=G), ResourcePattern(T, "orders", LIT), False),
        (AclBindingFilter(T, "orders"), ResourcePattern(T, "orders", LIT), True),
        (AclBindingFilter(T, "orders"), ResourcePattern(T, "orders", PRE), True),  # ANY: exact
        (AclBindingFilter(T, "orders"), ResourcePattern(T, "ord", PRE), False),
        (AclBindingFilter(T, "orders"), ResourcePattern(T, "*", LIT), False),
        (AclBindingFilter(T, "orders", LIT), ResourcePattern(T, "orders", PRE), False),
        (AclBindingFilter(T, "orders", PRE), ResourcePattern(T, "orders", PRE), True),
        (AclBindingFilter(T, "orders", PatternType.MATCH), ResourcePattern(T, "orders", LIT), True),
        (AclBindingFilter(T, "orders", PatternType.MATCH), ResourcePattern(T, "*", LIT), True),
        (AclBindingFilter(T, "orders", PatternType.MATCH), ResourcePattern(T, "ord", PRE), True),
        (AclBindingFilter(T, "orders", PatternType.MATCH), ResourcePattern(T, "orx", PRE), False),
        (AclBindingFilter(T, "orders", PatternType.MATCH), ResourcePattern(T, "order", LIT), False),
        (AclBindingFilter(T, None, PatternType.MATCH), ResourcePattern(T, "x", PRE), True),
    ],
)
def test_pattern_filter_rules(
    selector: AclBindingFilter, pattern: ResourcePattern, expected: bool
) -> None:
    assert selector.matches_pattern(pattern) is expected


def test_entry_filter_rules() -> None:
    entry = AclEntry(ALICE, "10.0.0.1", AclOperation.READ, ALLOW)
    assert AclBindingFilter().matches_entry(entry)
    assert AclBindingFilter(principal=ALICE, host="10.0.0.1").matches_entry(entry)
    assert not AclBindingFilter(principal=KafkaPrincipal.user("bob")).matches_entry(entry)
    assert not AclBindingFilter(host="*").matches_entry(entry)  # "*" is a value, not a wildcard
    assert not AclBindingFilter(operation=AclOperation.WRITE).matches_entry(entry)
    assert not AclBindingFilter(permission=DENY).matches_entry(entry)
    assert AclBindingFilter(operation=AclOperation.READ, permission=ALLOW).matches_entry(entry)


def test_unknown_filter_fields_are_invalid() -> None:
    AclBindingFilter().check()
    with pytest.raises(InvalidRequestError, match="unknown AclOperation"):
        AclBindingFilter(operation=AclOperation.UNKNOWN).check()


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (binding(kind=ResourceType.ANY), "invalid resource type ANY"),
        (binding(pattern=PatternType.MATCH), "invalid pattern type MATCH"),
        (binding(op=AclOperation.ANY), "invalid operation ANY"),
        (binding(perm=AclPermissionType.ANY), "invalid permission type ANY"),
        (binding(name=""), "invalid empty resource name"),
        (
            binding(kind=C, name="cluster"),
            "only valid name for the CLUSTER resource is kafka-cluster",
        ),
    ],
)
def test_creatable_checks(bad: AclBinding, why: str) -> None:
    with pytest.raises(InvalidRequestError, match=why):
        bad.check_creatable()
    binding(kind=C, name="kafka-cluster", op=AclOperation.ALTER).check_creatable()


def test_zookeeper_json_is_kafkas_both_ways() -> None:
    kafka_written = (
        b'{"version":1,"acls":[{"host":"10.0.0.9","permissionType":"Deny",'
        b'"operation":"DescribeConfigs","principal":"User:*"},{"principal":"User:alice",'
        b'"permissionType":"Allow","operation":"Read","host":"*"}]}'
    )
    entries = entries_from_json(kafka_written)
    assert entries == {
        AclEntry(ALICE, "*", AclOperation.READ, ALLOW),
        AclEntry(KafkaPrincipal.user("*"), "10.0.0.9", AclOperation.DESCRIBE_CONFIGS, DENY),
    }
    assert json.loads(entries_to_json(entries)) == json.loads(kafka_written)
    assert entries_from_json(entries_to_json(entries)) == entries
    assert entries_from_json(b"") == frozenset()
    with pytest.raises(ValueError, match="version 2"):
        entries_from_json(b'{"version":2,"acls":[]}')
    with pytest.raises(ValueError, match="not Kafka's ACL JSON"):
        entries_from_json(b'{"version":1,"acls":[{"principal":"alice"}]}')


def test_change_notifications_as_kafka_writes_them() -> None:
    literal = ResourcePattern(T, "orders:eu", LIT)
    assert literal_change(literal) == b"TOPIC:orders:eu"
    assert decode_change(b"TOPIC:orders:eu") == literal
    assert decode_change(b"Topic:orders") == ResourcePattern(T, "orders", LIT)
    prefixed = ResourcePattern(G, "app-", PRE)
    assert json.loads(extended_change(prefixed)) == {
        "version": 1,
        "resourceType": "GROUP",
        "name": "app-",
        "patternType": "PREFIXED",
    }
    assert decode_change(extended_change(prefixed)) == prefixed
    for bad in (b"nocolon", b"\xff\xfe", b'{"version":1}', b"Planet:x"):
        with pytest.raises(ValueError):
            decode_change(bad)
