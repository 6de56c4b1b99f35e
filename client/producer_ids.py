"""The producer's id and epoch (KIP-98, KIP-360): when one is due, asking for it, handing it to
the accumulator, which numbers each partition's batches with it (client/accumulator.py).

Idempotent producer (`enable_idempotence` with acks=all): before its first batch goes out the
sender asks any broker for a producer id (InitProducerId: a fresh id at epoch 0, from the block
of ids that broker claimed in ZooKeeper; coordinator/cluster/producer_ids.py). A batch that fails
for good leaves a gap in its partition's sequence: once the partition's other batches of that
epoch have settled, the accumulator says an epoch bump is due, and the producer asks for its id
at the next epoch (InitProducerId with its id and epoch, KIP-360; a fresh id when the epoch is
used up); each partition then starts again from sequence 0 once its older batches have settled
(the rules are in client/accumulator.py). While an id is due (`awaiting_producer_id`) nothing
new drains (retries do). A failed InitProducerId is retried after `retry_backoff_ms`, and a
non-retriable refusal also fails the batches waiting for it; `error` says why, for the expiry
message of a batch that never went out.

Transactional producer: its id comes from its transaction coordinator through
`init_transactions()` (client/transactions.py's TransactionManager sends the request); here
the answer is handed to the accumulator, and the accumulator learns which partitions the open
transaction holds (`txn_partitions`).

The sender (client/sender.py) drives the idempotent case through `due()` and `request()`,
passing itself as the narrow `SenderHooks`: how to start a task it owns, wake it and fail
what is queued.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Protocol

from client.accumulator import RecordAccumulator
from client.cluster import Cluster
from client.transactions import TransactionManager, TxnState
from protocol.api.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from protocol.clock import Clock
from protocol.errors import OdradekError, RequestTimedOutError, for_code


class SenderHooks(Protocol):
    """What an InitProducerId under way needs of the sender."""

    def spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run `coro` as one of the sender's requests (cancelled when it shuts down)."""
        ...

    def wake(self) -> None:
        """Make the sender run its next pass now."""
        ...

    def fail_queued(self, error: OdradekError) -> None:
        """Fail every batch queued and not yet sent."""
        ...


class ProducerIds:
    """The producer id of one producer and the requests for it (see the module docstring)."""

    def __init__(
        self, acc: RecordAccumulator, cluster: Cluster, clock: Clock, *, idempotent: bool,
        txn: TransactionManager | None, request_timeout_ms: int, retry_backoff_ms: int,
    ) -> None:  # fmt: skip
        self.acc = acc
        self.cluster = cluster
        self.clock = clock
        self.idempotent = idempotent
        self.txn = txn
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.error: str | None = None  # why the last InitProducerId failed
        self._task: asyncio.Task[None] | None = None
        self._retry_at_ms = 0
        # idempotence: an InitProducerId is due (first id, or an epoch bump): nothing new drains
        acc.awaiting_producer_id = idempotent
        if txn is not None:
            acc.txn_partitions = txn.added

    # ----- the idempotent producer's id, asked of any broker by the sender -------------------

    def due(self) -> bool:
        """Under the accumulator's lock: whether the sender must get an id (the first, or the
        next epoch) before anything new drains; marks the accumulator so."""
        acc = self.acc
        if (
            self.idempotent
            and self.txn is None  # (a transactional producer's id: init_transactions)
            and (acc.awaiting_producer_id or acc.epoch_bump_due())
        ):
            acc.awaiting_producer_id = True
            return True
        return False

    def request(self, now_ms: int, sender: SenderHooks) -> int:
        """The sender's pass while an id is due: start InitProducerId unless one is under way
        or backing off; ms until the next pass (batches may expire meanwhile; the request
        wakes the sender when it ends). Retries of numbered batches still go meanwhile."""
        if self._task is None:
            if now_ms < self._retry_at_ms:
                return self._retry_at_ms - now_ms
            self._task = sender.spawn(self._init_producer_id(sender))
        return self.retry_backoff_ms

    async def _init_producer_id(self, sender: SenderHooks) -> None:
        """Ask any broker for an id: a fresh one the first time, else the next epoch of ours."""
        acc = self.acc
        request = InitProducerIdRequest(None, self.request_timeout_ms)
        if acc.producer_id >= 0:
            request = InitProducerIdRequest(
                None, self.request_timeout_ms, acc.producer_id, acc.producer_epoch
            )
        try:
            resp: InitProducerIdResponse = await self.cluster.send_to_any(request)
            if resp.error_code != 0:
                raise for_code(resp.error_code)(resp.error_message or "InitProducerId refused")
        except OdradekError as exc:
            self._retry_at_ms = self.clock.monotonic_ms() + self.retry_backoff_ms
            self.error = str(exc)
            if not exc.retriable:
                sender.fail_queued(type(exc)(f"no producer id: {exc.message}"))
        else:
            self.set(resp.producer_id, resp.producer_epoch)
            self.error = None
        finally:
            self._task = None
            sender.wake()

    # ----- the transactional producer's id, from its coordinator -----------------------------

    async def init_transactional(self, keep_prepared_txn: bool = False) -> None:
        """InitProducerId at the transaction coordinator (from Initializing): Ready, or
        PreparedTransaction when a kept transaction is ongoing; back to Uninitialized on a
        timeout (init_transactions() may be called again), else the state the error means."""
        txn = self.txn
        assert txn is not None
        try:
            producer_id, epoch = await txn.init_producer_id(keep_prepared_txn)
        except RequestTimedOutError:
            txn.move(TxnState.UNINITIALIZED)  # init_transactions() may be called again
            raise
        except OdradekError as exc:
            raise txn.fail(exc) from None
        self.set(producer_id, epoch)
        txn.move(TxnState.READY if txn.ongoing is None else TxnState.PREPARED_TRANSACTION)

    # ----- both kinds -------------------------------------------------------------------------

    def set(self, producer_id: int, epoch: int) -> None:
        """A new id or epoch: every partition's sequence starts again (client/accumulator.py)."""
        with self.acc.lock:
            self.acc.reset_producer(producer_id, epoch)
            self.acc.awaiting_producer_id = False

    def epoch_bump_due(self) -> bool:
        """A batch failed for good and its partition's batches have settled (KIP-360)."""
        with self.acc.lock:
            return self.acc.epoch_bump_due()
