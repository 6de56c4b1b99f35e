"""Produce: append each partition's batch on the leader, answer per partition.

Each partition's `records` is one record batch v2, the bytes the client sent (a memoryview of
the request frame, never copied nor decoded per record here): the replica manager checks its
header and CRC, stamps the base offset and leader epoch, and appends it unread.

acks 0 answers nothing (`run` returns None); 1 answers once the leader has appended; -1 (all)
once every in-sync replica has the batch: the replica manager refuses it up front with
NOT_ENOUGH_REPLICAS (nothing appended) while the ISR is below min.insync.replicas, and otherwise
the partitions whose HW has not yet passed their batch wait in the delayed-produce queues
(broker/delayed_produce.py) for at most the request's timeout_ms (REQUEST_TIMED_OUT). When every
partition is already replicated (a leader alone in its ISR) the answer is immediate, without a
task. Any other acks value: INVALID_REQUIRED_ACKS for every partition, nothing written. A
waiting acks=all answer is a `Deferred` (broker/deferred.py) resolved by the HW move that
completes it, and written in that iteration; only group commit (flush.messages=1) and KIP-890's
verification still wait in a task. Internal topics (`__consumer_offsets`) are written only by
the group coordinator: a client's produce to one gets INVALID_TOPIC_EXCEPTION and writes
nothing. Topics with flush.messages=1 answer after group commit; a partition whose flush fails
(its log directory went offline) gets that error (KAFKA_STORAGE_ERROR), never an
acknowledgement. So does a partition whose append failed. A transactional producer's error
message names its transactional id (which producer a fenced one was, when several share a
process). A partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries its
current leader, and the result the endpoints of those leaders on the session's listener
(KIP-951, broker/leader_hints.py; looked up only on that error path).

A batch refused for some of its records (a compacted topic's keyless ones, timestamps out of
bounds) names each of them by index in `record_errors` (KIP-467, broker/log_validator.py).
Topics named by id (Kafka v13+, KIP-516) are named through the metadata cache first: an id no
topic has (deleted, re-created under a new id) is answered UNKNOWN_TOPIC_ID on each of its
partitions, nothing written, and the answer gives each topic under the id it was asked by.

Under a producer_byte_rate quota (broker/quota/) the request's record bytes are counted first;
the server puts the throttle in the answer and mutes the connection (broker/server.py), acks=0
included.

ACLs (broker/security/rules.py): transactional batches need Write on the transactional id
(else the whole request is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, nothing written), and each
topic Write (else its partitions are TOPIC_AUTHORIZATION_FAILED): one authorizer call per
request, none without an authorizer.

Transaction version 2 (Kafka's Produce v12+, `txn_version` 2, KIP-890 part 2): the producer
sends no AddPartitionsToTxn; the leader's verification asks the coordinator to add the
partition to the transaction (opening one if none is open) instead of only asking whether it is
in it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.deferred import Deferred, then
from broker.leader_hints import HINTED, current_leader, endpoints
from broker.operations.by_topic_id import named_by_id
from broker.replica_manager import AppendOutcome, TxnCheck
from broker.security import rules
from broker.session import Session
from coordinator.group.records import OFFSETS_TOPIC
from protocol.api.produce import ACKS_ALL, ACKS_LEADER, ACKS_NONE, RecordError
from protocol.batch import HEADER_BYTES, TRANSACTIONAL_BIT, read_header
from protocol.errors import (
    InvalidRequiredAcksError,
    InvalidTopicError,
    LogDirOfflineError,
    OdradekError,
)
from protocol.schema import Records

API = "Produce"
VALID_ACKS = (ACKS_NONE, ACKS_LEADER, ACKS_ALL)
ATTRIBUTES_LOW = 22  # a batch header's attributes are the int16 at 21: its low byte
NONE = 0


@dataclass(frozen=True, slots=True)
class PartitionData:
    partition: int
    records: Records  # one record batch, as received; b"" (a null batch) is CORRUPT_MESSAGE


@dataclass(frozen=True, slots=True)
class TopicData:
    name: str
    partitions: tuple[PartitionData, ...]


@dataclass(frozen=True, slots=True)
class Produce:
    acks: int
    timeout_ms: int
    topics: tuple[TopicData, ...]
    transactional_id: str | None = None  # a transactional producer's (KIP-890 verification)
    txn_version: int = 0  # 2 (Kafka v12+, KIP-890 part 2): the produce adds its partitions
    # Kafka v13+: each topic's id, in the order of `topics` (whose names are then unknown)
    topic_ids: tuple[uuid.UUID | None, ...] | None = None


@dataclass(frozen=True, slots=True)
class PartitionResult:
    partition: int
    error_code: int
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int
    error_message: str | None = None
    current_leader: tuple[int, int] | None = None  # (id, epoch) with a leadership error
    record_errors: tuple[RecordError, ...] = ()  # INVALID_RECORD / INVALID_TIMESTAMP: which


@dataclass(frozen=True, slots=True)
class TopicResult:
    name: str
    partitions: tuple[PartitionResult, ...]


@dataclass(frozen=True, slots=True)
class ProduceResult:
    topics: tuple[TopicResult, ...]
    # (node id, host, port, rack) of the leaders hinted, on the session's Kafka listener
    leader_endpoints: tuple[tuple[int, str, int, str | None], ...] = ()
    topic_ids: dict[str, uuid.UUID] | None = None  # by id: each answered topic's id
    unknown_ids: tuple[tuple[uuid.UUID | None, tuple[int, ...]], ...] = ()  # UNKNOWN_TOPIC_ID


TP = tuple[str, int]
Outcomes = dict[TP, AppendOutcome]
Durable = dict[TP, Awaitable[None]]
Answer = ProduceResult | None
Result = Answer | Deferred[ProduceResult] | Awaitable[Answer]


def run(ctx: BrokerContext, session: Session, req: Produce) -> Result:
    if req.topic_ids is not None:
        return _by_id(ctx, session, req)
    if ctx.quotas.produce.enabled:  # producer_byte_rate: the server mutes after the answer
        nbytes = sum(len(p.records) for t in req.topics for p in t.partitions)
        ctx.quotas.produced(session, nbytes, ctx.clock.monotonic_ms())
    answer = _Answer(ctx, session, req)
    if req.acks not in VALID_ACKS:
        return answer(lambda t, p: AppendOutcome(InvalidRequiredAcksError.code))
    refused: Outcomes = {}
    if ctx.authorizer is not None:
        denial = _unauthorized(ctx, req, session, refused)
        if denial is not None:
            return answer(lambda t, p: denial)
    checks = _txn_checks(ctx, req)
    if any(c.needed for tp, c in checks.items() if tp not in refused):
        return _verify_then_append(ctx, req, checks, refused, answer)
    return _append(ctx, req, checks, refused, answer)


def _by_id(ctx: BrokerContext, session: Session, req: Produce) -> Result:
    """A v13+ request: its topics named through the metadata cache, the rest of the produce
    as by name; the answer carries the ids asked, and those no topic has (Kafka answers them
    UNKNOWN_TOPIC_ID before it authorizes or appends anything)."""
    assert req.topic_ids is not None
    by_id = named_by_id(ctx.metadata, req.topic_ids, req.topics)
    topics = tuple(TopicData(name, topic.partitions) for name, topic in by_id.named)
    named = dataclasses.replace(req, topics=topics, topic_ids=None)

    def with_ids(result: ProduceResult | None) -> ProduceResult | None:
        if result is None:  # acks=0
            return None
        return dataclasses.replace(result, topic_ids=by_id.ids, unknown_ids=tuple(by_id.unknown))

    result: Result = then(run(ctx, session, named), with_ids)
    return result


def _unauthorized(
    ctx: BrokerContext, req: Produce, session: Session, refused: Outcomes
) -> AppendOutcome | None:
    """Kafka's checks: the outcome of every partition when the transactional id is refused;
    else None, with the partitions of topics the principal may not write put in `refused`."""
    if _transactional(req) and (
        req.transactional_id is None
        or not rules.allows(ctx, session, rules.WRITE, rules.TXN_ID, req.transactional_id, api=API)
    ):
        err = rules.refusal(session, rules.WRITE, rules.TXN_ID, req.transactional_id or "")
        return AppendOutcome(err.code, error_message=err.message)
    names = [t.name for t in req.topics]
    for name in rules.denied(ctx, session, rules.WRITE, rules.TOPIC, names, api=API):
        err = rules.refusal(session, rules.WRITE, rules.TOPIC, name)
        for t in req.topics:
            if t.name == name:
                for part in t.partitions:
                    refused[(name, part.partition)] = AppendOutcome(
                        err.code, error_message=err.message
                    )
    return None


def _transactional(req: Produce) -> bool:
    """Does the request carry a transactional batch (Kafka's hasTransactionalRecords)? The
    bit is read straight from each batch's attributes (int16 at byte 21; the bit is in its low
    byte): this runs on every produce while an authorizer is on."""
    for t in req.topics:
        for p in t.partitions:
            records = p.records
            if len(records) >= HEADER_BYTES and records[ATTRIBUTES_LOW] & TRANSACTIONAL_BIT:
                return True
    return False


def _txn_checks(ctx: BrokerContext, req: Produce) -> dict[TP, TxnCheck]:
    """KIP-890: the transactional batches of a producer that names its transactional id, and
    whether the coordinator must be asked about their partitions (broker/txn_verifier.py)."""
    if req.transactional_id is None:
        return {}
    checks = {}
    for topic in req.topics:
        for part in topic.partitions:
            if len(part.records) < HEADER_BYTES:
                continue  # the append refuses it
            h = read_header(part.records)
            if not h.attributes & TRANSACTIONAL_BIT or h.producer_id < 0:
                continue
            try:
                checks[(topic.name, part.partition)] = ctx.replicas.start_txn_verification(
                    topic.name, part.partition, h.producer_id, h.producer_epoch
                )
            except OdradekError:
                continue  # not the leader, ...: the append answers it
    return checks


class _Answer:
    """Builds the result from each partition's outcome, in the order asked."""

    __slots__ = ("ctx", "listener", "req")

    def __init__(self, ctx: BrokerContext, session: Session, req: Produce) -> None:
        self.ctx, self.req, self.listener = ctx, req, session.listener

    def __call__(self, outcome_of: Callable[[str, int], AppendOutcome]) -> ProduceResult:
        tid = self.req.transactional_id
        leaders: set[int] = set()
        topics = []
        for topic in self.req.topics:
            parts = []
            for part in topic.partitions:
                o = outcome_of(topic.name, part.partition)
                hint = None
                if o.error_code in HINTED:  # looked up only on the error path
                    hint = current_leader(self.ctx.metadata, topic.name, part.partition)
                    if hint is not None:
                        leaders.add(hint[0])
                message = o.error_message
                if message is not None and tid is not None:
                    message = f"transactional id {tid!r}: {message}"
                parts.append(PartitionResult(part.partition, o.error_code, o.base_offset,
                                             o.log_append_time_ms, o.log_start_offset, message,
                                             hint, o.record_errors))  # fmt: skip
            topics.append(TopicResult(topic.name, tuple(parts)))
        hinted = tuple(endpoints(self.ctx.metadata, leaders, self.listener)) if leaders else ()
        return ProduceResult(tuple(topics), hinted)


