"""InitProducerId (api key 22, as Kafka): a producer id and epoch for an idempotent producer.

Any broker answers. `producer_id`/`producer_epoch` -1/-1 ask for a fresh id (epoch 0); a
producer's own id and epoch ask for the next epoch (KIP-360), which the broker grants, or
answers with a fresh id once the epoch is used up. The rules are
coordinator/cluster/producer_ids.py's `decide_init`; `transaction_timeout_ms` is then ignored.

With a `transactional_id` the request goes to the id's transaction coordinator (FindCoordinator
key type 1) and is Kafka's InitProducerId v6: the id's producer id at a new epoch, which fences
every older producer of the id (PRODUCER_FENCED) and aborts its open transaction first
(CONCURRENT_TRANSACTIONS until the markers are written: retry). `enable_2pc` and
`keep_prepared_txn` are KIP-939's two-phase commit; the answer's `ongoing_txn_producer_id` /
`_epoch` name a prepared transaction kept open (-1 otherwise). Fields follow Kafka's v6.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.api.spec import ApiSpec

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class InitProducerIdRequest:
    transactional_id: str | None
    transaction_timeout_ms: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    enable_2pc: bool = False  # KIP-939: transactions that never time out, prepared elsewhere
    keep_prepared_txn: bool = False  # KIP-939: keep a prepared transaction open


@dataclass(frozen=True, slots=True)
class InitProducerIdResponse:
    error_code: int
    producer_id: int
    producer_epoch: int
    error_message: str | None = None
    throttle_time_ms: int = 0
    ongoing_txn_producer_id: int = NO_PRODUCER_ID  # KIP-939: the kept transaction's
    ongoing_txn_producer_epoch: int = NO_PRODUCER_EPOCH


INIT_PRODUCER_ID = ApiSpec(22, "InitProducerId", InitProducerIdRequest, InitProducerIdResponse)
