"""ApiVersions (18): the Kafka APIs and versions this broker serves (broker/apis.py's table and,
for the APIs not converted yet, protocol/kafka/versions.py's SERVED).

A version we do not serve is answered in v0 with UNSUPPORTED_VERSION and the list, so the client
retries with one we have (KIP-511); the codec hands such a request over with `body` None.
"""

from __future__ import annotations

from typing import Any

from broker.apis import KAFKA_SERVED
from broker.context import BrokerContext
from broker.session import Session
from protocol.errors import UnsupportedVersionError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import API_VERSIONS


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    if request.body is None:
        return answer(0, UnsupportedVersionError.code)
    return answer(request.header.api_version, 0)


def answer(version: int, error_code: int) -> Any:
    cls = response_class(API_VERSIONS, version)
    entry = nested(cls, "ApiVersion")
    keys = tuple(
        make(entry, api_key=key, min_version=lo, max_version=hi)
        for key, (lo, hi) in sorted(KAFKA_SERVED.items())
    )
    return make(cls, error_code=error_code, api_keys=keys, throttle_time=0)