async def _verify_then_append(
    ctx: BrokerContext, req: Produce, checks: dict[TP, TxnCheck], denied: Outcomes,
    answer: _Answer,
) -> Answer:  # fmt: skip
    assert req.transactional_id is not None
    needed = [tp for tp, c in checks.items() if c.needed and tp not in denied]
    first = next(p for t in req.topics for p in t.partitions if (t.name, p.partition) in needed)
    h = read_header(first.records)  # one producer per request, as Kafka's clients send
    codes = await ctx.txn_verifier.verify(req.transactional_id, h.producer_id,
                                          h.producer_epoch, needed, req.txn_version)  # fmt: skip
    refused = {tp: AppendOutcome(code, error_message=f"{tp[0]}-{tp[1]} is not in the "
                                 f"transaction of {req.transactional_id!r}")
               for tp, code in codes.items() if code != NONE}  # fmt: skip
    result = _append(ctx, req, checks, {**refused, **denied}, answer)
    if isinstance(result, Deferred) or inspect.isawaitable(result):
        return await result
    return result


def _append(
    ctx: BrokerContext, req: Produce, checks: dict[TP, TxnCheck], refused: Outcomes,
    answer: _Answer,
) -> Result:  # fmt: skip
    outcomes: Outcomes = {}
    durable: Durable = {}
    for topic in req.topics:
        for part in topic.partitions:
            key = (topic.name, part.partition)
            if topic.name == OFFSETS_TOPIC:
                outcomes[key] = AppendOutcome(
                    InvalidTopicError.code, error_message=f"{OFFSETS_TOPIC} is internal"
                )
                continue
            if key in refused:
                outcomes[key] = refused[key]
                continue
            outcome = ctx.replicas.append(topic.name, part.partition, part.records, req.acks,
                                          txn_check=checks.get(key))  # fmt: skip
            outcomes[key] = outcome
            if outcome.durable is not None:
                durable[key] = outcome.durable
    waiting = _unreplicated(ctx, outcomes) if req.acks == ACKS_ALL else []
    if waiting and not durable:  # answered inside the HW move that completes it, no task
        replicated = ctx.replicas.replication_deferred(waiting, req.timeout_ms)
        return replicated.map(lambda codes: _replicated(outcomes, codes, answer))
    if durable or waiting:
        return _delayed(ctx, req, outcomes, durable, waiting, answer)
    if req.acks == ACKS_NONE:
        return None
    return answer(lambda t, p: outcomes[(t, p)])


