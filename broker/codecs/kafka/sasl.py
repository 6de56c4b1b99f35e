"""The Kafka door's codecs of the SASL APIs (see broker/codecs/kafka/__init__.py): SaslHandshake
v0-v1 and SaslAuthenticate v0-v2 (v1+ carries the KIP-368 session lifetime, v2 is flexible).
SaslHandshake v0 means the SASL tokens would follow raw, without Kafka headers: the codec says
so (`raw_tokens`) and the operation refuses it. An answer the operation marks `close_why` (a
failed exchange) goes out as a `Refusal` carrying this door's frame: broker/server.py sends it,
then closes the connection, as Kafka does."""

from __future__ import annotations

from typing import Any

from broker.codecs import Codec
from broker.operations import sasl_authenticate, sasl_handshake
from broker.session import Refusal
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, encode_response, make, response_class

RAW_TOKENS_BELOW = 1  # SaslHandshake v0: tokens without Kafka headers (Kafka before 1.0)


def _last(request: KafkaRequest, response: Any, why: str | None, code: int) -> Any:
    """`response`, or when the connection closes after it, the Refusal that sends it."""
    if why is None:
        return response
    raise Refusal(why, encode_response(request, response), logged=True, code=code)


# ----- SaslHandshake (17) ---------------------------------------------------------------------


def _handshake_in(request: KafkaRequest) -> sasl_handshake.SaslHandshake:
    raw = request.header.api_version < RAW_TOKENS_BELOW
    return sasl_handshake.SaslHandshake(request.body.mechanism, raw)


def _handshake_out(request: KafkaRequest, result: sasl_handshake.SaslHandshakeResult) -> Any:
    cls = response_class(v.SASL_HANDSHAKE, request.header.api_version)
    response = make(cls, error_code=result.error_code, mechanisms=result.mechanisms)
    return _last(request, response, result.close_why, result.error_code)


SASL_HANDSHAKE = Codec(_handshake_in, _handshake_out)

# ----- SaslAuthenticate (36) ------------------------------------------------------------------


def _authenticate_in(request: KafkaRequest) -> sasl_authenticate.SaslAuthenticate:
    return sasl_authenticate.SaslAuthenticate(bytes(request.body.auth_bytes))


def _authenticate_out(
    request: KafkaRequest, result: sasl_authenticate.SaslAuthenticateResult
) -> Any:
    cls = response_class(v.SASL_AUTHENTICATE, request.header.api_version)
    response = make(cls, error_code=result.error_code, error_message=result.error_message,
                    auth_bytes=result.auth_bytes,
                    session_lifetime=result.session_lifetime_ms)  # fmt: skip
    return _last(request, response, result.close_why, result.error_code)


SASL_AUTHENTICATE = Codec(_authenticate_in, _authenticate_out)
