"""Exactly-once writes (`exactlyOnce=true`): each Spark task's rows in one Kafka transaction,
committed by the driver once every task has prepared (KIP-939's two-phase commit).

Transactional ids are deterministic, so that any attempt or any later run can find them:

    streaming   <prefix>-<query id>-<batch id>-<partition id>
    batch       <prefix>-w<write id>-<partition id>     (write id: 16 hex digits per write)

The query id is the one Spark keeps in the checkpoint (the task's local property
`sql.streaming.queryId`), the batch id Spark's micro-batch id (`streaming.sql.batchId`), the
partition id the task's; the write id is drawn by the driver when the batch write is planned.

Phase 1, on the executors (`prepare_rows`): the task's producer (enable_2pc: no transaction
timeout) calls InitProducerId for its id. That fences every earlier attempt of the same
partition and aborts its transaction, sent or prepared, so only the latest attempt's
transaction can be open. It sends its rows in a transaction, flushes (every record
acknowledged) and leaves the transaction open ("prepared", Ongoing at the coordinator),
returning a `PreparedCommit` naming the id and the producer id and epoch that wrote it.

Phase 2, on the driver (`commit_prepared`): one producer per id takes the transaction over
(InitProducerId enable_2pc + keep_prepared_txn: kept, not aborted; the answer names the kept
transaction's producer id and epoch). Only when every id kept exactly the transaction its
message names does the driver commit: the first transaction alone (the decision), then the rest.
Otherwise it aborts what it kept and fails the commit (another attempt replaced one). Then
`cleanup` aborts this query's (or write's) open transactions that no message names (an attempt
or a partition a rerun did not have): they would hold the last stable offset back for good.

A streaming query restarted after its driver died re-runs, with the same offsets, the batch
that is not in its commit log, and its tasks have the same transactional ids:
- the driver died before committing anything: each task's InitProducerId aborts the prepared
  transaction the dead run left, and the batch is written again, once;
- the driver died after committing some: a task whose id is already committed (PrepareCommit or
  CompleteCommit: only the driver commits, and only after every task prepared) writes nothing,
  the others abort the dead run's transaction and write theirs, so each partition's rows are
  committed once. This needs the rerun to split the batch into the same partitions, which Spark
  does for a replayed batch of a deterministic query.
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
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql.datasource import WriterCommitMessage

from client import AsyncProducer
from client.cluster import Cluster
from client.transactions import PreparedTxnState
from protocol.api.group import TRANSACTION_KEY_TYPE, FindCoordinatorRequest
from protocol.api.txn import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from protocol.errors import NetworkError, OdradekError, TransactionalIdNotFoundError, for_code

log = logging.getLogger("spark_connector")
T = TypeVar("T")

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


def transactional_id(base: str, partition_id: int) -> str:
    return f"{base}-{partition_id}"


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
        pattern = re.compile(re.escape(f"{prefix}-{query_id}-") + r"(\d+)-\d+")
    else:
        pattern = re.compile(re.escape(f"{prefix}-w") + r"[0-9a-f]{16}-\d+")
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


async def transaction_state(cluster: Cluster, tid: str) -> str | None:
    """The coordinator's state of `tid` ("Ongoing", "CompleteCommit", ...), None if unknown."""

    async def once() -> str | None:
        found = await cluster.send_to_any(
            FindCoordinatorRequest(tid, TRANSACTION_KEY_TYPE), REQUEST_TIMEOUT_MS, read=True
        )
        if found.error_code != 0:
            raise for_code(found.error_code)(f"no coordinator for {tid!r}")
        if found.node_id not in cluster.metadata.brokers:
            await cluster.request_update()
        conn = await cluster.connection(found.node_id)
        resp: DescribeTransactionsResponse = await conn.send(
            DescribeTransactionsRequest([tid]), REQUEST_TIMEOUT_MS
        )
        row = resp.transactions[0]
        if row.error_code == TransactionalIdNotFoundError.code:
            return None
        if row.error_code != 0:
            raise for_code(row.error_code)(f"describing transactional id {tid!r}")
        return row.state

    return await _retrying(f"describing transactional id {tid!r}", once)


async def open_transactions(cluster: Cluster) -> list[str]:
    """Every Ongoing transactional id, from every broker (each lists those it coordinates)."""
    meta = await cluster.request_update()

    async def from_node(node: int) -> list[str]:
        async def once() -> list[str]:
            conn = await cluster.connection(node)
            resp: ListTransactionsResponse = await conn.send(
                ListTransactionsRequest(["Ongoing"], []), REQUEST_TIMEOUT_MS
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
    tid: str,
    send_rows: Callable[[AsyncProducer], Awaitable[int]],
    skip_if_committed: bool,
    cluster: Cluster,
    producer_config: dict[str, Any],
) -> PreparedCommit:
    """Write a task's rows in a transaction of `tid` and leave it prepared (see the module
    docstring). `skip_if_committed` (a streaming rerun): nothing is written when `tid` is
    already committed."""
    if skip_if_committed and await transaction_state(cluster, tid) in COMMITTED_STATES:
        log.warning("%s was committed by an earlier run of this batch: not written again", tid)
        return PreparedCommit(tid, -1, -1, 0, already_committed=True)
    producer = AsyncProducer(bootstrap, transactional_id=tid, enable_2pc=True, **producer_config)
    await producer.start()
    try:
        await producer.init_transactions()  # fences earlier attempts, aborts what they left
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


async def commit_prepared(bootstrap: str, prepared: Sequence[PreparedCommit], what: str) -> None:
    """Take over every prepared transaction; commit them all when each is the one its message
    names, else abort them and raise."""
    producers = [AsyncProducer(bootstrap, transactional_id=m.transactional_id, enable_2pc=True)
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
                "the one its task reported (another attempt replaced it); every transaction of "
                "it is aborted"
            )
        hold("commit", what)
        if producers:
            await producers[0].commit_transaction()  # the decision: see the module docstring
            hold("committed-one", what)
            await asyncio.gather(*[p.commit_transaction() for p in producers[1:]])
    finally:
        await asyncio.gather(*[p.close() for p in producers], return_exceptions=True)


async def abort_ids(bootstrap: str, tids: Iterable[str]) -> None:
    """Abort the open transaction of each id (InitProducerId without keep_prepared_txn)."""

    async def abort(tid: str) -> None:
        producer = AsyncProducer(bootstrap, transactional_id=tid, enable_2pc=True)
        try:
            await producer.start()
            await producer.init_transactions()
        finally:
            await producer.close()

    await asyncio.gather(*[abort(t) for t in tids])


async def cleanup(
    bootstrap: str, cluster: Cluster, prefix: str, named: set[str], query_id: str | None,
    up_to_batch: int | None,
) -> list[str]:  # fmt: skip
    """Abort the leftovers (`leftovers`) among the open transactions; returns their ids."""
    found = leftovers(await open_transactions(cluster), prefix, named, query_id, up_to_batch)
    if found:
        log.warning("exactlyOnce: aborting %d transaction(s) no task of this write names: %s",
                    len(found), found)  # fmt: skip
        await abort_ids(bootstrap, found)
    return found


def query_id_of(messages: Sequence[WriterCommitMessage | None], prefix: str) -> str | None:
    """A streaming batch's query id, read back from its messages' transactional ids."""
    for m in messages:
        if isinstance(m, PreparedCommit):
            rest = m.transactional_id[len(prefix) + 1 :]
            return rest.rsplit("-", 2)[0]
    return None
