"""Kafka's ACLs enforced by real brokers (issue 25, "ACL matrix").

Two broker processes (a LocalCluster with listeners of its own) share a ZooKeeper chroot; each
has a SASL_PLAINTEXT Kafka listener with PLAIN users (admin, alice, bob), the authorizer on, and
super_users User:admin plus User:ANONYMOUS: the brokers' own traffic (the controller's
LeaderAndIsr/UpdateMetadata, replica fetches) uses the native listener, PLAINTEXT here, whose
principal is User:ANONYMOUS (the same rule as Kafka's: a PLAINTEXT inter-broker listener needs
User:ANONYMOUS among the super users); Kafka clients can only reach the SASL listeners.

For each API a principal with the ACL Kafka names is served and one without gets Kafka's error,
through the clients' own calls (confluent-kafka's producer, consumer, transactions and admin)
and, where a client hides the error, through raw requests on a SASL-authenticated socket.
Then: Metadata shows only describable topics, DENY wins over ALLOW, PREFIXED patterns, super
users, and an ACL made through broker 1 is in force on broker 2 within a second.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from protocol.kafka import codec
from protocol.kafka import versions as v
from tests.fixtures.cluster import shared_cluster, wait_until

pytestmark = pytest.mark.integration

PASSWORDS = {
    "admin": "admin-secret",
    "alice": "alice-secret",
    "bob": "bob-secret",
    "carol": "carol-secret",  # no ACL but those one test gives her
    "dave": "dave-secret",  # the per-API table's principal: each case adds, then removes, ACLs
}
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    + " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items())
    + ";"
)
START_TIMEOUT_S = 40.0
CLIENT_TIMEOUT_S = 30.0
PROPAGATION_S = 1.0  # the bound for an ACL change to reach every broker

TOPIC_AUTH, GROUP_AUTH, CLUSTER_AUTH, TXN_AUTH = 29, 30, 31, 53
_correlation = itertools.count(1)


@dataclass
class Broker:
    broker_id: int
    cluster: LocalCluster
    kafka_port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    def log(self) -> str:
        return (self.cluster.dir / f"broker-{self.broker_id}.log").read_text(errors="replace")


@pytest.fixture(scope="module")
def brokers(
    zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Broker]]:
    """Two brokers with a SASL_PLAINTEXT Kafka listener each (the native door: PLAINTEXT)."""
    for cluster in shared_cluster(
        zk_server, tmp_path_factory, 2,
        listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT"},
        broker_settings={
            "num_partitions": 1, "default_replication_factor": 1,
            "sasl_enabled_mechanisms": "PLAIN", "sasl_jaas_config": JAAS,
            "authorizer_class_name": "kafka.security.authorizer.AclAuthorizer",
            "super_users": "User:admin;User:ANONYMOUS",
        },
    ):  # fmt: skip
        started = [Broker(b, cluster, cluster.broker(b).kafka_port) for b in (1, 2)]
        for b in started:
            wait_until(lambda b=b: _both_brokers_seen(b), f"broker {b.broker_id}", START_TIMEOUT_S)
        yield started


def _both_brokers_seen(b: Broker) -> bool:
    alive = b.cluster.broker_states()[b.broker_id] == "alive"
    assert alive, f"broker {b.broker_id} exited:\n{b.log()[-3000:]}"
    try:
        with SaslConn(b, "admin") as c:
            return len(c.metadata(None).brokers) == 2
    except OSError:
        return False


# ----- a raw Kafka connection that logs in with SASL/PLAIN -----------------------------------


class SaslConn:
    """One socket to a broker's SASL listener, authenticated as `user` (SaslHandshake v1,
    SaslAuthenticate v2 with PLAIN), then any request with `call`."""

    def __init__(self, broker: Broker, user: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", broker.kafka_port), timeout=10)
        hs = self.call(v.SASL_HANDSHAKE, 1, mechanism="PLAIN")
        assert hs.error_code.value == 0, hs
        token = f"\0{user}\0{PASSWORDS[user]}".encode()
        auth = self.call(v.SASL_AUTHENTICATE, 2, auth_bytes=token)
        assert auth.error_code.value == 0, auth

    def __enter__(self) -> SaslConn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def call(self, key: int, version: int, /, **fields: Any) -> Any:
        body = codec.make(codec.request_class(key, version), **fields)
        corr = next(_correlation)
        self.sock.sendall(codec.encode_request(key, version, corr, body, client_id="acl-test"))
        (size,) = struct.unpack(">i", self._read(4))
        got, answer = codec.decode_response(key, version, self._read(size))
        assert got == corr
        return answer

    def _read(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            out += chunk
        return out

    def metadata(self, topics: list[str] | None) -> Any:
        wanted = None if topics is None else tuple(
            codec.make(codec.nested(codec.request_class(v.METADATA, 9), "MetadataRequestTopic"),
                       name=t) for t in topics
        )  # fmt: skip
        return self.call(v.METADATA, 9, topics=wanted, allow_auto_topic_creation=False,
                         include_cluster_authorized_operations=False,
                         include_topic_authorized_operations=False)  # fmt: skip


# ----- ACLs, through CreateAcls/DeleteAcls as admin --------------------------------------------

TOPIC, GROUP, CLUSTER, TXN_ID = 2, 3, 4, 5
LITERAL, PREFIXED = 3, 4
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
DENY, ALLOW = 2, 3


def acl(
    broker: Broker, user: str, op: int, rtype: int, name: str, *,
    pattern: int = LITERAL, permission: int = ALLOW, remove: bool = False,
) -> None:  # fmt: skip
    """Add (or remove) one ACL for User:<user> from any host, through `broker` as admin."""
    principal = f"User:{user}"
    with SaslConn(broker, "admin") as c:
        if remove:
            cls = codec.nested(codec.request_class(v.DELETE_ACLS, 3), "DeleteAclsFilter")
            f = codec.make(cls, resource_type_filter=rtype, resource_name_filter=name,
                           pattern_type_filter=pattern, principal_filter=principal,
                           host_filter="*", operation=op, permission_type=permission)  # fmt: skip
            resp = c.call(v.DELETE_ACLS, 3, filters=(f,))
            assert resp.filter_results[0].error_code.value == 0, resp
            return
        cls = codec.nested(codec.request_class(v.CREATE_ACLS, 3), "AclCreation")
        creation = codec.make(cls, resource_type=rtype, resource_name=name,
                              resource_pattern_type=pattern, principal=principal, host="*",
                              operation=op, permission_type=permission)  # fmt: skip
        resp = c.call(v.CREATE_ACLS, 3, creations=(creation,))
        assert resp.results[0].error_code.value == 0, resp


def settle(brokers: list[Broker], check: Any, what: str) -> None:
    """ACLs reach every broker's cache through ZooKeeper: wait for `check` on each."""
    for b in brokers:
        wait_until(lambda b=b: check(b), f"{what} on broker {b.broker_id}", 10.0)


