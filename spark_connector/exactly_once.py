"""Exactly-once writes (`exactlyOnce=true`): each Spark task's rows in one Kafka transaction,
committed by the driver once every task has prepared (KIP-939's two-phase commit).

Every task attempt has a transactional id of its own, deterministic up to the attempt:

    streaming   <prefix>-<query id>-<batch id>-<partition id>-<attempt>
    batch       <prefix>-w<write id>-<partition id>-<attempt>     (write id: 16 hex digits)

The query id is the one Spark keeps in the checkpoint (the task's local property
`sql.streaming.queryId`), the batch id Spark's micro-batch id (`streaming.sql.batchId`), the
partition id the task's, the attempt Spark's task attempt id (`TaskContext.taskAttemptId()`,
unique among the attempts of one driver); the write id is drawn by the driver when the batch
write is planned. The attempt is in the id because a failed attempt's Python writer outlives
its task: Spark fails the task (a UDF raised, a fetch failed) and schedules the next attempt
while the old writer is still starting, and that writer's InitProducerId, when it comes after
the next attempt's, would fence the next attempt and abort its prepared transaction (or a
speculative copy would). With an id per attempt, attempts never touch each other's
transactions; a stale attempt's transaction is never committed (no message the driver gets
names it) and is aborted by `cleanup`.

Phase 1, on the executors (`prepare_rows`): the task's producer (enable_2pc: no transaction
timeout) calls InitProducerId for its id (aborting whatever a dead run left under the same id),
sends its rows in a transaction, flushes (every record acknowledged) and leaves the
transaction open ("prepared", Ongoing at the coordinator), returning a `PreparedCommit` naming
the id and the producer id and epoch that wrote it.

Phase 2, on the driver (`commit_prepared`): one producer per id takes the transaction over
(InitProducerId enable_2pc + keep_prepared_txn: kept, not aborted; the answer names the kept
transaction's producer id and epoch). Only when every id kept exactly the transaction its
message names does the driver commit: the first transaction alone (the decision), then the rest.
Otherwise it aborts what it kept and fails the commit. Then `cleanup` aborts this query's (or
write's) open transactions that no message names (failed or stale attempts, a partition a
rerun did not have): they would hold the last stable offset back for good. A stale attempt
that prepares only after that cleanup is aborted by the next commit's (the next micro-batch's,
or the prefix's next batch write's).

A streaming query restarted after its driver died re-runs, with the same offsets, the batch
that is not in its commit log, with the same query, batch and partition ids:
- the driver died before committing anything: the rerun writes the batch again, once; the dead
  run's prepared transactions are aborted by the rerun's `cleanup` (or by a rerun attempt whose
  id is the same, as task attempt ids start again from 0);
- the driver died after committing some: a task whose partition has a committed transaction
  (PrepareCommit or CompleteCommit, any attempt: only the driver commits, and only after every
  task prepared; `committed_partition` lists them) writes nothing, the others write theirs, so
  each partition's rows are committed once. This needs the rerun to split the batch into the
  same partitions, which Spark does for a replayed batch of a deterministic query.
Every streaming task therefore lists the cluster's committed transactions (ListTransactions
with a state filter, every broker): a cost that grows with the completed transactional ids the
coordinators keep (`transactional.id.expiration.ms`).
A batch write killed between prepare and commit leaves prepared transactions that the next
exactly-once write with the same prefix aborts (`cleanup`); one killed during its commit keeps
what it committed (Spark reports the write failed; running it again writes everything again).

A prefix belongs to one query or one write at a time. `ODRADEK_SPARK_HOLD` (steps `commit`:
every task prepared, nothing committed; `committed-one`: the first transaction committed) and
`ODRADEK_SPARK_HOLD_DIR` hold the driver's commit for fault tests, as
coordinator/transaction/hold.py holds the coordinator.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from pyspark.sql.datasource import WriterCommitMessage

from client import AsyncProducer
from client.cluster import Cluster
from client.transactions import PreparedTxnState
from protocol.api.txn import ListTransactionsRequest, ListTransactionsResponse
from protocol.errors import NetworkError, OdradekError, for_code

log = logging.getLogger("spark_connector")
T = TypeVar("T")
EMPTY: Mapping[str, Any] = MappingProxyType({})  # no TLS/SASL settings: plaintext

COMMITTED_STATES = frozenset({"PrepareCommit", "CompleteCommit"})
REQUEST_TIMEOUT_MS = 30_000
RETRY_FOR_S = 60.0  # coordinator moves and loads are retried this long
RETRY_BACKOFF_S = 0.1
BATCH_ID_PROPERTY = "streaming.sql.batchId"  # Spark's MicroBatchExecution.BATCH_ID_KEY
QUERY_ID_PROPERTY = "sql.streaming.queryId"  # Spark's StreamExecution.QUERY_ID_KEY
HOLD_ENV, HOLD_DIR_ENV = "ODRADEK_SPARK_HOLD", "ODRADEK_SPARK_HOLD_DIR"
HOLD_STEPS = ("commit", "committed-one")
HOLD_POLL_S = 0.05


@dataclass
class PreparedCommit(WriterCommitMessage):
    """A task's prepared transaction (or, `already_committed`, a partition an earlier run of
    this batch committed: nothing was written)."""

    transactional_id: str
    producer_id: int
    epoch: int
    records: int
    already_committed: bool = False


# ----- transactional ids ---------------------------------------------------------------------


def new_write_id() -> str:
    return uuid.uuid4().hex[:16]


def batch_write_base(prefix: str, write_id: str) -> str:
    return f"{prefix}-w{write_id}"


def streaming_base(prefix: str, query_id: str, batch_id: int) -> str:
    return f"{prefix}-{query_id}-{batch_id}"


def transactional_id(base: str, partition_id: int, attempt_id: int) -> str:
    """A task attempt's id (module docstring): one per attempt, so that an attempt that
    outlives its task never fences a later attempt of the same partition."""
    return f"{base}-{partition_id}-{attempt_id}"


def task_base(prefix: str, write_id: str | None, properties: Callable[[str], str | None]) -> str:
    """The base of this task's transactional id: the batch write's, or the micro-batch's from
    Spark's task-local properties (`properties`: TaskContext.getLocalProperty)."""
    if write_id is not None:
        return batch_write_base(prefix, write_id)
    query_id, batch_id = properties(QUERY_ID_PROPERTY), properties(BATCH_ID_PROPERTY)
    if not query_id or batch_id is None:
        raise OdradekError(
            "exactlyOnce: this task has no streaming query or batch id (local properties "
            f"{QUERY_ID_PROPERTY}, {BATCH_ID_PROPERTY})"
        )
    return streaming_base(prefix, query_id, int(batch_id))


