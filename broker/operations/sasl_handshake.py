"""SaslHandshake: the client names the SASL mechanism for this connection. It runs before
authentication (the door's SASL gate lets it through); broker/security/sasl.py's state machine
(`ctx.sasl.handshake`) decides the exchange, this operation is only the API's entry.

Answers, as Kafka's: the mechanism's go-ahead with the enabled mechanisms; a mechanism the
listener has not enabled UNSUPPORTED_SASL_MECHANISM with the enabled ones, then the connection
closes. On a connection that is not on a SASL listener (or has
authenticated without a session lifetime), ILLEGAL_SASL_STATE with no mechanism (KafkaApis'
answer: the listener offers none), and the connection goes on.

A request whose SASL tokens would follow raw, without Kafka headers (`raw_tokens`: Kafka's v0,
clients before Kafka 1.0) on a SASL listener is refused UNSUPPORTED_VERSION with the enabled
mechanisms, then the connection closes: v0 is only advertised because librdkafka before 2.10
(kcat's 2.0.2) will not try SASL without it, then sends v1 as every client we test does.

An answer that closes the connection (`close_why`) comes after the failure delay
(connection_failed_authentication_delay_ms, so a peer cannot hammer); the codecs send it and
close (a `Refusal` carrying the door's frame).
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.session import Session, uses_sasl
from protocol.errors import UnsupportedVersionError

V0_REFUSED = (
    "SaslHandshake v0 (raw SASL tokens without Kafka headers, clients before Kafka 1.0) is not "
    "served; SaslHandshake v1 with SaslAuthenticate is"
)


@dataclass(frozen=True, slots=True)
class SaslHandshake:
    mechanism: str
    raw_tokens: bool = False  # Kafka's v0: the tokens would follow without Kafka headers


@dataclass(frozen=True, slots=True)
class SaslHandshakeResult:
    error_code: int
    mechanisms: tuple[str, ...]  # the listener's enabled mechanisms
    close_why: str | None = None  # set: the connection closes after this answer


def run(
    ctx: BrokerContext, session: Session, req: SaslHandshake
) -> SaslHandshakeResult | Awaitable[SaslHandshakeResult]:
    sasl = ctx.sasl
    if req.raw_tokens and uses_sasl(session.security_protocol):
        sasl.refuse(session, V0_REFUSED)
        enabled = sasl.config_for(session).enabled_mechanisms
        refused = SaslHandshakeResult(UnsupportedVersionError.code, enabled, V0_REFUSED)
        return sasl.after_failure_delay(refused)
    decided = sasl.handshake(session, req.mechanism)
    result = SaslHandshakeResult(decided.error_code, decided.mechanisms, decided.close_why)
    return result if result.close_why is None else sasl.after_failure_delay(result)
