"""broker/security/tls.py without sockets: mapping rules (Kafka's SslPrincipalMapper), contexts
from the ssl.* settings, two TlsChannels talking in memory, and wrong-protocol sniffing."""

from __future__ import annotations

import contextlib
import ssl
import tempfile
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12

from broker.security.tls import (
    NoMatchingRule,
    PrincipalMapper,
    TlsChannel,
    TlsSettings,
    client_context,
    server_context,
    sniff,
    subject_dn,
)
from protocol.errors import UsageError
from tests.fixtures.certs import KEY_PASSWORD, TestCerts, certs  # noqa: F401


def test_default_rule_gives_the_whole_subject() -> None:
    assert PrincipalMapper("DEFAULT").name("CN=alice,OU=eng,O=acme") == "CN=alice,OU=eng,O=acme"
    assert PrincipalMapper("").name("CN=alice") == "CN=alice"


def test_rule_with_lower_and_upper_case() -> None:
    mapper = PrincipalMapper(r"RULE:^CN=(.*?),OU=(.*?)$/$1@$2/L")
    assert mapper.name("CN=Alice,OU=ENG") == "alice@eng"
    assert PrincipalMapper(r"RULE:^CN=(.*?),.*$/$1/U").name("CN=bob,OU=x") == "BOB"


def test_first_matching_rule_wins_then_default() -> None:
    rules = r"RULE:^CN=([^,]*),OU=admins$/admin-$1/, RULE:^CN=([^,]*),OU=.*$/$1/, DEFAULT"
    mapper = PrincipalMapper(rules)
    assert mapper.name("CN=carol,OU=admins") == "admin-carol"
    assert mapper.name("CN=dave,OU=eng") == "dave"
    assert mapper.name("O=nobody") == "O=nobody"


def test_no_matching_rule_is_an_error() -> None:
    with pytest.raises(NoMatchingRule):
        PrincipalMapper(r"RULE:^CN=(.*)$/$1/").name("O=acme")


def test_bad_rules_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="ssl_principal_mapping_rules"):
        PrincipalMapper("RULE:abc")
    with pytest.raises(UsageError, match="bad pattern"):
        PrincipalMapper("RULE:(/x/")


def test_subject_of_a_certificate_is_rfc2253(certs: TestCerts) -> None:  # noqa: F811
    der = ssl.PEM_cert_to_DER_cert(certs.client.cert_path.read_text())
    assert subject_dn(der) == "CN=alice,OU=eng"


def test_jks_is_refused_with_how_to_convert() -> None:
    with pytest.raises(UsageError, match="keytool -importkeystore"):
        TlsSettings(keystore_type="JKS").check()
    with pytest.raises(UsageError, match="ssl_client_auth"):
        TlsSettings(client_auth="sometimes").check()
    with pytest.raises(UsageError, match="ssl_enabled_protocols"):
        TlsSettings(enabled_protocols="SSLv3").check()
    with pytest.raises(UsageError, match="needs a keystore"):
        server_context(TlsSettings())


def _handshake(server: TlsChannel, client: TlsChannel) -> None:
    """Pump bytes between two channels until both are done (or one raises)."""
    to_server = client.send(b"")
    for _ in range(20):
        if client.handshake_done and server.handshake_done:
            return
        server.feed(to_server)
        to_client = server.outgoing()
        client.feed(to_client)
        to_server = client.outgoing()
    raise AssertionError("handshake did not finish")


def _client(
    certs: TestCerts,  # noqa: F811
    cert: Path | None = None,
    key: Path | None = None,
    password: str | None = None,
) -> TlsChannel:
    ctx = ssl.create_default_context(cafile=str(certs.ca.cert_path))
    if cert is not None:
        ctx.load_cert_chain(cert, key, password=password)
    channel = TlsChannel(ctx, server_side=False)
    channel.obj = ctx.wrap_bio(channel._in, channel._out, server_hostname="localhost")
    with contextlib.suppress(ssl.SSLWantReadError):
        channel.obj.do_handshake()
    return channel


def test_channels_talk_and_mtls_gives_the_subject(certs: TestCerts) -> None:  # noqa: F811
    settings = TlsSettings(
        keystore_location=str(certs.broker.cert_path.with_suffix(".pem")),
        truststore_location=str(certs.ca.cert_path),
        client_auth="required",
    )
    combined = Path(settings.keystore_location)
    combined.write_bytes(certs.broker.cert_path.read_bytes() + certs.broker.key_path.read_bytes())
    server = TlsChannel(server_context(settings))
    client = _client(
        certs, certs.client_encrypted.cert_path, certs.client_encrypted.key_path, KEY_PASSWORD
    )
    _handshake(server, client)
    der = server.peer_certificate()
    assert der is not None and subject_dn(der) == "CN=alice,OU=eng"
    assert server.feed(client.send(b"hello")) == b"hello"
    assert client.feed(server.send(b"world")) == b"world"


def test_expired_and_foreign_client_certificates_fail_the_handshake(
    certs: TestCerts,  # noqa: F811
) -> None:
    settings = TlsSettings(
        keystore_certificate_chain=certs.broker.cert_path.read_text(),
        keystore_key=certs.broker.key_path.read_text(),
        truststore_certificates=certs.ca.cert_path.read_text(),
        client_auth="required",
    )
    context = server_context(settings)
    for bad in (certs.expired, certs.foreign_client):
        with pytest.raises(ssl.SSLError):
            _handshake(TlsChannel(context), _client(certs, bad.cert_path, bad.key_path))


def test_pkcs12_keystore_and_truststore(certs: TestCerts, tmp_path: Path) -> None:  # noqa: F811
    key = certs.broker.key
    p12 = tmp_path / "broker.p12"
    p12.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"broker",
            key,
            certs.broker.cert,
            [certs.ca.cert],
            BestAvailableEncryption(b"store-secret"),
        )
    )
    trust = tmp_path / "trust.p12"
    trust.write_bytes(
        pkcs12.serialize_key_and_certificates(
            None, None, None, [certs.ca.cert], BestAvailableEncryption(b"trust-secret")
        )
    )
    settings = TlsSettings(
        keystore_type="PKCS12",
        keystore_location=str(p12),
        keystore_password="store-secret",
        truststore_type="PKCS12",
        truststore_location=str(trust),
        truststore_password="trust-secret",
        client_auth="required",
    )
    server = TlsChannel(server_context(settings))
    _handshake(server, _client(certs, certs.client.cert_path, certs.client.key_path))
    assert server.handshake_done
    assert not list(Path(tempfile.gettempdir()).glob("odradek-tls-*"))  # key file removed
    with pytest.raises(UsageError, match="cannot load the keystore"):
        server_context(
            TlsSettings(
                keystore_type="PKCS12", keystore_location=str(p12), keystore_password="wrong"
            )
        )


def test_client_context_checks_hostnames_unless_told_not_to() -> None:
    assert client_context(TlsSettings()).check_hostname
    assert not client_context(TlsSettings(endpoint_identification_algorithm="")).check_hostname


@pytest.mark.parametrize(
    ("prefix", "tls", "what"),
    [
        (b"\x16\x03\x01\x02", False, "a TLS handshake"),
        (b"GET / HTTP/1.1", False, "an HTTP request"),
        (b"POST", True, "an HTTP request"),
        (b"\x00\x00\x00\x20", True, "plaintext (not a TLS handshake)"),
        (b"\x00\x00\x00\x20", False, None),
        (b"\x16\x03\x01\x02", True, None),
        (b"\x16", False, None),
    ],
)
def test_sniff(prefix: bytes, tls: bool, what: str | None) -> None:
    assert sniff(prefix, tls) == what