def _unreplicated(ctx: BrokerContext, outcomes: Outcomes) -> list[tuple[str, int, int]]:
    """acks=all: settle the partitions already replicated; the rest must wait."""
    waiting = []
    for (topic, index), outcome in outcomes.items():
        if outcome.error_code != NONE:
            continue
        code = ctx.replicas.replication_done(topic, index, outcome.required_offset)
        if code is None:
            waiting.append((topic, index, outcome.required_offset))
        elif code != NONE:
            _fail(outcome, code)
    return waiting


def _replicated(outcomes: Outcomes, codes: dict[TP, int], answer: _Answer) -> ProduceResult:
    for key, code in codes.items():
        if code != NONE:
            _fail(outcomes[key], code)
    return answer(lambda t, p: outcomes[(t, p)])


def _fail(outcome: AppendOutcome, code: int) -> None:
    outcome.error_code = code
    outcome.base_offset = -1


async def _delayed(
    ctx: BrokerContext, req: Produce, outcomes: Outcomes, durable: Durable,
    waiting: list[tuple[str, int, int]], answer: _Answer,
) -> Answer:  # fmt: skip
    if waiting:
        replicated = ctx.replicas.await_replication(waiting, req.timeout_ms)
        codes = await replicated
        await _await_durable(outcomes, durable)
        for key, code in codes.items():
            if code != NONE:
                _fail(outcomes[key], code)
    else:
        await _await_durable(outcomes, durable)
    if req.acks == ACKS_NONE:
        return None
    return answer(lambda t, p: outcomes[(t, p)])


async def _await_durable(outcomes: Outcomes, durable: Durable) -> None:
    """Wait for every group commit; a partition whose flush failed gets the error."""
    if not durable:
        return
    results = await asyncio.gather(*durable.values(), return_exceptions=True)
    for key, result in zip(durable, results, strict=True):
        if isinstance(result, OdradekError):
            _fail(outcomes[key], result.code)
            outcomes[key].error_message = result.message
        elif isinstance(result, BaseException):
            _fail(outcomes[key], LogDirOfflineError.code)
            outcomes[key].error_message = f"{type(result).__name__}: {result}"
