"""Producer ids for idempotent producers: blocks claimed in ZooKeeper, InitProducerId decided.

Blocks (Kafka's ZooKeeper-era ProducerIdManager): the persistent znode
`/latest_producer_id_block` holds the last block of ids any broker claimed,

    {"version":1,"broker":2,"block_start":"1000","block_end":"1999"}

(both ends inclusive, decimal strings as Kafka writes them). To claim the next block a broker
reads the node with its version and writes the block after it (`next_block`: BLOCK_SIZE ids
from end + 1, for itself) conditionally on that version; on a version conflict another broker
claimed first, so it reads again and retries, at most CLAIM_ATTEMPTS_MAX times. A missing
node is created holding the first block, [0, BLOCK_SIZE - 1]; an empty one (Kafka creates it
empty at start-up) counts as missing too. Blocks never overlap, so no two brokers ever hand
out the same id. Within its block a broker gives ids out locally, one by one, and claims the
next block when the block is used up. Ids of a block a broker did not use before it stopped
are never used (as in Kafka).

InitProducerId (`decide_init`, pure; Kafka's KafkaApis.handleInitProducerIdRequest and
TransactionCoordinator.handleInitProducerId for a null transactional id):

    transactional_id  producer_id  producer_epoch   answer
    non-null, ""      any          any              INVALID_REQUEST (as Kafka)
    non-null          any          any              TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    None              -1           -1               a fresh id, epoch 0
    None              -1           anything else    INVALID_REQUEST
    None              >= 0         -1 or < -1       INVALID_REQUEST
    None              >= 0         0..32765         the same id, epoch + 1 (KIP-360 bump)
    None              >= 0         32766, 32767     a fresh id, epoch 0 (the epoch is used up)
    None              < -1, or an epoch > 32767     INVALID_REQUEST (not an int16 epoch)

Kafka itself answers a null transactional id with a fresh id every time, and bumps epochs only
for transactional ids (their state says which epoch is current). Odradek keeps no state per
producer id, so a bump is granted on the producer's word: a producer that lost a batch asks
for its own id at the next epoch, which fences its older batches (broker/producer_state.py:
INVALID_PRODUCER_EPOCH) and restarts its sequences at 0. Epoch 32767 is never handed out
(Kafka's Short.MaxValue - 1 rule leaves it out).

Transactions: odradek has none. TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53) is the code every
client takes as fatal on InitProducerId (librdkafka's rd_kafka_idemp_check_error, kafka-python's
InitProducerIdHandler, Java's TransactionManager), so a transactional producer fails at
`init_transactions()` instead of retrying; the native response carries the message
"transactions are not supported by odradek". UNSUPPORTED_VERSION (35) was the other candidate,
but librdkafka retries it every 500 ms forever.

ZooKeeper trouble while claiming a block is COORDINATOR_LOAD_IN_PROGRESS (retriable, what Kafka's
RPCProducerIdManager answers while it has no block), a corrupt node UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Protocol

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.zk import ZkBadVersion, ZkClient, ZkError, ZkNodeExists, ZkNoNode
from coordinator.cluster.zk_paths import ProducerIdBlock, ZkDataError
from protocol.errors import (
    CoordinatorLoadInProgressError,
    InvalidRequestError,
    TransactionalIdAuthorizationFailedError,
    UnknownServerError,
)

log = logging.getLogger("odradek.coordinator.producer_ids")

BLOCK_SIZE = 1000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
PRODUCER_ID_MAX = 2**63 - 1  # producer ids are int64
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
EPOCH_MAX = 2**15 - 1  # epochs are int16
EPOCH_BUMP_MAX = EPOCH_MAX - 1  # the highest epoch a bump gives (Kafka: Short.MaxValue - 1)
CLAIM_ATTEMPTS_MAX = 50  # version conflicts in a row before a claim gives up (retriable)
TRANSACTIONS_UNSUPPORTED = "transactions are not supported by odradek"


# ----- pure decisions ------------------------------------------------------------------------


def first_block(broker_id: int, size: int = BLOCK_SIZE) -> ProducerIdBlock:
    return ProducerIdBlock(broker_id, 0, size - 1)


def next_block(
    current: ProducerIdBlock | None, broker_id: int, size: int = BLOCK_SIZE
) -> ProducerIdBlock:
    """The block after `current` (the first block when there is none), for `broker_id`.
    Raises UnknownServerError when the int64 ids are used up (Kafka: a fatal error)."""
    assert size >= 1
    if current is None:
        return first_block(broker_id, size)
    if current.end > PRODUCER_ID_MAX - size:
        raise UnknownServerError(
            f"producer ids are exhausted (the last block ends at {current.end})"
        )
    return ProducerIdBlock(broker_id, current.end + 1, current.end + size)


def decode_block(data: bytes) -> ProducerIdBlock | None:
    """The block a znode holds; None for an empty node. ZkDataError when it is not a block."""
    return ProducerIdBlock.decode(data) if data.strip() else None


@dataclass(frozen=True, slots=True)
class InitVerdict:
    """What an InitProducerId gets: `producer_id` NO_PRODUCER_ID means a fresh id from the
    block, at `producer_epoch` (then 0); else that id at that epoch."""

    producer_id: int
    producer_epoch: int

    @property
    def fresh(self) -> bool:
        return self.producer_id == NO_PRODUCER_ID


FRESH = InitVerdict(NO_PRODUCER_ID, 0)


def decide_init(transactional_id: str | None, producer_id: int, producer_epoch: int) -> InitVerdict:
    """The module docstring's table. Raises InvalidRequestError or
    TransactionalIdAuthorizationFailedError to refuse."""
    if transactional_id is not None:
        if not transactional_id:
            raise InvalidRequestError("the transactional id is empty (use null for none)")
        raise TransactionalIdAuthorizationFailedError(
            f"transactional id {transactional_id!r} refused: {TRANSACTIONS_UNSUPPORTED}"
        )
    if producer_id == NO_PRODUCER_ID and producer_epoch == NO_PRODUCER_EPOCH:
        return FRESH
    if producer_id < 0 or not 0 <= producer_epoch <= EPOCH_MAX:
        raise InvalidRequestError(
            f"producer id {producer_id} with epoch {producer_epoch}: give both (an id >= 0 "
            f"with an epoch 0..{EPOCH_MAX}) or neither (-1, -1)"
        )
    if producer_epoch >= EPOCH_BUMP_MAX:
        return FRESH  # the epoch is used up: go on under a new id
    return InitVerdict(producer_id, producer_epoch + 1)


# ----- where blocks come from ----------------------------------------------------------------


class BlockSource(Protocol):
    """Claims the next block of producer ids for a broker, cluster-wide unique."""

    async def claim_block(self, broker_id: int) -> ProducerIdBlock:
        """A block no other claim ever got; raises an OdradekError when it cannot."""
        ...


class MemoryBlockSource:
    """Blocks from a counter in memory: one process's brokers (tests, the in-process harness)."""

    def __init__(self, size: int = BLOCK_SIZE) -> None:
        self.size = size
        self.latest: ProducerIdBlock | None = None

    async def claim_block(self, broker_id: int) -> ProducerIdBlock:
        self.latest = next_block(self.latest, broker_id, self.size)
        return self.latest


