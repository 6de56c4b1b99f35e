"""ElectLeaders (43), v0-v2: preferred leader election through the native ElectLeaders (only
the controller answers), in Kafka's shape.

Per partition: 0, ELECTION_NOT_NEEDED (the preferred replica leads), PREFERRED_LEADER_NOT_AVAILABLE,
UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE. Null topic_partitions means every partition,
and then, as Kafka's KafkaApis does, partitions that needed no election are left out. The
native door's top-level errors (NOT_CONTROLLER, REQUEST_TIMED_OUT) go in the v1+ top-level
error_code and on every partition named, so a v0 client sees them too (Kafka's ZooKeeper-era
controller answers each partition NOT_CONTROLLER).

election_type 1 (unclean, v1+): the controller does not elect out of the ISR on request, so a
partition with a live leader is ELECTION_NOT_NEEDED (as in Kafka) and one without is answered
INVALID_REQUEST saying so (the topic config unclean.leader.election.enable lets the controller do
it by itself).
"""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import elect_leaders as native
from broker.handlers.controlled_shutdown import active_controller
from broker.handlers.kafka._adapt import as_native
from broker.session import Session
from protocol.api.controller import (
    ELECT_LEADERS,
    ElectLeadersRequest,
    ElectLeadersResponse,
    TopicPartitionRef,
)
from protocol.errors import (
    ElectionNotNeededError,
    NotControllerError,
    UnknownTopicOrPartitionError,
    for_name,
)
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class

PREFERRED = 0
UNCLEAN = 1
InvalidRequestError = for_name("INVALID_REQUEST")
UNCLEAN_NOT_SUPPORTED = (
    "odradek does not run unclean elections on request; set the topic's "
    "unclean.leader.election.enable=true and the controller elects out of the ISR by itself"
)
Result = tuple[int, str | None]
TP = tuple[str, int]


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    version = request.header.api_version
    tps = None
    if req.topic_partitions is not None:
        tps = [(t.topic, p) for t in req.topic_partitions for p in t.partitions]
    if getattr(req, "election_type", PREFERRED) == UNCLEAN:
        return _answer(version, tps, *_unclean(ctx, tps))
    refs = None if tps is None else [TopicPartitionRef(t, p) for t, p in tps]
    native_req = ElectLeadersRequest(refs, millis(req.timeout))
    result = native.handle(ctx, as_native(ELECT_LEADERS, native_req, request), session)
    return then(result, lambda r: _answer(version, tps, *_results(r, tps)))


def _results(resp: ElectLeadersResponse, tps: list[TP] | None) -> tuple[int, dict[TP, Result]]:
    """(top-level error, per-partition results) from the native answer."""
    if resp.error_code != 0:
        return resp.error_code, {tp: (resp.error_code, None) for tp in tps or ()}
    return 0, {(r.topic, r.partition): (r.error_code, r.error_message) for r in resp.results}


def _unclean(ctx: BrokerContext, tps: list[TP] | None) -> tuple[int, dict[TP, Result]]:
    if active_controller(ctx) is None:
        code = NotControllerError.code
        return code, {tp: (code, None) for tp in tps or ()}
    cache = ctx.metadata
    if tps is None:
        tps = [(t, p) for t in sorted(cache.topics) for p in sorted(cache.topics[t])]
    live = set(cache.live_broker_ids())
    results: dict[TP, Result] = {}
    for topic, partition in tps:
        state = cache.topics.get(topic, {}).get(partition)
        if state is None:
            results[(topic, partition)] = (UnknownTopicOrPartitionError.code, None)
        elif state.leader >= 0 and state.leader in live:
            results[(topic, partition)] = (ElectionNotNeededError.code, None)
        else:
            results[(topic, partition)] = (InvalidRequestError.code, UNCLEAN_NOT_SUPPORTED)
    return 0, results


def _answer(version: int, tps: list[TP] | None, error: int, results: dict[TP, Result]) -> Any:
    if tps is None:  # all partitions: those that needed no election are left out (Kafka)
        results = {k: r for k, r in results.items() if r[0] != ElectionNotNeededError.code}
    by_topic: dict[str, list[tuple[int, Result]]] = {}
    for (topic, partition), result in sorted(results.items()):
        by_topic.setdefault(topic, []).append((partition, result))
    cls = response_class(ELECT_LEADERS.key, version)
    topic_cls = nested(cls, "ReplicaElectionResult")
    part_cls = nested(cls, "PartitionResult")
    out = tuple(
        make(
            topic_cls,
            topic=topic,
            partition_result=tuple(
                make(part_cls, partition_id=p, error_code=code, error_message=message)
                for p, (code, message) in parts
            ),
        )
        for topic, parts in by_topic.items()
    )
    return make(cls, throttle_time=0, error_code=error, replica_election_results=out)
