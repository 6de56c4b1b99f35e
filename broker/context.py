"""What a request handler may use: the broker's services, bundled once at start-up.

Handlers are functions `handle(ctx, request, session) -> response | None | Awaitable[...]`
(the session: broker/session.py); they reach
the partitions through `ctx.replicas`, the cluster view through `ctx.metadata`, and ZooKeeper
only through `ctx.topics` (a `TopicStore`: the daemon wires coordinator/cluster/topics.py
behind it, tests pass an in-memory fake), so no handler imports kazoo. The coordinators are
`ctx.groups` (consumer groups) and `ctx.transactions` (transactional ids), both on the
coordinator runtime (coordinator/runtime/).

The context is complete when it is built: broker/daemon.py builds every service first and then
the context in one call, and nothing is attached afterwards, so a handler never asks whether a
service is there. The one optional field is `authorizer`: None is Kafka's broker without
authorizer.class.name, which allows everything. Two things are only known once the broker
starts, and the context holds a small object for each that it can hold from the beginning:
`ctx.elector` is the ControllerElector, built with the broker and started by `start`
(`active_controller` is None until it wins an election), and `ctx.cluster` is a
`ClusterIdentity` whose id `start` reads from ZooKeeper (/cluster/id) and settles once, before
any listener accepts a connection, so no request ever sees it unset. `config` is the one field
that changes: the settings in effect, replaced whole (a new frozen BrokerConfig) when a dynamic
broker config changes (broker/dynamic_apply.py); `static_config` is the config file's.

`ControllerEpoch` keeps the highest controller epoch seen; controller-to-broker requests with
a lower one are refused (STALE_CONTROLLER_EPOCH) and change nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from broker.config import BrokerConfig
from broker.metadata_cache import MetadataCache
from broker.quota.manager import Quotas
from broker.replica_manager import ReplicaManager
from broker.share.manager import SharePartitionManager
from coordinator.runtime.log import TopicCreator
from protocol.clock import Clock

if TYPE_CHECKING:
    from broker.credentials import CredentialStore
    from broker.quota.store import QuotaStore
    from broker.security.authorizer import Authorizer
    from broker.security.sasl import SaslService
    from broker.share.persister import StatePersister
    from broker.txn_verifier import TxnVerifier
    from coordinator.cluster.producer_ids import ProducerIdManager
    from coordinator.controller.core import Controller
    from coordinator.group.service import GroupCoordinator
    from coordinator.share.service import ShareCoordinator
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


class BrokerConfigStore(Protocol):
    """Dynamic broker configs (/config/brokers/<id> and /config/brokers/<default>, Kafka
    names): coordinator/cluster/broker_configs.py in a real broker."""

    async def read_broker_config(self, entity: str) -> dict[str, str]:
        """The entity's ("1", "<default>") dynamic configs ({} when it has none)."""
        ...

    async def write_broker_config(self, entity: str, config: Mapping[str, str]) -> None:
        """Replace the entity's dynamic configs and tell every broker to apply them."""
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


class ControllerSeat(Protocol):
    """This broker's seat in the controller election (coordinator/controller/elector.py's
    ControllerElector in a real broker)."""

    @property
    def active_controller(self) -> Controller | None:
        """The Controller while this broker is the controller, else None."""
        ...


class ClusterIdentity:
    """The cluster id (/cluster/id), read from ZooKeeper once at start: `settle` sets it,
    before any listener accepts a connection, and never again; requests read `id`."""

    __slots__ = ("_id",)

    def __init__(self, cluster_id: str | None = None) -> None:
        self._id = cluster_id

    @property
    def id(self) -> str | None:
        """The cluster id; None only before the broker started listening."""
        return self._id

    def settle(self, cluster_id: str) -> None:
        """Set the id read at start (an id once settled does not change)."""
        if self._id is not None and self._id != cluster_id:
            raise ValueError(f"the cluster id is {self._id}, not {cluster_id}")
        self._id = cluster_id


@dataclass(slots=True)
class BrokerContext:
    config: BrokerConfig
    clock: Clock
    replicas: ReplicaManager
    metadata: MetadataCache
    topics: TopicStore
    controller_epoch: ControllerEpoch
    groups: GroupCoordinator  # consumer groups (coordinator/group/service.py)
    transactions: TransactionCoordinator  # coordinator/transaction/service.py
    txn_verifier: TxnVerifier  # KIP-890 on produce (broker/txn_verifier.py)
    producer_ids: ProducerIdManager  # InitProducerId (coordinator/cluster/producer_ids.py)
    elector: ControllerSeat  # the controller-only admin APIs (issue 4)
    cluster: ClusterIdentity  # /cluster/id (coordinator/cluster/cluster_id.py)
    # SASL on SASL_* listeners (broker/security/sasl.py: mechanisms, PLAIN users, SCRAM
    # credentials, KIP-368); a listener that is not SASL_* never reaches it
    sasl: SaslService
    # client quotas (broker/quota/manager.py), kept in step with ZooKeeper by the daemon
    quotas: Quotas
    # where AlterClientQuotas/DescribeClientQuotas keep them (broker/quota/store.py)
    quota_store: QuotaStore
    # SCRAM credentials (broker/credentials.py): the SASL server's lookup and KIP-554's
    # Describe/AlterUserScramCredentials; the daemon wires /config/users behind it
    credentials: CredentialStore
    # the dynamic broker configs (broker/dynamic_config.py): where AlterConfigs keeps them, and
    # the config file's settings under them (`config` is what is in effect: broker/dynamic_apply.py
    # replaces it when a dynamic config changes)
    broker_configs: BrokerConfigStore
    static_config: BrokerConfig
    # share partitions on their leader (KIP-932, broker/share/): ShareFetch, ShareAcknowledge
    share: SharePartitionManager
    # share partitions' durable state (KIP-932, coordinator/share/service.py)
    share_coordinator: ShareCoordinator
    # the way to each share partition's share coordinator, from any broker (Kafka's persister,
    # broker/share/persister.py): the leaders' reads and writes, and the group side's summary,
    # delete and initialize (share-group admin APIs)
    share_persister: StatePersister
    # Kafka's ACLs (broker/security/authorizer.py); None: no authorizer configured, so every
    # request is allowed, as Kafka without authorizer.class.name
    authorizer: Authorizer | None = None
