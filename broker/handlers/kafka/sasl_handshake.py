"""SaslHandshake (17), v0-v1: the native SaslHandshake's answer in Kafka's shape.

v0 is in the served range because librdkafka before 2.10 (kcat's 2.0.2) will not try SASL
unless it is, though it then sends v1 as every client we test does. A v0 request itself (a
client from before Kafka 1.0, whose SASL tokens would follow raw, without Kafka headers) is
answered UNSUPPORTED_VERSION with the enabled mechanisms after the failure delay, then the
connection closes. On a listener without SASL any version is answered ILLEGAL_SASL_STATE with no
mechanisms, as Kafka's KafkaApis answers it (broker/handlers/sasl_handshake.py)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers import sasl_handshake as native
from broker.session import Session, uses_sasl
from protocol.errors import UnsupportedVersionError
from protocol.kafka.codec import KafkaRequest, encode_response, make, response_class
from protocol.kafka.versions import SASL_HANDSHAKE

V0_REFUSED = (
    "SaslHandshake v0 (raw SASL tokens without Kafka headers, clients before Kafka 1.0) is not "
    "served; SaslHandshake v1 with SaslAuthenticate is"
)


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    version = request.header.api_version
    cls = response_class(SASL_HANDSHAKE, version)
    if version == 0 and ctx.sasl is not None and uses_sasl(session.security_protocol):
        ctx.sasl.refuse(session, V0_REFUSED)
        enabled = ctx.sasl.config_for(session).enabled_mechanisms
        refused = make(cls, error_code=UnsupportedVersionError.code, mechanisms=enabled)
        return ctx.sasl.fail_later(
            V0_REFUSED, encode_response(request, refused), refused.error_code
        )
    answer, close_why = native.answer(ctx, session, request.body.mechanism)
    response = make(cls, error_code=answer.error_code, mechanisms=tuple(answer.mechanisms))
    if close_why is None or ctx.sasl is None:
        return response
    return ctx.sasl.fail_later(close_why, encode_response(request, response), response.error_code)
