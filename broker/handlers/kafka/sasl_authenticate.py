"""SaslAuthenticate (36), v0-v2: the native SaslAuthenticate's answer in Kafka's shape (v1+
carries the KIP-368 session lifetime; v2 is flexible)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers import sasl_authenticate as native
from broker.session import Session
from protocol.kafka.codec import KafkaRequest, encode_response, make, response_class
from protocol.kafka.versions import SASL_AUTHENTICATE


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    answer, close_why = native.answer(ctx, session, request.body.auth_bytes)
    cls = response_class(SASL_AUTHENTICATE, request.header.api_version)
    response = make(
        cls,
        error_code=answer.error_code,
        error_message=answer.error_message,
        auth_bytes=answer.auth_bytes,
        session_lifetime=answer.session_lifetime_ms,
    )
    if close_why is None or ctx.sasl is None:
        return response
    return ctx.sasl.fail_later(close_why, encode_response(request, response), response.error_code)
