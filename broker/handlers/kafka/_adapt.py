"""What the Kafka adapters share.

A Kafka adapter translates a kio request into the native request of the same meaning
(`as_native`), calls the native handler (the same service code the native door reaches), and
translates its answer back (`broker.deferred.then`, whether the handler answered at once or
must be awaited).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.codec import Request, RequestHeader
from protocol.kafka.codec import KafkaRequest, make, nested
from protocol.registry import ApiSpec


def as_native(spec: ApiSpec, body: Any, request: KafkaRequest) -> Request:
    """The native request a native handler takes, carrying a Kafka request's meaning."""
    h = request.header
    return Request(RequestHeader(spec.key, 0, h.correlation_id, h.client_id), spec, body)


def per_topic(
    cls: Any,
    topics: Any,
    topic_class: str,
    part_class: str,
    part: Callable[[Any], dict[str, Any]],
    topic_key: str = "name",
    parts_key: str = "partitions",
) -> tuple[Any, ...]:
    """The topic -> partition results of a response `cls`, from a native answer's `topics`
    (each with `.name` and `.partitions`); `part` gives one partition's fields."""
    topic_cls, part_cls = nested(cls, topic_class), nested(cls, part_class)
    return tuple(
        make(
            topic_cls,
            **{
                topic_key: t.name,
                parts_key: tuple(make(part_cls, **part(p)) for p in t.partitions),
            },
        )
        for t in topics
    )
