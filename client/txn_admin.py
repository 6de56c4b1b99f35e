"""Transactions in the admin client: what `odradek transactions` and the console show, as Kafka's
Admin (KIP-664) and `kafka-transactions.sh` do it. AsyncAdmin inherits `TxnAdmin`; the sync
`Admin` inherits `SyncTxnAdmin`, whose methods hand the same calls to its loop.

    list_transactions       ListTransactions (66) to every live broker (each lists the ids it
                            coordinates), merged; each row names its coordinator
    describe_transactions   FindCoordinator (key type 1) per id, then DescribeTransactions (65)
                            to each coordinator for its ids
    describe_producers      DescribeProducers (61) to each partition's leader, or to one
                            chosen broker
    abort_transaction       WriteTxnMarkers (27) with an ABORT marker to the partition's leader,
                            as Kafka's Admin.abortTransaction: the leader checks the producer
                            epoch and the coordinator epoch against its producer state
    find_hanging_transactions  DescribeProducers of the partitions asked, then ListTransactions
                            by producer id and DescribeTransactions, judged by
                            `hanging_transactions` (pure)

A hanging transaction is one a partition holds open (its producer has a current transaction
start offset) that nothing will end: its last stable offset is stuck there, so read_committed
consumers stop at it. `hanging_transactions` reports an open transaction when
  - it is older than `max_age_ms` (by its producer's last timestamp, as Kafka's tool measures
    it): past any allowed transaction timeout, the coordinator should have aborted it. The
    default is Kafka's: transaction.max.timeout.ms (15 minutes) plus 5 minutes of slack; a
    smaller threshold reports every transaction open longer than it (tests use that: KIP-890's
    verification keeps a genuinely hanging transaction from being made); or
  - older than `COORDINATOR_CHECK_AFTER_MS`, and the coordinator does not know it: no
    transactional id has its producer id, or that id's transaction is not Ongoing (nor
    PrepareCommit / PrepareAbort, whose markers are on their way) or does not include the
    partition. The grace covers a transaction that ended between the two reads.
Kafka's tool reports only the second kind among transactions older than its threshold; the
first is odradek's addition, so that a stuck transaction shows before the slack runs out.

Retriable errors (a coordinator moving or loading, a leader moving) are retried after a metadata
refresh until `request_timeout_ms` (client/_lifecycle.py's RetryingClient); others are raised
naming the id or the partition.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from client._lifecycle import RetryingClient
from client.types import TopicPartition
from protocol.api.group import FindCoordinatorRequest, FindCoordinatorResponse
from protocol.api.txn import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    ProducerState,
    TxnTopic,
)
from protocol.api.txn_markers import (
    TxnMarker,
    TxnMarkerTopic,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from protocol.errors import (
    LeaderNotAvailableError,
    UnknownTopicOrPartitionError,
    UsageError,
    for_code,
)

TXN_KEY_TYPE = 1  # FindCoordinator's key type of a transactional id
MAX_TRANSACTION_TIMEOUT_MS = 15 * 60_000  # Kafka's transaction.max.timeout.ms default
HANGING_SLACK_MS = 5 * 60_000  # Kafka's tool adds this to the max timeout
COORDINATOR_CHECK_AFTER_MS = 10_000  # younger open transactions are not checked at the coordinator
KNOWN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort")  # the coordinator still ends these
STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
          "CompleteAbort", "Dead", "PrepareEpochFence")  # fmt: skip

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ListedTxn:
    """One row of list_transactions."""

    transactional_id: str
    producer_id: int
    state: str  # Kafka's state names (STATES)
    coordinator_id: int


@dataclass(frozen=True, slots=True)
class TxnDescription:
    """One transactional id at its coordinator."""

    coordinator_id: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    start_time_ms: int  # -1: no transaction open
    partitions: list[TopicPartition] = field(default_factory=list)

    def duration_ms(self, now_ms: int) -> int | None:
        return None if self.start_time_ms < 0 else max(0, now_ms - self.start_time_ms)


@dataclass(frozen=True, slots=True)
class HangingTxn:
    """An open transaction on one partition that find_hanging_transactions reports."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    start_offset: int
    last_timestamp: int
    duration_ms: int
    transactional_id: str | None  # None: no coordinator knows this producer id
    reason: str


