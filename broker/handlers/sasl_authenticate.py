"""SaslAuthenticate (36): one token of the SASL exchange the handshake chose.

broker/security/sasl.py feeds it to the mechanism; when the exchange completes the session is
authenticated (its principal User:<name>) and, with connections_max_reauth_ms, the answer
carries the session's lifetime (KIP-368). A failed exchange (wrong password, unknown user,
malformed token) is answered SASL_AUTHENTICATION_FAILED with Kafka's message after the failure
delay, then the connection closes.
"""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.session import Session
from protocol.api.sasl import SaslAuthenticateRequest, SaslAuthenticateResponse
from protocol.codec import Request, encode_response
from protocol.errors import IllegalSaslStateError

NO_SASL = "SaslAuthenticate on a broker without SASL"


def answer(
    ctx: BrokerContext, session: Session, token: bytes
) -> tuple[SaslAuthenticateResponse, str | None]:
    """The answer, and why the connection must close after it (None: it goes on)."""
    if ctx.sasl is None:
        return SaslAuthenticateResponse(IllegalSaslStateError.code, NO_SASL, b""), None
    decided = ctx.sasl.authenticate(session, token)
    response = SaslAuthenticateResponse(
        decided.error_code, decided.error_message, decided.auth_bytes, decided.session_lifetime_ms
    )
    return response, decided.close_why


def handle(ctx: BrokerContext, request: Request, session: Session) -> Any:
    body: SaslAuthenticateRequest = request.body
    response, close_why = answer(ctx, session, body.auth_bytes)
    if close_why is None or ctx.sasl is None:
        return response
    return ctx.sasl.fail_later(
        close_why, encode_response(request.header.correlation_id, response), response.error_code
    )
