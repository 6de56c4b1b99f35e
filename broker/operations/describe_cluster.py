"""DescribeCluster (Kafka door only): the live brokers at the Kafka endpoint of the listener
the request came in on (those without it are left out, as Metadata leaves them), the
controller id and the cluster id (/cluster/id; "" on a broker that has not read it), from the
metadata cache. Endpoint type 1 asks for brokers; 2 (KRaft controllers) is answered
UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker answers it. Never an authorization error: with
`cluster_operations` (KIP-430) the principal's operations on the cluster, 0 without Describe.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.metadata import BrokerInfo

API = "DescribeCluster"
ENDPOINT_BROKERS = 1
UNSUPPORTED_ENDPOINT_TYPE = 119
NO_OPERATIONS = rules.NOT_ASKED
NO_CLUSTER_ID = ""


@dataclass(frozen=True, slots=True)
class DescribeCluster:
    endpoint_type: int = ENDPOINT_BROKERS
    cluster_operations: bool = False  # KIP-430, asked


@dataclass(frozen=True, slots=True)
class DescribeClusterResult:
    error_code: int
    error_message: str | None
    endpoint_type: int
    cluster_id: str
    controller_id: int
    brokers: tuple[BrokerInfo, ...]  # host/port: the Kafka endpoint asked on
    cluster_operations: int = NO_OPERATIONS


def run(ctx: BrokerContext, session: Session, req: DescribeCluster) -> DescribeClusterResult:
    cluster_id = ctx.cluster.id or NO_CLUSTER_ID
    if req.endpoint_type != ENDPOINT_BROKERS:
        why = f"endpoint type {req.endpoint_type} is not served: brokers only (1)"
        return DescribeClusterResult(UNSUPPORTED_ENDPOINT_TYPE, why, req.endpoint_type,
                                     cluster_id, -1, ())  # fmt: skip
    cache = ctx.metadata
    listed = cache.kafka_brokers(session.listener)
    brokers = tuple(BrokerInfo(node_id, host, port, rack) for node_id, host, port, rack in listed)
    ops = NO_OPERATIONS
    if req.cluster_operations:
        allowed = rules.allows(ctx, session, rules.DESCRIBE, rules.CLUSTER, api=API)
        ops = rules.authorized_operations(ctx, session, rules.CLUSTER) if allowed else 0
    return DescribeClusterResult(0, None, ENDPOINT_BROKERS, cluster_id, cache.controller_id,
                                 brokers, ops)  # fmt: skip
