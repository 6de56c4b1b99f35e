"""The Kafka door's legacy handlers (the transition of issue 32: the APIs converted to one
operation per API are served through broker/apis.py's table instead, and are not here): one
small adapter per Kafka API, each `handle(ctx, request, session)`
with a `KafkaRequest` (protocol/kafka/codec.py), returning a kio response entity, chunks (Fetch),
None (acks=0) or an awaitable of one. Adapters translate to the native request of the same
meaning and call the native handler, so both doors reach the same services.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.kafka import (
    consumer_group_describe,
    fetch,
    find_coordinator,
    join_group,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
)
from protocol.kafka import versions as v
from protocol.kafka.versions import SERVED

KAFKA_HANDLERS: dict[int, Any] = {
    v.OFFSET_COMMIT: offset_commit.handle,
    v.OFFSET_FETCH: offset_fetch.handle,
    v.FIND_COORDINATOR: find_coordinator.handle,
    v.JOIN_GROUP: join_group.handle,
    v.OFFSET_DELETE: offset_delete.handle,
    v.PRODUCE: produce.handle,
    v.FETCH: fetch.handle,
    v.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle,
    v.CONSUMER_GROUP_DESCRIBE: consumer_group_describe.handle,
}
assert set(KAFKA_HANDLERS) == set(SERVED), "every API SERVED lists has a handler, and no other"

__all__ = ["KAFKA_HANDLERS", "SERVED"]
