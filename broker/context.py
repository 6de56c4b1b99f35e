"""What a request handler may use: the broker's services, bundled once at start-up.

Handlers are functions `handle(ctx, request, session) -> response | None | Awaitable[...]`
(the session: broker/session.py); they reach
the partitions through `ctx.replicas`, the cluster view through `ctx.metadata`, and ZooKeeper
only through `ctx.topics` (a `TopicStore`: the daemon wires coordinator/cluster/topics.py
behind it, tests pass an in-memory fake), so no handler imports kazoo. The coordinators are
`ctx.groups` (consumer groups) and `ctx.transactions` (transactional ids), both on the
coordinator runtime (coordinator/runtime/).

`ControllerEpoch` keeps the highest controller epoch seen; controller-to-broker requests with
a lower one are refused (STALE_CONTROLLER_EPOCH) and change nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from broker.config import BrokerConfig
from broker.metadata_cache import MetadataCache
from broker.quota.manager import Quotas
from broker.replica_manager import ReplicaManager
from coordinator.runtime.log import TopicCreator
from protocol.clock import Clock

if TYPE_CHECKING:
    from broker.credentials import CredentialStore
    from broker.quota.store import QuotaStore
    from broker.security.authorizer import Authorizer
    from broker.security.sasl import SaslService
    from broker.txn_verifier import TxnVerifier
    from coordinator.cluster.producer_ids import ProducerIdManager
    from coordinator.controller.elector import ControllerElector
    from coordinator.group.service import GroupCoordinator
    from coordinator.transaction.service import TransactionCoordinator


class TopicStore(TopicCreator, Protocol):
    """Topic records in ZooKeeper, as the broker needs them (`create_topic` is the
    coordinators' TopicCreator's, coordinator/runtime/log.py)."""

    async def read_topic_config(self, topic: str) -> Mapping[str, str]:
        """The topic's config overrides ({} when it has none)."""
        ...

    async def delete_topic(self, name: str) -> None:
        """Mark the topic for deletion (raises UnknownTopicOrPartitionError)."""
        ...

    async def write_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        """Replace the topic's overrides and tell every broker to apply them
        (raises UnknownTopicOrPartitionError)."""
        ...

    async def add_partitions(
        self,
        name: str,
        count: int,
        assignments: list[list[int]] | None,
        live_broker_ids: list[int],
        validate_only: bool,
    ) -> dict[int, list[int]]:
        """Give the topic `count` partitions (the added ones' replicas `assignments`, or
        placed); returns the added partitions' replicas. Raises UnknownTopicOrPartitionError,
        InvalidPartitionsError, InvalidReplicaAssignmentError, ..."""
        ...


class ControllerEpoch:
    def __init__(self) -> None:
        self.current = -1

    def admit(self, epoch: int) -> bool:
        """True (and remember it) unless `epoch` is older than one already seen."""
        if epoch < self.current:
            return False
        self.current = epoch
        return True


@dataclass(slots=True)
class BrokerContext:
    config: BrokerConfig
    clock: Clock
    replicas: ReplicaManager
    metadata: MetadataCache
    topics: TopicStore
    controller_epoch: ControllerEpoch
    groups: GroupCoordinator | None = None  # consumer groups (coordinator/group/service.py)
    transactions: TransactionCoordinator | None = None  # coordinator/transaction/service.py
    txn_verifier: TxnVerifier | None = None  # KIP-890 on produce (broker/txn_verifier.py)
    elector: ControllerElector | None = None  # controller-only admin APIs (issue 4)
    producer_ids: ProducerIdManager | None = (
        None  # InitProducerId (coordinator/cluster/producer_ids.py)
    )
    cluster_id: str | None = None  # /cluster/id, read at start (coordinator/cluster/cluster_id.py)
    # SASL on SASL_* listeners (broker/security/sasl.py: mechanisms, PLAIN users, SCRAM
    # credentials, KIP-368); None: no SASL, SaslHandshake/SaslAuthenticate get ILLEGAL_SASL_STATE
    sasl: SaslService | None = None
    # client quotas (broker/quota/manager.py), kept in step with ZooKeeper by the daemon
    quotas: Quotas = field(default_factory=Quotas)
    # where AlterClientQuotas/DescribeClientQuotas keep them (broker/quota/store.py); None: not
    # served (the handlers answer UNKNOWN_SERVER_ERROR saying so)
    quota_store: QuotaStore | None = None
    # Kafka's ACLs (broker/security/authorizer.py); None: no authorizer configured, so every
    # request is allowed, as Kafka without authorizer.class.name
    authorizer: Authorizer | None = None
    # SCRAM credentials (broker/credentials.py): the SASL server's lookup and KIP-554's
    # Describe/AlterUserScramCredentials; the daemon wires /config/users behind it
    credentials: CredentialStore | None = None

    @classmethod
    def create(
        cls, config: BrokerConfig, clock: Clock, replicas: ReplicaManager, topics: TopicStore
    ) -> BrokerContext:
        """A context for a starting broker: an empty metadata cache, no controller epoch seen
        yet, and no group coordinator, controller elector or producer id manager (the daemon
        attaches those)."""
        return cls(config, clock, replicas, MetadataCache(), topics, ControllerEpoch())
