"""Certificates for TLS listeners: a CA and the certificates it signs, as PEM files.

`make_ca(dir, name)` writes `<name>.crt`/`<name>.key` for a self-signed CA; `issue(ca, dir,
name, hosts=..., days=...)` writes `<name>.crt`/`<name>.key` signed by it, valid for the given
DNS names and IP addresses (broker certificates: "localhost", "127.0.0.1"; a client
certificate for mTLS needs none), with `CN=<common name>` (plus `OU=<ou>` when given) as its
subject, which is what the broker maps to a principal (ssl_principal_mapping_rules). A
negative `days_before` moves the validity window into the past: `issue(..., days=-1)` makes an
expired certificate. The optional `password` encrypts the private key (PKCS#8, best available
encryption), as `ssl_key_password` / kafka-python's `ssl_password` expect.

`odradek cluster up --secure` (deploy/cluster.py) and the tests (tests/fixtures/certs.py) both
make their certificates here. Keys are EC P-256: fast to make, accepted by OpenSSL and
librdkafka. Key files are written 0600.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True, slots=True)
class Issued:
    """A certificate and its key as files, plus the loaded objects for signing others."""

    cert_path: Path
    key_path: Path
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


def _name(common_name: str, ou: str | None) -> x509.Name:
    """OU before CN in the certificate, so its RFC 2253 form (last first) is "CN=..,OU=.."."""
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if ou is not None:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou))
    return x509.Name(attrs)


def _write(
    directory: Path,
    name: str,
    cert: x509.Certificate,
    key: ec.EllipticCurvePrivateKey,
    password: str | None,
) -> Issued:
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    encryption: serialization.KeySerializationEncryption = (
        serialization.NoEncryption()
        if password is None
        else serialization.BestAvailableEncryption(password.encode())
    )
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
            )
        )
    return Issued(cert_path, key_path, cert, key)


def make_ca(
    directory: Path, name: str = "ca", common_name: str = "odradek CA", days: int = 3650
) -> Issued:
    """A self-signed CA certificate and key in `directory`."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = _name(common_name, None)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    return _write(directory, name, cert, key, None)


def issue(
    ca: Issued,
    directory: Path,
    name: str,
    common_name: str | None = None,
    ou: str | None = None,
    hosts: tuple[str, ...] = ("localhost", "127.0.0.1"),
    days: int = 825,
    password: str | None = None,
) -> Issued:
    """A certificate for `common_name` (default `name`) signed by `ca`; days < 0: expired."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    if days >= 0:
        start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)
    else:  # expired: valid for one day, ending `-days` days ago
        end = now + datetime.timedelta(days=days)
        start = end - datetime.timedelta(days=1)
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name or name, ou))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), False
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca.key, hashes.SHA256())
    return _write(directory, name, cert, key, password)
