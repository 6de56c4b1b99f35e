"""ACL enforcement: which operation on which resource each API checks, and the calls that check.

`RULES` is Kafka's "Operations and Resources on Protocols" table, read against KafkaApis.scala
(Kafka 3.9), one row per API: what is checked, on which resource, and what a denial answers.
The operations (broker/operations/, whose rows in broker/apis.py's table name their rule here)
make the checks with the functions below; tests/unit/broker/operations/test_table.py and
tests/unit/broker/test_acl_rules.py hold them to the table.

Every function asks `ctx.authorizer` (broker/security/authorizer.py), and with no authorizer
configured (`ctx.authorizer is None`, Kafka without authorizer.class.name) answers "allowed"
after one attribute test, so the produce and fetch paths cost nothing when ACLs are off.
With an authorizer, a request costs one `authorize_many` per operation and resource type (not
one per partition): `denied` names what a principal may not touch among a request's names.

Kafka's conventions, which the handlers keep:
- A per-resource denial is that resource's error in the answer (TOPIC_AUTHORIZATION_FAILED,
  GROUP_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED); a cluster-level denial is
  CLUSTER_AUTHORIZATION_FAILED for the whole request. Authorization comes before existence: a
  topic the principal may not touch is TOPIC_AUTHORIZATION_FAILED whether or not it exists.
- What a principal may not Describe is not shown where Kafka hides it: Metadata for all topics,
  ListGroups, ListTransactions, DescribeTopicPartitions for all topics and OffsetFetch's
  all-partitions answer leave it out silently (and do not log those denials).
- Broker-internal requests (a follower's Fetch, LeaderAndIsr, StopReplica, UpdateMetadata,
  ControlledShutdown, WriteTxnMarkers, AddPartitionsToTxn v4+) need ClusterAction on the
  cluster. Brokers send them as their own principal, so that principal belongs in
  `super_users` (or gets ClusterAction), as in Kafka: User:<broker user> with a SASL
  inter-broker listener (`odradek cluster up --secure` does this), the certificate's mapped
  name with mTLS, and User:ANONYMOUS when the inter-broker listener is PLAINTEXT (then keep
  Kafka clients off that listener). Without it, an authorizer refuses the controller's
  LeaderAndIsr and the followers' fetches: leadership and replication stop.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.session import Session
from protocol.acl import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, ResourceType
from protocol.api.admin import RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC
from protocol.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    OdradekError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)

if TYPE_CHECKING:
    from broker.context import BrokerContext

TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
CLUSTER = ResourceType.CLUSTER
TXN_ID = ResourceType.TRANSACTIONAL_ID

READ = AclOperation.READ
WRITE = AclOperation.WRITE
CREATE = AclOperation.CREATE
DELETE = AclOperation.DELETE
ALTER = AclOperation.ALTER
DESCRIBE = AclOperation.DESCRIBE
CLUSTER_ACTION = AclOperation.CLUSTER_ACTION
DESCRIBE_CONFIGS = AclOperation.DESCRIBE_CONFIGS
ALTER_CONFIGS = AclOperation.ALTER_CONFIGS
IDEMPOTENT_WRITE = AclOperation.IDEMPOTENT_WRITE

# KIP-430: a response's authorized-operations field when the request did not ask for it.
NOT_ASKED = -(2**31)

ERROR_OF: dict[ResourceType, type[OdradekError]] = {
    TOPIC: TopicAuthorizationFailedError,
    GROUP: GroupAuthorizationFailedError,
    CLUSTER: ClusterAuthorizationFailedError,
    TXN_ID: TransactionalIdAuthorizationFailedError,
}


@dataclass(frozen=True, slots=True)
class Rule:
    operation: AclOperation
    resource_type: ResourceType
    when: str  # what the check applies to and what a denial answers


def _r(op: AclOperation, rtype: ResourceType, when: str) -> Rule:
    return Rule(op, rtype, when)


# fmt: off
RULES: dict[str, tuple[Rule, ...]] = {
    "Produce": (
        _r(WRITE, TXN_ID, "transactional records: the whole request is refused"),
        _r(WRITE, TOPIC, "each topic: its partitions answer TOPIC_AUTHORIZATION_FAILED"),
    ),
    "Fetch": (
        _r(CLUSTER_ACTION, CLUSTER, "a follower: every partition TOPIC_AUTHORIZATION_FAILED"),
        _r(READ, TOPIC, "a consumer, each topic: its partitions TOPIC_AUTHORIZATION_FAILED"),
    ),
    "ListOffsets": (_r(DESCRIBE, TOPIC, "each topic: TOPIC_AUTHORIZATION_FAILED"),),
    "Metadata": (
        _r(DESCRIBE, TOPIC, "all topics: the others are left out; named: "
                            "TOPIC_AUTHORIZATION_FAILED"),
        _r(DESCRIBE, CLUSTER, "cluster_authorized_operations, when asked (else 0)"),
        _r(CREATE, CLUSTER, "auto-creating topics: every one"),
        _r(CREATE, TOPIC, "without Create on the cluster, each auto-created topic: "
                          "TOPIC_AUTHORIZATION_FAILED"),
    ),
    "ApiVersions": (),  # none: asked before authenticating, Kafka checks nothing
    "LeaderAndIsr": (_r(CLUSTER_ACTION, CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),),
    "StopReplica": (_r(CLUSTER_ACTION, CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),),
    "UpdateMetadata": (_r(CLUSTER_ACTION, CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),),
    "ControlledShutdown": (_r(CLUSTER_ACTION, CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),),
    # the share coordinator's state APIs (KIP-932): brokers only, as in Kafka
    **{
        api: (_r(CLUSTER_ACTION, CLUSTER, "every partition CLUSTER_AUTHORIZATION_FAILED"),)
        for api in ("InitializeShareGroupState", "ReadShareGroupState", "WriteShareGroupState",
                    "DeleteShareGroupState", "ReadShareGroupStateSummary")
    },
    "OffsetCommit": (
        _r(READ, GROUP, "first: GROUP_AUTHORIZATION_FAILED for every partition"),
        _r(READ, TOPIC, "each topic: TOPIC_AUTHORIZATION_FAILED"),
    ),
    "OffsetFetch": (
        _r(DESCRIBE, GROUP, "first: GROUP_AUTHORIZATION_FAILED"),
        _r(DESCRIBE, TOPIC, "named topics: TOPIC_AUTHORIZATION_FAILED; all: left out"),
    ),
    "FindCoordinator": (
        _r(DESCRIBE, GROUP, "a group key: GROUP_AUTHORIZATION_FAILED"),
        _r(DESCRIBE, TXN_ID, "a transaction key: TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        _r(CLUSTER_ACTION, CLUSTER, "a share key: CLUSTER_AUTHORIZATION_FAILED"),
    ),
    "JoinGroup": (_r(READ, GROUP, "GROUP_AUTHORIZATION_FAILED"),),
    "Heartbeat": (_r(READ, GROUP, "GROUP_AUTHORIZATION_FAILED"),),
    "LeaveGroup": (_r(READ, GROUP, "GROUP_AUTHORIZATION_FAILED"),),
    "SyncGroup": (_r(READ, GROUP, "GROUP_AUTHORIZATION_FAILED"),),
    "DescribeGroups": (_r(DESCRIBE, GROUP, "each group: GROUP_AUTHORIZATION_FAILED"),),
    "DeleteGroups": (_r(DELETE, GROUP, "each group: GROUP_AUTHORIZATION_FAILED"),),
    "ListGroups": (
        _r(DESCRIBE, CLUSTER, "every group shown"),
        _r(DESCRIBE, GROUP, "without Describe on the cluster: only these; never an error"),
    ),
    "CreateTopics": (
        _r(CREATE, CLUSTER, "every topic"),
        _r(CREATE, TOPIC, "without Create on the cluster, each topic: "
                          "TOPIC_AUTHORIZATION_FAILED"),
        _r(DESCRIBE_CONFIGS, TOPIC, "a created topic's configs (Kafka v5+): else "
                                    "TOPIC_AUTHORIZATION_FAILED as its config error"),
    ),
    "DeleteTopics": (
        _r(DELETE, TOPIC, "each topic: TOPIC_AUTHORIZATION_FAILED"),
        _r(DESCRIBE, TOPIC, "named by id (v6): without it the name is not shown"),
    ),
    "DeleteRecords": (_r(DELETE, TOPIC, "each topic: TOPIC_AUTHORIZATION_FAILED"),),
    "InitProducerId": (
        _r(WRITE, TXN_ID, "with a transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        _r(IDEMPOTENT_WRITE, CLUSTER, "without one, unless Write on some topic (KIP-679): "
                                      "CLUSTER_AUTHORIZATION_FAILED"),
    ),
    "OffsetForLeaderEpoch": (
        _r(CLUSTER_ACTION, CLUSTER, "every topic"),
        _r(DESCRIBE, TOPIC, "without ClusterAction, each topic: TOPIC_AUTHORIZATION_FAILED"),
    ),
    "AddPartitionsToTxn": (
        _r(WRITE, TXN_ID, "v0-v3: TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        _r(WRITE, TOPIC, "each topic: TOPIC_AUTHORIZATION_FAILED (the others "
                         "OPERATION_NOT_ATTEMPTED)"),
        _r(CLUSTER_ACTION, CLUSTER, "v4+ (brokers verifying): CLUSTER_AUTHORIZATION_FAILED"),
    ),
    "AddOffsetsToTxn": (
        _r(WRITE, TXN_ID, "first: TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        _r(READ, GROUP, "GROUP_AUTHORIZATION_FAILED"),
    ),
    "EndTxn": (_r(WRITE, TXN_ID, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),),
    "WriteTxnMarkers": (
        _r(ALTER, CLUSTER, "allowed"),
        _r(CLUSTER_ACTION, CLUSTER, "without Alter: CLUSTER_AUTHORIZATION_FAILED"),
    ),
    "TxnOffsetCommit": (
        _r(WRITE, TXN_ID, "first: TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        _r(READ, GROUP, "then: GROUP_AUTHORIZATION_FAILED"),
        _r(READ, TOPIC, "each topic: TOPIC_AUTHORIZATION_FAILED"),
    ),
    "DescribeConfigs": (
        _r(DESCRIBE_CONFIGS, CLUSTER, "a broker resource: CLUSTER_AUTHORIZATION_FAILED"),
        _r(DESCRIBE_CONFIGS, TOPIC, "a topic resource: TOPIC_AUTHORIZATION_FAILED"),
    ),
    "AlterConfigs": (
        _r(ALTER_CONFIGS, CLUSTER, "a broker resource: CLUSTER_AUTHORIZATION_FAILED"),
        _r(ALTER_CONFIGS, TOPIC, "a topic resource: TOPIC_AUTHORIZATION_FAILED"),
    ),
    "IncrementalAlterConfigs": (
        _r(ALTER_CONFIGS, CLUSTER, "a broker resource: CLUSTER_AUTHORIZATION_FAILED"),
        _r(ALTER_CONFIGS, TOPIC, "a topic resource: TOPIC_AUTHORIZATION_FAILED"),
    ),
    "ListConfigResources": (_r(DESCRIBE_CONFIGS, CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),),
    "DescribeLogDirs": (_r(DESCRIBE, CLUSTER, "no directories, CLUSTER_AUTHORIZATION_FAILED"),),
    "AlterReplicaLogDirs": (_r(ALTER, CLUSTER, "each partition: CLUSTER_AUTHORIZATION_FAILED"),),
    "CreatePartitions": (_r(ALTER, TOPIC, "each topic: TOPIC_AUTHORIZATION_FAILED"),),
    "ElectLeaders": (_r(ALTER, CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),),
    "AlterPartitionReassignments": (_r(ALTER, CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),),
    "ListPartitionReassignments": (_r(DESCRIBE, CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),),
    "OffsetDelete": (
        _r(DELETE, GROUP, "first: GROUP_AUTHORIZATION_FAILED"),
        _r(READ, TOPIC, "each topic: TOPIC_AUTHORIZATION_FAILED"),
    ),
    "DescribeCluster": (_r(DESCRIBE, CLUSTER, "cluster_authorized_operations when asked "
                                              "(else 0); never an error"),),
    "DescribeProducers": (_r(READ, TOPIC, "each topic: TOPIC_AUTHORIZATION_FAILED"),),
    "DescribeTransactions": (
        _r(DESCRIBE, TXN_ID, "each id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        _r(DESCRIBE, TOPIC, "the transaction's topics the principal may not describe are "
                            "left out"),
    ),
    "ListTransactions": (_r(DESCRIBE, TXN_ID, "only these are listed"),),
    "ConsumerGroupHeartbeat": (
        _r(READ, GROUP, "first: GROUP_AUTHORIZATION_FAILED"),
        _r(DESCRIBE, TOPIC, "every subscribed topic name: else TOPIC_AUTHORIZATION_FAILED"),
    ),
    "ConsumerGroupDescribe": (_r(DESCRIBE, GROUP, "each group: GROUP_AUTHORIZATION_FAILED"),),
    # share groups (KIP-932, broker/operations/share_*.py): GROUP resources, as Kafka
    "ShareGroupHeartbeat": (
        _r(READ, GROUP, "first: GROUP_AUTHORIZATION_FAILED"),
        _r(DESCRIBE, TOPIC, "every subscribed topic name: else TOPIC_AUTHORIZATION_FAILED"),
    ),
    "ShareGroupDescribe": (_r(DESCRIBE, GROUP, "each group: GROUP_AUTHORIZATION_FAILED"),),
    "ShareFetch": (
        _r(READ, GROUP, "first: GROUP_AUTHORIZATION_FAILED"),
        _r(READ, TOPIC, "each topic: TOPIC_AUTHORIZATION_FAILED"),
    ),
    "ShareAcknowledge": (
        _r(READ, GROUP, "first: GROUP_AUTHORIZATION_FAILED"),
        _r(READ, TOPIC, "each topic: TOPIC_AUTHORIZATION_FAILED"),
    ),
    "DescribeShareGroupOffsets": (
        _r(DESCRIBE, GROUP, "each group: GROUP_AUTHORIZATION_FAILED"),
        _r(DESCRIBE, TOPIC, "named: each partition TOPIC_AUTHORIZATION_FAILED; all: left out"),
    ),
    "AlterShareGroupOffsets": (
        _r(READ, GROUP, "first: GROUP_AUTHORIZATION_FAILED"),
        _r(READ, TOPIC, "each topic: its partitions TOPIC_AUTHORIZATION_FAILED"),
    ),
    "DeleteShareGroupOffsets": (
        _r(DELETE, GROUP, "first: GROUP_AUTHORIZATION_FAILED"),
        _r(READ, TOPIC, "each topic: TOPIC_AUTHORIZATION_FAILED"),
    ),
    "DescribeTopicPartitions": (
        _r(DESCRIBE, TOPIC, "all topics: the others are left out; named: "
                            "TOPIC_AUTHORIZATION_FAILED"),
    ),
    # ACLs (broker/operations/*_acls.py): no authorizer is SECURITY_DISABLED first
    "DescribeAcls": (_r(DESCRIBE, CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),),
    "CreateAcls": (_r(ALTER, CLUSTER, "each creation: CLUSTER_AUTHORIZATION_FAILED"),),
    "DeleteAcls": (_r(ALTER, CLUSTER, "each filter: CLUSTER_AUTHORIZATION_FAILED"),),
    "DescribeUserScramCredentials": (_r(DESCRIBE, CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),),
    "AlterUserScramCredentials": (_r(ALTER, CLUSTER, "each user: "
                                                     "CLUSTER_AUTHORIZATION_FAILED"),),
    "DescribeClientQuotas": (_r(DESCRIBE_CONFIGS, CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),),
    "AlterClientQuotas": (_r(ALTER_CONFIGS, CLUSTER, "each entry: "
                                                     "CLUSTER_AUTHORIZATION_FAILED"),),
}
# fmt: on

NOTHING: frozenset[str] = frozenset()


def allows(
    ctx: BrokerContext,
    session: Session,
    op: AclOperation,
    rtype: ResourceType,
    name: str = CLUSTER_NAME,
    *,
    api: str = "",
    log_denied: bool = True,
) -> bool:
    """May this session's principal do `op` on one resource (the cluster by default)? `api`
    names the request in the authorizer log."""
    authorizer = ctx.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize(session, op, rtype, name, request=api, log_if_denied=log_denied)


def denied(
    ctx: BrokerContext,
    session: Session,
    op: AclOperation,
    rtype: ResourceType,
    names: Iterable[str],
    *,
    api: str = "",
    log_denied: bool = True,
) -> frozenset[str]:
    """The names among `names` the principal may not `op`: one authorizer call for them all.
    `log_denied` False for names the principal did not ask for by name (a filter)."""
    authorizer = ctx.authorizer
    if authorizer is None:
        return NOTHING
    wanted = set(names)
    if len(wanted) == 1:  # the common case (one topic, one group): no set arithmetic
        (name,) = wanted
        if authorizer.authorize(session, op, rtype, name, request=api, log_if_denied=log_denied):
            return NOTHING
        return frozenset(wanted)
    if not wanted:
        return NOTHING
    allowed = authorizer.authorize_many(
        session, op, rtype, wanted, request=api, log_if_denied=log_denied
    )
    return frozenset(wanted.difference(allowed))


def allows_any(
    ctx: BrokerContext, session: Session, op: AclOperation, rtype: ResourceType, *, api: str = ""
) -> bool:
    """Kafka's authorizeByResourceType: could `op` be allowed on some resource of the type?"""
    authorizer = ctx.authorizer
    return authorizer is None or authorizer.authorize_any(session, op, rtype, request=api)


