"""The client's side of SASL, for the native client and the broker's own connections alike.

Right after a connection opens (and its TLS handshake, on SASL_SSL), `authenticate` runs the
exchange Kafka clients run, on the native door's messages (protocol/api/sasl.py):

    SaslHandshake(mechanism)        -> error_code, the broker's enabled mechanisms
    SaslAuthenticate(token)         -> error_code, error_message, server token, lifetime
    ... one SaslAuthenticate per client token until the mechanism is complete

ApiVersions first is not needed on the native door. The tokens come from a `SaslMechanismClient`
(sans-I/O): PLAIN sends one token, "\\0<user>\\0<password>" (RFC 4616, no authzid, as Kafka's
client); SCRAM-SHA-256/512 are protocol/scram.py's `ScramClient` (client-first, client-final, then
the server-final's signature is checked, so a broker that does not know the password is caught).

A broker refusing the mechanism raises UnsupportedSaslMechanismError naming the ones it has; a
wrong password or unknown user raises SaslAuthenticationFailedError with the broker's message,
at connect, not retried: the caller's retry loops treat it as fatal (retriable is False).
`authenticate` returns the session lifetime the broker granted (KIP-368; 0: no limit).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from protocol.api.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from protocol.errors import (
    IllegalSaslStateError,
    OdradekError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
    UsageError,
    for_code,
)
from protocol.jaas import PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, parse_jaas
from protocol.scram import MECHANISMS as SCRAM_MECHANISMS
from protocol.scram import ScramClient, ScramState
from transport.security import SslAuthenticationError

if TYPE_CHECKING:
    from transport.security import SecurityConfig

log = logging.getLogger("odradek.transport.sasl")
Sleep = Callable[[float], Awaitable[None]]
# Kafka's client re-authenticates (KIP-368) at a random 85%..95% of the session lifetime the
# broker granted, so that the connections of many clients do not all renew at once.
REAUTH_AT = (0.85, 0.95)

# A refused login (wrong password, unknown user, mechanism not enabled, TLS refused): fatal to a
# client, never retried, as Kafka's AuthenticationException.
AUTHENTICATION_ERRORS: tuple[type[OdradekError], ...] = (
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
    IllegalSaslStateError,
    SslAuthenticationError,
)
PLAIN = "PLAIN"
MECHANISMS = (PLAIN, *SCRAM_MECHANISMS)
MAX_ROUNDS = 4  # SCRAM needs 2 SaslAuthenticate round trips, PLAIN 1: more is a broken broker


class SaslConnection(Protocol):
    """What the exchange needs of a connection (transport/connection.py's BrokerConnection,
    which runs `authenticate` when it opens: this interface keeps the import one way)."""

    @property
    def address(self) -> str: ...

    @property
    def closed(self) -> bool: ...

    async def send(self, request: Any, timeout_ms: float | None = 30_000) -> Any: ...

    def abort(self) -> None: ...


class SaslMechanismClient(Protocol):
    mechanism: str

    @property
    def complete(self) -> bool: ...

    def first(self) -> bytes:
        """The first token to send."""
        ...

    def step(self, server_token: bytes) -> bytes | None:
        """The next token to send after the server's, or None when the exchange is complete."""
        ...


class PlainClient:
    mechanism = PLAIN

    def __init__(self, username: str, password: str) -> None:
        if "\0" in username or "\0" in password:
            raise UsageError("a SASL/PLAIN user name or password cannot hold a NUL character")
        self._token = b"\0" + username.encode() + b"\0" + password.encode()
        self._sent = False
        self._done = False

    @property
    def complete(self) -> bool:
        return self._done

    def first(self) -> bytes:
        self._sent = True
        return self._token

    def step(self, server_token: bytes) -> bytes | None:
        if not self._sent or self._done:
            raise IllegalSaslStateError("SASL/PLAIN: a server token after the exchange ended")
        self._done = True  # the broker answers PLAIN with an empty token and no error
        return None


class ScramMechanismClient:
    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.mechanism = mechanism
        self._scram = ScramClient(SCRAM_MECHANISMS[mechanism], username, password)

    @property
    def complete(self) -> bool:
        return self._scram.complete

    def first(self) -> bytes:
        return self._scram.client_first()

    def step(self, server_token: bytes) -> bytes | None:
        if self._scram.complete:
            raise IllegalSaslStateError(f"{self.mechanism}: a server token after it completed")
        if self._scram.state is ScramState.RECEIVE_SERVER_FIRST:
            return self._scram.client_final(server_token)
        self._scram.receive_server_final(server_token)
        return None


def login_from_jaas(jaas: str, mechanism: str) -> tuple[str, str] | None:
    """(username, password) of the JAAS entry for `mechanism` (PlainLoginModule for PLAIN,
    ScramLoginModule for SCRAM): how a broker's `sasl_jaas_config` or a client's
    `sasl.jaas.config` names its own login; None when no such entry has both."""
    module = PLAIN_LOGIN_MODULE if mechanism == PLAIN else SCRAM_LOGIN_MODULE
    for entry in parse_jaas(jaas) if jaas else []:
        user, password = entry.options.get("username"), entry.options.get("password")
        if entry.login_module == module and user and password is not None:
            return user, password
    return None


