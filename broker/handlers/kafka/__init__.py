"""The Kafka door's legacy handlers (the transition of issue 32: the APIs converted to one
operation per API are served through broker/apis.py's table instead, and are not here): one
small adapter per Kafka API, each `handle(ctx, request, session)`
with a `KafkaRequest` (protocol/kafka/codec.py), returning a kio response entity, chunks (Fetch),
None (acks=0) or an awaitable of one. Adapters translate to the native request of the same
meaning and call the native handler, so both doors reach the same services.
"""

from __future__ import annotations

from typing import Any

from protocol.kafka.versions import SERVED

KAFKA_HANDLERS: dict[int, Any] = {}
assert set(KAFKA_HANDLERS) == set(SERVED), "every API SERVED lists has a handler, and no other"

__all__ = ["KAFKA_HANDLERS", "SERVED"]