def sees_topic(b: Broker, user: str, topic: str) -> bool:
    with SaslConn(b, user) as c:
        (t,) = c.metadata([topic]).topics
        return bool(t.error_code.value == 0)


def create_topic(b: Broker, topic: str) -> None:
    with SaslConn(b, "admin") as c:
        cls = codec.nested(codec.request_class(v.CREATE_TOPICS, 7), "CreatableTopic")
        t = codec.make(cls, name=topic, num_partitions=1, replication_factor=1, assignments=(),
                       configs=())  # fmt: skip
        resp = c.call(v.CREATE_TOPICS, 7, topics=(t,), timeout=10_000, validate_only=False)
        assert resp.topics[0].error_code.value in (0, 36), resp  # 36: it exists already


def confluent(b: Broker, user: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": b.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": PASSWORDS[user],
        **extra,
    }


def produce_error(b: Broker, user: str, topic: str, **extra: Any) -> int:
    """Produce one record as `user`: the delivery's error code (0: delivered)."""
    from confluent_kafka import Producer  # type: ignore[import-untyped]

    producer = Producer(confluent(b, user, acks="all", **{"message.timeout.ms": 10_000}, **extra))
    errors: list[Any] = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(CLIENT_TIMEOUT_S)
    assert len(errors) == 1
    return 0 if errors[0] is None else int(errors[0].code())


# ----- the matrix -----------------------------------------------------------------------------


def test_produce_needs_write_on_the_topic(brokers: list[Broker]) -> None:
    b = brokers[0]
    topic = f"produce-{uuid.uuid4().hex[:6]}"
    create_topic(b, topic)
    assert produce_error(b, "bob", topic) == TOPIC_AUTH
    acl(b, "alice", WRITE, TOPIC, topic)
    settle(brokers, lambda x: sees_topic(x, "alice", topic), "alice's Write (implies Describe)")
    assert produce_error(b, "alice", topic) == 0
    assert produce_error(b, "bob", topic) == TOPIC_AUTH