# ----- the decision (pure) ---------------------------------------------------------------------


def hanging_transactions(
    producers: Mapping[TopicPartition, Sequence[ProducerState]],
    transactions: Mapping[int, TxnDescription],
    now_ms: int,
    max_age_ms: int,
    check_after_ms: int = COORDINATOR_CHECK_AFTER_MS,
) -> list[HangingTxn]:
    """The hanging transactions among the partitions' active producers (DescribeProducers
    rows), given the coordinators' descriptions by producer id (a producer id missing from
    `transactions`: no transactional id has it). Sorted by topic, partition, producer id."""
    out = []
    for tp in sorted(producers):
        for p in sorted(producers[tp], key=lambda p: p.producer_id):
            if p.current_txn_start_offset < 0:
                continue
            age = max(0, now_ms - p.last_timestamp)
            desc = transactions.get(p.producer_id)
            reason = None
            if age > max_age_ms:
                reason = f"open {age // 1000} s, over the {max_age_ms // 1000} s threshold"
            elif age >= check_after_ms:
                reason = coordinator_disowns(tp, desc)
            if reason is not None:
                tid = None if desc is None else desc.transactional_id
                out.append(HangingTxn(
                    tp.topic, tp.partition, p.producer_id, p.producer_epoch,
                    p.coordinator_epoch, p.current_txn_start_offset, p.last_timestamp, age,
                    tid, reason,
                ))  # fmt: skip
    return out


def coordinator_disowns(tp: TopicPartition, desc: TxnDescription | None) -> str | None:
    """Why the coordinator will not end this partition's open transaction (None: it will)."""
    if desc is None:
        return "no transactional id has this producer id"
    if desc.state not in KNOWN_STATES:
        return f"its coordinator has it {desc.state}, not in a transaction"
    if tp not in desc.partitions:
        return "the partition is not in its coordinator's transaction"
    return None


# ----- the calls ---------------------------------------------------------------------------------


