"""InitProducerId (api key 22, as Kafka): a producer id and epoch for an idempotent producer.

Any broker answers. `producer_id`/`producer_epoch` -1/-1 ask for a fresh id (epoch 0); a
producer's own id and epoch ask for the next epoch (KIP-360), which the broker grants, or
answers with a fresh id once the epoch is used up. `transactional_id` must be None: odradek
has no transactions (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, with `error_message` saying so).
The rules are coordinator/cluster/producer_ids.py's `decide_init`. Fields follow Kafka's v3 request;
`transaction_timeout_ms` is carried for symmetry and ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.registry import ApiSpec, register

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class InitProducerIdRequest:
    transactional_id: str | None
    transaction_timeout_ms: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class InitProducerIdResponse:
    error_code: int
    producer_id: int
    producer_epoch: int
    error_message: str | None = None
    throttle_time_ms: int = 0


INIT_PRODUCER_ID = register(
    ApiSpec(22, "InitProducerId", InitProducerIdRequest, InitProducerIdResponse)
)
