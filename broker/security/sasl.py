"""SASL on the broker: each connection's exchange as a state machine, without I/O.

A connection on a SASL_PLAINTEXT or SASL_SSL listener starts unauthenticated
(broker/session.py). As Kafka's SaslServerAuthenticator, the client may send ApiVersions, then
SaslHandshake naming a mechanism, then SaslAuthenticate requests carrying the mechanism's tokens
until the exchange completes; `admit` (called by the door for every request, broker/doors.py)
closes the connection on anything else ("Unexpected Kafka request of type METADATA during SASL
handshake."). SaslHandshake v0 is advertised (librdkafka before 2.10, e.g. kcat's 2.0.2, wants
it in the range before it tries SASL) but a v0 request, after which raw tokens would follow
without Kafka headers, is refused (broker/operations/sasl_handshake.py): every client we
test (librdkafka, kafka-python 3, aiokafka, Java) negotiates v1 and SaslAuthenticate.

    state            what it does                                   next
    HANDSHAKE        waits for SaslHandshake (ApiVersions may come)  AUTHENTICATE, FAILED
    AUTHENTICATE     feeds SaslAuthenticate tokens to the mechanism  COMPLETE, FAILED
    COMPLETE         authenticated; with a session lifetime (KIP-368)
                     a SaslHandshake starts a re-authentication       REAUTHENTICATE
    REAUTHENTICATE   as AUTHENTICATE, on an authenticated session;
                     other requests pass until the session expires   COMPLETE, FAILED
    FAILED           the failure answer waits for
                     connection_failed_authentication_delay_ms, then
                     the connection closes (a peer cannot hammer)    -

Mechanisms: PLAIN (RFC 4616) against the users of the broker's `sasl_jaas_config`
(PlainLoginModule's `user_<name>="<password>"` options, as Kafka's PlainServerCallbackHandler),
and SCRAM-SHA-256/512 (protocol/scram.py's ScramServer) against the credentials kept in
ZooKeeper (`lookup(mechanism, user)`, coordinator/cluster/scram_credentials.py's cache).

Before it has authenticated, a connection's frames may be no larger than
`sasl_server_max_receive_size` (Kafka's sasl.server.max.receive.size; broker/server.py).

KIP-368: with `connections_max_reauth_ms` > 0, SaslAuthenticate v1+ answers the session
lifetime and the session expires that long after authenticating; past it, anything but
SaslHandshake/SaslAuthenticate closes the connection. A re-authentication must use the same
mechanism and end in the same principal.

Client-facing messages are Kafka's; a wrong password and an unknown user get the same line.
The reason (never a password or token) goes to the broker's log: failures at INFO, at most once
a minute per peer host (LogLimit), successes at DEBUG.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

from broker.session import Session, uses_sasl
from protocol.errors import (
    IllegalSaslStateError,
    OdradekError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
    UsageError,
)
from protocol.jaas import PLAIN_LOGIN_MODULE, parse_jaas
from protocol.kafka import versions as kv
from protocol.log_limit import LogLimit
from protocol.principal import KafkaPrincipal
from protocol.scram import MECHANISMS as SCRAM_MECHANISMS
from protocol.scram import ScramCredential, ScramServer

log = logging.getLogger("odradek.broker.sasl")
T = TypeVar("T")

PLAIN = "PLAIN"
MECHANISMS = (PLAIN, *SCRAM_MECHANISMS)  # what odradek's brokers can serve
FAILURE_LOG_INTERVAL_MS = 60_000
PEERS_REMEMBERED = 1024
PLAIN_TOKEN_MAX_BYTES = 3 * 255 + 2 + 1024  # RFC 4616 asks for 255 octets each; some slack
CredentialLookup = Callable[[str, str], ScramCredential | None]

HANDSHAKE_APIS = frozenset({kv.API_VERSIONS, kv.SASL_HANDSHAKE})
REAUTH_APIS = frozenset({kv.SASL_HANDSHAKE, kv.SASL_AUTHENTICATE})
API_ENUM_NAMES = {v: k for k, v in vars(kv).items() if k.isupper() and type(v) is int}


class SaslState(Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    REAUTHENTICATE = "re-authenticate"
    FAILED = "failed"


# --- settings --------------------------------------------------------------------------------


def parse_mechanisms(value: str, name: str = "sasl_enabled_mechanisms") -> tuple[str, ...]:
    """ "PLAIN,SCRAM-SHA-512" -> ("PLAIN", "SCRAM-SHA-512"); UsageError for one we lack."""
    mechanisms = tuple(m.strip().upper() for m in value.split(",") if m.strip())
    unknown = [m for m in mechanisms if m not in MECHANISMS]
    if unknown:
        raise UsageError(f"{name}: odradek does not serve {', '.join(unknown)} "
                         f"(it serves {', '.join(MECHANISMS)})")  # fmt: skip
    return mechanisms


def plain_users(jaas: str) -> dict[str, str]:
    """The PLAIN users of a broker's `sasl_jaas_config`: PlainLoginModule's `user_<name>`
    options (its `username`/`password` are the broker's own, for inter-broker PLAIN)."""
    if not jaas:
        return {}
    users: dict[str, str] = {}
    for entry in parse_jaas(jaas):
        if entry.login_module != PLAIN_LOGIN_MODULE:
            continue
        for key, value in entry.options.items():
            if key.startswith("user_"):
                if key == "user_":
                    raise UsageError("sasl_jaas_config: a user_ option needs a user name")
                users[key[len("user_") :]] = value
    return users


@dataclass(frozen=True, slots=True)
class SaslConfig:
    """What the broker's SASL side is set to (broker/config.py's sasl_* settings)."""

    enabled_mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)
    max_reauth_ms: int = 0  # connections_max_reauth_ms; 0: sessions never expire
    failed_delay_ms: int = 100  # connection_failed_authentication_delay_ms