def leftovers(
    open_ids: Iterable[str], prefix: str, named: set[str], query_id: str | None,
    up_to_batch: int | None,
) -> list[str]:  # fmt: skip
    """The open transactional ids `cleanup` aborts: a streaming query's (`query_id`) of batches
    up to `up_to_batch`, or (no query id) any batch write's of `prefix`; never one in `named`."""
    if query_id is not None:
        pattern = re.compile(re.escape(f"{prefix}-{query_id}-") + r"(\d+)-\d+-\d+")
    else:
        pattern = re.compile(re.escape(f"{prefix}-w") + r"[0-9a-f]{16}-\d+-\d+")
    out = []
    for tid in open_ids:
        match = pattern.fullmatch(tid)
        if match is None or tid in named:
            continue
        if query_id is not None and up_to_batch is not None and int(match[1]) > up_to_batch:
            continue  # a later batch's (asynchronous progress tracking): not ours to end
        out.append(tid)
    return sorted(out)


# ----- the coordinator's view ----------------------------------------------------------------


async def _retrying(what: str, once: Callable[[], Awaitable[T]]) -> T:
    deadline = time.monotonic() + RETRY_FOR_S
    while True:
        try:
            return await once()
        except (NetworkError, OdradekError) as exc:
            if not exc.retriable or time.monotonic() > deadline:
                raise type(exc)(f"{what}: {exc}") from None
        await asyncio.sleep(RETRY_BACKOFF_S)