def test_a_consumer_group_needs_read_on_group_and_topic(brokers: list[Broker]) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    b = brokers[0]
    topic, group = f"consume-{uuid.uuid4().hex[:6]}", f"group-{uuid.uuid4().hex[:6]}"
    create_topic(b, topic)
    acl(b, "alice", WRITE, TOPIC, topic)
    acl(b, "alice", READ, TOPIC, topic)
    acl(b, "bob", READ, TOPIC, topic)  # bob may read the topic, not use the group
    acl(b, "alice", READ, GROUP, group)
    settle(brokers, lambda x: sees_topic(x, "bob", topic), "bob's Read")
    assert produce_error(b, "alice", topic) == 0

    def consume(user: str) -> tuple[list[bytes], Any]:
        settings = {"group.id": group, "auto.offset.reset": "earliest",
                    "enable.auto.commit": False}  # fmt: skip
        consumer = Consumer(confluent(b, user, **settings))
        got: list[bytes] = []
        error = None
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + CLIENT_TIMEOUT_S
            while not got and error is None and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is not None:
                    error = msg.error()
                elif msg is not None:
                    got.append(msg.value())
            if got:
                consumer.commit(asynchronous=False)
                committed = consumer.committed([TopicPartition(topic, 0)], CLIENT_TIMEOUT_S)
                assert committed[0].offset == 1
        except KafkaException as exc:
            error = exc.args[0]
        finally:
            consumer.close()
        return got, error

    got, error = consume("alice")
    assert got == [b"v"] and error is None
    got, error = consume("bob")
    assert not got and error is not None and error.code() == GROUP_AUTH, error


def test_transactions_need_write_on_the_transactional_id(brokers: list[Broker]) -> None:
    from confluent_kafka import KafkaException, Producer

    b = brokers[0]
    topic, tid = f"txn-{uuid.uuid4().hex[:6]}", f"tid-{uuid.uuid4().hex[:6]}"
    create_topic(b, topic)
    for user in ("alice", "bob"):
        acl(b, user, WRITE, TOPIC, topic)
    acl(b, "alice", WRITE, TXN_ID, tid)
    settle(brokers, lambda x: sees_topic(x, "bob", topic), "bob's Write")

    def init(user: str) -> int:
        producer = Producer(confluent(b, user, **{"transactional.id": tid}))
        try:
            producer.init_transactions(CLIENT_TIMEOUT_S)
            producer.begin_transaction()
            producer.produce(topic, b"t")
            producer.commit_transaction(CLIENT_TIMEOUT_S)
        except KafkaException as exc:
            return int(exc.args[0].code())
        return 0

    assert init("bob") == TXN_AUTH
    assert init("alice") == 0


def test_idempotent_producer_init_needs_idempotent_write_or_a_topic_write(
    brokers: list[Broker],
) -> None:
    b = brokers[0]
    with SaslConn(b, "carol") as c:  # carol has no ACL at all
        assert _init(c).error_code.value == CLUSTER_AUTH
    acl(b, "alice", IDEMPOTENT_WRITE, CLUSTER, "kafka-cluster")  # someone else's: no help
    with SaslConn(b, "carol") as c:
        assert _init(c).error_code.value == CLUSTER_AUTH
    acl(b, "carol", WRITE, TOPIC, f"any-{uuid.uuid4().hex[:6]}")  # KIP-679: Write on a topic
    with SaslConn(b, "carol") as c:
        resp = wait_until(lambda: _init_ok(c), "carol's Write on a topic", 10.0)
        assert resp.producer_id >= 0


def _init(c: SaslConn) -> Any:
    return c.call(v.INIT_PRODUCER_ID, 4, transactional_id=None, transaction_timeout=60_000,
                  producer_id=-1, producer_epoch=-1)  # fmt: skip


def _init_ok(c: SaslConn) -> Any:
    resp = _init(c)
    return resp if resp.error_code.value == 0 else None