# --- one connection's exchange -----------------------------------------------------------------


class PlainServer:
    """RFC 4616: one token `[authzid] NUL authcid NUL passwd`, checked against the users."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.username: str | None = None
        self.complete = False

    def respond(self, token: bytes, lookup: Callable[[str], ScramCredential | None]) -> bytes:
        """The (empty) reply to the one token; `lookup` is SCRAM's, unused."""
        if self.complete:
            raise IllegalSaslStateError("Authentication exchange has already completed")
        if len(token) > PLAIN_TOKEN_MAX_BYTES:
            raise SaslAuthenticationFailedError(
                f"Invalid SASL/PLAIN response: longer than {PLAIN_TOKEN_MAX_BYTES} bytes"
            )
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise SaslAuthenticationFailedError("Invalid SASL/PLAIN response: not UTF-8") from None
        parts = text.split("\x00")
        if len(parts) != 3:
            raise SaslAuthenticationFailedError(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(parts), 4)}"
            )
        authzid, username, password = parts
        if not username:
            raise SaslAuthenticationFailedError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationFailedError("Authentication failed: password not specified")
        expected = self._users.get(username)
        if expected is None or not _equal(expected, password):
            raise SaslAuthenticationFailedError(
                "Authentication failed: Invalid username or password"
            )
        if authzid and authzid != username:
            raise SaslAuthenticationFailedError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.username = username
        self.complete = True
        return b""


def _equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


@dataclass(slots=True)
class SaslExchange:
    """One connection's SASL progress (kept in `session.sasl`)."""

    state: SaslState = SaslState.HANDSHAKE
    mechanism: str | None = None
    server: PlainServer | ScramServer | None = None
    reauth_mechanism: str | None = None  # the mechanism a re-authentication must use
    failure: str | None = None  # why it failed (for the log and the close)


@dataclass(frozen=True, slots=True)
class HandshakeAnswer:
    error_code: int
    mechanisms: tuple[str, ...]
    close_why: str | None = None  # set: answer after the failure delay, then close


@dataclass(frozen=True, slots=True)
class AuthenticateAnswer:
    error_code: int
    error_message: str | None = None
    auth_bytes: bytes = b""
    session_lifetime_ms: int = 0
    close_why: str | None = None  # set: answer after the failure delay, then close


def exchange_of(session: Session) -> SaslExchange:
    if session.sasl is None:
        session.sasl = SaslExchange()
    exchange: SaslExchange = session.sasl
    return exchange


def gate(session: Session, api_key: int, now_ms: int) -> str | None:
    """Why this request must close the connection, or None to let it through."""
    exchange: SaslExchange | None = session.sasl
    if not session.authenticated:
        state = exchange.state if exchange is not None else SaslState.HANDSHAKE
        name = API_ENUM_NAMES.get(api_key, f"api key {api_key}")
        if state is SaslState.HANDSHAKE and api_key not in HANDSHAKE_APIS:
            return f"Unexpected Kafka request of type {name} during SASL handshake."
        if state is SaslState.AUTHENTICATE and api_key != kv.SASL_AUTHENTICATE:
            return f"Unexpected Kafka request of type {name} during SASL authentication."
        if state is SaslState.FAILED:
            return f"request of type {name} after a failed SASL authentication"
        return None
    expiry = session.credential_expiry_ms
    if expiry is not None and now_ms >= expiry and api_key not in REAUTH_APIS:
        name = API_ENUM_NAMES.get(api_key, f"api key {api_key}")
        return (
            f"the SASL session of {session.principal} expired {now_ms - expiry} ms ago "
            f"(connections_max_reauth_ms); it sent {name}, not a re-authentication"
        )
    return None


