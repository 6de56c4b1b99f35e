"""LeaderAndIsr (controller -> broker): become leader or follower for the partitions named.

After the checks every controller request makes (broker/operations/from_controller.py:
ClusterAction, then the controller epoch), each partition state that lists this broker among
its replicas opens (or creates) the partition's log with the topic's config (defaults plus its
ZooKeeper overrides, looked up through ctx.topics) and takes the role the state gives it: a
follower starts fetching from its leader (after truncating by OffsetForLeaderEpoch), a leader
stops fetching (broker/replica_fetcher.py; `live_leaders` gives the leaders' addresses). The
group and transaction coordinators then load or unload their partitions. The answer is each
partition's error (broker/partition_roles.py `apply_leader_and_isr`).
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.from_controller import PartitionResult, refusal
from broker.session import Session
from protocol.api.controller import PartitionState
from protocol.api.metadata import BrokerInfo

API = "LeaderAndIsr"


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    controller_id: int
    controller_epoch: int
    partition_states: tuple[PartitionState, ...]
    live_leaders: tuple[BrokerInfo, ...]  # where the named leaders listen


@dataclass(frozen=True, slots=True)
class LeaderAndIsrResult:
    error_code: int  # the whole request's
    partitions: tuple[PartitionResult, ...] = ()


async def run(ctx: BrokerContext, session: Session, req: LeaderAndIsr) -> LeaderAndIsrResult:
    refused = refusal(ctx, session, API, req.controller_id, req.controller_epoch)
    if refused is not None:
        return LeaderAndIsrResult(refused)
    results = await ctx.replicas.roles.apply_leader_and_isr(
        list(req.partition_states), ctx.topics.read_topic_config, list(req.live_leaders)
    )
    ctx.groups.on_leadership_change()  # become / stop being a group coordinator
    ctx.transactions.runtime.on_leadership_change()  # ... a transaction coordinator
    ctx.share_coordinator.runtime.on_leadership_change()  # ... a share coordinator
    return LeaderAndIsrResult(0, tuple(PartitionResult(t, p, code) for t, p, code in results))
