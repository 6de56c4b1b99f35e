"""ListConfigResources (KIP-1142, API key 74; Kafka door only): the resources DescribeConfigs
and AlterConfigs can name, by type, as Kafka 4.1+ answers them.

DescribeConfigs on the cluster is required (else CLUSTER_AUTHORIZATION_FAILED and no
resources). v0 is KIP-1000's ListClientMetricsResources: client-metrics subscriptions only.
v1 names the types wanted (none: every type served). Served types, in Kafka's answer order
(KafkaApis.handleListConfigResources), each sorted:

    GROUP (32)           every group with configs of its own (KIP-848 group configs, which
                         every broker follows from ZooKeeper), as Kafka's groupConfigManager
    CLIENT_METRICS (16)  none: odradek has no KIP-714 client-metrics subscriptions
    BROKER (4)           every live broker's id
    TOPIC (2)            every topic

BROKER_LOGGER (8) is not served (odradek's logger levels are a static setting, not a config
DescribeConfigs serves): asking for it, or for a type Kafka does not know, is answered
UNSUPPORTED_VERSION with no resources, as Kafka answers a type it does not support.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.admin import RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC
from protocol.errors import ClusterAuthorizationFailedError, UnsupportedVersionError

API = "ListConfigResources"
RESOURCE_CLIENT_METRICS = 16
SERVED_TYPES = (RESOURCE_GROUP, RESOURCE_CLIENT_METRICS, RESOURCE_BROKER, RESOURCE_TOPIC)


@dataclass(frozen=True, slots=True)
class ListConfigResources:
    resource_types: tuple[int, ...] = ()  # v1: the types wanted (empty: every type served)
    client_metrics_only: bool = False  # v0 (ListClientMetricsResources)


@dataclass(frozen=True, slots=True)
class ListConfigResourcesResult:
    error_code: int
    resources: tuple[tuple[str, int], ...] = ()  # (name, resource type)
    error_message: str | None = None


def run(
    ctx: BrokerContext, session: Session, req: ListConfigResources
) -> ListConfigResourcesResult:
    if not rules.allows(ctx, session, rules.DESCRIBE_CONFIGS, rules.CLUSTER, api=API):
        return ListConfigResourcesResult(ClusterAuthorizationFailedError.code)
    wanted = (RESOURCE_CLIENT_METRICS,) if req.client_metrics_only else req.resource_types
    unserved = sorted(set(wanted) - set(SERVED_TYPES))
    if unserved:
        why = f"resource types {unserved} are not served (served: {list(SERVED_TYPES)})"
        return ListConfigResourcesResult(UnsupportedVersionError.code, (), why)
    return ListConfigResourcesResult(0, listed(ctx, set(wanted or SERVED_TYPES)))


def listed(ctx: BrokerContext, types: set[int]) -> tuple[tuple[str, int], ...]:
    """(name, type) of every resource of `types`, in SERVED_TYPES' order."""
    out: list[tuple[str, int]] = []
    if RESOURCE_GROUP in types:
        out += [(g, RESOURCE_GROUP) for g in ctx.groups.configs.group_ids()]
    if RESOURCE_BROKER in types:
        out += [(str(b), RESOURCE_BROKER) for b in ctx.metadata.live_broker_ids()]
    if RESOURCE_TOPIC in types:
        out += [(t, RESOURCE_TOPIC) for t in sorted(ctx.metadata.topics)]
    return tuple(out)
