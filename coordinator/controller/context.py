"""The controller's in-memory view of the cluster (Kafka's ControllerContext), no I/O.

Loaded from ZooKeeper when a broker becomes controller and kept current by the controller's
events: live brokers (with their registration czxid, so a broker that bounced between two
watch events is seen as a death plus a return), topic assignments, each partition's last
written leader/ISR and its znode version, the partition and replica state machines
(coordinator/controller/states.py, every move checked), the topics being deleted, the brokers in a
controlled shutdown (never elected leader) and the reassignments in progress (their targets).

It also builds the controller-to-broker messages from that view (`partition_state_msg`,
`broker_infos`), so their shape lives in one place.

`ControllerOps` is what the controller's event work outside core.py (admin.py, log_dirs.py, and
through event_ops.py the event handlers) uses of the Controller: its context, ZooKeeper,
channel, state writer and the two message senders. Those modules take it rather than the
Controller, which imports them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from coordinator.cluster.zk_paths import NO_LEADER, BrokerRegistration, LeaderIsrState
from coordinator.controller.states import PartitionState, ReplicaState, check_transition
from protocol.api.controller import PartitionState as PartitionStateMsg
from protocol.api.metadata import BrokerInfo
from protocol.topic_ids import encode_topic_id

if TYPE_CHECKING:
    from coordinator.cluster.zk import ZkClient, ZkOp
    from coordinator.controller.channel import ControllerChannel

TopicPartition = tuple[str, int]
# an election's decision for one partition: its (leader, ISR) from the current state, or None
Decide = Callable[[LeaderIsrState], tuple[int, list[int]] | None]


@dataclass(frozen=True, slots=True)
class LiveBroker:
    broker_id: int
    registration: BrokerRegistration
    czxid: int  # the registration's creation zxid: changes when the broker re-registers


def diff_brokers(known: dict[int, int], current: dict[int, int]) -> tuple[list[int], list[int]]:
    """(dead, new) broker ids from two {id: registration czxid} maps. A changed czxid is a
    bounce (the broker died and registered again between two watch events): it is in both lists,
    handled as a death followed by a return, as Kafka does."""
    dead = sorted(b for b in known if current.get(b) != known[b])
    new = sorted(b for b in current if known.get(b) != current[b])
    return dead, new


@dataclass
class ControllerContext:
    epoch: int
    epoch_zk_version: int
    live: dict[int, LiveBroker] = field(default_factory=dict)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)  # KIP-516, from the znode
    unclean: dict[str, bool] = field(default_factory=dict)
    leadership: dict[TopicPartition, tuple[LeaderIsrState, int]] = field(default_factory=dict)
    partition_states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    replica_states: dict[tuple[TopicPartition, int], ReplicaState] = field(default_factory=dict)
    deleting: set[str] = field(default_factory=set)
    shutting_down: set[int] = field(default_factory=set)  # asked for a controlled shutdown
    reassignments: dict[TopicPartition, list[int]] = field(default_factory=dict)  # targets

    # ----- queries --------------------------------------------------------------------------

    @property
    def live_ids(self) -> set[int]:
        return set(self.live)

    @property
    def eligible_ids(self) -> set[int]:
        """Brokers that may be elected leader: live and not shutting down."""
        return set(self.live) - self.shutting_down

    def leader_of(self, tp: TopicPartition) -> int | None:
        """The leader as last written (-1 offline), None without a state znode."""
        entry = self.leadership.get(tp)
        return None if entry is None else entry[0].leader

    def partitions(self) -> list[TopicPartition]:
        return [(t, p) for t, parts in sorted(self.assignments.items()) for p in sorted(parts)]

    def replicas(self, tp: TopicPartition) -> list[int]:
        return self.assignments[tp[0]][tp[1]]

    def partitions_on(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp in self.partitions() if broker_id in self.replicas(tp)]

    def partition_state(self, tp: TopicPartition) -> PartitionState:
        return self.partition_states.get(tp, PartitionState.NON_EXISTENT)

    def replica_state(self, tp: TopicPartition, broker_id: int) -> ReplicaState:
        return self.replica_states.get((tp, broker_id), ReplicaState.NON_EXISTENT)

    # ----- state machine moves --------------------------------------------------------------

    def move_partition(self, tp: TopicPartition, target: PartitionState) -> None:
        check_transition(self.partition_state(tp), target)
        if target is PartitionState.NON_EXISTENT:
            self.partition_states.pop(tp, None)
        else:
            self.partition_states[tp] = target

    def move_replica(self, tp: TopicPartition, broker_id: int, target: ReplicaState) -> None:
        current = self.replica_state(tp, broker_id)
        if current is target and target in (ReplicaState.ONLINE, ReplicaState.OFFLINE):
            return  # Online -> Online and Offline -> Offline are no-ops in the table too
        check_transition(current, target)
        if target is ReplicaState.NON_EXISTENT:
            self.replica_states.pop((tp, broker_id), None)
        else:
            self.replica_states[(tp, broker_id)] = target

    def set_leadership(self, tp: TopicPartition, state: LeaderIsrState, version: int) -> None:
        """Record a written state znode and move the partition Online or Offline to match."""
        self.leadership[tp] = (state, version)
        online = state.leader != NO_LEADER and state.leader in self.live
        self.move_partition(tp, PartitionState.ONLINE if online else PartitionState.OFFLINE)

    def add_topic(
        self,
        topic: str,
        assignment: dict[int, list[int]],
        unclean: bool,
        topic_id: uuid.UUID | None = None,
    ) -> None:
        self.assignments[topic] = {p: list(r) for p, r in assignment.items()}
        if topic_id is not None:
            self.topic_ids[topic] = topic_id
        self.unclean[topic] = unclean
        for p, replicas in assignment.items():
            tp = (topic, p)
            if self.partition_state(tp) is PartitionState.NON_EXISTENT:
                self.move_partition(tp, PartitionState.NEW)
            for r in replicas:
                if self.replica_state(tp, r) is ReplicaState.NON_EXISTENT:
                    self.move_replica(tp, r, ReplicaState.NEW)

    def remove_topic(self, topic: str) -> None:
        for p in self.assignments.pop(topic, {}):
            tp = (topic, p)
            self.leadership.pop(tp, None)
            self.partition_states.pop(tp, None)
            for key in [k for k in self.replica_states if k[0] == tp]:
                del self.replica_states[key]
        self.unclean.pop(topic, None)
        self.topic_ids.pop(topic, None)
        self.deleting.discard(topic)
        for tp in [tp for tp in self.reassignments if tp[0] == topic]:
            del self.reassignments[tp]

    # ----- messages -------------------------------------------------------------------------

    def broker_infos(self) -> list[BrokerInfo]:
        return [
            BrokerInfo(
                b.broker_id,
                b.registration.host,
                b.registration.port,
                None,
                b.registration.kafka_host,
                b.registration.kafka_port,
                list(b.registration.listeners),
            )
            for b in sorted(self.live.values(), key=lambda b: b.broker_id)
        ]

    def partition_state_msg(self, tp: TopicPartition, is_new: bool = False) -> PartitionStateMsg:
        """The LeaderAndIsr/UpdateMetadata entry for a partition with a written state."""
        state, version = self.leadership[tp]
        replicas = self.replicas(tp)
        topic_id = self.topic_ids.get(tp[0])
        return PartitionStateMsg(
            topic=tp[0],
            partition=tp[1],
            controller_epoch=state.controller_epoch,
            leader=state.leader,
            leader_epoch=state.leader_epoch,
            isr=list(state.isr),
            zk_version=version,
            replicas=list(replicas),
            offline_replicas=[r for r in replicas if r not in self.live],
            is_new=is_new,
            topic_id=None if topic_id is None else encode_topic_id(topic_id),
        )


class StateWrites(Protocol):
    """The state znode writes of coordinator/controller/state_writer.py's StateWriter."""

    async def fenced(self, ops: Sequence[ZkOp]) -> None: ...

    async def create_states(self, states: dict[TopicPartition, LeaderIsrState]) -> None: ...

    async def update_states(
        self, decisions: Mapping[TopicPartition, Decide], bump: bool = False
    ) -> list[TopicPartition]: ...


class RebalanceSettings(Protocol):
    @property
    def leader_imbalance_per_broker_percentage(self) -> int: ...


class ControllerOps(Protocol):
    """The Controller (coordinator/controller/core.py) as admin.py and log_dirs.py use it."""

    @property
    def broker_id(self) -> int: ...

    @property
    def epoch(self) -> int: ...

    @property
    def ctx(self) -> ControllerContext: ...

    @property
    def zk(self) -> ZkClient: ...

    @property
    def channel(self) -> ControllerChannel: ...

    @property
    def config(self) -> RebalanceSettings: ...

    @property
    def writer(self) -> StateWrites: ...

    def send_leader_and_isr(
        self, changed: list[TopicPartition], *, full_for: Sequence[int] = (), is_new: bool = False
    ) -> None: ...

    def send_update_metadata(
        self, brokers: list[int], tps: list[TopicPartition], deleted_topics: list[str] | None = None
    ) -> None: ...
