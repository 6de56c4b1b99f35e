"""Fuzzing the broker's security decoders a peer's bytes reach before it is authenticated
(issue 25): the wrong-protocol sniffer, the server's TLS channel and the PLAIN exchange.

- `sniff(prefix, tls)` takes any bytes and names them or says None; it never raises.
- A server `TlsChannel` fed garbage, a truncated or mutated ClientHello, or plaintext Kafka
  frames fails with ssl.SSLError only (the server closes and logs, bounded), never another
  exception, and never hands garbage out as plaintext.
- `PlainServer.respond` takes any token (missing NULs, huge, not UTF-8) and fails with
  SASL_AUTHENTICATION_FAILED only, its message bounded and free of the password.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.security.sasl import PlainServer
from broker.security.tls import TlsChannel, TlsSettings, server_context, sniff
from protocol.errors import IllegalSaslStateError, SaslAuthenticationFailedError
from tests.fixtures.certs import TestCerts, certs  # noqa: F401

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
PASSWORD = "alice-fuzz-secret"
MESSAGE_MAX_CHARS = 1024


@given(prefix=st.binary(max_size=64), tls=st.booleans())
@FUZZ
def test_sniff_names_or_passes_any_bytes(prefix: bytes, tls: bool) -> None:
    what = sniff(prefix, tls)
    assert what is None or isinstance(what, str)


@pytest.fixture(scope="module")
def server_ctx(certs: TestCerts, tmp_path_factory: pytest.TempPathFactory) -> ssl.SSLContext:  # noqa: F811
    keystore = Path(tmp_path_factory.mktemp("fuzz-tls")) / "broker.pem"
    keystore.write_bytes(certs.broker.cert_path.read_bytes() + certs.broker.key_path.read_bytes())
    return server_context(TlsSettings(keystore_location=str(keystore),
                                      truststore_location=str(certs.ca.cert_path)))  # fmt: skip


def _client_hello(certs: TestCerts) -> bytes:  # noqa: F811
    ctx = ssl.create_default_context(cafile=str(certs.ca.cert_path))
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    return outgoing.read()


def _mutate(data: bytes, at: int, value: int, cut: int) -> bytes:
    out = bytearray(data[: max(cut, 1)])
    if out:
        out[at % len(out)] = value
    return bytes(out)


@given(
    kind=st.sampled_from(["garbage", "hello", "kafka"]),
    noise=st.binary(max_size=512),
    at=st.integers(0, 4096),
    value=st.integers(0, 255),
    cut=st.integers(1, 4096),
)
@FUZZ
def test_tls_channel_fails_only_with_ssl_errors(
    server_ctx: ssl.SSLContext, certs: TestCerts,  # noqa: F811
    kind: str, noise: bytes, at: int, value: int, cut: int,
) -> None:  # fmt: skip
    if kind == "hello":
        data = _mutate(_client_hello(certs), at, value, cut)
    elif kind == "kafka":
        data = b"\x00\x00\x00\x1b\x00\x12\x00\x03\x00\x00\x00\x01\x00\x07rdkafka" + noise
    else:
        data = noise
    channel = TlsChannel(server_ctx)
    try:
        plain = channel.feed(data)
    except ssl.SSLError:
        return
    assert plain == b"", "bytes before a finished handshake came out as plaintext"
    channel.outgoing()


TOKENS = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=100).map(str.encode),
    st.builds(lambda n: b"\x00alice\x00" + b"p" * n, st.integers(0, 100_000)),
    st.builds(lambda b: b"\x00" + b + b"\x00" + PASSWORD.encode(), st.binary(max_size=40)),
    st.just(b"alice" + PASSWORD.encode()),  # no NULs
    st.just(b"alice\x00" + PASSWORD.encode()),  # one NUL
)


@given(token=TOKENS)
@FUZZ
def test_plain_refuses_any_malformed_token_with_kafkas_error(token: bytes) -> None:
    server = PlainServer({"alice": PASSWORD})
    try:
        server.respond(token, lambda _user: None)
    except (SaslAuthenticationFailedError, IllegalSaslStateError) as exc:
        assert len(exc.message) <= MESSAGE_MAX_CHARS
        assert PASSWORD not in exc.message
        assert not server.complete
        return
    assert token.split(b"\x00")[1:] == [b"alice", PASSWORD.encode()], token