def handshake(config: SaslConfig, session: Session, mechanism: str) -> HandshakeAnswer:
    """SaslHandshake: pick the mechanism (or begin a KIP-368 re-authentication)."""
    enabled = config.enabled_mechanisms
    if not uses_sasl(session.security_protocol):  # Kafka's KafkaApis: no mechanisms listed
        return HandshakeAnswer(IllegalSaslStateError.code, ())
    exchange = exchange_of(session)
    state = exchange.state
    if state is SaslState.COMPLETE and session.credential_expiry_ms is not None:
        exchange.reauth_mechanism = exchange.mechanism
        state = SaslState.REAUTHENTICATE
    elif state is not SaslState.HANDSHAKE:  # after authentication, Kafka answers and goes on
        why = None if session.authenticated else f"SaslHandshake in SASL state {state.value}"
        return HandshakeAnswer(IllegalSaslStateError.code, (), why)
    if mechanism not in enabled:
        exchange.state = SaslState.FAILED
        exchange.failure = f"Unsupported SASL mechanism {mechanism}"
        return HandshakeAnswer(UnsupportedSaslMechanismError.code, enabled, exchange.failure)
    exchange.mechanism = mechanism
    exchange.server = PlainServer(config.plain_users) if mechanism == PLAIN else (
        ScramServer(SCRAM_MECHANISMS[mechanism]))  # fmt: skip
    exchange.state = (
        SaslState.REAUTHENTICATE if state is SaslState.REAUTHENTICATE else SaslState.AUTHENTICATE
    )
    return HandshakeAnswer(0, enabled)


def authenticate(
    config: SaslConfig,
    session: Session,
    token: bytes,
    lookup: CredentialLookup,
    now_ms: int,
) -> AuthenticateAnswer:
    """SaslAuthenticate: feed one token to the mechanism; on completion the session is
    authenticated (principal User:<name>) until `now_ms` + its lifetime, if it has one."""
    exchange: SaslExchange | None = session.sasl
    if (
        not uses_sasl(session.security_protocol)
        or exchange is None
        or exchange.state not in (SaslState.AUTHENTICATE, SaslState.REAUTHENTICATE)
    ):
        state = "no SASL listener" if exchange is None else f"SASL state {exchange.state.value}"
        message = (
            "SaslAuthenticate request received after successful authentication"
            if session.authenticated
            else f"SaslAuthenticate request in {state}"
        )
        close = None if session.authenticated else message
        return AuthenticateAnswer(IllegalSaslStateError.code, message, close_why=close)
    reauth = exchange.state is SaslState.REAUTHENTICATE
    assert exchange.server is not None and exchange.mechanism is not None
    try:
        if reauth and exchange.mechanism != exchange.reauth_mechanism:
            raise SaslAuthenticationFailedError(
                f"SASL mechanism '{exchange.mechanism}' requested by client is not supported "
                f"for re-authentication of mechanism '{exchange.reauth_mechanism}'"
            )
        mechanism = exchange.mechanism
        reply = exchange.server.respond(token, lambda user: lookup(mechanism, user))
        if exchange.server.complete:
            assert exchange.server.username is not None
            principal = KafkaPrincipal.user(exchange.server.username)
            if reauth and principal != session.principal:
                raise SaslAuthenticationFailedError(
                    f"Cannot change principals during re-authentication from "
                    f"{session.principal.type}.{session.principal.name}: "
                    f"{principal.type}.{principal.name}"
                )
    except (SaslAuthenticationFailedError, IllegalSaslStateError) as exc:
        return _failed(exchange, exc, reauth)
    if not exchange.server.complete:
        return AuthenticateAnswer(0, None, reply)
    lifetime_ms = config.max_reauth_ms if config.max_reauth_ms > 0 else 0
    session.principal = principal
    session.authenticated = True
    session.credential_expiry_ms = now_ms + lifetime_ms if lifetime_ms else None
    exchange.state = SaslState.COMPLETE
    exchange.server = None
    exchange.reauth_mechanism = None
    return AuthenticateAnswer(0, None, reply, lifetime_ms)


