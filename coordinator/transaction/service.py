"""The transaction coordinator running inside a broker, on the coordinator runtime.

A transactional id's coordinator is the leader of partition `partition_for(id, N)` of
`__transaction_state` (records.py), created on the first FindCoordinator with key type 1,
compacted (coordinator/internal_topics.py). Ownership, loading by replay and appending are the
runtime's (coordinator/runtime/runtime.py); the coordinator epoch written into markers is the
partition's leader epoch, so a marker from a coordinator that lost the partition is refused
(TRANSACTION_COORDINATOR_FENCED) by a leader that saw a newer one.

Every request runs one pure operation of txn.py under the id's lock: the id is marked
`pending` while the operation's records are appended with acks=all, then they are replayed into
the shard and the request is answered. A request for an id whose records are being appended
gets CONCURRENT_TRANSACTIONS from the operation; one waiting for the lock sees the state after.

Ending a transaction: EndTxn writes PrepareCommit / PrepareAbort and answers; a background task
then writes the markers (markers.py) and, once every partition has its marker, writes
CompleteCommit / CompleteAbort. The same task runs for a transaction fenced by a newer producer
or aborted by its timeout, and for every Prepare* found when a partition is loaded: a new
coordinator finishes what a failed one decided (failover between PrepareCommit and
CompleteCommit). Held points for fault tests (`ODRADEK_TXN_HOLD`, hold.py) stop it after the
EndTxn request, after Prepare* is written and midway through the markers.

A timer (`abort_check_interval_ms`, Kafka's transaction.abort.timed.out.transaction.cleanup.
interval.ms) aborts transactions past their timeout and removes ids idle past
`transactional.id.expiration.ms`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coordinator.internal_topics import TRANSACTION_TOPIC_CONFIGS
from coordinator.runtime.log import ClusterView, CoordinatorLog, TopicCreator
from coordinator.runtime.runtime import (
    CoordinatorRuntime,
    KeyedLocks,
    Owned,
    RecordCodec,
    Spawner,
    TopicSpec,
)
from coordinator.transaction import end_v2, hold
from coordinator.transaction import txn as ops
from coordinator.transaction.markers import MarkerWriter
from coordinator.transaction.records import (
    MAX_RECORDS_PER_BATCH,
    TP,
    TRANSACTION_STATE_TOPIC,
    TxnRecord,
    build,
    decode,
    partition_for,
)
from coordinator.transaction.states import State
from coordinator.transaction.txn import (
    EndAnswer,
    InitAnswer,
    Result,
    TxnDescription,
    TxnListing,
    TxnMetadata,
)
from protocol.errors import CoordinatorNotAvailableError, InvalidRequestError

if TYPE_CHECKING:
    from protocol.clock import Clock

log = logging.getLogger("odradek.coordinator.transaction")
NONE = 0
Txns = dict[str, TxnMetadata]  # one partition's shard: its transactional ids
TxnOwned = Owned[Txns]
COMPLETE_RETRY_MS = 200


@dataclass(frozen=True, slots=True)
class TxnConfig:
    """Kafka's transaction.* broker settings."""

    state_partitions: int = 50  # transaction.state.log.num.partitions
    state_replication_factor: int = 3  # transaction.state.log.replication.factor (capped)
    state_segment_bytes: int = 100 * 1024 * 1024  # transaction.state.log.segment.bytes
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    id_expiration_ms: int = 7 * 24 * 3600 * 1000  # transactional.id.expiration.ms
    abort_check_interval_ms: int = 10_000
    two_phase_commit_enable: bool = True  # transaction.two.phase.commit.enable (KIP-939)
    append_timeout_ms: int = 5000
    topic_create_wait_ms: int = 5000


@dataclass(frozen=True, slots=True)
class Found:
    """FindCoordinator's answer at the native endpoint of the coordinator."""

    error_code: int
    message: str | None
    node_id: int = -1