async def open_transactions(cluster: Cluster) -> list[str]:
    """Every Ongoing transactional id, from every broker (each lists those it coordinates)."""
    return await listed_transactions(cluster, ["Ongoing"])


async def committed_partition(cluster: Cluster, base: str, partition_id: int) -> str | None:
    """The id of a committed (PrepareCommit or CompleteCommit) transaction of any attempt of
    `partition_id` of `base`, None if there is none."""
    pattern = re.compile(re.escape(f"{base}-{partition_id}-") + r"\d+")
    listed = await listed_transactions(cluster, sorted(COMMITTED_STATES))
    return next((tid for tid in listed if pattern.fullmatch(tid)), None)


async def listed_transactions(cluster: Cluster, states: list[str]) -> list[str]:
    """Every transactional id in one of `states`, from every broker (each lists those it
    coordinates)."""
    meta = await cluster.request_update()

    async def from_node(node: int) -> list[str]:
        async def once() -> list[str]:
            conn = await cluster.connection(node)
            resp: ListTransactionsResponse = await conn.send(
                ListTransactionsRequest(states, []), REQUEST_TIMEOUT_MS
            )
            if resp.error_code != 0:
                raise for_code(resp.error_code)(f"ListTransactions at broker {node}")
            return [t.transactional_id for t in resp.transactions]

        return await _retrying(f"listing transactions at broker {node}", once)

    answers = await asyncio.gather(*[from_node(n) for n in sorted(meta.brokers)])
    return sorted({tid for ids in answers for tid in ids})


# ----- phase 1: a task prepares ----------------------------------------------------------------


async def prepare_rows(
    bootstrap: str,
    base: str,
    partition_id: int,
    attempt_id: int,
    send_rows: Callable[[AsyncProducer], Awaitable[int]],
    skip_if_committed: bool,
    cluster: Cluster,
    producer_config: dict[str, Any],
) -> PreparedCommit:
    """Write a task attempt's rows in a transaction of its own id and leave it prepared (see
    the module docstring). `skip_if_committed` (streaming: maybe a rerun): nothing is written
    when any attempt of the partition is already committed."""
    tid = transactional_id(base, partition_id, attempt_id)
    if skip_if_committed:
        committed = await committed_partition(cluster, base, partition_id)
        if committed is not None:
            log.warning("%s was committed by an earlier run of this batch: %s not written",
                        committed, tid)  # fmt: skip
            return PreparedCommit(committed, -1, -1, 0, already_committed=True)
    producer = AsyncProducer(bootstrap, transactional_id=tid, enable_2pc=True, **producer_config)
    await producer.start()
    try:
        await producer.init_transactions()  # aborts what a dead run left under this id
        producer.begin_transaction()
        try:
            count = await send_rows(producer)
            prepared = await producer.prepare_transaction()
        except BaseException:
            await _abort_quietly(producer)
            raise
        return PreparedCommit(tid, prepared.producer_id, prepared.epoch, count)
    finally:
        await producer.close()


async def _abort_quietly(producer: AsyncProducer) -> None:
    try:
        await producer.abort_transaction()
    except OdradekError as exc:  # the next attempt's InitProducerId aborts it anyway
        log.warning("could not abort a failed task's transaction: %s", exc)


# ----- phase 2: the driver commits ---------------------------------------------------------------


