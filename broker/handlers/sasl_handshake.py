"""SaslHandshake (17): the client names the SASL mechanism for this connection.

broker/security/sasl.py decides; a mechanism the broker has not enabled is answered
UNSUPPORTED_SASL_MECHANISM with the enabled ones, after the failure delay, and then the
connection closes, as Kafka's. On a broker without SASL (no service) and on a connection that
is not on a SASL listener (or has authenticated) the answer is ILLEGAL_SASL_STATE with an empty
mechanism list, as Kafka's KafkaApis answers it: the listener offers no mechanism.
"""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.session import Session
from protocol.api.sasl import SaslHandshakeRequest, SaslHandshakeResponse
from protocol.codec import Request, encode_response
from protocol.errors import IllegalSaslStateError


def answer(
    ctx: BrokerContext, session: Session, mechanism: str
) -> tuple[SaslHandshakeResponse, str | None]:
    """The answer, and why the connection must close after it (None: it goes on)."""
    if ctx.sasl is None:
        return SaslHandshakeResponse(IllegalSaslStateError.code, []), None
    decided = ctx.sasl.handshake(session, mechanism)
    return SaslHandshakeResponse(decided.error_code, list(decided.mechanisms)), decided.close_why


def handle(ctx: BrokerContext, request: Request, session: Session) -> Any:
    body: SaslHandshakeRequest = request.body
    response, close_why = answer(ctx, session, body.mechanism)
    if close_why is None or ctx.sasl is None:
        return response
    return ctx.sasl.fail_later(
        close_why, encode_response(request.header.correlation_id, response), response.error_code
    )