def test_admin_apis_need_their_acls(brokers: list[Broker]) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (  # type: ignore[import-untyped]
        AdminClient,
        ConfigResource,
        NewPartitions,
        NewTopic,
    )

    b = brokers[0]
    topic = f"admin-{uuid.uuid4().hex[:6]}"

    def code_of(futures: dict[Any, Any]) -> int:
        (future,) = futures.values()
        try:
            future.result(CLIENT_TIMEOUT_S)
        except KafkaException as exc:
            return int(exc.args[0].code())
        return 0

    alice = AdminClient(confluent(b, "alice"))
    assert code_of(alice.create_topics([NewTopic(topic, 1, 1)])) == TOPIC_AUTH
    acl(b, "alice", CREATE, TOPIC, "admin-", pattern=PREFIXED)
    settle(brokers, lambda x: _may_create(x, "alice", topic), "alice's prefixed Create")
    assert code_of(alice.create_topics([NewTopic(topic, 1, 1)])) == 0
    wait_until(lambda: sees_topic(b, "admin", topic), f"{topic} in the metadata", 10.0)

    resource = ConfigResource("topic", topic)
    assert code_of(alice.describe_configs([resource])) == TOPIC_AUTH
    assert code_of(alice.create_partitions([NewPartitions(topic, 2)])) == TOPIC_AUTH
    assert code_of(alice.delete_topics([topic])) == TOPIC_AUTH
    acl(b, "alice", DESCRIBE_CONFIGS, TOPIC, topic)
    acl(b, "alice", ALTER, TOPIC, topic)
    acl(b, "alice", DELETE, TOPIC, topic)
    settle(brokers, lambda x: _may(x, "alice", topic), "alice's topic ACLs")
    assert code_of(alice.describe_configs([resource])) == 0
    assert code_of(alice.create_partitions([NewPartitions(topic, 2)])) == 0
    assert code_of(alice.delete_topics([topic])) == 0


def _may_create(b: Broker, user: str, topic: str) -> bool:
    with SaslConn(b, user) as c:
        cls = codec.nested(codec.request_class(v.CREATE_TOPICS, 7), "CreatableTopic")
        t = codec.make(cls, name=topic, num_partitions=1, replication_factor=1, assignments=(),
                       configs=())  # fmt: skip
        resp = c.call(v.CREATE_TOPICS, 7, topics=(t,), timeout=10_000, validate_only=True)
        return bool(resp.topics[0].error_code.value != TOPIC_AUTH)


def _may(b: Broker, user: str, topic: str) -> bool:
    with SaslConn(b, user) as c:
        res = codec.nested(codec.request_class(v.DESCRIBE_CONFIGS, 4), "DescribeConfigsResource")
        r = codec.make(res, resource_type=2, resource_name=topic, configuration_keys=None)
        resp = c.call(v.DESCRIBE_CONFIGS, 4, resources=(r,), include_synonyms=False,
                      include_documentation=False)  # fmt: skip
        return bool(resp.results[0].error_code.value == 0)


def test_cluster_apis_need_cluster_acls(brokers: list[Broker]) -> None:
    b = brokers[0]
    with SaslConn(b, "bob") as c:
        dirs = c.call(v.DESCRIBE_LOG_DIRS, 4, topics=None)
        assert dirs.error_code.value == CLUSTER_AUTH and dirs.results == ()
        listing = c.call(v.LIST_PARTITION_REASSIGNMENTS, 0, timeout=10_000, topics=None)
        assert listing.error_code.value == CLUSTER_AUTH
        acls = c.call(v.DESCRIBE_ACLS, 3, resource_type_filter=1, resource_name_filter=None,
                      pattern_type_filter=1, principal_filter=None, host_filter=None,
                      operation=1, permission_type=1)  # fmt: skip
        assert acls.error_code.value == CLUSTER_AUTH
        cluster = c.call(v.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=True,
                         endpoint_type=1)  # fmt: skip
        assert cluster.error_code.value == 0 and cluster.cluster_authorized_operations == 0
    acl(b, "bob", DESCRIBE, CLUSTER, "kafka-cluster")
    with SaslConn(b, "bob") as c:
        dirs = wait_until(lambda: _describe_log_dirs_ok(c), "bob's Describe on the cluster", 10)
        assert dirs.results
        listing = c.call(v.LIST_PARTITION_REASSIGNMENTS, 0, timeout=10_000, topics=None)
        assert listing.error_code.value in (0, 41)  # NOT_CONTROLLER on the other broker
        cluster = c.call(v.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=True,
                         endpoint_type=1)  # fmt: skip
        assert cluster.cluster_authorized_operations == 1 << DESCRIBE


