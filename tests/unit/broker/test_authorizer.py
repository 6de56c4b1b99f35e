"""broker/security/authorizer.py: Kafka's decision, one semantic point per row, and its index."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest

from broker.security import authorizer as authz
from broker.security.authorizer import AclCache, Authorizer, decide, decide_any, parse_super_users
from protocol.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from protocol.errors import InvalidRequestError
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
ALICE, BOB, ADMIN = (KafkaPrincipal.user(n) for n in ("alice", "bob", "admin"))
ANYONE = KafkaPrincipal.user("*")
HOST = "10.0.0.1"


def acl(
    name: str = "orders",
    op: Op = Op.READ,
    perm: AclPermissionType = ALLOW,
    principal: KafkaPrincipal = ALICE,
    host: str = "*",
    pattern: PatternType = LIT,
    kind: ResourceType = T,
) -> AclBinding:
    return AclBinding(kind, name, pattern, principal, host, op, perm)


# (case, acls, principal, operation, resource type, name, allow_everyone, expected)
CASES = [
    ("no acls, default deny", [], ALICE, Op.READ, T, "orders", False, False),
    ("no acls, allow.everyone.if.no.acl.found", [], ALICE, Op.READ, T, "orders", True, True),
    (
        "acls for the resource exist: allow-everyone does not apply",
        [acl(principal=BOB)],
        ALICE,
        Op.READ,
        T,
        "orders",
        True,
        False,
    ),
    (
        "a wildcard acl counts as an acl for the resource",
        [acl("*", principal=BOB)],
        ALICE,
        Op.READ,
        T,
        "orders",
        True,
        False,
    ),
    (
        "a prefix acl counts as an acl for the resource",
        [acl("ord", principal=BOB, pattern=PRE)],
        ALICE,
        Op.READ,
        T,
        "orders",
        True,
        False,
    ),
    (
        "an acl on another topic does not",
        [acl("other", principal=BOB)],
        ALICE,
        Op.READ,
        T,
        "orders",
        True,
        True,
    ),
    ("allow read", [acl()], ALICE, Op.READ, T, "orders", False, True),
    ("allow read is not write", [acl()], ALICE, Op.WRITE, T, "orders", False, False),
    ("other principal", [acl()], BOB, Op.READ, T, "orders", False, False),
    ("deny wins over allow", [acl(), acl(perm=DENY)], ALICE, Op.READ, T, "orders", False, False),
    (
        "deny on wildcard principal wins",
        [acl(), acl(perm=DENY, principal=ANYONE)],
        ALICE,
        Op.READ,
        T,
        "orders",
        False,
        False,
    ),
    (
        "deny on wildcard resource wins",
        [acl(), acl("*", perm=DENY)],
        ALICE,
        Op.READ,
        T,
        "orders",
        False,
        False,
    ),
    (
        "deny on a prefix wins",
        [acl(), acl("or", perm=DENY, pattern=PRE)],
        ALICE,
        Op.READ,
        T,
        "orders",
        False,
        False,
    ),
    (
        "deny of another host does not apply",
        [acl(), acl(perm=DENY, host="10.9.9.9")],
        ALICE,
        Op.READ,
        T,
        "orders",
        False,
        True,
    ),
    (
        "deny of this host applies",
        [acl(), acl(perm=DENY, host=HOST)],
        ALICE,
        Op.READ,
        T,
        "orders",
        False,
        False,
    ),
    (
        "allow from another host only",
        [acl(host="10.9.9.9")],
        ALICE,
        Op.READ,
        T,
        "orders",
        False,
        False,
    ),
    ("allow from this host", [acl(host=HOST)], ALICE, Op.READ, T, "orders", False, True),
    ("wildcard principal User:*", [acl(principal=ANYONE)], BOB, Op.READ, T, "orders", False, True),
    ("wildcard resource *", [acl("*")], ALICE, Op.READ, T, "anything", False, True),
    ("prefixed pattern", [acl("ord", pattern=PRE)], ALICE, Op.READ, T, "orders", False, True),
    (
        "prefixed pattern, whole name",
        [acl("orders", pattern=PRE)],
        ALICE,
        Op.READ,
        T,
        "orders",
        False,
        True,
    ),
    (
        "prefixed pattern, not a prefix",
        [acl("ordx", pattern=PRE)],
        ALICE,
        Op.READ,
        T,
        "orders",
        False,
        False,
    ),
    (
        "prefixed * is a literal prefix '*', not a wildcard",
        [acl("*", pattern=PRE)],
        ALICE,
        Op.READ,
        T,
        "orders",
        False,
        False,
    ),
    ("literal is exact", [acl("order")], ALICE, Op.READ, T, "orders", False, False),
    ("resource type matters", [acl(kind=G)], ALICE, Op.READ, T, "orders", False, False),
    (
        "ALL allows every operation",
        [acl(op=Op.ALL)],
        ALICE,
        Op.ALTER_CONFIGS,
        T,
        "orders",
        False,
        True,
    ),
    (
        "DENY ALL denies every operation",
        [acl(op=Op.ALL), acl(op=Op.ALL, perm=DENY)],
        ALICE,
        Op.DESCRIBE,
        T,
        "orders",
        False,
        False,
    ),
    *[
        (f"{op.name} implies DESCRIBE", [acl(op=op)], ALICE, Op.DESCRIBE, T, "orders", False, True)
        for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER)
    ],
    (
        "CREATE does not imply DESCRIBE",
        [acl(op=Op.CREATE)],
        ALICE,
        Op.DESCRIBE,
        T,
        "orders",
        False,
        False,
    ),
    (
        "DESCRIBE does not imply READ",
        [acl(op=Op.DESCRIBE)],
        ALICE,
        Op.READ,
        T,
        "orders",
        False,
        False,
    ),
    (
        "ALTER_CONFIGS implies DESCRIBE_CONFIGS",
        [acl(op=Op.ALTER_CONFIGS)],
        ALICE,
        Op.DESCRIBE_CONFIGS,
        T,
        "orders",
        False,
        True,
    ),
    (
        "DESCRIBE_CONFIGS does not imply ALTER_CONFIGS",
        [acl(op=Op.DESCRIBE_CONFIGS)],
        ALICE,
        Op.ALTER_CONFIGS,
        T,
        "orders",
        False,
        False,
    ),
    (
        "implication is for ALLOW only: DENY READ does not deny DESCRIBE",
        [acl(op=Op.DESCRIBE), acl(perm=DENY)],
        ALICE,
        Op.DESCRIBE,
        T,
        "orders",
        False,
        True,
    ),
    (
        "super user beats DENY",
        [acl(principal=ADMIN, perm=DENY, op=Op.ALL)],
        ADMIN,
        Op.WRITE,
        T,
        "orders",
        False,
        True,
    ),
    ("super user with no acls", [], ADMIN, Op.ALTER, C, "kafka-cluster", False, True),
    (
        "cluster resource",
        [acl("kafka-cluster", Op.ALTER, kind=C)],
        ALICE,
        Op.ALTER,
        C,
        "kafka-cluster",
        False,
        True,
    ),
    (
        "cluster ALTER implies DESCRIBE",
        [acl("kafka-cluster", Op.ALTER, kind=C)],
        ALICE,
        Op.DESCRIBE,
        C,
        "kafka-cluster",
        False,
        True,
    ),
    (
        "transactional id",
        [acl("tx-", Op.WRITE, kind=TX, pattern=PRE)],
        ALICE,
        Op.WRITE,
        TX,
        "tx-1",
        False,
        True,
    ),
]


@pytest.mark.parametrize(
    ("acls", "principal", "op", "kind", "name", "everyone", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_decision(
    acls: list[AclBinding],
    principal: KafkaPrincipal,
    op: Op,
    kind: ResourceType,
    name: str,
    everyone: bool,
    expected: bool,
) -> None:
    cache = AclCache(acls)
    got = decide(cache, frozenset({ADMIN}), everyone, principal, HOST, op, kind, name)
    assert got.allowed is expected, got.rule


def test_rules_are_named_as_kafka_names_them() -> None:
    cache = AclCache([acl(), acl(principal=BOB, perm=DENY)])
    assert (
        decide(cache, frozenset({ADMIN}), False, ADMIN, HOST, Op.READ, T, "x").rule == "SuperUser"
    )
    assert decide(cache, frozenset(), False, ALICE, HOST, Op.READ, T, "y").rule == "DefaultDeny"
    assert decide(cache, frozenset(), True, ALICE, HOST, Op.READ, T, "y").rule == "DefaultAllow"
    denied = decide(cache, frozenset(), False, BOB, HOST, Op.READ, T, "orders").rule
    assert denied == (
        "MatchingAcl(acl=StandardAcl(resourceType=TOPIC, resourceName=orders, "
        "patternType=LITERAL, principal=User:bob, host=*, operation=READ, "
        "permissionType=DENY))"
    )


def test_any_operation_cannot_be_authorized() -> None:
    with pytest.raises(InvalidRequestError, match="cannot authorize ANY"):
        decide(AclCache(), frozenset(), False, ALICE, HOST, Op.ANY, T, "orders")


def test_cache_replace_and_remove() -> None:
    cache = AclCache([acl(), acl("ord", pattern=PRE), acl("or", pattern=PRE)])
    assert len(cache) == 3
    cache.replace(ResourcePattern(T, "ord", PRE), [])
    assert len(cache) == 2
    assert [p.name for p, _ in cache.matching(T, "orders")] == ["orders", "or"]
    cache.replace(ResourcePattern(T, "or", PRE), [])
    cache.replace(ResourcePattern(T, "orders", LIT), [])
    assert len(cache) == 0 and list(cache.matching(T, "orders")) == []


def test_ten_thousand_acls_cost_no_more_per_decision_than_none() -> None:
    """Work per decision is the resource's own ACLs plus one probe per distinct prefix
    length, whatever the count: 10,000 unrelated ACLs (literal, prefixed, other principals)
    leave the entries examined and the dict probes unchanged."""
    own = [acl(), acl("ord", Op.WRITE, pattern=PRE), acl("*", Op.DESCRIBE, principal=BOB)]
    noise = [acl(f"topic-{i}", principal=KafkaPrincipal.user(f"u{i}")) for i in range(7_000)]
    noise += [acl(f"zz-{i}-", pattern=PRE) for i in range(3_000)]
    small, big = AclCache(own), AclCache(own + noise)
    assert len(big) == 10_003

    probes: list[int] = []

    class CountingDict(dict):
        def get(self, key, default=None):  # type: ignore[no-untyped-def]
            probes.append(1)
            return super().get(key, default)

    def cost(cache: AclCache) -> tuple[int, int, bool]:
        cache._literal = {k: CountingDict(v) for k, v in cache._literal.items()}
        cache._prefixed = {k: CountingDict(v) for k, v in cache._prefixed.items()}
        probes.clear()
        d = decide(cache, frozenset(), False, ALICE, HOST, Op.WRITE, T, "orders")
        return d.examined, len(probes), d.allowed

    examined_small, probes_small, allowed_small = cost(small)
    examined_big, probes_big, allowed_big = cost(big)
    assert allowed_small and allowed_big
    assert examined_big == examined_small == 3
    # one more distinct prefix length ("zz-<i>-" names are 5 to 8 long) is the only extra work
    assert probes_big <= probes_small + 4


def test_describe_selects_through_the_cache() -> None:
    from protocol.acl import AclBindingFilter

    cache = AclCache([acl(), acl("ord", pattern=PRE), acl("orders", kind=G)])
    assert len(cache.bindings()) == 3
    got = cache.bindings(AclBindingFilter(T, "orders", PatternType.MATCH))
    assert {(b.name, b.pattern_type) for b in got} == {("orders", LIT), ("ord", PRE)}
    assert cache.bindings(AclBindingFilter(T, "orders", LIT)) == [acl()]


@pytest.mark.parametrize(
    ("acls", "expected"),
    [
        ([], False),
        ([acl("a", Op.WRITE)], True),
        ([acl("a", Op.WRITE), acl("a", Op.WRITE, DENY)], False),
        ([acl("a", Op.WRITE), acl("a", Op.WRITE, DENY, pattern=PRE)], False),
        ([acl("ab", Op.WRITE, pattern=PRE), acl("a", Op.WRITE, DENY, pattern=PRE)], False),
        ([acl("ab", Op.WRITE, pattern=PRE), acl("b", Op.WRITE, DENY, pattern=PRE)], True),
        ([acl("*", Op.WRITE)], True),
        ([acl("a", Op.WRITE), acl("*", Op.WRITE, DENY)], False),
        ([acl("a", Op.READ)], False),
        ([acl("a", Op.ALL)], True),
        ([acl("a", Op.WRITE, principal=BOB)], False),
    ],
)
def test_authorize_by_resource_type(acls: list[AclBinding], expected: bool) -> None:
    assert decide_any(AclCache(acls), frozenset(), False, ALICE, HOST, Op.WRITE, T) is expected


def test_authorize_by_resource_type_super_user_and_allow_everyone() -> None:
    cache = AclCache([acl("*", Op.WRITE, DENY, principal=ANYONE)])
    assert decide_any(cache, frozenset({ADMIN}), False, ADMIN, HOST, Op.WRITE, T)
    assert decide_any(AclCache(), frozenset(), True, ALICE, HOST, Op.WRITE, T)


def test_super_users_setting() -> None:
    assert parse_super_users("User:admin; User:broker;") == {ADMIN, KafkaPrincipal.user("broker")}
    assert parse_super_users("") == frozenset()
    with pytest.raises(InvalidRequestError):
        parse_super_users("admin")


@dataclass
class FakeSession:
    principal: KafkaPrincipal
    peer_host: str = HOST


def test_authorizer_logs_denials_at_info_and_allows_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    auth = Authorizer(AclCache([acl("orders", Op.WRITE)]))
    caplog.set_level(logging.INFO, logger="odradek.authorizer")
    assert not auth.authorize(FakeSession(BOB), Op.WRITE, T, "orders", request="Produce")
    assert auth.authorize(FakeSession(ALICE), Op.WRITE, T, "orders", request="Produce")
    assert [r.getMessage() for r in caplog.records] == [
        "Principal = User:bob is Denied operation = WRITE from host = 10.0.0.1 on resource = "
        "Topic:LITERAL:orders for request = Produce with resourceRefCount = 1 based on rule "
        "DefaultDeny"
    ]
    caplog.clear()
    caplog.set_level(logging.DEBUG, logger="odradek.authorizer")
    assert auth.authorize(FakeSession(ALICE), Op.WRITE, T, "orders", request="Produce")
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    assert "User:alice is Allowed operation = WRITE" in caplog.records[0].getMessage()


def test_filtering_logs_no_denials_of_what_was_not_asked(caplog: pytest.LogCaptureFixture) -> None:
    auth = Authorizer(AclCache([acl("a", Op.DESCRIBE)]))
    caplog.set_level(logging.INFO, logger="odradek.authorizer")
    got = auth.authorize_many(
        FakeSession(ALICE), Op.DESCRIBE, T, ["a", "b", "c"], request="Metadata"
    )
    assert got == {"a"} and caplog.records == []
    auth.authorize_many(FakeSession(ALICE), Op.DESCRIBE, T, ["b"], log_if_denied=True)
    assert len(caplog.records) == 1


def test_authorizer_class_names() -> None:
    assert "kafka.security.authorizer.AclAuthorizer" in authz.AUTHORIZER_CLASS_NAMES
    assert "org.apache.kafka.metadata.authorizer.StandardAuthorizer" in authz.AUTHORIZER_CLASS_NAMES


def test_authorizer_settings_are_checked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from broker.config import load_config
    from protocol.errors import UsageError

    ok = load_config(
        broker_id=1,
        log_dir=str(tmp_path),
        super_users="User:admin",
        authorizer_class_name="kafka.security.authorizer.AclAuthorizer",
        allow_everyone_if_no_acl_found=True,
    )
    assert ok.allow_everyone_if_no_acl_found and ok.super_users == "User:admin"
    with pytest.raises(UsageError, match=r"authorizer_class_name .x\.Y. is not one of"):
        load_config(broker_id=1, log_dir=str(tmp_path), authorizer_class_name="x.Y")
    with pytest.raises(UsageError, match="super_users: principal 'admin'"):
        load_config(broker_id=1, log_dir=str(tmp_path), super_users="admin")
    with pytest.raises(UsageError, match="authorizer_log_level 'TRACE': INFO"):
        load_config(broker_id=1, log_dir=str(tmp_path), authorizer_log_level="TRACE")


def test_remembered_decisions_are_forgotten_when_acls_change() -> None:
    auth = Authorizer(AclCache([acl("orders", Op.WRITE)]))
    alice = FakeSession(ALICE)
    assert auth.authorize(alice, Op.WRITE, T, "orders")
    assert auth.authorize(alice, Op.WRITE, T, "orders")  # from the memo
    auth.cache.replace(ResourcePattern(T, "orders", LIT), [acl("orders", Op.WRITE, DENY).entry])
    assert not auth.authorize(alice, Op.WRITE, T, "orders")
    auth.cache.replace_all({})
    assert not auth.authorize(alice, Op.WRITE, T, "orders")  # no ACLs: default deny
    assert auth.authorize(FakeSession(BOB, "10.9.9.9"), Op.WRITE, T, "x") is False


def test_the_memo_is_bounded() -> None:
    auth = Authorizer(AclCache([acl("*", Op.READ)]))
    for i in range(authz.MEMO_MAX + 10):
        assert auth.authorize(FakeSession(ALICE), Op.READ, T, f"t{i}")
    assert len(auth._memo) <= authz.MEMO_MAX