def _replay_loaded(txns: Txns, record: TxnRecord, _now_ms: int) -> None:
    ops.replay(txns, record, loading=True)


CODEC = RecordCodec(decode, build, _replay_loaded, MAX_RECORDS_PER_BATCH)


class TransactionCoordinator:
    def __init__(
        self,
        broker_id: int,
        state_log: CoordinatorLog,
        cluster: ClusterView,
        topics: TopicCreator,
        clock: Clock,
        new_producer_id: Callable[[], Awaitable[int]],
        markers: MarkerWriter,
        config: TxnConfig = TxnConfig(),
    ) -> None:
        self.broker_id = broker_id
        self.clock = clock
        self.config = config
        self.new_producer_id = new_producer_id
        self.markers = markers
        spec = TopicSpec(
            TRANSACTION_STATE_TOPIC, config.state_partitions, config.state_replication_factor,
            {**TRANSACTION_TOPIC_CONFIGS, "segment.bytes": str(config.state_segment_bytes)},
            config.topic_create_wait_ms,
        )  # fmt: skip
        self.runtime: CoordinatorRuntime[Txns, TxnRecord] = CoordinatorRuntime(
            spec, state_log, cluster, topics, clock, CODEC, lambda _: {},
            config.append_timeout_ms, on_loaded=self._resume,
        )  # fmt: skip
        self._locks = KeyedLocks()
        self._tasks = Spawner()
        self._ticker: asyncio.Task[None] | None = None
        self._last_check_ms = clock.monotonic_ms()

    # ----- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._ticker = asyncio.ensure_future(self._run())

    async def shutdown(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
        await self._tasks.cancel_all()
        await self.runtime.shutdown()
        await self.markers.close()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.1)
            try:
                self.tick()
            except Exception:  # a bug must not stop every transaction's timers
                log.exception("transaction coordinator tick failed")

    def tick(self) -> None:
        self.runtime.on_leadership_change()
        now = self.clock.monotonic_ms()
        if now - self._last_check_ms < self.config.abort_check_interval_ms:
            return
        self._last_check_ms = now
        wall = self.clock.time_ms()
        for owned in self.runtime.ready():
            for result in ops.expire(owned.shard, wall, self.config.id_expiration_ms):
                self._tasks.spawn(self._apply_expiry(owned, result))

    async def _apply_expiry(self, owned: TxnOwned, result: Result) -> None:
        async with self._locks.hold(result.transactional_id):
            txn = owned.shard.get(result.transactional_id)
            if (
                txn is None
                or txn.pending is not None
                or self.runtime.owned.get(owned.index) is not owned
            ):
                return
            # decide again under the lock: the id may have moved since the sweep
            again = ops.expire({txn.transactional_id: txn}, self.clock.time_ms(),
                               self.config.id_expiration_ms)  # fmt: skip
            if again:
                await self._write(owned, txn.transactional_id, again[0])

    def _resume(self, owned: TxnOwned) -> None:
        """A loaded partition: finish every transaction a previous coordinator decided."""
        for tid, txn in owned.shard.items():
            if txn.state in (State.PREPARE_COMMIT, State.PREPARE_ABORT):
                log.info("resuming the markers of %s (%s)", tid, txn.state.value)
                self._tasks.spawn(self._complete(owned, tid))

    # ----- the id's lock, the write path ------------------------------------------------------

    def _locate(self, tid: str) -> tuple[TxnOwned | None, int]:
        if not tid:
            return None, InvalidRequestError.code
        return self.runtime.locate(partition_for(tid, self.runtime.partition_count()))

    async def _write(self, owned: TxnOwned, tid: str, result: Result) -> int:
        """Append the result's records with the id pending, then replay them; schedule the
        markers when the result asks for them."""
        if not result.records:
            return NONE
        txn = owned.shard.get(tid)
        if txn is not None:
            txn.pending = result.pending
        try:
            code = await self.runtime.append(owned, result.records)
        finally:
            if txn is not None:
                txn.pending = None
        if code != NONE or self.runtime.owned.get(owned.index) is not owned:
            return code or CoordinatorNotAvailableError.code
        for record in result.records:
            ops.replay(owned.shard, record)
        if result.write_markers:
            self._tasks.spawn(self._complete(owned, tid))
        return NONE

    async def _operate(
        self, tid: str, decide: Callable[[TxnMetadata | None, TxnOwned], Result]
    ) -> tuple[Result | None, int]:
        """Run one operation for `tid`: (its result, NONE), or (None, the error code of the
        coordinator: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, or a failed append)."""
        owned, code = self._locate(tid)
        if owned is None:
            return None, code
        async with self._locks.hold(tid):
            owned, code = self._locate(tid)  # the leadership may have moved while waiting
            if owned is None:
                return None, code
            result = decide(owned.shard.get(tid), owned)
            code = await self._write(owned, tid, result)
        return (result, NONE) if code == NONE else (None, code)

    async def _complete(self, owned: TxnOwned, tid: str) -> None:
        """Write the markers of a decided transaction, then its Complete* record."""
        txn = owned.shard.get(tid)
        if txn is None:
            return
        markers = ops.markers_for(txn)
        await hold.reach("prepared", tid)

        def still_owner() -> bool:
            return self.runtime.owned.get(owned.index) is owned

        async def between(step: str, _tag: str) -> None:
            await hold.reach(step, tid)

        if not await self.markers.write(markers, owned.leader_epoch, still_owner, between):
            return
        while still_owner():
            async with self._locks.hold(tid):
                txn = owned.shard.get(tid)
                if txn is None or txn.state not in (State.PREPARE_COMMIT, State.PREPARE_ABORT):
                    return
                if txn.pending is None:
                    result = ops.complete(txn, self.clock.time_ms())
                    if await self._write(owned, tid, result) == NONE:
                        return
            await asyncio.sleep(COMPLETE_RETRY_MS / 1000)

    # ----- requests ---------------------------------------------------------------------------

    async def find_coordinator(self, tid: str) -> Found:
        if not tid:
            return Found(InvalidRequestError.code, "an empty transactional id")
        await self.runtime.ensure_topic()
        broker = self.runtime.leader_of(partition_for(tid, self.runtime.partition_count()))
        if broker is None:
            return Found(CoordinatorNotAvailableError.code,
                         f"{TRANSACTION_STATE_TOPIC} has no leader for this id yet")  # fmt: skip
        return Found(NONE, None, broker.node_id)

    async def init_producer_id(
        self,
        tid: str,
        timeout_ms: int,
        expected_producer_id: int,
        expected_epoch: int,
        enable_2pc: bool = False,
        keep_prepared_txn: bool = False,
    ) -> InitAnswer | int:
        """InitProducerId with a transactional id: the answer (with its error name), or a
        coordinator error code."""
        owned, code = self._locate(tid)
        if owned is None:
            return code
        txn = owned.shard.get(tid)
        fresh_needed = txn is None or ops.needs_new_producer_id(txn)
        new_id = await self.new_producer_id() if fresh_needed else ops.NO_NEW_PRODUCER_ID

        def decide(txn: TxnMetadata | None, _owned: TxnOwned) -> Result:
            return ops.init_producer_id(
                txn, tid, timeout_ms, expected_producer_id, expected_epoch,
                new_id if new_id >= 0 else _no_new_id, self.clock.time_ms(),
                self.config.max_timeout_ms, enable_2pc, keep_prepared_txn,
                self.config.two_phase_commit_enable,
            )  # fmt: skip

        result, code = await self._operate(tid, decide)
        if result is None:
            return code
        answer: InitAnswer = result.response
        if answer.error == ops.FENCED:
            log.info("InitProducerId for %s with producer %d epoch %d: fenced", tid,
                     expected_producer_id, expected_epoch)  # fmt: skip
        return answer

    async def add_partitions(
        self, tid: str, producer_id: int, epoch: int, partitions: Iterable[TP],
        verify_only: bool = False, txn_version: int = 0,
    ) -> dict[TP, str] | int:  # fmt: skip
        """AddPartitionsToTxn: an error name per partition, or a coordinator error code."""
        wanted = list(partitions)

        def decide(txn: TxnMetadata | None, _owned: TxnOwned) -> Result:
            return ops.add_partitions(txn, producer_id, epoch, wanted, self.clock.time_ms(),
                                      verify_only, txn_version)  # fmt: skip

        result, code = await self._operate(tid, decide)
        if result is None:
            return code
        answer: dict[TP, str] = result.response
        return answer

    async def add_offsets(
        self, tid: str, producer_id: int, epoch: int, group_id: str, offsets_partitions: int
    ) -> str | int:
        """AddOffsetsToTxn: the error name, or a coordinator error code."""

        def decide(txn: TxnMetadata | None, _owned: TxnOwned) -> Result:
            return ops.add_offsets(txn, producer_id, epoch, group_id, offsets_partitions,
                                   self.clock.time_ms())  # fmt: skip

        result, code = await self._operate(tid, decide)
        if result is None:
            return code
        answer: str = result.response
        return answer

    async def end_txn(
        self, tid: str, producer_id: int, epoch: int, commit: bool, txn_version: int = 0
    ) -> EndAnswer | int:
        """EndTxn: answered once Prepare* is written; the markers follow in the background.
        `txn_version` 2 (EndTxn v5+) bumps the epoch (end_v2.py), below it stays."""
        await hold.reach("end_txn", tid)
        new_id = end_v2.NO_NEW_PRODUCER_ID
        if txn_version >= ops.TV2:
            owned, code = self._locate(tid)
            if owned is None:
                return code
            txn = owned.shard.get(tid)
            if txn is not None and end_v2.exhausted(txn):
                new_id = await self.new_producer_id()

        def decide(txn: TxnMetadata | None, _owned: TxnOwned) -> Result:
            now = self.clock.time_ms()
            if txn_version >= ops.TV2:
                return end_v2.end_txn(txn, producer_id, epoch, commit, now, new_id)
            return ops.end_txn(txn, producer_id, epoch, commit, now)

        result, code = await self._operate(tid, decide)
        if result is None:
            return code
        answer: EndAnswer = result.response
        if answer.error == ops.FENCED:
            log.info("EndTxn for %s by producer %d epoch %d: fenced", tid, producer_id, epoch)
        return answer

    def describe(self, tids: Iterable[str]) -> list[TxnDescription | tuple[str, int]]:
        """DescribeTransactions: a row per id, or (id, coordinator error code)."""
        out: list[TxnDescription | tuple[str, int]] = []
        for tid in tids:
            owned, code = self._locate(tid)
            if owned is None:
                out.append((tid, code))
            else:
                out.append(ops.describe(owned.shard.get(tid), tid))
        return out

    def list_transactions(
        self, states: Iterable[str], producer_ids: Iterable[int], duration_filter_ms: int
    ) -> tuple[list[TxnListing], list[str]]:
        states, producer_ids = list(states), list(producer_ids)
        rows: list[TxnListing] = []
        unknown: list[str] = []
        now = self.clock.time_ms()
        for owned in self.runtime.ready():
            found, unknown = ops.list_filter(owned.shard, states, producer_ids,
                                             duration_filter_ms, now)  # fmt: skip
            rows.extend(found)
        return sorted(rows, key=lambda r: r.transactional_id), unknown

    def all_transactions(self) -> Iterator[TxnMetadata]:
        """Every id of every partition this broker coordinates and has loaded (console, CLI)."""
        for owned in self.runtime.ready():
            yield from owned.shard.values()


def _no_new_id() -> int:
    raise AssertionError("a new producer id was not expected")