def _describe_log_dirs_ok(c: SaslConn) -> Any:
    dirs = c.call(v.DESCRIBE_LOG_DIRS, 4, topics=None)
    return dirs if dirs.error_code.value == 0 else None


def test_metadata_shows_only_describable_topics(brokers: list[Broker]) -> None:
    b = brokers[0]
    mine, other = f"meta-mine-{uuid.uuid4().hex[:6]}", f"meta-other-{uuid.uuid4().hex[:6]}"
    create_topic(b, mine)
    create_topic(b, other)
    acl(b, "alice", DESCRIBE, TOPIC, mine)
    settle(brokers, lambda x: sees_topic(x, "alice", mine), "alice's Describe")
    with SaslConn(b, "alice") as c:
        listed = {t.name for t in c.metadata(None).topics}
        assert mine in listed and other not in listed
        named = {t.name: t.error_code.value for t in c.metadata([mine, other]).topics}
        assert named == {mine: 0, other: TOPIC_AUTH}
    with SaslConn(b, "admin") as c:  # a super user sees everything
        assert {mine, other} <= {t.name for t in c.metadata(None).topics}


def test_deny_wins_over_allow_and_prefixes_match(brokers: list[Broker]) -> None:
    b = brokers[0]
    prefix = f"pfx-{uuid.uuid4().hex[:6]}-"
    ok, refused = prefix + "ok", prefix + "refused"
    create_topic(b, ok)
    create_topic(b, refused)
    acl(b, "alice", WRITE, TOPIC, prefix, pattern=PREFIXED)
    acl(b, "alice", WRITE, TOPIC, refused, permission=DENY)
    settle(brokers, lambda x: sees_topic(x, "alice", ok), "alice's prefixed Write")
    assert produce_error(b, "alice", ok) == 0
    assert produce_error(b, "alice", refused) == TOPIC_AUTH


def test_an_acl_made_through_one_broker_holds_on_the_other_within_a_second(
    brokers: list[Broker],
) -> None:
    first, second = brokers
    topic = f"spread-{uuid.uuid4().hex[:6]}"
    create_topic(first, topic)
    assert not sees_topic(second, "bob", topic)
    with SaslConn(second, "bob") as c:  # one connection, open before the change
        acl(first, "bob", DESCRIBE, TOPIC, topic)
        made = time.monotonic()
        wait_until(lambda: c.metadata([topic]).topics[0].error_code.value == 0,
                   "bob's Describe on the second broker", PROPAGATION_S)  # fmt: skip
        took = time.monotonic() - made
        acl(first, "bob", DESCRIBE, TOPIC, topic, remove=True)
        wait_until(lambda: c.metadata([topic]).topics[0].error_code.value == TOPIC_AUTH,
                   "the removal on the second broker", PROPAGATION_S)  # fmt: skip
    print(f"an ACL reached the second broker {took * 1000:.0f} ms after CreateAcls answered")


def test_group_apis_refuse_without_group_acls(brokers: list[Broker]) -> None:
    b = brokers[0]
    group = f"raw-{uuid.uuid4().hex[:6]}"
    with SaslConn(b, "bob") as c:
        found = c.call(v.FIND_COORDINATOR, 3, key=group, key_type=0)
        assert found.error_code.value == GROUP_AUTH
        described = c.call(v.DESCRIBE_GROUPS, 5, groups=(group,),
                           include_authorized_operations=True)  # fmt: skip
        assert described.groups[0].error_code.value == GROUP_AUTH
        deleted = c.call(v.DELETE_GROUPS, 2, groups_names=(group,))
        assert deleted.results[0].error_code.value == GROUP_AUTH
        listed = c.call(v.LIST_GROUPS, 4, states_filter=())
        assert listed.error_code.value == 0  # never an error: only describable groups
        assert group not in {g.group_id for g in listed.groups}
    acl(b, "bob", DESCRIBE, GROUP, group)
    with SaslConn(b, "bob") as c:
        found = wait_until(lambda: _found(c, group), "bob's Describe on the group", 10.0)
        assert found.node_id in (1, 2)


def _found(c: SaslConn, group: str) -> Any:
    found = c.call(v.FIND_COORDINATOR, 3, key=group, key_type=0)
    return found if found.error_code.value != GROUP_AUTH else None


