"""SaslHandshake (17), v1: the native SaslHandshake's answer in Kafka's shape (v0, after which
raw tokens follow without Kafka headers, is not served: protocol/kafka/versions.py)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers import sasl_handshake as native
from broker.session import Session
from protocol.kafka.codec import KafkaRequest, encode_response, make, response_class
from protocol.kafka.versions import SASL_HANDSHAKE


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    answer, close_why = native.answer(ctx, session, request.body.mechanism)
    cls = response_class(SASL_HANDSHAKE, request.header.api_version)
    response = make(cls, error_code=answer.error_code, mechanisms=tuple(answer.mechanisms))
    if close_why is None or ctx.sasl is None:
        return response
    return ctx.sasl.fail_later(close_why, encode_response(request, response))