def mechanism_client(mechanism: str, username: str, password: str) -> SaslMechanismClient:
    if mechanism == PLAIN:
        return PlainClient(username, password)
    if mechanism in SCRAM_MECHANISMS:
        return ScramMechanismClient(mechanism, username, password)
    raise UsageError(f"sasl_mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")


def security_client(security: SecurityConfig) -> SaslMechanismClient:
    """The mechanism client of a SASL_* `security`: its mechanism, user and password."""
    if security.sasl_mechanism is None:
        raise UsageError(f"security_protocol {security.security_protocol} needs sasl_mechanism")
    return mechanism_client(security.sasl_mechanism, security.sasl_plain_username or "",
                            security.sasl_plain_password or "")  # fmt: skip


Handshake = Callable[[str], Awaitable[tuple[int, list[str]]]]  # -> error code, mechanisms
Authenticate = Callable[[bytes], Awaitable[tuple[int, str | None, bytes, int]]]
# -> error code, error message, the server's token, the session lifetime in ms


async def run_exchange(
    client: SaslMechanismClient, where: str, handshake: Handshake, authenticate: Authenticate
) -> int:
    """The SASL exchange over any door: SaslHandshake, then SaslAuthenticate per client token
    until `client` is complete; the session lifetime in ms. `handshake` and `authenticate`
    send one request each and return its fields (the native and the Kafka door's messages
    differ, the exchange does not)."""
    code, enabled = await handshake(client.mechanism)
    if code != 0:
        error = for_code(code)
        if error is UnsupportedSaslMechanismError:
            raise UnsupportedSaslMechanismError(
                f"{where} does not enable SASL mechanism {client.mechanism} "
                f"(it enables: {', '.join(enabled) or 'none'})"
            )
        if error is IllegalSaslStateError and not enabled:  # Kafka's answer off a SASL listener
            raise error(
                f"{where} is not a SASL listener (SaslHandshake answered ILLEGAL_SASL_STATE, "
                "no mechanism offered): give the security.protocol of the listener at that port"
            )
        raise error(f"{where}: SaslHandshake refused")
    token: bytes | None = client.first()
    lifetime_ms = 0
    for _ in range(MAX_ROUNDS):
        if token is None:
            break
        code, message, server_token, lifetime_ms = await authenticate(token)
        if code != 0:
            raise for_code(code)(message or f"{where}: SaslAuthenticate refused")
        token = client.step(server_token)
    if not client.complete:
        raise SaslAuthenticationFailedError(
            f"{where}: {client.mechanism} did not complete in {MAX_ROUNDS} rounds"
        )
    return lifetime_ms


async def authenticate(
    conn: SaslConnection, security: SecurityConfig, timeout_ms: float = 30_000
) -> int:
    """Run the SASL exchange `security` names over `conn`; the session lifetime in ms."""
    client = security_client(security)

    async def handshake(mechanism: str) -> tuple[int, list[str]]:
        hello: SaslHandshakeResponse = await conn.send(SaslHandshakeRequest(mechanism), timeout_ms)
        return hello.error_code, list(hello.mechanisms)

    async def step(token: bytes) -> tuple[int, str | None, bytes, int]:
        answer: SaslAuthenticateResponse = await conn.send(
            SaslAuthenticateRequest(token), timeout_ms
        )
        return (answer.error_code, answer.error_message, answer.auth_bytes,
                answer.session_lifetime_ms)  # fmt: skip

    return await run_exchange(client, conn.address, handshake, step)


def reauth_delay_s(lifetime_ms: int, fraction: float) -> float:
    """When to re-authenticate: `fraction` (0..1) picks a point in REAUTH_AT of the lifetime."""
    low, high = REAUTH_AT
    return lifetime_ms / 1000 * (low + (high - low) * fraction)


async def keep_authenticated(
    conn: SaslConnection,
    security: SecurityConfig,
    lifetime_ms: int,
    sleep: Sleep | None = None,
    fraction: Callable[[], float] = random.random,
) -> None:
    """KIP-368 on our side: re-run the exchange on the same connection before each session
    lifetime ends (requests in flight go on: the broker takes them in order), until the
    connection closes. A refused re-authentication closes the connection: its pending requests
    fail with NetworkError and the next connection logs in afresh."""
    while lifetime_ms > 0 and not conn.closed:
        await (sleep or reauth_sleep)(reauth_delay_s(lifetime_ms, fraction()))
        if conn.closed:
            return
        try:
            lifetime_ms = await authenticate(conn, security)
        except OdradekError as exc:
            log.warning("%s: SASL re-authentication failed, closing: %s", conn.address, exc)
            conn.abort()
            return


async def reauth_sleep(seconds: float) -> None:
    """The clock keep_authenticated waits on (tests replace it)."""
    await asyncio.sleep(seconds)