def hold(step: str, what: str) -> None:
    """The fault tests' hook (module docstring): wait here, once per directory, until
    `spark-release-<step>` appears (or the driver is killed)."""
    assert step in HOLD_STEPS, step
    directory = os.environ.get(HOLD_DIR_ENV)
    if step not in os.environ.get(HOLD_ENV, "").split(",") or not directory:
        return
    try:
        with (Path(directory) / f"spark-held-{step}").open("x") as f:
            f.write(f"{os.getpid()} {what}")
    except FileExistsError:
        return
    log.warning("exactly-once commit held at %s (%s)", step, what)
    while not (Path(directory) / f"spark-release-{step}").exists():
        time.sleep(HOLD_POLL_S)  # a test hook: polled


def to_commit(messages: Sequence[WriterCommitMessage | None]) -> list[PreparedCommit]:
    """The messages whose transactions are to commit (or abort): prepared, with records."""
    return [
        m
        for m in messages
        if isinstance(m, PreparedCommit) and m.records > 0 and not m.already_committed
    ]


async def commit_prepared(
    bootstrap: str, prepared: Sequence[PreparedCommit], what: str,
    security: Mapping[str, Any] = EMPTY,
) -> None:  # fmt: skip
    """Take over every prepared transaction; commit them all when each is the one its message
    names, else abort them and raise. `security`: the client's TLS/SASL keyword arguments."""
    producers = [AsyncProducer(bootstrap, transactional_id=m.transactional_id, enable_2pc=True,
                               **security)
                 for m in prepared]  # fmt: skip
    try:
        await asyncio.gather(*[p.start() for p in producers])
        await asyncio.gather(*[p.init_transactions(keep_prepared_txn=True) for p in producers])
        wrong = [m.transactional_id for p, m in zip(producers, prepared, strict=True)
                 if p.ongoing_transaction != PreparedTxnState(m.producer_id, m.epoch)]  # fmt: skip
        if wrong:
            await asyncio.gather(*[p.abort_transaction() for p in producers
                                   if p.ongoing_transaction is not None])  # fmt: skip
            raise OdradekError(
                f"exactlyOnce: {what} not committed: the prepared transaction of {wrong} is not "
                "the one its task reported (it was aborted or replaced); every transaction of "
                "it is aborted"
            )
        hold("commit", what)
        if producers:
            await producers[0].commit_transaction()  # the decision: see the module docstring
            hold("committed-one", what)
            await asyncio.gather(*[p.commit_transaction() for p in producers[1:]])
    finally:
        await asyncio.gather(*[p.close() for p in producers], return_exceptions=True)


async def abort_ids(
    bootstrap: str, tids: Iterable[str], security: Mapping[str, Any] = EMPTY
) -> None:
    """Abort the open transaction of each id (InitProducerId without keep_prepared_txn)."""

    async def abort(tid: str) -> None:
        producer = AsyncProducer(bootstrap, transactional_id=tid, enable_2pc=True, **security)
        try:
            await producer.start()
            await producer.init_transactions()
        finally:
            await producer.close()

    await asyncio.gather(*[abort(t) for t in tids])


async def cleanup(
    bootstrap: str, cluster: Cluster, prefix: str, named: set[str], query_id: str | None,
    up_to_batch: int | None, security: Mapping[str, Any] = EMPTY,
) -> list[str]:  # fmt: skip
    """Abort the leftovers (`leftovers`) among the open transactions; returns their ids."""
    found = leftovers(await open_transactions(cluster), prefix, named, query_id, up_to_batch)
    if found:
        log.warning("exactlyOnce: aborting %d transaction(s) no task of this write names: %s",
                    len(found), found)  # fmt: skip
        await abort_ids(bootstrap, found, security)
    return found


def query_id_of(messages: Sequence[WriterCommitMessage | None], prefix: str) -> str | None:
    """A streaming batch's query id, read back from its messages' transactional ids."""
    for m in messages:
        if isinstance(m, PreparedCommit):
            rest = m.transactional_id[len(prefix) + 1 :]
            return rest.rsplit("-", 3)[0]  # <query id>-<batch>-<partition>-<attempt>
    return None