# ----- every API, raw: a principal without the ACL, then with it ------------------------------
# (Produce, the consumer group's and the admin's APIs are above, through the clients; Metadata,
# FindCoordinator, DescribeGroups, ListGroups, DeleteGroups, DescribeLogDirs, DescribeCluster,
# ListPartitionReassignments, DescribeAcls and InitProducerId too. DescribeTransactions is in
# tests/unit/broker/test_acl_rules.py: kio cannot decode the -1 start time of its error rows.)


def _n(key: int, version: int, cls_name: str, /, **fields: Any) -> Any:
    return codec.make(codec.nested(codec.request_class(key, version), cls_name), **fields)


def error_codes(entity: Any) -> set[int]:
    """Every *error_code field of a kio response, at any depth."""
    out: set[int] = set()
    fields = getattr(entity, "__dataclass_fields__", None)
    if fields is None:
        if isinstance(entity, tuple):
            for item in entity:
                out |= error_codes(item)
        return out
    for name in fields:
        value = getattr(entity, name)
        if name.endswith("error_code"):
            out.add(int(getattr(value, "value", value)))
        else:
            out |= error_codes(value)
    return out


Names = tuple[str, str, str]  # (topic, group, transactional id) of one case
Case = tuple[int, int, Any, list[tuple[int, int, str]], int]

MB = 1 << 20


