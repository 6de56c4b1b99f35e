"""SaslHandshake (17) and SaslAuthenticate (36): SASL on the native door, as Kafka's.

The same two steps and fields as Kafka's v1 handshake and v2 authenticate, so the native
client and inter-broker connections authenticate as Kafka clients do (broker/security/sasl.py):

    SaslHandshake(mechanism)       -> (error_code, mechanisms the broker has enabled)
    SaslAuthenticate(auth_bytes)   -> (error_code, error_message, auth_bytes,
                                       session_lifetime_ms)   # repeated until complete

`auth_bytes` are the mechanism's tokens (a PLAIN token holds the password): they are left out
of the messages' repr so that no log line can show them. A failed exchange is answered and then
the connection closes, as on the Kafka door.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.api.spec import ApiSpec


@dataclass(frozen=True, slots=True)
class SaslHandshakeRequest:
    mechanism: str


@dataclass(frozen=True, slots=True)
class SaslHandshakeResponse:
    error_code: int
    mechanisms: list[str]


@dataclass(frozen=True, slots=True)
class SaslAuthenticateRequest:
    auth_bytes: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class SaslAuthenticateResponse:
    error_code: int
    error_message: str | None
    auth_bytes: bytes = field(repr=False)
    session_lifetime_ms: int = 0  # KIP-368: re-authenticate within this (0: never expires)


SASL_HANDSHAKE = ApiSpec(17, "SaslHandshake", SaslHandshakeRequest, SaslHandshakeResponse)
SASL_AUTHENTICATE = ApiSpec(
    36, "SaslAuthenticate", SaslAuthenticateRequest, SaslAuthenticateResponse
)
