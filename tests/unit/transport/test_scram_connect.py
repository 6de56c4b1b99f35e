"""BrokerConnection.connect with SASL against the broker's real SASL side over a socket: a
SASL_PLAINTEXT native listener, SCRAM-SHA-256/512 against stored credentials and PLAIN against
the JAAS user list; then requests flow. A wrong password or unknown user is
SaslAuthenticationFailedError with Kafka's message at connect, and the connection is closed."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

import transport.sasl
from broker.doors import NativeDoor
from broker.security.sasl import SaslConfig, SaslService, plain_users
from broker.server import BrokerServer
from broker.session import SASL_PLAINTEXT
from protocol.api.metadata import MetadataRequest, MetadataResponse
from protocol.clock import ManualClock
from protocol.errors import SaslAuthenticationFailedError, UnsupportedSaslMechanismError
from protocol.scram import make_credential
from tests.unit.broker.harness import running_broker
from transport.connection import BrokerConnection
from transport.security import SecurityConfig

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_paul="paul-secret";'
CREDENTIALS = {
    (m, "alice"): make_credential(m, "alice-secret", 4096)
    for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")
}


async def no_delay(seconds: float) -> None:
    return None


@contextlib.asynccontextmanager
async def sasl_listener(
    tmp_path: Path, enabled: tuple[str, ...], clock: ManualClock | None = None, reauth_ms: int = 0
) -> AsyncIterator[int]:
    clock = clock or ManualClock()
    config = SaslConfig(enabled, plain_users(JAAS), reauth_ms, 100)
    lookup = lambda m, u: CREDENTIALS.get((m, u))  # noqa: E731
    sasl = SaslService(config, lookup, clock.monotonic_ms, no_delay)
    async with running_broker(tmp_path, clock, sasl=sasl) as b:
        door = NativeDoor(lambda: clock.monotonic_ms() / 1000)
        server = BrokerServer(b.ctx, clock, door, "127.0.0.1", 0, "SASL", SASL_PLAINTEXT)
        await server.start()
        try:
            yield server.port
        finally:
            await server.stop()


def login(mechanism: str, user: str, password: str) -> SecurityConfig:
    return SecurityConfig(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password,
    )


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [
        ("SCRAM-SHA-256", "alice", "alice-secret"),
        ("SCRAM-SHA-512", "alice", "alice-secret"),
        ("PLAIN", "paul", "paul-secret"),
    ],
)
async def test_connect_authenticates_then_requests_flow(
    tmp_path: Path, mechanism: str, user: str, password: str
) -> None:
    enabled = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    async with sasl_listener(tmp_path, enabled) as port:
        conn = await BrokerConnection.connect(
            "127.0.0.1", port, security=login(mechanism, user, password)
        )
        try:
            answer = await conn.send(MetadataRequest(topics=None), 10_000)
            assert isinstance(answer, MetadataResponse)
        finally:
            await conn.close()


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "alice-secret")])
async def test_wrong_password_or_unknown_user_fails_at_connect(
    tmp_path: Path, user: str, password: str
) -> None:
    async with sasl_listener(tmp_path, ("SCRAM-SHA-512",)) as port:
        with pytest.raises(SaslAuthenticationFailedError) as info:
            await BrokerConnection.connect(
                "127.0.0.1", port, security=login("SCRAM-SHA-512", user, password)
            )
    assert info.value.message == (
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-512"
    )
    assert not info.value.retriable


async def test_a_mechanism_the_listener_lacks_is_named(tmp_path: Path) -> None:
    async with sasl_listener(tmp_path, ("SCRAM-SHA-512",)) as port:
        with pytest.raises(UnsupportedSaslMechanismError, match="SCRAM-SHA-512"):
            await BrokerConnection.connect(
                "127.0.0.1", port, security=login("PLAIN", "paul", "paul-secret")
            )


async def test_the_native_client_fails_at_once_on_a_wrong_password(tmp_path: Path) -> None:
    """Not a NetworkError after retrying every broker: the login error itself, not retried."""
    from client.admin import AsyncAdmin

    async with sasl_listener(tmp_path, ("SCRAM-SHA-512",)) as port:
        admin = AsyncAdmin(
            f"127.0.0.1:{port}", security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice",
            sasl_plain_password="wrong",
        )  # fmt: skip
        try:
            with pytest.raises(SaslAuthenticationFailedError, match="invalid credentials"):
                await admin.list_topics()
        finally:
            await admin.close()


async def test_the_client_reauthenticates_before_its_session_expires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KIP-368: with connections_max_reauth_ms the broker closes a session older than that on
    anything but a re-authentication; the client renews its login at 85%..95% of the lifetime
    on the same connection, so a request after the first lifetime still gets its answer."""
    waits: list[float] = []
    go = asyncio.Event()

    async def controlled_sleep(seconds: float) -> None:
        waits.append(seconds)
        await go.wait()
        go.clear()

    monkeypatch.setattr(transport.sasl, "reauth_sleep", controlled_sleep)
    clock = ManualClock()
    async with sasl_listener(tmp_path, ("SCRAM-SHA-512",), clock, reauth_ms=10_000) as port:
        conn = await BrokerConnection.connect(
            "127.0.0.1", port, security=login("SCRAM-SHA-512", "alice", "alice-secret")
        )
        try:
            await _until(lambda: len(waits) == 1)
            assert 8.5 <= waits[0] <= 9.5
            clock.advance(9_000)  # the client's timer fires: it re-authenticates
            go.set()
            await _until(lambda: len(waits) == 2)  # renewed, and waiting for the next round
            clock.advance(9_000)  # past the first login's expiry (10 s), not the renewed one
            answer = await conn.send(MetadataRequest(topics=None), 10_000)
            assert isinstance(answer, MetadataResponse)
        finally:
            await conn.close()


async def _until(check: Callable[[], bool], timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not check():
            await asyncio.sleep(0.01)
