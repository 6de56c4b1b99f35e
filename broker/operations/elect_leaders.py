"""ElectLeaders (admin -> controller): leader election for the partitions named (every
partition when None). Only the controller answers (coordinator/controller/admin.py).

A preferred election (0) moves leadership back to replica 0 where it can; per partition: 0
(moved), ELECTION_NOT_NEEDED (the preferred replica leads), PREFERRED_LEADER_NOT_AVAILABLE (it
is down or out of the ISR), UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE. An unclean one
(1, Kafka v1+): the controller does not elect out of the ISR on request, so a partition with a
live leader is ELECTION_NOT_NEEDED (as in Kafka) and one without is INVALID_REQUEST saying so
(the topic config unclean.leader.election.enable lets the controller do it by itself).

A whole-request error (CLUSTER_AUTHORIZATION_FAILED without Alter on the cluster, checked first;
NOT_CONTROLLER on another broker; REQUEST_TIMED_OUT) is the top-level code and every named
partition's too (Kafka's, so a v0 client, which has no top-level code, sees it). With
`leave_out_not_needed` (Kafka's answer to an all-partitions election) the partitions that
needed no election are left out; the native door lists them ("already the preferred replica").
Results come sorted by topic and partition.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.controller_call import active_controller, call
from broker.security import rules
from broker.session import Session
from coordinator.controller.admin import elect_preferred
from protocol.errors import (
    ClusterAuthorizationFailedError,
    ElectionNotNeededError,
    InvalidRequestError,
    NotControllerError,
    OdradekError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)

API = "ElectLeaders"
PREFERRED = 0
UNCLEAN = 1
UNCLEAN_NOT_SUPPORTED = (
    "odradek does not run unclean elections on request; set the topic's "
    "unclean.leader.election.enable=true and the controller elects out of the ISR by itself"
)
TP = tuple[str, int]
Outcome = tuple[int, str | None]


@dataclass(frozen=True, slots=True)
class ElectLeaders:
    partitions: tuple[TP, ...] | None  # None: every partition
    timeout_ms: int
    election_type: int = PREFERRED
    leave_out_not_needed: bool = False  # when every partition is asked (Kafka's answer)


@dataclass(frozen=True, slots=True)
class Elected:
    topic: str
    partition: int
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ElectLeadersResult:
    error_code: int
    results: tuple[Elected, ...]  # sorted by topic and partition


async def run(ctx: BrokerContext, session: Session, req: ElectLeaders) -> ElectLeadersResult:
    if not rules.allows(ctx, session, rules.ALTER, rules.CLUSTER, api=API):
        return _failed(req, ClusterAuthorizationFailedError.code)
    controller = active_controller(ctx)
    if controller is None:
        return _failed(req, NotControllerError.code)
    if req.election_type == UNCLEAN:
        outcomes = _unclean(ctx, req.partitions)
    else:
        tps = None if req.partitions is None else list(req.partitions)
        try:
            outcomes = await call(controller, lambda: elect_preferred(controller, tps),
                                  req.timeout_ms)  # fmt: skip
        except TimeoutError:
            return _failed(req, RequestTimedOutError.code)
        except OdradekError as exc:
            return _failed(req, exc.code)
    if req.partitions is None and req.leave_out_not_needed:
        outcomes = {tp: o for tp, o in outcomes.items() if o[0] != ElectionNotNeededError.code}
    return ElectLeadersResult(0, tuple(Elected(t, p, *o) for (t, p), o in sorted(outcomes.items())))


def _failed(req: ElectLeaders, code: int) -> ElectLeadersResult:
    named = sorted(req.partitions or ())
    return ElectLeadersResult(code, tuple(Elected(t, p, code) for t, p in named))


def _unclean(ctx: BrokerContext, tps: tuple[TP, ...] | None) -> dict[TP, Outcome]:
    cache = ctx.metadata
    if tps is None:
        tps = tuple((t, p) for t in sorted(cache.topics) for p in sorted(cache.topics[t]))
    live = set(cache.live_broker_ids())
    outcomes: dict[TP, Outcome] = {}
    for topic, partition in tps:
        state = cache.topics.get(topic, {}).get(partition)
        if state is None:
            outcomes[(topic, partition)] = (UnknownTopicOrPartitionError.code, None)
        elif state.leader >= 0 and state.leader in live:
            outcomes[(topic, partition)] = (ElectionNotNeededError.code, None)
        else:
            outcomes[(topic, partition)] = (InvalidRequestError.code, UNCLEAN_NOT_SUPPORTED)
    return outcomes
