"""DescribeCluster (60), v0-v1: the live brokers at their Kafka endpoints, the controller id and
the cluster id (/cluster/id), from the metadata cache, as Metadata gives them. Brokers without a
Kafka listener are left out. endpoint_type (v1) 1 asks for brokers; 2 (KRaft controllers) is
answered UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker answers it."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import DESCRIBE_CLUSTER

ENDPOINT_BROKERS = 1
UNSUPPORTED_ENDPOINT_TYPE = 119
NO_AUTHORIZED_OPERATIONS = -2147483648
NO_CLUSTER_ID = ""  # a broker that has not read /cluster/id (in-process tests)


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    cls = response_class(DESCRIBE_CLUSTER, request.header.api_version)
    cache = ctx.metadata
    cluster_id = ctx.cluster_id or NO_CLUSTER_ID
    endpoint_type = getattr(req, "endpoint_type", ENDPOINT_BROKERS)
    if endpoint_type != ENDPOINT_BROKERS:
        return make(
            cls, throttle_time=0, error_code=UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"endpoint type {endpoint_type} is not served: brokers only (1)",
            endpoint_type=endpoint_type, cluster_id=cluster_id, controller_id=-1, brokers=(),
            cluster_authorized_operations=NO_AUTHORIZED_OPERATIONS,
        )  # fmt: skip
    broker_cls = nested(cls, "DescribeClusterBroker")
    brokers = tuple(
        make(broker_cls, broker_id=node_id, host=host, port=port, rack=rack)
        for node_id, host, port, rack in cache.kafka_brokers(session.listener)
    )
    ops = NO_AUTHORIZED_OPERATIONS
    if req.include_cluster_authorized_operations:  # KIP-430: 0 without Describe on the cluster
        allowed = rules.allows(ctx, session, rules.DESCRIBE, rules.CLUSTER, api="DescribeCluster")
        ops = rules.authorized_operations(ctx, session, rules.CLUSTER) if allowed else 0
    return make(
        cls, throttle_time=0, error_code=0, error_message=None, endpoint_type=ENDPOINT_BROKERS,
        cluster_id=cluster_id, controller_id=cache.controller_id, brokers=brokers,
        cluster_authorized_operations=ops,
    )  # fmt: skip
