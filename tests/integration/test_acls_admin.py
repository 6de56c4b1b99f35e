"""Kafka's ACL admin APIs against real brokers with the authorizer on: kafka-python's and
confluent-kafka's create/describe/delete ACLs as a user calls them, Kafka's ZooKeeper layout
behind them, and a change made through broker 1 reaching broker 2's cache within a second.

The cluster: two brokers with `authorizer_class_name` set and `super_users = User:ANONYMOUS`
(PLAINTEXT listeners: every client is ANONYMOUS, so the admin calls are allowed).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator

import pytest

from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from protocol.acl import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from protocol.api.acls import (
    AclBindingData,
    AclFilterData,
    CreateAclsRequest,
    DescribeAclsRequest,
)
from tests.fixtures.cluster import ClusterFactory, run_odradek, shared_cluster
from transport.connection import BrokerConnection

pytestmark = pytest.mark.integration

AUTHORIZER = {
    "authorizer_class_name": "kafka.security.authorizer.AclAuthorizer",
    "super_users": "User:ANONYMOUS",
}


@pytest.fixture(scope="module")
def cluster(
    zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """One cluster for the module's tests, which name their topics, clients and principals
    apart (uuids) and only read and write."""
    yield from shared_cluster(zk_server, tmp_path_factory, 2, broker_settings=AUTHORIZER)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_kafka_python_create_describe_delete(cluster: LocalCluster) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KResourceType

    topic = _name("orders")
    admin = KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap)
    try:
        read = ACL(
            "User:alice",
            "*",
            ACLOperation.READ,
            ACLPermissionType.ALLOW,
            ResourcePattern(KResourceType.TOPIC, topic),
        )
        deny = ACL(
            "User:bob",
            "10.0.0.1",
            ACLOperation.WRITE,
            ACLPermissionType.DENY,
            ResourcePattern(KResourceType.TOPIC, topic[:6], ACLResourcePatternType.PREFIXED),
        )
        bad = ACL(
            "User:alice",
            "*",
            ACLOperation.ALTER,
            ACLPermissionType.ALLOW,
            ResourcePattern(KResourceType.CLUSTER, "not-kafka-cluster"),
        )
        result = admin.create_acls([read, deny, bad])
        assert result["succeeded"] == [read, deny]
        assert [e.errno for e in result["failed"]] == [42]  # INVALID_REQUEST

        match = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(KResourceType.TOPIC, topic, ACLResourcePatternType.MATCH),
        )
        acls, error = admin.describe_acls(match)
        assert error.errno == 0
        assert sorted(map(repr, acls)) == sorted(map(repr, [read, deny]))

        only_bob = ACLFilter(
            "User:bob",
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(KResourceType.ANY, None, ACLResourcePatternType.ANY),
        )
        ((_, deleted, error),) = admin.delete_acls([only_bob])
        assert error.errno == 0 and [repr(a) for a in deleted] == [repr(deny)]
        acls, _ = admin.describe_acls(match)
        assert [repr(a) for a in acls] == [repr(read)]
    finally:
        admin.close()


def test_confluent_create_describe_delete(cluster: LocalCluster) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AdminClient,
        ResourcePatternType,
    )
    from confluent_kafka.admin import (
        AclOperation as COp,
    )
    from confluent_kafka.admin import (
        AclPermissionType as CPerm,
    )
    from confluent_kafka.admin import (
        ResourceType as CType,
    )

    group = _name("app")
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    bindings = [
        AclBinding(
            CType.GROUP,
            group,
            ResourcePatternType.LITERAL,
            "User:carol",
            "*",
            COp.READ,
            CPerm.ALLOW,
        ),
        AclBinding(
            CType.BROKER,
            "kafka-cluster",
            ResourcePatternType.LITERAL,
            "User:carol",
            "*",
            COp.DESCRIBE,
            CPerm.ALLOW,
        ),
    ]
    for future in admin.create_acls(bindings, request_timeout=30).values():
        assert future.result(timeout=30) is None
    carol = AclBindingFilter(
        CType.ANY, None, ResourcePatternType.ANY, "User:carol", None, COp.ANY, CPerm.ANY
    )
    described = admin.describe_acls(carol, request_timeout=30).result(timeout=30)
    assert sorted(map(str, described)) == sorted(map(str, bindings))
    (future,) = admin.delete_acls([carol], request_timeout=30).values()
    assert sorted(map(str, future.result(timeout=30))) == sorted(map(str, bindings))
    assert admin.describe_acls(carol, request_timeout=30).result(timeout=30) == []


def test_a_change_through_one_broker_reaches_the_other_within_a_second(
    cluster: LocalCluster,
) -> None:
    topic = _name("events")
    hosts = [addr.rsplit(":", 1) for addr in cluster.bootstrap.split(",")]
    (h1, p1), (h2, p2) = hosts[0], hosts[1]

    async def run() -> float:
        one = await BrokerConnection.connect(h1, int(p1), client_id="acl-test")
        two = await BrokerConnection.connect(h2, int(p2), client_id="acl-test")
        selector = DescribeAclsRequest(
            AclFilterData(int(ResourceType.TOPIC), topic, int(PatternType.LITERAL))
        )
        try:
            assert (await two.send(selector)).bindings == []
            created = await one.send(
                CreateAclsRequest(
                    [
                        AclBindingData(
                            int(ResourceType.TOPIC),
                            topic,
                            int(PatternType.LITERAL),
                            "User:dave",
                            "*",
                            int(AclOperation.WRITE),
                            int(AclPermissionType.ALLOW),
                        )
                    ]
                )
            )
            assert [r.error_code for r in created.results] == [0]
            start = time.monotonic()
            while time.monotonic() - start < 1.0:
                seen = await two.send(selector)
                if seen.bindings:
                    assert [b.principal for b in seen.bindings] == ["User:dave"]
                    return time.monotonic() - start
                await asyncio.sleep(0.02)
            raise AssertionError("broker 2 did not see broker 1's new ACL within a second")
        finally:
            await one.close()
            await two.close()

    asyncio.run(run())


def test_kafkas_zookeeper_layout(cluster: LocalCluster) -> None:
    from kazoo.client import KazooClient

    from protocol.acl import entries_from_json

    topic = _name("layout")
    hosts = [addr.rsplit(":", 1) for addr in cluster.bootstrap.split(",")]

    async def create() -> None:
        conn = await BrokerConnection.connect(hosts[0][0], int(hosts[0][1]), client_id="acl-test")
        try:
            resp = await conn.send(
                CreateAclsRequest(
                    [
                        AclBindingData(
                            int(ResourceType.TOPIC),
                            topic,
                            int(PatternType.PREFIXED),
                            "User:erin",
                            "*",
                            int(AclOperation.READ),
                            int(AclPermissionType.ALLOW),
                        )
                    ]
                )
            )
            assert [r.error_code for r in resp.results] == [0]
        finally:
            await conn.close()

    asyncio.run(create())
    zk = KazooClient(hosts=cluster.zookeeper_connect)
    zk.start(timeout=30)
    try:
        data, _ = zk.get(f"/kafka-acl-extended/prefixed/Topic/{topic}")
        (entry,) = entries_from_json(data)
        assert str(entry.principal) == "User:erin" and entry.operation == AclOperation.READ
        changes = zk.get_children("/kafka-acl-extended-changes")
        values = [zk.get(f"/kafka-acl-extended-changes/{c}")[0] for c in changes]
        assert any(topic.encode() in v and b'"PREFIXED"' in v for v in values)
    finally:
        zk.stop()
        zk.close()


def test_cli_round_trip(cluster: LocalCluster) -> None:
    topic = _name("cli")
    boot = ["--bootstrap", cluster.bootstrap]
    added = run_odradek(
        "acls",
        "add",
        *boot,
        "--allow-principal",
        "User:frank",
        "--operation",
        "Read",
        "--operation",
        "Describe",
        "--topic",
        topic,
    )
    assert added.returncode == 0, added.stderr
    prefixed = run_odradek(
        "acls",
        "add",
        *boot,
        "--producer",
        "--allow-principal",
        "User:gina",
        "--topic",
        topic[:4],
        "--resource-pattern-type",
        "prefixed",
    )
    assert prefixed.returncode == 0, prefixed.stderr
    listed = run_odradek(
        "acls", "list", *boot, "--topic", topic, "--resource-pattern-type", "match", "-o", "json"
    )
    assert listed.returncode == 0, listed.stderr
    rows = {
        (r["principal"], r["operation"], r["pattern_type"])
        for r in json.loads(listed.stdout)["acls"]
    }
    assert rows == {
        ("User:frank", "Read", "LITERAL"),
        ("User:frank", "Describe", "LITERAL"),
        ("User:gina", "Write", "PREFIXED"),
        ("User:gina", "Describe", "PREFIXED"),
        ("User:gina", "Create", "PREFIXED"),
    }
    text = run_odradek("acls", "list", *boot, "--principal", "User:frank")
    assert f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)" in text.stdout
    refused = run_odradek("acls", "remove", *boot, "--topic", topic)
    assert refused.returncode == 2 and "--force" in refused.stderr
    removed = run_odradek("acls", "remove", *boot, "--topic", topic, "--force")
    assert removed.returncode == 0 and "Removed ACLs (2)" in removed.stdout, removed.stderr
    left = run_odradek(
        "acls", "list", *boot, "-o", "json", "--topic", topic, "--resource-pattern-type", "match"
    )
    assert {r["principal"] for r in json.loads(left.stdout)["acls"]} == {"User:gina"}
    bad = run_odradek(
        "acls", "add", *boot, "--allow-principal", "User:x", "--cluster", "--operation", "Read"
    )
    assert bad.returncode == 2 and "Cluster has no Read operation" in bad.stderr


def test_denials_go_to_the_authorizer_log(cluster_factory: ClusterFactory) -> None:
    """allow.everyone.if.no.acl.found lets ANONYMOUS create an ACL on the cluster; once the
    cluster has ACLs, its DescribeAcls is denied, and the denial is a Kafka-style line in
    the broker's authorizer_log_file (not in its main log); the allow before it is not
    (allows are logged at DEBUG only)."""
    settings = dict(
        AUTHORIZER,
        super_users="",
        allow_everyone_if_no_acl_found=True,
        authorizer_log_file="authorizer.log",
    )
    one = cluster_factory(brokers=1, broker_settings=settings)
    host, port = one.bootstrap.split(",")[0].rsplit(":", 1)

    async def run() -> tuple[int, int]:
        conn = await BrokerConnection.connect(host, int(port), client_id="acl-test")
        try:
            created = await conn.send(
                CreateAclsRequest(
                    [
                        AclBindingData(
                            int(ResourceType.CLUSTER),
                            "kafka-cluster",
                            int(PatternType.LITERAL),
                            "User:ops",
                            "*",
                            int(AclOperation.DESCRIBE),
                            int(AclPermissionType.ALLOW),
                        )
                    ]
                )
            )
            described = await conn.send(DescribeAclsRequest(AclFilterData()))
            return created.results[0].error_code, described.error_code
        finally:
            await conn.close()

    assert asyncio.run(run()) == (0, 31)  # CLUSTER_AUTHORIZATION_FAILED
    log_file = one.dir / "data" / "broker-1" / "authorizer.log"
    lines = log_file.read_text().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].endswith(
        "INFO Principal = User:ANONYMOUS is Denied operation = DESCRIBE from host = 127.0.0.1 "
        "on resource = Cluster:LITERAL:kafka-cluster for request = DescribeAcls with "
        "resourceRefCount = 1 based on rule DefaultDeny"
    )
    assert "is Denied" not in (one.dir / "broker-1.log").read_text()


def test_without_an_authorizer_the_acl_apis_say_security_disabled(
    cluster_factory: ClusterFactory,
) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KResourceType
    from kafka.errors import SecurityDisabledError

    plain = cluster_factory(brokers=1)
    admin = KafkaAdminClient(bootstrap_servers=plain.kafka_bootstrap)
    everything = ACLFilter(
        None,
        None,
        ACLOperation.ANY,
        ACLPermissionType.ANY,
        ResourcePatternFilter(KResourceType.ANY, None, ACLResourcePatternType.ANY),
    )
    try:
        with pytest.raises(SecurityDisabledError, match="no authorizer is configured"):
            admin.describe_acls(everything)
    finally:
        admin.close()
    listed = run_odradek("acls", "list", "--bootstrap", plain.bootstrap)
    assert listed.returncode == 1
    assert "SECURITY_DISABLED" in listed.stderr and "no authorizer" in listed.stderr
