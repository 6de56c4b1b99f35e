"""The native door's codecs of the SASL APIs (see broker/codecs/native/__init__.py). The native
door speaks Kafka's v1 handshake and v2 authenticate (never raw tokens). An answer the
operation marks `close_why` (a failed exchange) goes out as a `Refusal` carrying this door's
frame: broker/server.py sends it, then closes the connection."""

from __future__ import annotations

from typing import Any

from broker.codecs import Codec
from broker.operations import sasl_authenticate, sasl_handshake
from broker.session import Refusal
from protocol.api import sasl
from protocol.codec import Request, encode_response


def _last(request: Request, response: Any, why: str | None) -> Any:
    """`response`, or when the connection closes after it, the Refusal that sends it."""
    if why is None:
        return response
    frame = encode_response(request.header.correlation_id, response)
    raise Refusal(why, frame, logged=True, code=response.error_code)


# ----- SaslHandshake --------------------------------------------------------------------------


def _handshake_in(request: Request) -> sasl_handshake.SaslHandshake:
    req: sasl.SaslHandshakeRequest = request.body
    return sasl_handshake.SaslHandshake(req.mechanism)


def _handshake_out(
    request: Request, result: sasl_handshake.SaslHandshakeResult
) -> sasl.SaslHandshakeResponse:
    response = sasl.SaslHandshakeResponse(result.error_code, list(result.mechanisms))
    return _last(request, response, result.close_why)


SASL_HANDSHAKE = Codec(_handshake_in, _handshake_out)

# ----- SaslAuthenticate -----------------------------------------------------------------------


def _authenticate_in(request: Request) -> sasl_authenticate.SaslAuthenticate:
    req: sasl.SaslAuthenticateRequest = request.body
    return sasl_authenticate.SaslAuthenticate(req.auth_bytes)


def _authenticate_out(
    request: Request, result: sasl_authenticate.SaslAuthenticateResult
) -> sasl.SaslAuthenticateResponse:
    response = sasl.SaslAuthenticateResponse(
        result.error_code, result.error_message, result.auth_bytes, result.session_lifetime_ms
    )
    return _last(request, response, result.close_why)


SASL_AUTHENTICATE = Codec(_authenticate_in, _authenticate_out)