class TxnAdmin(RetryingClient):
    """The transaction calls of AsyncAdmin, its base (which sets request_timeout_ms)."""

    async def list_transactions(
        self,
        states: Iterable[str] | None = None,
        producer_ids: Iterable[int] | None = None,
        duration_ms: int | None = None,
    ) -> list[ListedTxn]:
        """Every transactional id of every live broker, filtered by state names, producer ids
        and a minimum open duration (KIP-994), sorted by id. An unknown state is a UsageError."""
        request = ListTransactionsRequest(
            list(states or ()), list(producer_ids or ()), -1 if duration_ms is None else duration_ms
        )
        bad = [s for s in request.state_filters if s not in STATES]
        if bad:
            raise UsageError(f"unknown transaction state {bad[0]!r} (known: {', '.join(STATES)})")
        return await self._retrying("ListTransactions", lambda: self._list_once(request))

    async def _list_once(self, request: ListTransactionsRequest) -> list[ListedTxn]:
        meta = await self._cluster.request_update()
        nodes = sorted(meta.brokers)
        answers = await asyncio.gather(*(self._send_to(n, request) for n in nodes))
        found: dict[str, ListedTxn] = {}
        for node, resp in zip(nodes, answers, strict=True):
            assert isinstance(resp, ListTransactionsResponse)
            _raise(resp.error_code, f"ListTransactions at broker {node}")
            for t in resp.transactions:
                found[t.transactional_id] = ListedTxn(t.transactional_id, t.producer_id, t.state,
                                                      node)  # fmt: skip
        return [found[t] for t in sorted(found)]

    async def describe_transactions(self, ids: Iterable[str]) -> dict[str, TxnDescription]:
        """{id: its description at its coordinator}; an unknown id raises
        TransactionalIdNotFoundError naming it."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        return await self._retrying("DescribeTransactions", lambda: self._describe_once(wanted))

    async def _describe_once(self, ids: list[str]) -> dict[str, TxnDescription]:
        coordinators = await asyncio.gather(*(self._txn_coordinator(t) for t in ids))
        by_node: dict[int, list[str]] = {}
        for tid, node in zip(ids, coordinators, strict=True):
            by_node.setdefault(node, []).append(tid)
        nodes = list(by_node)
        answers = await asyncio.gather(
            *(self._send_to(n, DescribeTransactionsRequest(by_node[n])) for n in nodes)
        )
        out: dict[str, TxnDescription] = {}
        for node, resp in zip(nodes, answers, strict=True):
            assert isinstance(resp, DescribeTransactionsResponse)
            for d in resp.transactions:
                _raise(d.error_code, f"transactional id {d.transactional_id!r}")
                parts = [TopicPartition(t.name, p) for t in d.topics for p in t.partitions]
                out[d.transactional_id] = TxnDescription(
                    node, d.transactional_id, d.producer_id, d.producer_epoch, d.state,
                    d.timeout_ms, d.start_time_ms, sorted(parts),
                )  # fmt: skip
        return {t: out[t] for t in ids if t in out}

    async def _txn_coordinator(self, transactional_id: str) -> int:
        resp: FindCoordinatorResponse = await self._cluster.send_to_any(
            FindCoordinatorRequest(transactional_id, TXN_KEY_TYPE), self.request_timeout_ms,
            read=True,
        )  # fmt: skip
        _raise(resp.error_code, f"coordinator of transactional id {transactional_id!r}")
        if resp.node_id not in self._cluster.metadata.brokers:
            await self._cluster.request_update()
        return resp.node_id

    async def describe_producers(
        self, partitions: Iterable[TopicPartition], broker_id: int | None = None
    ) -> dict[TopicPartition, list[ProducerState]]:
        """{tp: its active producers}, asked of each partition's leader (or of `broker_id`).
        A partition's error is raised naming it (NotLeaderForPartitionError from a broker
        that does not lead it)."""
        wanted = list(dict.fromkeys(partitions))
        return await self._retrying(
            "DescribeProducers", lambda: self._producers_once(wanted, broker_id)
        )

    async def _producers_once(
        self, partitions: list[TopicPartition], broker_id: int | None
    ) -> dict[TopicPartition, list[ProducerState]]:
        by_node = await self._by_leader(partitions) if broker_id is None else {
            broker_id: partitions}  # fmt: skip
        nodes = list(by_node)
        answers = await asyncio.gather(
            *(self._send_to(n, DescribeProducersRequest(_txn_topics(by_node[n]))) for n in nodes)
        )
        out: dict[TopicPartition, list[ProducerState]] = {}
        for resp in answers:
            assert isinstance(resp, DescribeProducersResponse)
            for t in resp.topics:
                for p in t.partitions:
                    _raise(p.error_code, f"{t.name}-{p.partition}", p.error_message)
                    out[TopicPartition(t.name, p.partition)] = list(p.active_producers)
        return out

    async def abort_transaction(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
    ) -> None:
        """End `producer_id`'s open transaction on one partition with an ABORT marker written by
        its leader (Kafka's Admin.abortTransaction). The leader refuses an older producer epoch
        (InvalidProducerEpochError) or coordinator epoch (TransactionCoordinatorFencedError)."""
        tp = TopicPartition(topic, partition)
        marker = TxnMarker(producer_id, producer_epoch, False, coordinator_epoch,
                           [TxnMarkerTopic(topic, [partition])])  # fmt: skip

        async def once() -> None:
            [(node, _)] = (await self._by_leader([tp])).items()
            resp = await self._send_to(node, WriteTxnMarkersRequest([marker]))
            assert isinstance(resp, WriteTxnMarkersResponse)
            for m in resp.markers:
                for t in m.topics:
                    for p in t.partitions:
                        _raise(p.error_code, f"abort of producer {producer_id} on {tp.topic}-"
                               f"{tp.partition}")  # fmt: skip

        await self._retrying("WriteTxnMarkers", once)

    async def find_hanging_transactions(
        self,
        partitions: Iterable[TopicPartition] | None = None,
        broker_id: int | None = None,
        max_transaction_timeout_ms: int = MAX_TRANSACTION_TIMEOUT_MS,
        max_age_ms: int | None = None,
        now_ms: Callable[[], int] | None = None,
    ) -> list[HangingTxn]:
        """The hanging transactions (module comment) of `partitions`, else of every partition
        with a replica on `broker_id`, else of every partition. `max_age_ms` defaults to
        `max_transaction_timeout_ms` plus Kafka's 5 minutes of slack."""
        await self.start()
        if partitions is None:
            partitions = await self._partitions_of(broker_id)
        producers = await self.describe_producers(partitions)
        pids = {p.producer_id for ps in producers.values() for p in ps
                if p.current_txn_start_offset >= 0}  # fmt: skip
        by_pid: dict[int, TxnDescription] = {}
        if pids:
            listed = await self.list_transactions(producer_ids=sorted(pids))
            descs = await self.describe_transactions([t.transactional_id for t in listed])
            by_pid = {d.producer_id: d for d in descs.values() if d.producer_id in pids}
        limit = max_transaction_timeout_ms + HANGING_SLACK_MS if max_age_ms is None else max_age_ms
        clock = now_ms or _wall_ms
        return hanging_transactions(producers, by_pid, clock(), limit)

    async def _partitions_of(self, broker_id: int | None) -> list[TopicPartition]:
        meta = await self._cluster.request_update()
        if broker_id is not None and broker_id not in meta.brokers:
            raise UsageError(f"broker {broker_id} is not in the cluster (live: "
                             f"{','.join(map(str, sorted(meta.brokers)))})")  # fmt: skip
        return [TopicPartition(t, p.partition) for t, ps in sorted(meta.partitions.items())
                for p in ps if broker_id is None or broker_id in p.replicas]  # fmt: skip

    # ----- internals ----------------------------------------------------------------------

    async def _by_leader(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[int, list[TopicPartition]]:
        meta = await self._cluster.request_update()
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in partitions:
            if not 0 <= tp.partition < (meta.num_partitions(tp.topic) or 0):
                raise UnknownTopicOrPartitionError(f"{tp.topic}-{tp.partition}: no such partition")
            leader = meta.leader_for(tp.topic, tp.partition)
            if leader < 0 or leader not in meta.brokers:
                raise LeaderNotAvailableError(f"{tp.topic}-{tp.partition}: no leader")
            by_node.setdefault(leader, []).append(tp)
        return by_node


class SyncTxnAdmin:
    """The same calls on the sync Admin (client/sync.py), each run on its loop."""

    _run: Callable[..., Any]

    def list_transactions(
        self,
        states: Iterable[str] | None = None,
        producer_ids: Iterable[int] | None = None,
        duration_ms: int | None = None,
    ) -> list[ListedTxn]:
        s, p = list(states or ()), list(producer_ids or ())
        return self._run(lambda a: a.list_transactions(s, p, duration_ms))

    def describe_transactions(self, ids: Iterable[str]) -> dict[str, TxnDescription]:
        wanted = list(ids)
        return self._run(lambda a: a.describe_transactions(wanted))

    def describe_producers(
        self, partitions: Iterable[TopicPartition], broker_id: int | None = None
    ) -> dict[TopicPartition, list[ProducerState]]:
        wanted = list(partitions)
        return self._run(lambda a: a.describe_producers(wanted, broker_id))

    def abort_transaction(
        self, topic: str, partition: int, producer_id: int, producer_epoch: int,
        coordinator_epoch: int,
    ) -> None:  # fmt: skip
        self._run(lambda a: a.abort_transaction(
            topic, partition, producer_id, producer_epoch, coordinator_epoch))  # fmt: skip

    def find_hanging_transactions(
        self,
        partitions: Iterable[TopicPartition] | None = None,
        broker_id: int | None = None,
        max_transaction_timeout_ms: int = MAX_TRANSACTION_TIMEOUT_MS,
        max_age_ms: int | None = None,
    ) -> list[HangingTxn]:
        wanted = None if partitions is None else list(partitions)
        return self._run(lambda a: a.find_hanging_transactions(
            wanted, broker_id, max_transaction_timeout_ms, max_age_ms))  # fmt: skip


def _wall_ms() -> int:
    return int(time.time() * 1000)  # the producers' timestamps are wall-clock times


def _txn_topics(partitions: Sequence[TopicPartition]) -> list[TxnTopic]:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [TxnTopic(t, ps) for t, ps in by_topic.items()]


def _raise(code: int, name: str, message: str | None = None) -> None:
    if code != 0:
        error = for_code(code)
        raise error(f"{name}: {message or error.default_message}")
