"""SaslAuthenticate: one token of the SASL exchange the handshake chose. It runs before
authentication (the door's SASL gate lets it through); broker/security/sasl.py's state machine
(`ctx.sasl.authenticate`) feeds the token to the mechanism and decides, this operation is only
the API's entry.

When the exchange completes the session is authenticated (its principal User:<name>) and, with
connections_max_reauth_ms, the answer carries the session's lifetime (KIP-368). A failed
exchange (wrong password, unknown user, malformed token) is answered
SASL_AUTHENTICATION_FAILED with Kafka's message after the failure delay
(connection_failed_authentication_delay_ms), then the connection closes (`close_why`; the
codecs send the answer and close). A connection that is not on a SASL listener, or not
between a handshake and the exchange's end, gets ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field

from broker.context import BrokerContext
from broker.session import Session


@dataclass(frozen=True, slots=True)
class SaslAuthenticate:
    auth_bytes: bytes = field(repr=False)  # a PLAIN token holds the password


@dataclass(frozen=True, slots=True)
class SaslAuthenticateResult:
    error_code: int
    error_message: str | None = None
    auth_bytes: bytes = field(default=b"", repr=False)
    session_lifetime_ms: int = 0  # KIP-368 (0: the session does not expire)
    close_why: str | None = None  # set: the connection closes after this answer


def run(
    ctx: BrokerContext, session: Session, req: SaslAuthenticate
) -> SaslAuthenticateResult | Awaitable[SaslAuthenticateResult]:
    sasl = ctx.sasl
    d = sasl.authenticate(session, req.auth_bytes)
    result = SaslAuthenticateResult(d.error_code, d.error_message, d.auth_bytes,
                                    d.session_lifetime_ms, d.close_why)  # fmt: skip
    return result if result.close_why is None else sasl.after_failure_delay(result)