def _failed(exchange: SaslExchange, exc: OdradekError, reauth: bool) -> AuthenticateAnswer:
    exchange.state = SaslState.FAILED
    exchange.server = None
    message = exc.message
    if reauth:
        message = message.replace("during authentication", "during re-authentication")
    exchange.failure = getattr(exc, "detail", None) or message
    code = (
        IllegalSaslStateError.code
        if isinstance(exc, IllegalSaslStateError)
        else SaslAuthenticationFailedError.code
    )
    return AuthenticateAnswer(code, message, close_why=message)


# --- the broker's service ---------------------------------------------------------------------


def sasl_config(
    enabled_mechanisms: str, jaas: str, max_reauth_ms: int, failed_delay_ms: int
) -> SaslConfig:
    """The SaslConfig of the broker's settings (checked by broker/config.py already)."""
    return SaslConfig(
        parse_mechanisms(enabled_mechanisms), plain_users(jaas), max_reauth_ms, failed_delay_ms
    )


class SaslGate:
    """The door's check of every request (`admit`): `why` it must close the connection, or
    None. Closing lines go to the log at INFO, once a minute per peer host and kind (a request
    before authentication; an expired session)."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self.now_ms = now_ms
        self._log = LogLimit(FAILURE_LOG_INTERVAL_MS, now_ms, PEERS_REMEMBERED)

    def why_close(self, session: Session, api_key: int) -> str | None:
        if session.authenticated and session.credential_expiry_ms is None:
            return None  # the common case, on every request: nothing to check
        why = gate(session, api_key, self.now_ms())
        # one line a minute per peer host for each kind: before authentication, or expired
        if why is not None and self._log.allow((session.peer_host, session.authenticated)):
            log.info("closing %s (%s, %s): %s", session.peer, session.listener,
                     session.software(), why)  # fmt: skip
        return why


class SaslService:
    """The broker's SASL side: its settings, the credential lookup, and the bounded log."""

    def __init__(
        self,
        config: SaslConfig,
        lookup: CredentialLookup,
        now_ms: Callable[[], int],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        listeners: Mapping[str, SaslConfig] | None = None,
    ) -> None:
        self.config = config  # the broker-wide settings
        self._listeners = {name.upper(): c for name, c in (listeners or {}).items()}
        self.lookup = lookup
        self.now_ms = now_ms
        self._sleep = sleep
        self._failure_log = LogLimit(FAILURE_LOG_INTERVAL_MS, now_ms, PEERS_REMEMBERED)

    def config_for(self, session: Session) -> SaslConfig:
        """The settings of the listener `session` came in on (its own, else the broker's)."""
        return self._listeners.get(session.listener.upper(), self.config)

    def admit(self, session: Session, api_key: int) -> str | None:
        why = gate(session, api_key, self.now_ms())
        if why is not None:
            self.log_failure(session, why)
        return why

    def handshake(self, session: Session, mechanism: str) -> HandshakeAnswer:
        answer = handshake(self.config_for(session), session, mechanism)
        if answer.close_why is not None:
            self.log_failure(session, answer.close_why)
        return answer

    def authenticate(self, session: Session, token: bytes) -> AuthenticateAnswer:
        exchange = exchange_of(session)
        reauth = exchange.state is SaslState.REAUTHENTICATE
        answer = authenticate(self.config_for(session), session, token, self.lookup, self.now_ms())
        if answer.close_why is not None:
            detail = exchange.failure or answer.close_why
            self.log_failure(session, f"{'re-' if reauth else ''}authentication with "
                                      f"{exchange.mechanism} failed: {detail}")  # fmt: skip
        elif answer.error_code == 0 and exchange.state is SaslState.COMPLETE:
            log.debug("%s %s as %s with %s from %s (session lifetime %d ms)",
                      "re-authenticated" if reauth else "authenticated", session.peer,
                      session.principal, exchange.mechanism, session.software(),
                      answer.session_lifetime_ms)  # fmt: skip
        return answer

    def refuse(self, session: Session, why: str) -> None:
        """End the exchange without a mechanism (a SaslHandshake version not spoken)."""
        exchange = exchange_of(session)
        exchange.state = SaslState.FAILED
        exchange.failure = why
        self.log_failure(session, why)

    def log_failure(self, session: Session, why: str) -> None:
        if self._failure_log.allow(session.peer_host):
            log.info("closing %s (%s, %s): %s", session.peer, session.listener,
                     session.software(), why)  # fmt: skip

    async def after_failure_delay(self, answer: T) -> T:
        """A failed exchange's `answer` (one that closes the connection), after
        connection_failed_authentication_delay_ms, as Kafka's: the SaslHandshake and
        SaslAuthenticate codecs then send it and close (a `Refusal` with the door's frame, which
        broker/server.py sends before it closes)."""
        await self._sleep(self.config.failed_delay_ms / 1000)
        return answer