def _cases(t: str, g: str, x: str) -> dict[str, Case]:
    """API -> (key, version, fields, ACLs that allow it (op, type, name), error without)."""
    cl = "kafka-cluster"
    # Heartbeat, LeaveGroup and ConsumerGroupHeartbeat are not here: they are one operation
    # each whichever door (broker/apis.py), whose checks tests/unit/broker/test_acl_rules.py
    # makes once; the Kafka door's codecs for them have golden bytes
    # (tests/unit/broker/operations/test_codecs.py).
    return {
        "Fetch": (v.FETCH, 12, dict(
            cluster_id=None, replica_id=-1, max_wait=0, min_bytes=1, max_bytes=MB,
            isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=(),
            rack_id="", topics=(_n(v.FETCH, 12, "FetchTopic", topic=t, partitions=(
                _n(v.FETCH, 12, "FetchPartition", partition=0, current_leader_epoch=-1,
                   fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
                   partition_max_bytes=MB),)),)),
            [(READ, TOPIC, t)], TOPIC_AUTH),
        "ListOffsets": (v.LIST_OFFSETS, 7, dict(replica_id=-1, isolation_level=0, topics=(
            _n(v.LIST_OFFSETS, 7, "ListOffsetsTopic", name=t, partitions=(
                _n(v.LIST_OFFSETS, 7, "ListOffsetsPartition", partition_index=0,
                   current_leader_epoch=-1, timestamp=-1),)),)),
            [(DESCRIBE, TOPIC, t)], TOPIC_AUTH),
        "OffsetCommit": (v.OFFSET_COMMIT, 8, dict(
            group_id=g, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
            topics=(_n(v.OFFSET_COMMIT, 8, "OffsetCommitRequestTopic", name=t, partitions=(
                _n(v.OFFSET_COMMIT, 8, "OffsetCommitRequestPartition", partition_index=0,
                   committed_offset=0, committed_leader_epoch=-1,
                   committed_metadata=None),)),)),
            [(READ, GROUP, g), (READ, TOPIC, t)], GROUP_AUTH),
        "OffsetFetch": (v.OFFSET_FETCH, 8, dict(require_stable=False, groups=(
            _n(v.OFFSET_FETCH, 8, "OffsetFetchRequestGroup", group_id=g, topics=(
                _n(v.OFFSET_FETCH, 8, "OffsetFetchRequestTopics", name=t,
                   partition_indexes=(0,)),)),)),
            [(DESCRIBE, GROUP, g), (DESCRIBE, TOPIC, t)], GROUP_AUTH),
        "JoinGroup": (v.JOIN_GROUP, 7, dict(
            group_id=g, session_timeout=10_000, rebalance_timeout=10_000, member_id="",
            group_instance_id=None, protocol_type="consumer", protocols=(
                _n(v.JOIN_GROUP, 7, "JoinGroupRequestProtocol", name="range", metadata=b""),)),
            [(READ, GROUP, g)], GROUP_AUTH),
        "SyncGroup": (v.SYNC_GROUP, 5, dict(
            group_id=g, generation_id=1, member_id="m", group_instance_id=None,
            protocol_type="consumer", protocol_name="range", assignments=()),
            [(READ, GROUP, g)], GROUP_AUTH),
        "OffsetDelete": (v.OFFSET_DELETE, 0, dict(group_id=g, topics=(
            _n(v.OFFSET_DELETE, 0, "OffsetDeleteRequestTopic", name=t, partitions=(
                _n(v.OFFSET_DELETE, 0, "OffsetDeleteRequestPartition",
                   partition_index=0),)),)),
            [(DELETE, GROUP, g), (READ, TOPIC, t)], GROUP_AUTH),
        "ConsumerGroupDescribe": (v.CONSUMER_GROUP_DESCRIBE, 0, dict(
            group_ids=(g,), include_authorized_operations=False),
            [(DESCRIBE, GROUP, g)], GROUP_AUTH),
        "DeleteRecords": (v.DELETE_RECORDS, 2, dict(timeout=5000, topics=(
            _n(v.DELETE_RECORDS, 2, "DeleteRecordsTopic", name=t, partitions=(
                _n(v.DELETE_RECORDS, 2, "DeleteRecordsPartition", partition_index=0,
                   offset=0),)),)),
            [(DELETE, TOPIC, t)], TOPIC_AUTH),
        "OffsetForLeaderEpoch": (v.OFFSET_FOR_LEADER_EPOCH, 4, dict(replica_id=-1, topics=(
            _n(v.OFFSET_FOR_LEADER_EPOCH, 4, "OffsetForLeaderTopic", topic=t, partitions=(
                _n(v.OFFSET_FOR_LEADER_EPOCH, 4, "OffsetForLeaderPartition", partition=0,
                   current_leader_epoch=-1, leader_epoch=0),)),)),
            [(DESCRIBE, TOPIC, t)], TOPIC_AUTH),
        "DescribeProducers": (v.DESCRIBE_PRODUCERS, 0, dict(topics=(
            _n(v.DESCRIBE_PRODUCERS, 0, "TopicRequest", name=t, partition_indexes=(0,)),)),
            [(READ, TOPIC, t)], TOPIC_AUTH),
        "DescribeTopicPartitions": (v.DESCRIBE_TOPIC_PARTITIONS, 0, dict(
            response_partition_limit=100, cursor=None,
            topics=(_n(v.DESCRIBE_TOPIC_PARTITIONS, 0, "TopicRequest", name=t),)),
            [(DESCRIBE, TOPIC, t)], TOPIC_AUTH),
        "AlterConfigs": (v.ALTER_CONFIGS, 2, dict(validate_only=True, resources=(
            _n(v.ALTER_CONFIGS, 2, "AlterConfigsResource", resource_type=2, resource_name=t,
               configs=(_n(v.ALTER_CONFIGS, 2, "AlterableConfig", name="retention.ms",
                           value="100000"),)),)),
            [(ALTER_CONFIGS, TOPIC, t)], TOPIC_AUTH),
        "IncrementalAlterConfigs": (v.INCREMENTAL_ALTER_CONFIGS, 1, dict(
            validate_only=True, resources=(_n(
                v.INCREMENTAL_ALTER_CONFIGS, 1, "AlterConfigsResource", resource_type=2,
                resource_name=t, configs=(_n(v.INCREMENTAL_ALTER_CONFIGS, 1, "AlterableConfig",
                                             name="retention.ms", config_operation=0,
                                             value="100000"),)),)),
            [(ALTER_CONFIGS, TOPIC, t)], TOPIC_AUTH),
        "DescribeConfigs (broker)": (v.DESCRIBE_CONFIGS, 4, dict(
            include_synonyms=False, include_documentation=False, resources=(
                _n(v.DESCRIBE_CONFIGS, 4, "DescribeConfigsResource", resource_type=4,
                   resource_name="1", configuration_keys=None),)),
            [(DESCRIBE_CONFIGS, CLUSTER, cl)], CLUSTER_AUTH),
        "ElectLeaders": (v.ELECT_LEADERS, 2, dict(election_type=0, timeout=5000,
                                                  topic_partitions=(
            _n(v.ELECT_LEADERS, 2, "TopicPartitions", topic=t, partitions=(0,)),)),
            [(ALTER, CLUSTER, cl)], CLUSTER_AUTH),
        "AlterPartitionReassignments": (v.ALTER_PARTITION_REASSIGNMENTS, 0, dict(
            timeout=5000, topics=()), [(ALTER, CLUSTER, cl)], CLUSTER_AUTH),
        "WriteTxnMarkers": (v.WRITE_TXN_MARKERS, 1, dict(markers=(
            _n(v.WRITE_TXN_MARKERS, 1, "WritableTxnMarker", producer_id=1, producer_epoch=0,
               transaction_result=False, coordinator_epoch=0, topics=(
                   _n(v.WRITE_TXN_MARKERS, 1, "WritableTxnMarkerTopic", name=t,
                      partition_indexes=(0,)),)),)),
            [(CLUSTER_ACTION, CLUSTER, cl)], CLUSTER_AUTH),
        "AddPartitionsToTxn": (v.ADD_PARTITIONS_TO_TXN, 3, dict(
            v3_and_below_transactional_id=x, v3_and_below_producer_id=1,
            v3_and_below_producer_epoch=0, v3_and_below_topics=(
                _n(v.ADD_PARTITIONS_TO_TXN, 3, "AddPartitionsToTxnTopic", name=t,
                   partitions=(0,)),)),
            [(WRITE, TXN_ID, x), (WRITE, TOPIC, t)], TXN_AUTH),
        "AddOffsetsToTxn": (v.ADD_OFFSETS_TO_TXN, 3, dict(
            transactional_id=x, producer_id=1, producer_epoch=0, group_id=g),
            [(WRITE, TXN_ID, x), (READ, GROUP, g)], TXN_AUTH),
        "EndTxn": (v.END_TXN, 3, dict(transactional_id=x, producer_id=1, producer_epoch=0,
                                      committed=True),
                   [(WRITE, TXN_ID, x)], TXN_AUTH),
        "TxnOffsetCommit": (v.TXN_OFFSET_COMMIT, 3, dict(
            transactional_id=x, group_id=g, producer_id=1, producer_epoch=0, generation_id=-1,
            member_id="", group_instance_id=None, topics=(_n(
                v.TXN_OFFSET_COMMIT, 3, "TxnOffsetCommitRequestTopic", name=t, partitions=(
                    _n(v.TXN_OFFSET_COMMIT, 3, "TxnOffsetCommitRequestPartition",
                       partition_index=0, committed_offset=0, committed_leader_epoch=-1,
                       committed_metadata=None),)),)),
            [(WRITE, TXN_ID, x), (READ, GROUP, g), (READ, TOPIC, t)], TXN_AUTH),
        "DescribeUserScramCredentials": (v.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, dict(users=None),
                                         [(DESCRIBE, CLUSTER, cl)], CLUSTER_AUTH),
        "DescribeClientQuotas": (v.DESCRIBE_CLIENT_QUOTAS, 1, dict(components=(), strict=False),
                                 [(DESCRIBE_CONFIGS, CLUSTER, cl)], CLUSTER_AUTH),
    }  # fmt: skip