class ZkBlockSource:
    """Blocks from `/latest_producer_id_block`, claimed with a conditional write."""

    def __init__(self, zk: ZkClient, size: int = BLOCK_SIZE) -> None:
        self.zk = zk
        self.size = size

    async def claim_block(self, broker_id: int) -> ProducerIdBlock:
        try:
            for _ in range(CLAIM_ATTEMPTS_MAX):
                block = await self._try_claim(broker_id)
                if block is not None:
                    log.info("broker %d claimed producer ids %d..%d", broker_id, block.start,
                             block.end)  # fmt: skip
                    return block
        except ZkDataError as exc:
            raise UnknownServerError(f"{paths.LATEST_PRODUCER_ID_BLOCK}: {exc}") from None
        except ZkError as exc:
            raise CoordinatorLoadInProgressError(f"no producer id block: {exc}") from None
        raise CoordinatorLoadInProgressError(
            f"no producer id block: {CLAIM_ATTEMPTS_MAX} claims in a row lost to other brokers"
        )

    async def _try_claim(self, broker_id: int) -> ProducerIdBlock | None:
        """One read and one conditional write; None when another broker wrote in between."""
        path = paths.LATEST_PRODUCER_ID_BLOCK
        try:
            data, version = await self.zk.get(path)
        except ZkNoNode:
            block = first_block(broker_id, self.size)
            try:
                await self.zk.create(path, block.encode())
            except ZkNodeExists:
                return None
            return block
        block = next_block(decode_block(data), broker_id, self.size)
        try:
            await self.zk.set(path, block.encode(), version)
        except ZkBadVersion:
            return None
        return block


# ----- the broker's service ------------------------------------------------------------------


class ProducerIdManager:
    """One per broker: InitProducerId's answers, ids handed out from this broker's block."""

    def __init__(self, broker_id: int, source: BlockSource) -> None:
        self.broker_id = broker_id
        self.source = source
        self._block: ProducerIdBlock | None = None
        self._next = 0  # the next id of `_block` to give out
        self._claiming = asyncio.Lock()  # one claim at a time; the others wait for its block

    async def init_producer_id(
        self, transactional_id: str | None, producer_id: int, producer_epoch: int
    ) -> tuple[int, int]:
        """(producer id, epoch) for an InitProducerId request; raises an OdradekError to
        refuse (see `decide_init`) or when no block can be claimed."""
        verdict = decide_init(transactional_id, producer_id, producer_epoch)
        if verdict.fresh:
            return await self.next_producer_id(), verdict.producer_epoch
        return verdict.producer_id, verdict.producer_epoch

    async def next_producer_id(self) -> int:
        while self._used_up():
            async with self._claiming:
                if self._used_up():  # nobody claimed while this waited for the lock
                    block = await self.source.claim_block(self.broker_id)
                    self._block, self._next = block, block.start
        assert self._block is not None and self._block.start <= self._next <= self._block.end
        producer_id = self._next
        self._next += 1
        return producer_id

    def _used_up(self) -> bool:
        return self._block is None or self._next > self._block.end
