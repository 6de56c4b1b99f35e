"""transport/sasl.py: the client's SASL exchange (PLAIN, SCRAM-SHA-256/512) over a connection that
answers as the broker's SASL server would (protocol/scram.py's ScramServer for SCRAM), and
SecurityConfig's SASL settings checks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from protocol.api.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from protocol.errors import (
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
    UsageError,
)
from protocol.scram import MECHANISMS, ScramFailure, ScramServer, make_credential
from transport.sasl import authenticate, login_from_jaas, mechanism_client
from transport.security import SecurityConfig

USERS = {"alice": "alice-secret"}


class BrokerSide:
    """A connection whose `send` answers SaslHandshake/SaslAuthenticate like a broker with
    `enabled` mechanisms and the USERS above."""

    address = "127.0.0.1:9092"

    def __init__(self, enabled: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")):
        self.enabled = enabled
        self.mechanism = ""
        self.scram: ScramServer | None = None
        self.tokens: list[bytes] = []

    async def send(self, request: Any, timeout_ms: float | None = None) -> Any:
        if isinstance(request, SaslHandshakeRequest):
            self.mechanism = request.mechanism
            code = 0 if request.mechanism in self.enabled else 33
            return SaslHandshakeResponse(code, list(self.enabled))
        assert isinstance(request, SaslAuthenticateRequest)
        self.tokens.append(request.auth_bytes)
        if self.mechanism == "PLAIN":
            _, user, password = request.auth_bytes.decode().split("\0")
            if USERS.get(user) != password:
                return SaslAuthenticateResponse(
                    58, "Authentication failed: Invalid username or password", b""
                )
            return SaslAuthenticateResponse(0, None, b"", 3_600_000)
        mech = MECHANISMS[self.mechanism]
        if self.scram is None:
            self.scram = ScramServer(mech)
        lookup = {u: make_credential(mech, p, 4096) for u, p in USERS.items()}.get
        try:
            return SaslAuthenticateResponse(0, None, self.scram.respond(request.auth_bytes, lookup))
        except ScramFailure as exc:
            return SaslAuthenticateResponse(exc.code, exc.message, b"")


def security(mechanism: str, user: str = "alice", password: str = "alice-secret") -> SecurityConfig:
    return SecurityConfig(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password,
    )


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_each_mechanism_authenticates(mechanism: str) -> None:
    broker = BrokerSide()
    lifetime = asyncio.run(authenticate(broker, security(mechanism)))  # type: ignore[arg-type]
    assert broker.mechanism == mechanism
    if mechanism == "PLAIN":
        assert broker.tokens == [b"\0alice\0alice-secret"] and lifetime == 3_600_000
    else:
        assert broker.scram is not None and broker.scram.complete
        assert len(broker.tokens) == 2 and b"alice-secret" not in b"".join(broker.tokens)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_wrong_password_is_a_typed_error_with_the_brokers_message(mechanism: str) -> None:
    broker = BrokerSide()
    with pytest.raises(SaslAuthenticationFailedError) as info:
        asyncio.run(authenticate(broker, security(mechanism, password="nope")))  # type: ignore[arg-type]
    assert not info.value.retriable
    if mechanism != "PLAIN":
        assert info.value.message == (
            "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {mechanism}"
        )


def test_a_mechanism_the_broker_lacks_names_the_ones_it_has() -> None:
    broker = BrokerSide(enabled=("PLAIN",))
    with pytest.raises(UnsupportedSaslMechanismError, match=r"it enables: PLAIN"):
        asyncio.run(authenticate(broker, security("SCRAM-SHA-512")))  # type: ignore[arg-type]


def test_a_broker_that_does_not_know_the_password_is_caught() -> None:
    """The server-final's signature proves the broker holds the credential; a forged one fails."""
    client = mechanism_client("SCRAM-SHA-256", "alice", "alice-secret")
    first = client.first().decode()
    nonce = first.split("r=", 1)[1]
    final = client.step(f"r={nonce}xyz,s=c2FsdA==,i=4096".encode())
    assert final is not None and not client.complete
    with pytest.raises(SaslAuthenticationFailedError, match="Invalid server signature"):
        client.step(b"v=" + b"A" * 43 + b"=")


def test_security_config_checks_sasl_settings() -> None:
    with pytest.raises(UsageError, match="needs sasl_mechanism"):
        SecurityConfig(
            security_protocol="SASL_SSL", sasl_plain_username="a", sasl_plain_password="b"
        )
    with pytest.raises(UsageError, match="needs sasl_mechanism"):
        security("GSSAPI")
    with pytest.raises(UsageError, match="needs sasl_plain_username"):
        SecurityConfig(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN")
    with pytest.raises(UsageError, match="sasl settings were given"):
        SecurityConfig(sasl_mechanism="PLAIN", sasl_plain_username="a", sasl_plain_password="b")
    assert "alice-secret" not in repr(security("PLAIN"))


def test_the_login_comes_from_the_jaas_entry_of_the_mechanism() -> None:
    jaas = (
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="p" '
        'password="p-secret" user_p="p-secret"; '
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="broker" password="broker-secret";'
    )
    assert login_from_jaas(jaas, "SCRAM-SHA-512") == ("broker", "broker-secret")
    assert login_from_jaas(jaas, "PLAIN") == ("p", "p-secret")
    assert login_from_jaas("", "PLAIN") is None
