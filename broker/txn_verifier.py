"""KIP-890's defence on a partition leader: a transactional batch goes in only once the
transaction coordinator confirms the partition is in the producer's ongoing transaction.

Without it a late or stray batch (a producer that timed out, a retry after its transaction was
aborted) opens a transaction on the partition that no coordinator will ever end: a hanging
transaction, which holds the last stable offset, and every read_committed reader, for good.

For each transactional batch of a Produce that names its transactional id: when the producer's
transaction is already open on the partition at that epoch, nothing is asked. Otherwise the
partition's producer state hands out a token (`start_verification`), the coordinator is asked
with AddPartitionsToTxn(verify_only) (in-process when this broker is the id's coordinator, else
over the native protocol), and the append then checks the token is still current: a marker for
the producer in between voids it (the transaction ended while the answer was on its way).

Transaction version 2 (KIP-890 part 2: a Produce v12+ or a TxnOffsetCommit v5+, `txn_version`
2): the coordinator is asked to add the partitions (AddPartitionsToTxn at TV2, Kafka's
AddPartitionsToTxnManager with its addPartition operation), which opens the transaction when
none is open, instead of only asking; a TV2 producer sends no AddPartitionsToTxn of its own.

The coordinator's answers become Produce errors as Kafka's AddPartitionsToTxnManager maps them:
the partition not in the transaction is INVALID_TXN_STATE, a fenced producer
INVALID_PRODUCER_EPOCH, and anything retriable (no coordinator yet, CONCURRENT_TRANSACTIONS, a
network error) NOT_ENOUGH_REPLICAS, which every client retries.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from coordinator.runtime.peers import Peers
from coordinator.transaction import txn as ops
from coordinator.transaction.service import TransactionCoordinator
from protocol.api.txn import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, TxnTopic
from protocol.errors import (
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidTxnStateError,
    NotEnoughReplicasError,
    OdradekError,
    ProducerFencedError,
)

log = logging.getLogger("odradek.broker.txn_verifier")
TP = tuple[str, int]
NONE = 0


class TxnVerifier:
    def __init__(self, broker_id: int, coordinator: TransactionCoordinator, peers: Peers) -> None:
        self.broker_id = broker_id
        self.coordinator = coordinator
        self.peers = peers

    async def verify(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: Iterable[TP],
        txn_version: int = 0,
    ) -> dict[TP, int]:  # fmt: skip
        """Per partition: NONE when it is (TV2: now) in the producer's ongoing transaction, else
        the Produce error (see the module's first lines)."""
        wanted = list(partitions)
        try:
            codes = await self._ask(transactional_id, producer_id, epoch, wanted, txn_version)
        except OdradekError as exc:
            log.info("verifying %s for %s failed: %s", wanted, transactional_id, exc)
            codes = dict.fromkeys(wanted, exc.code)
        return {tp: produce_error(codes.get(tp, NotEnoughReplicasError.code)) for tp in wanted}

    async def _ask(
        self, tid: str, producer_id: int, epoch: int, wanted: list[TP], txn_version: int
    ) -> dict[TP, int]:
        found = await self.coordinator.find_coordinator(tid)
        if found.error_code:
            return dict.fromkeys(wanted, found.error_code)
        verify_only = txn_version < ops.TV2
        if found.node_id == self.broker_id:
            answer = await self.coordinator.add_partitions(tid, producer_id, epoch, wanted,
                                                           verify_only, txn_version)  # fmt: skip
            if isinstance(answer, int):
                return dict.fromkeys(wanted, answer)
            return {tp: ops.error_code(name) for tp, name in answer.items()}
        topics: dict[str, list[int]] = {}
        for topic, partition in wanted:
            topics.setdefault(topic, []).append(partition)
        request = AddPartitionsToTxnRequest(
            tid, producer_id, epoch, [TxnTopic(t, ps) for t, ps in topics.items()], verify_only,
            txn_version,
        )  # fmt: skip
        response: AddPartitionsToTxnResponse = await self.peers.send(found.node_id, request)
        return {(t.name, p.partition): p.error_code for t in response.topics for p in t.partitions}


def produce_error(code: int) -> int:
    """A verification answer as the Produce error a client acts on."""
    if code in (NONE, InvalidTxnStateError.code, InvalidProducerEpochError.code):
        return code
    if code == ProducerFencedError.code:
        return InvalidProducerEpochError.code
    if code == InvalidProducerIdMappingError.code:
        return InvalidTxnStateError.code
    return NotEnoughReplicasError.code