def check_config_resource(
    ctx: BrokerContext, session: Session, op: AclOperation, config_type: int, name: str, api: str
) -> None:
    """DescribeConfigs / AlterConfigs: `op` on what a config resource names (a broker's configs:
    the cluster; a topic's: the topic; a group's: the group); raises the refusal. Other types
    pass: the handler refuses them for what they are."""
    rtype = {RESOURCE_BROKER: CLUSTER, RESOURCE_TOPIC: TOPIC, RESOURCE_GROUP: GROUP}.get(
        config_type
    )
    if rtype is None:
        return
    target = CLUSTER_NAME if rtype == CLUSTER else name
    if not allows(ctx, session, op, rtype, target, api=api):
        raise refusal(session, op, rtype, target)


def group_heartbeat_refusal(
    ctx: BrokerContext, session: Session, group_id: str, topics: Iterable[str] | None,
    api: str = "ConsumerGroupHeartbeat",
) -> OdradekError | None:  # fmt: skip
    """ConsumerGroupHeartbeat's (and ShareGroupHeartbeat's, `api`) checks on either door
    (KIP-848, as Kafka 4.0): Read on the group, then Describe on every subscribed topic name (a
    client may not learn of topics it may not see); None when both pass."""
    if not allows(ctx, session, READ, GROUP, group_id, api=api):
        return refusal(session, READ, GROUP, group_id)
    hidden = denied(ctx, session, DESCRIBE, TOPIC, topics or (), api=api)
    if hidden:
        return TopicAuthorizationFailedError(
            f"{session.principal} may not describe subscribed topic(s) "
            + ", ".join(repr(t) for t in sorted(hidden))
        )
    return None


