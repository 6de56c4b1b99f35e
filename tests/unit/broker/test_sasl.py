"""broker/security/sasl.py without a socket: PLAIN and SCRAM exchanges, the gate, KIP-368
expiry and re-authentication on a manual clock, the JAAS user list and the settings."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.security import sasl
from broker.security.sasl import SaslConfig, SaslService, SaslState
from broker.session import SASL_PLAINTEXT, Session
from protocol.clock import ManualClock
from protocol.errors import UsageError
from protocol.kafka import versions as kv
from protocol.principal import ANONYMOUS, KafkaPrincipal
from protocol.scram import SCRAM_SHA_256, ScramClient, make_credential

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" '
    'user_alice="alice-secret";'
)
ALL = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
BOB_256 = make_credential(SCRAM_SHA_256, "bob-secret", salt=b"s" * 16)
AUTH_FAILED, ILLEGAL_STATE, UNSUPPORTED_MECHANISM = 58, 34, 33


def lookup(mechanism: str, user: str):  # type: ignore[no-untyped-def]
    return BOB_256 if (mechanism, user) == ("SCRAM-SHA-256", "bob") else None


def new_session() -> Session:
    return Session.accepted("CLIENT", SASL_PLAINTEXT, "10.0.0.7", 50123)


def service(clock: ManualClock, max_reauth_ms: int = 0) -> SaslService:
    config = SaslConfig(ALL, sasl.plain_users(JAAS), max_reauth_ms, 100)
    return SaslService(config, lookup, clock.monotonic_ms)


def plain(user: str, password: str, authzid: str = "") -> bytes:
    return f"{authzid}\x00{user}\x00{password}".encode()


# --- PLAIN -------------------------------------------------------------------------------------


def test_plain_success_sets_the_principal() -> None:
    svc, s = service(ManualClock()), new_session()
    assert not s.authenticated and s.principal == ANONYMOUS
    assert svc.handshake(s, "PLAIN").error_code == 0
    answer = svc.authenticate(s, plain("alice", "alice-secret"))
    assert (answer.error_code, answer.close_why, answer.session_lifetime_ms) == (0, None, 0)
    assert s.authenticated and s.principal == KafkaPrincipal("User", "alice")
    assert s.credential_expiry_ms is None  # no connections_max_reauth_ms: never expires


@pytest.mark.parametrize(
    "token",
    [plain("alice", "wrong"), plain("mallory", "alice-secret"), plain("admin", "alice-secret")],
)
def test_plain_wrong_password_or_unknown_user_gets_kafkas_line(token: bytes) -> None:
    svc, s = service(ManualClock()), new_session()
    svc.handshake(s, "PLAIN")
    answer = svc.authenticate(s, token)
    assert answer.error_code == AUTH_FAILED
    assert answer.error_message == "Authentication failed: Invalid username or password"
    assert answer.close_why is not None  # answered after the delay, then closed
    assert not s.authenticated and s.principal == ANONYMOUS
    assert s.sasl.state is SaslState.FAILED


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"alice\x00alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        (b"a\x00b\x00c\x00d\x00e", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (b"\xff\xfe\x00alice\x00x", "Invalid SASL/PLAIN response: not UTF-8"),
        (plain("", "x"), "Authentication failed: username not specified"),
        (plain("alice", ""), "Authentication failed: password not specified"),
        (b"\x00" * 5000, "Invalid SASL/PLAIN response: longer than 1791 bytes"),
        (
            plain("alice", "alice-secret", authzid="admin"),
            "Authentication failed: Client requested an authorization id that is different "
            "from username",
        ),
    ],
)
def test_plain_malformed_tokens_fail_without_a_traceback(token: bytes, message: str) -> None:
    svc, s = service(ManualClock()), new_session()
    svc.handshake(s, "PLAIN")
    answer = svc.authenticate(s, token)
    assert (answer.error_code, answer.error_message) == (AUTH_FAILED, message)
    assert not s.authenticated


def test_plain_with_the_users_own_authzid_is_accepted() -> None:
    svc, s = service(ManualClock()), new_session()
    svc.handshake(s, "PLAIN")
    assert svc.authenticate(s, plain("alice", "alice-secret", authzid="alice")).error_code == 0
    assert s.principal == KafkaPrincipal.user("alice")


def test_a_failure_never_logs_the_password(caplog: pytest.LogCaptureFixture) -> None:
    svc, s = service(ManualClock()), new_session()
    svc.handshake(s, "PLAIN")
    with caplog.at_level(logging.DEBUG, "odradek.broker.sasl"):
        svc.authenticate(s, plain("alice", "hunter2-wrong"))
    assert "Invalid username or password" in caplog.text
    assert "hunter2" not in caplog.text


def test_failures_are_logged_once_a_minute_per_peer(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    svc = service(clock)
    with caplog.at_level(logging.INFO, "odradek.broker.sasl"):
        for _ in range(50):
            s = new_session()
            svc.handshake(s, "PLAIN")
            svc.authenticate(s, plain("alice", "wrong"))
        assert len(caplog.records) == 1
        clock.advance(sasl.FAILURE_LOG_INTERVAL_MS)
        s = new_session()
        svc.handshake(s, "PLAIN")
        svc.authenticate(s, plain("alice", "wrong"))
    assert len(caplog.records) == 2
    assert all(r.levelno == logging.INFO for r in caplog.records)


# --- handshake -----------------------------------------------------------------------------------


def test_unsupported_mechanism_lists_the_enabled_ones_and_closes() -> None:
    config = SaslConfig(("SCRAM-SHA-512",), {}, 0, 100)
    svc, s = SaslService(config, lookup, ManualClock().monotonic_ms), new_session()
    answer = svc.handshake(s, "PLAIN")
    assert answer.error_code == UNSUPPORTED_MECHANISM
    assert answer.mechanisms == ("SCRAM-SHA-512",)
    assert answer.close_why == "Unsupported SASL mechanism PLAIN"


def test_handshake_on_a_plaintext_listener_is_illegal_sasl_state_and_goes_on() -> None:
    svc, s = service(ManualClock()), Session.accepted("PLAINTEXT", "PLAINTEXT", "h", 1)
    answer = svc.handshake(s, "PLAIN")
    assert (answer.error_code, answer.close_why) == (ILLEGAL_STATE, None)
    assert answer.mechanisms == ()  # Kafka's: the listener offers none
    auth = svc.authenticate(s, plain("alice", "alice-secret"))
    assert auth.error_code == ILLEGAL_STATE and auth.close_why is None
    assert s.principal == ANONYMOUS


def test_authenticate_before_handshake_is_illegal_state_and_closes() -> None:
    svc, s = service(ManualClock()), new_session()
    answer = svc.authenticate(s, plain("alice", "alice-secret"))
    assert answer.error_code == ILLEGAL_STATE and answer.close_why is not None
    assert not s.authenticated


def test_authenticate_after_success_without_reauth_is_illegal_state() -> None:
    svc, s = service(ManualClock()), new_session()
    svc.handshake(s, "PLAIN")
    svc.authenticate(s, plain("alice", "alice-secret"))
    again = svc.handshake(s, "PLAIN")
    assert (again.error_code, again.close_why, again.mechanisms) == (ILLEGAL_STATE, None, ())
    answer = svc.authenticate(s, plain("alice", "alice-secret"))
    assert answer.error_code == ILLEGAL_STATE
    assert (
        answer.error_message == "SaslAuthenticate request received after successful authentication"
    )
    assert s.authenticated


# --- SCRAM ---------------------------------------------------------------------------------------


def scram_exchange(svc: SaslService, s: Session, password: str) -> list[sasl.AuthenticateAnswer]:
    client = ScramClient(SCRAM_SHA_256, "bob", password)
    assert svc.handshake(s, "SCRAM-SHA-256").error_code == 0
    first = svc.authenticate(s, client.client_first())
    if first.error_code:
        return [first]
    final = svc.authenticate(s, client.client_final(first.auth_bytes))
    if final.error_code == 0:
        client.receive_server_final(final.auth_bytes)
        assert client.complete
    return [first, final]


def test_scram_success() -> None:
    svc, s = service(ManualClock()), new_session()
    answers = scram_exchange(svc, s, "bob-secret")
    assert [a.error_code for a in answers] == [0, 0]
    assert s.authenticated and s.principal == KafkaPrincipal.user("bob")


def test_scram_wrong_password_gets_kafkas_line() -> None:
    svc, s = service(ManualClock()), new_session()
    answers = scram_exchange(svc, s, "wrong")
    assert answers[-1].error_code == AUTH_FAILED
    assert answers[-1].error_message == (
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-256"
    )
    assert not s.authenticated


def test_scram_unknown_user_gets_the_same_line() -> None:
    svc, s = service(ManualClock()), new_session()
    svc.handshake(s, "SCRAM-SHA-256")
    answer = svc.authenticate(s, ScramClient(SCRAM_SHA_256, "eve", "x").client_first())
    assert answer.error_code == AUTH_FAILED
    assert answer.error_message is not None and "invalid credentials" in answer.error_message


@pytest.mark.parametrize("token", [b"", b"garbage", b"\xff\xff", b"n,,n=bob"])
def test_scram_malformed_first_message(token: bytes) -> None:
    svc, s = service(ManualClock()), new_session()
    svc.handshake(s, "SCRAM-SHA-256")
    answer = svc.authenticate(s, token)
    assert answer.error_code == AUTH_FAILED and answer.close_why is not None


def test_scram_wrong_nonce_in_the_final_message() -> None:
    svc, s = service(ManualClock()), new_session()
    client = ScramClient(SCRAM_SHA_256, "bob", "bob-secret")
    svc.handshake(s, "SCRAM-SHA-256")
    first = svc.authenticate(s, client.client_first())
    final = client.client_final(first.auth_bytes)
    nonce_start = final.index(b",r=") + 3
    other = b"Y" if final[nonce_start : nonce_start + 1] == b"X" else b"X"  # never the same
    tampered = final[:nonce_start] + other + final[nonce_start + 1 :]
    assert tampered != final
    answer = svc.authenticate(s, tampered)
    assert answer.error_code == AUTH_FAILED and not s.authenticated


# --- the gate ------------------------------------------------------------------------------------

BEFORE_AUTH = [
    # (state reached by, api key, closes?)
    ("fresh", kv.API_VERSIONS, False),
    ("fresh", kv.SASL_HANDSHAKE, False),
    ("fresh", kv.METADATA, True),
    ("fresh", kv.PRODUCE, True),
    ("fresh", kv.SASL_AUTHENTICATE, True),
    ("handshaken", kv.SASL_AUTHENTICATE, False),
    ("handshaken", kv.API_VERSIONS, True),
    ("handshaken", kv.SASL_HANDSHAKE, True),
    ("handshaken", kv.FETCH, True),
    ("failed", kv.SASL_AUTHENTICATE, True),
    ("failed", kv.API_VERSIONS, True),
    ("authenticated", kv.METADATA, False),
    ("authenticated", kv.PRODUCE, False),
]


@pytest.mark.parametrize(("reached_by", "api_key", "closes"), BEFORE_AUTH)
def test_gate(reached_by: str, api_key: int, closes: bool) -> None:
    svc, s = service(ManualClock()), new_session()
    if reached_by != "fresh":
        svc.handshake(s, "PLAIN")
    if reached_by == "failed":
        svc.authenticate(s, plain("alice", "wrong"))
    if reached_by == "authenticated":
        svc.authenticate(s, plain("alice", "alice-secret"))
    assert (svc.admit(s, api_key) is not None) == closes


def test_gate_says_what_kafka_says() -> None:
    svc, s = service(ManualClock()), new_session()
    assert (
        svc.admit(s, kv.METADATA)
        == "Unexpected Kafka request of type METADATA during SASL handshake."
    )
    svc.handshake(s, "PLAIN")
    assert (
        svc.admit(s, kv.FETCH)
        == "Unexpected Kafka request of type FETCH during SASL authentication."
    )


def test_gate_lets_everything_through_on_a_plaintext_listener() -> None:
    svc, s = service(ManualClock()), Session.accepted("PLAINTEXT", "PLAINTEXT", "h", 1)
    assert svc.admit(s, kv.METADATA) is None


# --- KIP-368 -------------------------------------------------------------------------------------


def test_session_lifetime_and_expiry() -> None:
    clock = ManualClock()
    svc, s = service(clock, max_reauth_ms=10_000), new_session()
    svc.handshake(s, "PLAIN")
    answer = svc.authenticate(s, plain("alice", "alice-secret"))
    assert answer.session_lifetime_ms == 10_000
    clock.advance(9_999)
    assert svc.admit(s, kv.PRODUCE) is None
    clock.advance(1)
    why = svc.admit(s, kv.PRODUCE)
    assert why is not None and "expired" in why and "User:alice" in why
    assert svc.admit(s, kv.SASL_HANDSHAKE) is None  # a re-authentication may still come


def test_reauthentication_renews_the_session() -> None:
    clock = ManualClock()
    svc, s = service(clock, max_reauth_ms=10_000), new_session()
    svc.handshake(s, "PLAIN")
    svc.authenticate(s, plain("alice", "alice-secret"))
    for _ in range(3):  # across more than two lifetimes
        clock.advance(8_000)
        assert svc.handshake(s, "PLAIN").error_code == 0
        assert s.sasl.state is SaslState.REAUTHENTICATE
        assert svc.admit(s, kv.PRODUCE) is None  # requests go on while it re-authenticates
        answer = svc.authenticate(s, plain("alice", "alice-secret"))
        assert (answer.error_code, answer.session_lifetime_ms) == (0, 10_000)
        assert s.credential_expiry_ms == clock.monotonic_ms() + 10_000
        assert s.sasl.state is SaslState.COMPLETE
    clock.advance(9_000)
    assert svc.admit(s, kv.PRODUCE) is None


def test_reauthentication_as_someone_else_fails() -> None:
    svc, s = service(ManualClock(), max_reauth_ms=10_000), new_session()
    svc.handshake(s, "PLAIN")
    svc.authenticate(s, plain("alice", "alice-secret"))
    svc.handshake(s, "PLAIN")
    answer = svc.authenticate(s, plain("admin", "admin-secret"))
    assert answer.error_code == AUTH_FAILED and answer.close_why is not None
    assert answer.error_message == (
        "Cannot change principals during re-authentication from User.alice: User.admin"
    )
    assert s.principal == KafkaPrincipal.user("alice")


def test_reauthentication_with_another_mechanism_fails() -> None:
    svc, s = service(ManualClock(), max_reauth_ms=10_000), new_session()
    svc.handshake(s, "PLAIN")
    svc.authenticate(s, plain("alice", "alice-secret"))
    assert svc.handshake(s, "SCRAM-SHA-256").error_code == 0  # as Kafka: fails at the token
    answer = svc.authenticate(s, b"n,,n=alice,r=abc")
    assert answer.error_code == AUTH_FAILED
    assert answer.error_message == (
        "SASL mechanism 'SCRAM-SHA-256' requested by client is not supported for "
        "re-authentication of mechanism 'PLAIN'"
    )


def test_reauthentication_with_a_wrong_password_says_re_authentication() -> None:
    svc, s = service(ManualClock(), max_reauth_ms=10_000), new_session()
    assert [a.error_code for a in scram_exchange(svc, s, "bob-secret")] == [0, 0]
    answers = scram_exchange(svc, s, "wrong")
    assert answers[-1].error_message == (
        "Authentication failed during re-authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-256"
    )


# --- settings ------------------------------------------------------------------------------------


def test_plain_users_from_the_jaas_config() -> None:
    assert sasl.plain_users(JAAS) == {"admin": "admin-secret", "alice": "alice-secret"}
    assert sasl.plain_users("") == {}
    scram_only = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="a" password="b";'
    )
    assert sasl.plain_users(scram_only) == {}


@pytest.mark.parametrize(
    "bad",
    [
        "org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=;",
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="x"',
        'org.apache.kafka.common.security.plain.PlainLoginModule user_alice="x";',
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_="x";',
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="unclosed;',
    ],
)
def test_bad_jaas_is_one_usage_error_without_the_password(bad: str) -> None:
    with pytest.raises(UsageError) as info:
        sasl.plain_users(bad)
    assert "\n" not in str(info.value)
    assert "unclosed" not in str(info.value)


def test_mechanisms_setting() -> None:
    assert sasl.parse_mechanisms("plain, SCRAM-SHA-512") == ("PLAIN", "SCRAM-SHA-512")
    with pytest.raises(UsageError, match="does not serve GSSAPI"):
        sasl.parse_mechanisms("GSSAPI,PLAIN")
    with pytest.raises(UsageError, match="does not serve OAUTHBEARER"):
        sasl.parse_mechanisms("OAUTHBEARER")


def test_the_doors_gate_logs_closings_once_a_minute_per_peer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    door_gate = sasl.SaslGate(clock.monotonic_ms)
    with caplog.at_level(logging.INFO, "odradek.broker.sasl"):
        for _ in range(20):
            assert door_gate.why_close(new_session(), kv.METADATA) is not None
    assert len(caplog.records) == 1 and "during SASL handshake" in caplog.text
    svc, expiring = service(clock, max_reauth_ms=10), new_session()
    svc.handshake(expiring, "PLAIN")
    svc.authenticate(expiring, plain("alice", "alice-secret"))
    clock.advance(10)
    with caplog.at_level(logging.INFO, "odradek.broker.sasl"):
        assert door_gate.why_close(expiring, kv.METADATA) is not None
    assert "expired" in caplog.records[-1].getMessage()  # its own line, same peer host
    authenticated = Session.accepted("PLAINTEXT", "PLAINTEXT", "h", 1)
    assert door_gate.why_close(authenticated, kv.METADATA) is None


def test_sasl_config_from_the_settings() -> None:
    config = sasl.sasl_config("PLAIN,SCRAM-SHA-512", JAAS, 5000, 100)
    assert config.enabled_mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert config.plain_users["alice"] == "alice-secret"
    assert "alice-secret" not in repr(config)


# --- fuzz ---------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "", "plain", "X" * 300]),
    tokens=st.lists(st.binary(max_size=2048), min_size=1, max_size=4),
    api_keys=st.lists(st.integers(-1, 100), max_size=4),
)
def test_any_tokens_end_in_an_answer_never_an_exception(
    mechanism: str, tokens: list[bytes], api_keys: list[int]
) -> None:
    svc, s = service(ManualClock(), max_reauth_ms=1000), new_session()
    answer = svc.handshake(s, mechanism)
    assert answer.error_code in (0, UNSUPPORTED_MECHANISM)
    for token in tokens:
        result = svc.authenticate(s, token)
        assert result.error_code in (0, AUTH_FAILED, ILLEGAL_STATE)
        if result.error_code:
            assert result.close_why is not None and not s.authenticated
        for key in api_keys:
            svc.admit(s, key)
    assert s.principal == ANONYMOUS or s.authenticated