API_NAMES = list(_cases("t", "g", "x"))


@pytest.mark.parametrize("api", API_NAMES)
def test_each_api_with_and_without_its_acl(brokers: list[Broker], api: str) -> None:
    b = brokers[0]
    suffix = uuid.uuid4().hex[:6]
    topic, group, tid = f"api-{suffix}", f"api-group-{suffix}", f"api-tid-{suffix}"
    create_topic(b, topic)
    key, version, fields, grants, error = _cases(topic, group, tid)[api]

    def codes() -> set[int]:
        with SaslConn(b, "dave") as c:
            return error_codes(c.call(key, version, **fields))

    denied = codes()
    assert error in denied, f"{api} without ACLs answered {denied}"
    for op, rtype, name in grants:
        acl(b, "dave", op, rtype, name)
    try:
        allowed = wait_until(lambda: (lambda got: got if not got & AUTH_ERRORS else None)(codes()),
                             f"{api} allowed with {grants}", 10.0)  # fmt: skip
        assert allowed is not None
    finally:
        for op, rtype, name in grants:  # dave's cluster ACLs must not outlive the case
            acl(b, "dave", op, rtype, name, remove=True)
        wait_until(lambda: error in codes(), f"{api} refused again", 10.0)


AUTH_ERRORS = {TOPIC_AUTH, GROUP_AUTH, CLUSTER_AUTH, TXN_AUTH}