def refusal(session: Session, op: AclOperation, rtype: ResourceType, name: str) -> OdradekError:
    """The error a denial answers, with a message naming who asked for what."""
    what = "the cluster" if rtype == CLUSTER else f"{_type_name(rtype)} {name!r}"
    return ERROR_OF[rtype](f"{session.principal} may not {_op_name(op)} {what}")


def authorized_operations(
    ctx: BrokerContext, session: Session, rtype: ResourceType, name: str = CLUSTER_NAME
) -> int:
    """KIP-430: the bit field (1 << operation code) of what the principal may do to the
    resource, among the operations Kafka supports on its type (all of them with no
    authorizer). Denials are not logged: this is a question, not an attempt."""
    ops = SUPPORTED_OPERATIONS[rtype]
    authorizer = ctx.authorizer
    bits = 0
    for op in ops:
        if authorizer is None or authorizer.authorize(
            session, op, rtype, name, log_if_denied=False, log_if_allowed=False
        ):
            bits |= 1 << int(op)
    return bits


def _op_name(op: AclOperation) -> str:
    return "".join(p.capitalize() for p in op.name.split("_"))


def _type_name(rtype: ResourceType) -> str:
    return {TOPIC: "topic", GROUP: "group", TXN_ID: "transactional id"}.get(rtype, rtype.name)
