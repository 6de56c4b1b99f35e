"""protocol/scram.py: RFC 7677's SCRAM-SHA-256 example byte for byte, Kafka's credential string,
and property tests that a client and server agree and that any changed byte fails."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import SaslAuthenticationFailedError, UsageError
from protocol.scram import (
    MECHANISMS,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramClient,
    ScramCredential,
    ScramFailure,
    ScramServer,
    ScramState,
    credential_from_salted_password,
    invalid_credentials_message,
    make_credential,
    salted_password,
    sasl_name,
    username_of,
)

# RFC 7677 section 3: user "user", password "pencil".
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
RFC_CREDENTIAL = make_credential(SCRAM_SHA_256, "pencil", 4096, salt=RFC_SALT)


def test_rfc7677_client_sends_the_rfc_bytes() -> None:
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    assert client.client_first() == RFC_CLIENT_FIRST
    assert client.client_final(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    client.receive_server_final(RFC_SERVER_FINAL)
    assert client.complete


def test_rfc7677_server_sends_the_rfc_bytes() -> None:
    server = ScramServer(SCRAM_SHA_256, nonce=lambda: RFC_SERVER_NONCE)
    assert server.receive_client_first(RFC_CLIENT_FIRST) == "user"
    assert server.server_first(RFC_CREDENTIAL) == RFC_SERVER_FIRST
    assert server.receive_client_final(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete and server.username == "user"


def test_credential_string_is_kafkas_form_and_round_trips() -> None:
    # The RFC's keys, computed independently: StoredKey = H(HMAC(SaltedPassword, "Client Key")).
    text = RFC_CREDENTIAL.to_string()
    assert text.startswith("salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=")
    assert text.endswith(",iterations=4096")
    assert [part.split("=", 1)[0] for part in text.split(",")] == [
        "salt",
        "stored_key",
        "server_key",
        "iterations",
    ]
    assert ScramCredential.from_string(text) == RFC_CREDENTIAL
    # A credential string as Kafka's kafka-configs.sh writes it, keys in another order.
    parts = dict(part.split("=", 1) for part in text.split(","))
    reordered = ",".join(
        f"{k}={parts[k]}" for k in ("iterations", "server_key", "stored_key", "salt")
    )
    assert ScramCredential.from_string(reordered) == RFC_CREDENTIAL


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "salt=AAAA,stored_key=AAAA,server_key=AAAA",
        "salt=AAAA,stored_key=AAAA,server_key=AAAA,iterations=4096,extra=1",
        "salt=AAAA,stored_key=AAAA,server_key=AAAA,iterations=many",
        "salt=!!!!,stored_key=AAAA,server_key=AAAA,iterations=4096",
        "=AAAA,stored_key=AAAA,server_key=AAAA,iterations=4096",
    ],
)
def test_malformed_credential_strings_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="Credentials not valid"):
        ScramCredential.from_string(bad)


def test_credential_from_salted_password_is_what_kip554_carries() -> None:
    salted = salted_password(SCRAM_SHA_512, "alice-secret", b"salt-bytes", 8192)
    derived = credential_from_salted_password(SCRAM_SHA_512, b"salt-bytes", salted, 8192)
    assert derived == make_credential("SCRAM-SHA-512", "alice-secret", 8192, salt=b"salt-bytes")
    assert len(derived.stored_key) == len(derived.server_key) == 64


def test_repr_of_a_credential_shows_no_key() -> None:
    assert RFC_CREDENTIAL.to_string().split(",")[1].split("=", 1)[1] not in repr(RFC_CREDENTIAL)


def test_iterations_outside_kafkas_range_are_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"4096\.\.16384"):
        make_credential(SCRAM_SHA_256, "pw", 4095)
    with pytest.raises(UsageError, match=r"4096\.\.16384"):
        make_credential(SCRAM_SHA_512, "pw", 16385)
    with pytest.raises(UsageError, match="not a SCRAM mechanism"):
        make_credential("SCRAM-SHA-1", "pw", 4096)


def test_sasl_names_escape_only_equals_and_comma() -> None:
    assert sasl_name("a=b,c") == "a=3Db=2Cc"
    assert username_of("a=3Db=2Cc") == "a=b,c"
    assert sasl_name("üser") == "üser"  # no other SASLprep, as Kafka
    with pytest.raises(ValueError, match="Invalid username"):
        username_of("a=b")


def _exchange(
    mech_name: str, user: str, password: str, stored_password: str
) -> tuple[ScramClient, ScramServer]:
    mech = MECHANISMS[mech_name]
    credential = make_credential(mech, stored_password, 4096, salt=b"fixed salt")
    client, server = ScramClient(mech, user, password), ScramServer(mech)
    server_final = server.respond(
        client.client_final(server.respond(client.client_first(), {user: credential}.get)),
        {user: credential}.get,
    )
    client.receive_server_final(server_final)
    return client, server


def test_wrong_password_gets_kafkas_generic_message() -> None:
    with pytest.raises(ScramFailure) as info:
        _exchange("SCRAM-SHA-512", "alice", "wrong", "alice-secret")
    assert info.value.message == invalid_credentials_message("SCRAM-SHA-512")
    assert info.value.code == 58
    assert info.value.message == (
        "Authentication failed during authentication due to invalid credentials "
        "with SASL mechanism SCRAM-SHA-512"
    )
    assert "Invalid client credentials" in info.value.detail
    assert "wrong" not in info.value.detail


def test_unknown_user_gets_the_same_message_as_a_wrong_password() -> None:
    server = ScramServer(SCRAM_SHA_256)
    client = ScramClient(SCRAM_SHA_256, "mallory", "x")
    with pytest.raises(SaslAuthenticationFailedError) as info:
        server.respond(client.client_first(), lambda _user: None)
    assert info.value.message == invalid_credentials_message("SCRAM-SHA-256")
    assert server.state is ScramState.FAILED


def test_authzid_other_than_the_user_is_refused_as_kafka() -> None:
    server = ScramServer(SCRAM_SHA_256)
    with pytest.raises(SaslAuthenticationFailedError, match="authorization id that is different"):
        server.receive_client_first(b"n,a=admin,n=alice,r=abc")
    same = ScramServer(SCRAM_SHA_256)
    assert same.receive_client_first(b"n,a=alice,n=alice,r=abc") == "alice"


@pytest.mark.parametrize(
    "token",
    [
        b"",
        b"y,,n=user,r=abc",
        b"p=tls-unique,,n=user,r=abc",
        b"n,,n=,r=abc",
        b"\xff\xfe",
        b"n,,r=a",
    ],
)
def test_malformed_client_first_is_refused(token: bytes) -> None:
    with pytest.raises(SaslAuthenticationFailedError):
        ScramServer(SCRAM_SHA_256).receive_client_first(token)


def test_wrong_nonce_in_client_final_is_refused() -> None:
    server = ScramServer(SCRAM_SHA_256, nonce=lambda: RFC_SERVER_NONCE)
    server.receive_client_first(RFC_CLIENT_FIRST)
    server.server_first(RFC_CREDENTIAL)
    forged = RFC_CLIENT_FINAL.replace(b"k0,p=", b"k1,p=")
    with pytest.raises(SaslAuthenticationFailedError, match="Invalid client nonce"):
        server.receive_client_final(forged)


def test_client_refuses_a_server_nonce_not_extending_its_own() -> None:
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    client.client_first()
    with pytest.raises(SaslAuthenticationFailedError, match="does not start with client nonce"):
        client.client_final(b"r=other,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")


def test_client_refuses_too_few_iterations_and_a_forged_server_signature() -> None:
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    client.client_first()
    with pytest.raises(SaslAuthenticationFailedError, match="less than the minimum 4096"):
        client.client_final(RFC_SERVER_FIRST.replace(b"i=4096", b"i=1"))
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    client.client_first()
    client.client_final(RFC_SERVER_FIRST)
    with pytest.raises(SaslAuthenticationFailedError, match="Invalid server signature"):
        client.receive_server_final(b"v=" + base64.b64encode(bytes(32)))


def test_server_final_error_reaches_the_client() -> None:
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    client.client_first()
    client.client_final(RFC_SERVER_FIRST)
    with pytest.raises(SaslAuthenticationFailedError, match="failed with error: invalid-proof"):
        client.receive_server_final(b"e=invalid-proof")


def test_a_message_out_of_turn_is_refused() -> None:
    server = ScramServer(SCRAM_SHA_256, nonce=lambda: RFC_SERVER_NONCE)
    with pytest.raises(SaslAuthenticationFailedError, match="Unexpected challenge"):
        server.receive_client_final(RFC_CLIENT_FINAL)
    done = ScramServer(SCRAM_SHA_256, nonce=lambda: RFC_SERVER_NONCE)
    done.respond(RFC_CLIENT_FIRST, {"user": RFC_CREDENTIAL}.get)
    done.respond(RFC_CLIENT_FINAL, {"user": RFC_CREDENTIAL}.get)
    with pytest.raises(SaslAuthenticationFailedError, match="Unexpected challenge"):
        done.respond(RFC_CLIENT_FINAL, {"user": RFC_CREDENTIAL}.get)


def test_a_stored_credential_below_the_minimum_iterations_is_refused() -> None:
    weak = credential_from_salted_password(SCRAM_SHA_256, b"s", bytes(32), 1000)
    server = ScramServer(SCRAM_SHA_256)
    server.receive_client_first(b"n,,n=user,r=abc")
    with pytest.raises(ScramFailure) as info:
        server.server_first(weak)
    assert "less than the minimum 4096" in info.value.detail


_names = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=12
)


@settings(max_examples=25, deadline=None)
@given(mech=st.sampled_from(sorted(MECHANISMS)), user=_names, password=st.text(max_size=20))
def test_client_and_server_agree(mech: str, user: str, password: str) -> None:
    client, server = _exchange(mech, user, password, password)
    assert client.complete and server.complete and server.username == user


@settings(max_examples=60, deadline=None)
@given(which=st.sampled_from(["client_first", "client_final"]), data=st.data())
def test_any_changed_byte_fails(which: str, data: st.DataObject) -> None:
    """Change one byte of the client's first or final message of the RFC exchange: the exchange
    fails (a SASL error, never another exception), except where the change is invisible to the
    proof (a nonce byte in client-first the server echoes back is still checked in client-final)."""
    token = RFC_CLIENT_FIRST if which == "client_first" else RFC_CLIENT_FINAL
    index = data.draw(st.integers(0, len(token) - 1))
    new_byte = data.draw(st.integers(0, 255).filter(lambda b: b != token[index]))
    changed = token[:index] + bytes([new_byte]) + token[index + 1 :]
    server = ScramServer(SCRAM_SHA_256, nonce=lambda: RFC_SERVER_NONCE)
    lookup = {"user": RFC_CREDENTIAL}.get
    with pytest.raises(SaslAuthenticationFailedError):
        if which == "client_first":
            server.respond(changed, lookup)
            server.respond(RFC_CLIENT_FINAL, lookup)
        else:
            server.respond(RFC_CLIENT_FIRST, lookup)
            server.respond(changed, lookup)
    assert not server.complete


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_changed_byte_of_the_server_messages_fails_the_client(data: st.DataObject) -> None:
    which = data.draw(st.sampled_from([RFC_SERVER_FIRST, RFC_SERVER_FINAL]))
    index = data.draw(st.integers(0, len(which) - 1))
    new_byte = data.draw(st.integers(0, 255).filter(lambda b: b != which[index]))
    changed = which[:index] + bytes([new_byte]) + which[index + 1 :]
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    client.client_first()
    with pytest.raises(SaslAuthenticationFailedError):
        if which is RFC_SERVER_FIRST:
            client.client_final(changed)
            client.receive_server_final(RFC_SERVER_FINAL)
        else:
            client.client_final(RFC_SERVER_FIRST)
            client.receive_server_final(changed)
    assert not client.complete


def _librdkafka_final(nonce: str) -> bytes:
    """A client-final as librdkafka < 2.6.1 makes it: `nonce` as given, the proof right for it."""
    import hashlib
    import hmac

    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", RFC_SALT, 4096)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    without_proof = f"c=biws,r={nonce}"
    auth = b",".join([RFC_CLIENT_FIRST[3:], RFC_SERVER_FIRST, without_proof.encode()])
    signature = hmac.new(stored_key, auth, "sha256").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


@pytest.mark.parametrize(
    ("prefix", "accepted"),
    [(RFC_CLIENT_NONCE, True), ("x", False), (RFC_CLIENT_NONCE[:-1], False)],
)
def test_librdkafkas_doubled_client_nonce_is_taken_and_nothing_else(
    prefix: str, accepted: bool
) -> None:
    """librdkafka#4895 (kcat 1.7.1 on librdkafka 2.0.2): client nonce + combined nonce."""
    server = ScramServer(SCRAM_SHA_256, nonce=lambda: RFC_SERVER_NONCE)
    server.receive_client_first(RFC_CLIENT_FIRST)
    server.server_first(RFC_CREDENTIAL)
    final = _librdkafka_final(prefix + RFC_CLIENT_NONCE + RFC_SERVER_NONCE)
    if accepted:
        assert server.receive_client_final(final).startswith(b"v=")
        assert server.complete
    else:
        with pytest.raises(SaslAuthenticationFailedError, match="Invalid client nonce"):
            server.receive_client_final(final)
